// Properties the contract and the papers prove: causal layers do not leak future tokens, and the
// reductions (fixed_head(d_p = F/H) = mhsa; THSA presets = the MHSA they name; structured cores =
// the same core given densely; causal dimwise at the last token = non-causal dimwise).

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention_module.h"
#include "attention/thsa.h"
#include "reference.h"
#include "spec/core_spec.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::test;

namespace {

using Pairs = std::vector<std::pair<std::string, torch::Tensor>>;

std::string label(const Case& c) {
  return describe(c.spec) + " B=" + std::to_string(c.batch) + " N=" + std::to_string(c.seq);
}

ForwardOptions withMaps() {
  ForwardOptions o;
  o.with_maps = true;
  return o;
}

// ---- causal no-leak ---------------------------------------------------------------------------

/// Perturbing tokens after position i leaves outputs (and map rows) <= i unchanged, for every i.
void checkNoLeak(Case c, std::uint32_t seed) {
  if (c.spec.variant == spec::Variant::Multilinear) {
    c.spec.sizes.seq_len = std::max(c.spec.sizes.seq_len, 4);
    c.seq = c.spec.sizes.seq_len;
  } else {
    c.seq = std::max(c.seq, 4);
  }
  SCOPED_TRACE(label(c));
  guarded(label(c), [&] {
    AttentionModule m = buildDouble(c.spec, seed);
    perturbParameters(*m, seed + 1);
    const int N = c.seq;
    const torch::Tensor x = randomInput(c.batch, N, c.spec.sizes.F, seed + 2);
    torch::NoGradGuard noGrad;
    const AttentionOutput base = m->forward(x, withMaps());
    // Maps with a token axis for queries and keys: every variant but dimwise (whose causal map is
    // f(S⁽ᴺ⁾), the last position's map, which sees every token).
    const bool rowMaps = c.spec.variant != spec::Variant::Dimwise;
    for (int i = 0; i + 1 < N; ++i) {
      torch::Tensor x2 = x.clone();
      torch::manual_seed(seed + 10 + static_cast<std::uint32_t>(i));
      x2.narrow(1, i + 1, N - i - 1).copy_(3.0 * torch::randn({c.batch, N - i - 1, c.spec.sizes.F}, torch::kDouble));
      const AttentionOutput moved = m->forward(x2, withMaps());
      expectClose(moved.y.narrow(1, 0, i + 1), base.y.narrow(1, 0, i + 1), 1e-12,
                  "outputs <= " + std::to_string(i) + " after changing later tokens");
      EXPECT_GT(relativeError(moved.y.narrow(1, i + 1, 1), base.y.narrow(1, i + 1, 1)), 1e-6)
          << "output " << i + 1 << " ignores its own (changed) token";
      if (rowMaps) {
        const int queryAxis = static_cast<int>(base.maps.dim()) - 2;
        expectClose(moved.maps.narrow(queryAxis, 0, i + 1), base.maps.narrow(queryAxis, 0, i + 1), 1e-12,
                    "map rows <= " + std::to_string(i));
      }
    }
  });
}

void checkVariantNoLeak(spec::Variant v) {
  std::uint32_t seed = 40 + 7 * static_cast<std::uint32_t>(v);
  int checked = 0;
  for (bool bias : {false, true})
    for (const Case& c : casesOf(v, true, bias, ++seed, false)) {
      checkNoLeak(c, seed * 3);
      ++checked;
    }
  EXPECT_GT(checked, 0);
}

// ---- reductions -------------------------------------------------------------------------------

/// Loads into `target` the non-derived weights of `source` that `target` also has, then `extra`,
/// and keeps target's own values for the rest (e.g. a THSA core's trainable factors).
void loadFrom(AttentionModuleImpl& target, const AttentionModuleImpl& source, const Pairs& extra = {}) {
  std::set<std::string> sourceNames;
  for (const NamedWeight& nw : source.namedWeights())
    if (!nw.derived()) sourceNames.insert(nw.name);
  std::set<std::string> extraNames;
  for (const auto& e : extra) extraNames.insert(e.first);
  Pairs pairs = extra;
  std::set<std::string> targetNames;
  for (const NamedWeight& nw : target.namedWeights())
    if (!nw.derived()) targetNames.insert(nw.name);
  for (const NamedWeight& nw : source.namedWeights())
    if (!nw.derived() && targetNames.count(nw.name) && !extraNames.count(nw.name))
      pairs.emplace_back(nw.name, nw.value.detach().clone());
  for (const NamedWeight& nw : target.namedWeights())
    if (!nw.derived() && !sourceNames.count(nw.name) && !extraNames.count(nw.name))
      pairs.emplace_back(nw.name, nw.value.detach().clone());
  target.loadWeights(pairs);
}

torch::Tensor f64(std::vector<double> v, std::vector<std::int64_t> shape) {
  return torch::tensor(v, torch::kDouble).reshape(shape);
}

/// The trainable parts of a THSA core at their exact (float64) initial values from the spec, under
/// the contract's names: modules are built in float32, so their init carries float32 rounding.
Pairs exactInitialCore(const spec::AttentionSpec& s) {
  const spec::CoreSpec& core = *s.core;
  const int H = s.sizes.H, D = s.sizes.D, R = s.sizes.R;
  Pairs out;
  if (core.structure == spec::CoreStructure::Dense) {
    out.emplace_back("core", f64(core.dense_values, {R, R}));
    return out;
  }
  if (core.a.kind == spec::FactorKind::Trainable) out.emplace_back("core.A", f64(core.a.values, {H, H}));
  if (core.b.kind == spec::FactorKind::Trainable) out.emplace_back("core.B", f64(core.b.values, {D, D}));
  if (core.b.kind == spec::FactorKind::Rank1 && core.b.trainable_rank1) {
    out.emplace_back("core.c2", f64({core.b.values.begin(), core.b.values.begin() + D}, {D}));
    out.emplace_back("core.c3", f64({core.b.values.begin() + D, core.b.values.end()}, {D}));
  }
  return out;
}

/// `other` (thsa or fixed_head) with mhsa's projections equals mhsa(Hm, Dm) in y and in its maps:
/// map channel r of `other` must reproduce mhsa head r / headDivisor (THSA: r / D).
void expectEqualsMhsa(const spec::AttentionSpec& other, int Hm, int Dm, std::uint32_t seed, int headDivisor) {
  for (bool causal : {false, true})
    for (bool bias : {false, true}) {
      spec::AttentionSpec o = other;
      o.causal = causal;
      o.bias = bias;
      spec::Sizes z;
      z.F = o.sizes.F;
      z.H = Hm;
      z.D = Dm;
      const spec::AttentionSpec ms = makeSpec(spec::Variant::Mhsa, z, causal, bias);
      const std::string what = describe(o) + " vs " + describe(ms);
      SCOPED_TRACE(what);
      guarded(what, [&] {
        AttentionModule mhsa = buildDouble(ms, seed);
        perturbParameters(*mhsa, seed + 1);
        AttentionModule m = buildDouble(o, seed + 2);
        loadFrom(*m, *mhsa, o.core ? exactInitialCore(o) : Pairs{});
        const torch::Tensor x = randomInput(2, 5, z.F, seed + 3);
        torch::NoGradGuard noGrad;
        const AttentionOutput a = m->forward(x, withMaps());
        const AttentionOutput b = mhsa->forward(x, withMaps());
        expectClose(a.y, b.y, 1e-10, "y");
        ASSERT_TRUE(a.maps.defined());
        ASSERT_TRUE(b.maps.defined());
        const std::int64_t channels = a.maps.size(1);
        const torch::Tensor heads = torch::arange(channels, torch::kLong).div(headDivisor, "floor");
        expectClose(a.maps, b.maps.index_select(1, heads), 1e-10, "maps (channel r vs head r / D)");
      });
      ++seed;
    }
}

/// A structured core and the same C given as a dense core give the same layer.
void expectStructuredEqualsDense(spec::Variant v, const std::string& preset, std::uint32_t seed) {
  for (bool causal : {false, true}) {
    const spec::AttentionSpec structured = thsaPresetSpec(v, preset, 7, 3, 2, causal, true);
    const std::string what = describe(structured) + " vs dense";
    SCOPED_TRACE(what);
    guarded(what, [&] {
      AttentionModule a = buildDouble(structured, seed);
      perturbParameters(*a, seed + 1);  // moves A for skip_right; mhsa's core has nothing to train
      const torch::Tensor C = a->effectiveCore().detach().clone();
      spec::AttentionSpec dense = structured;
      dense.core = spec::CoreSpec{};
      dense.core->preset = "custom";
      dense.core->structure = spec::CoreStructure::Dense;
      dense.core->dense_values = std::vector<double>(C.data_ptr<double>(), C.data_ptr<double>() + C.numel());
      dense.core->trainable_mask.assign(static_cast<size_t>(C.numel()), 1);
      AttentionModule b = buildDouble(dense, seed + 2);
      loadFrom(*b, *a, {{"core", C}});
      const torch::Tensor x = randomInput(2, 5, 7, seed + 3);
      torch::NoGradGuard noGrad;
      const AttentionOutput ya = a->forward(x, {}), yb = b->forward(x, {});
      expectClose(ya.y, yb.y, 1e-10, "y (maps off)");
      const AttentionOutput ma = a->forward(x, withMaps()), mb = b->forward(x, withMaps());
      expectClose(ma.y, ya.y, 1e-12, "y with maps on vs off");
      expectClose(ma.maps, mb.maps, 1e-10, "maps");
    });
    ++seed;
  }
}

}  // namespace

TEST(AttentionCausal, HeadedVariantsDoNotLeakFutureTokens) {
  checkVariantNoLeak(spec::Variant::Mhsa);
  checkVariantNoLeak(spec::Variant::FixedHead);
  checkVariantNoLeak(spec::Variant::Tp);
}

TEST(AttentionCausal, ThsaAndThsaLinearDoNotLeakFutureTokens) {
  checkVariantNoLeak(spec::Variant::Thsa);
  checkVariantNoLeak(spec::Variant::ThsaLinear);
}

TEST(AttentionCausal, MultilinearDoesNotLeakFutureTokens) { checkVariantNoLeak(spec::Variant::Multilinear); }

TEST(AttentionCausal, DimwiseDoesNotLeakFutureTokens) { checkVariantNoLeak(spec::Variant::Dimwise); }

TEST(AttentionCausal, NonCausalLayersDoUseLaterTokens) {
  // The no-leak checks are not vacuous: without the mask, output 0 depends on the last token.
  std::uint32_t seed = 60;
  for (const Case& c0 : coveredCases(false, true, 61, false)) {
    Case c = c0;
    if (c.spec.variant == spec::Variant::Multilinear) c.spec.sizes.seq_len = std::max(c.spec.sizes.seq_len, 3);
    c.seq = c.spec.variant == spec::Variant::Multilinear ? c.spec.sizes.seq_len : std::max(c.seq, 3);
    SCOPED_TRACE(label(c));
    guarded(label(c), [&] {
      AttentionModule m = buildDouble(c.spec, ++seed);
      perturbParameters(*m, seed + 1);
      const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2);
      torch::Tensor x2 = x.clone();
      x2.select(1, c.seq - 1).add_(1.0);
      torch::NoGradGuard noGrad;
      EXPECT_GT(relativeError(m->forward(x2, {}).y.select(1, 0), m->forward(x, {}).y.select(1, 0)), 1e-8);
    });
  }
}

TEST(AttentionReductions, FixedHeadWithHeadSizeFOverHEqualsMhsa) {
  spec::Sizes z;
  z.H = 3;
  z.D = 2;
  z.F = 6;
  expectEqualsMhsa(makeSpec(spec::Variant::FixedHead, z, false, false), 3, 2, 10, 1);
}

TEST(AttentionReductions, ThsaPresetsEqualTheMhsaTheyName) {
  using spec::Variant;
  // mhsa: C = √H·(I_H ⊗ 1_D 1_Dᵀ) with THSA's 1/√R scale reproduces MHSA's 1/√D.
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "mhsa", 7, 3, 2, false, false), 3, 2, 20, 2);
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "mhsa", 5, 2, 4, false, false), 2, 4, 25, 4);
  // thsa (dense), skip_left and skip_right equal mhsa at init.
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "thsa", 7, 3, 2, false, false), 3, 2, 30, 2);
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "skip_left", 7, 3, 2, false, false), 3, 2, 40, 2);
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "skip_right", 7, 3, 2, false, false), 3, 2, 50, 2);
  // heads_only and trainable_heads_only (at init) equal mhsa(H, 1).
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "heads_only", 6, 4, 1, false, false), 4, 1, 60, 1);
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "trainable_heads_only", 6, 4, 1, false, false), 4, 1, 70, 1);
  // single_head: C = 1_R 1_Rᵀ, every channel shares one map with scale 1/√R = mhsa(1, R).
  expectEqualsMhsa(thsaPresetSpec(Variant::Thsa, "single_head", 7, 3, 2, false, false), 1, 6, 80, 6);
}

TEST(AttentionReductions, StructuredCoresEqualTheSameCoreGivenDensely) {
  // The mhsa and skip_right presets are contracted through their structure (H maps, not R); the
  // result must be the layer the materialised C defines. Also skip_left's rank-1 path.
  expectStructuredEqualsDense(spec::Variant::Thsa, "mhsa", 100);
  expectStructuredEqualsDense(spec::Variant::Thsa, "skip_right", 110);
  expectStructuredEqualsDense(spec::Variant::Thsa, "skip_left", 120);
  expectStructuredEqualsDense(spec::Variant::ThsaLinear, "skip_right", 130);
  expectStructuredEqualsDense(spec::Variant::ThsaLinear, "skip_left", 140);
  // The presets that the contract says cost what MHSA costs are built as the THSA module itself.
  for (const char* preset : {"mhsa", "skip_right"}) {
    AttentionModule m = buildDouble(thsaPresetSpec(spec::Variant::Thsa, preset, 7, 3, 2, false, false), 1);
    EXPECT_NE(dynamic_cast<ThsaImpl*>(m.get()), nullptr) << preset;
  }
}

TEST(AttentionReductions, CausalDimwiseAtTheLastTokenEqualsNonCausal) {
  // S⁽ᴺ⁾/√N = S/√N: the last position of the causal form is the non-causal layer's last position.
  spec::Sizes z;
  z.F = 7;
  z.R = 4;
  z.c = 3;
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    guarded("dimwise", [&] {
      AttentionModule causal = buildDouble(makeSpec(spec::Variant::Dimwise, z, true, bias), 5);
      perturbParameters(*causal, 6);
      AttentionModule plain = buildDouble(makeSpec(spec::Variant::Dimwise, z, false, bias), 7);
      plain->loadWeights(weightPairs(*causal, true));
      const torch::Tensor x = randomInput(2, 5, z.F, 8);
      torch::NoGradGuard noGrad;
      const AttentionOutput a = causal->forward(x, withMaps()), b = plain->forward(x, withMaps());
      expectClose(a.y.select(1, 4), b.y.select(1, 4), 1e-10, "last position");
      expectClose(a.maps, b.maps, 1e-10, "maps f(S⁽ᴺ⁾) = f(S)");
      EXPECT_GT(relativeError(a.y.select(1, 0), b.y.select(1, 0)), 1e-8) << "the first position must differ";
    });
  }
}

TEST(AttentionReductions, MultilinearIdenticalBlockTermsEqualOneBlockTerm) {
  // T = (1/P) Σ_p (...) with P identical cores is the P = 1 layer.
  spec::Sizes z;
  z.F = 6;
  z.R = 3;
  z.seq_len = 4;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "non-causal");
    guarded("multilinear", [&] {
      z.P = 1;
      AttentionModule one = buildDouble(makeSpec(spec::Variant::Multilinear, z, causal, true), 9);
      perturbParameters(*one, 10);
      z.P = 3;
      AttentionModule three = buildDouble(makeSpec(spec::Variant::Multilinear, z, causal, true), 11);
      Pairs pairs = weightPairs(*one, false);
      for (auto& [name, value] : pairs)
        if (name == "cores") value = value.expand({3, z.R}).contiguous();
      three->loadWeights(pairs);
      const torch::Tensor x = randomInput(2, 4, z.F, 12);
      torch::NoGradGuard noGrad;
      expectClose(three->forward(x, {}).y, one->forward(x, {}).y, 1e-10, "y");
    });
  }
}
