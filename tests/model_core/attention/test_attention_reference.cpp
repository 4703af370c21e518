// Every attention variant against its slow float64 reference (docs/attention-variants.md §§1–7): outputs,
// display maps and tp roles, for random small sizes, causal and not, bias and not, every THSA core
// preset, custom Kronecker cores of every factor kind and a dense core with a partial mask.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "reference.h"
#include "spec/core_spec.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::test;

namespace {

constexpr double kTol = 1e-10;

std::string label(const Case& c) {
  return describe(c.spec) + " B=" + std::to_string(c.batch) + " N=" + std::to_string(c.seq);
}

// Lower triangle including the diagonal (j <= i) of the last two axes.
torch::Tensor lowerTriangle(const torch::Tensor& t) { return at::tril(t.to(torch::kDouble)); }

/// Module (built with `seed`, optionally moved off its initial values) against the reference.
void checkCaseBody(const Case& c, std::uint64_t seed, bool perturb) {
  AttentionModule m = buildDouble(c.spec, seed);
  if (perturb) perturbParameters(*m, seed + 1);
  const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2);
  const Reference ref = referenceForward(c.spec, weightsOf(*m), x);
  torch::NoGradGuard noGrad;
  const AttentionOutput plain = m->forward(x, {});
  ForwardOptions all;
  all.with_maps = true;
  all.with_roles = true;
  const AttentionOutput full = m->forward(x, all);
  expectClose(plain.y, ref.y, kTol, "y (maps off)");
  expectClose(full.y, ref.y, kTol, "y (maps on)");
  EXPECT_EQ(plain.y.scalar_type(), torch::kDouble);
  if (c.spec.variant == spec::Variant::Multilinear && c.spec.causal) {
    // The contract defines A without a mask; a causal layer may hide j > i, so only j <= i is pinned.
    ASSERT_TRUE(full.maps.defined());
    expectClose(lowerTriangle(full.maps), lowerTriangle(ref.maps), kTol, "maps (j <= i)");
  } else {
    expectClose(full.maps, ref.maps, kTol, "maps");
  }
  if (c.spec.variant == spec::Variant::Tp) expectClose(full.roles, ref.roles, kTol, "roles");
  if (ref.map_parts.defined()) expectClose(full.map_parts, ref.map_parts, kTol, "both maps of each head");
}

void checkCase(const Case& c, std::uint64_t seed, bool perturb) {
  const std::string what = label(c) + (perturb ? " perturbed" : " at init");
  SCOPED_TRACE(what);
  guarded(what, [&] { checkCaseBody(c, seed, perturb); });
}

void checkAll(spec::Variant variant, bool presetsAtInit) {
  std::uint32_t seed = 100 + static_cast<std::uint32_t>(variant) * 17;
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (const Case& c : casesOf(variant, causal, bias, ++seed, true)) {
        checkCase(c, seed * 31, true);
        if (presetsAtInit) checkCase(c, seed * 31 + 7, false);
      }
}

// Only the cases of `variant` whose core is (or is not) a named preset / dense.
void checkThsaFamily(spec::Variant variant, bool wantPresets, bool wantDense) {
  std::uint32_t seed = 500 + static_cast<std::uint32_t>(variant) * 13 + (wantPresets ? 1 : 0) + (wantDense ? 2 : 0);
  int checked = 0;
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (const Case& c : casesOf(variant, causal, bias, ++seed, true)) {
        const bool isPreset = c.spec.core->preset != "custom";
        const bool isDense = c.spec.core->structure == spec::CoreStructure::Dense;
        if (isPreset != wantPresets || (!isPreset && isDense != wantDense)) continue;
        checkCase(c, seed * 7, true);
        if (isPreset) checkCase(c, seed * 7 + 3, false);
        ++checked;
      }
  EXPECT_GT(checked, 0);
}

void checkFloat64AndCore(const Case& c) {
  AttentionModule m = buildDouble(c.spec, 12);
  for (const NamedWeight& nw : m->namedWeights()) {
    EXPECT_EQ(nw.value.scalar_type(), torch::kDouble) << nw.name;
    if (!nw.derived()) {
      EXPECT_EQ(nw.target.scalar_type(), torch::kDouble) << nw.name;
    }
  }
  if (!spec::hasCore(c.spec.variant)) return;
  EXPECT_EQ(m->effectiveCore().scalar_type(), torch::kDouble);
  const int R = c.spec.sizes.R;
  const torch::Tensor fromSpec = torch::tensor(spec::effectiveCore(c.spec), torch::kDouble).reshape({R, R});
  WeightMap w = weightsOf(*m);
  ASSERT_EQ(w.count("core"), 1u);
  expectClose(w.at("core"), fromSpec, 1e-6, "core at init vs spec::effectiveCore");
  expectClose(m->effectiveCore(), fromSpec, 1e-6, "effectiveCore() at init");
  perturbParameters(*m, 13);
  w = weightsOf(*m);
  expectClose(w.at("core"), m->effectiveCore(), 1e-14, "core after parameter changes vs effectiveCore()");
}

}  // namespace

TEST(AttentionReference, MhsaFixedHeadAndTpMatchReference) {
  checkAll(spec::Variant::Mhsa, true);
  checkAll(spec::Variant::FixedHead, true);
  checkAll(spec::Variant::Tp, true);  // also the role vectors
}

TEST(AttentionReference, ThsaAndThsaLinearPresetsMatchReference) {
  checkThsaFamily(spec::Variant::Thsa, true, false);
  checkThsaFamily(spec::Variant::ThsaLinear, true, false);
}

TEST(AttentionReference, KroneckerCoresOfEveryFactorKindMatchReference) {
  checkThsaFamily(spec::Variant::Thsa, false, false);
  checkThsaFamily(spec::Variant::ThsaLinear, false, false);
}

TEST(AttentionReference, DenseCoresWithPartialTrainableMaskMatchReference) {
  checkThsaFamily(spec::Variant::Thsa, false, true);
  checkThsaFamily(spec::Variant::ThsaLinear, false, true);
}

TEST(AttentionReference, MultilinearMatchesEinsumReference) { checkAll(spec::Variant::Multilinear, true); }

TEST(AttentionReference, DimwiseMatchesKhatriRaoReference) { checkAll(spec::Variant::Dimwise, true); }

TEST(AttentionReference, LongerSequencesMatchReference) {
  // A few cases with more tokens than heads/channels, where layout mistakes show up.
  for (bool causal : {false, true}) {
    spec::Sizes z;
    z.F = 8;
    z.H = 2;
    z.D = 3;
    z.R = 6;
    z.c = 2;
    checkCase({makeSpec(spec::Variant::FixedHead, z, causal, true), 2, 9}, 901, true);
    checkCase({thsaPresetSpec(spec::Variant::Thsa, "skip_left", 8, 2, 3, causal, true), 2, 9}, 902, true);
    checkCase({thsaPresetSpec(spec::Variant::ThsaLinear, "skip_right", 8, 2, 3, causal, false), 2, 9}, 903, true);
    checkCase({makeSpec(spec::Variant::Dimwise, z, causal, false), 2, 9}, 904, true);
    z.seq_len = 7;
    checkCase({makeSpec(spec::Variant::Multilinear, z, causal, true), 2, 7}, 905, true);
  }
}

TEST(AttentionReference, Float32ModulesAgreeWithReference) {
  // The default (float32) modules follow the same equations; only rounding differs.
  for (bool causal : {false, true})
    for (const Case& c : coveredCases(causal, true, 77 + (causal ? 1 : 0), false)) {
      SCOPED_TRACE(label(c));
      torch::manual_seed(5);
      AttentionModule m = makeAttentionModule(c.spec);
      m->eval();
      const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, 6).to(torch::kFloat);
      const Reference ref = referenceForward(c.spec, weightsOf(*m), x);
      torch::NoGradGuard noGrad;
      const AttentionOutput out = m->forward(x, {});
      EXPECT_EQ(out.y.scalar_type(), torch::kFloat);
      expectClose(out.y, ref.y, 1e-4, "float32 y");
    }
}

TEST(AttentionReference, WeightsAreFloat64AndSavedCoreIsTheEffectiveCore) {
  // After module->to(kDouble) every saved tensor and C are float64. `core` [R, R] is the effective
  // C: the spec's materialised core at init, effectiveCore() always. Modules are built in float32
  // and then converted, so at init only float32 rounding is allowed.
  for (bool causal : {false, true})
    for (const Case& c : coveredCases(causal, true, 40 + (causal ? 1 : 0), true)) {
      SCOPED_TRACE(label(c));
      guarded(label(c), [&] { checkFloat64AndCore(c); });
    }
}

TEST(AttentionReference, DropoutActsOnlyInTrainingMode) {
  // Dropout is on the attention probabilities: eval mode is the reference layer; train mode with
  // p > 0 differs (and stays finite).
  for (const Case& c0 : coveredCases(false, true, 88, false)) {
    const spec::Variant v = c0.spec.variant;
    if (v == spec::Variant::ThsaLinear || v == spec::Variant::Multilinear) continue;  // no probabilities
    Case c = c0;
    c.spec.dropout = 0.5;
    c.seq = std::max(c.seq, 4);
    SCOPED_TRACE(label(c));
    guarded(label(c), [&] {
      AttentionModule m = buildDouble(c.spec, 21);
      const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, 22);
      const Reference ref = referenceForward(c.spec, weightsOf(*m), x);
      torch::NoGradGuard noGrad;
      expectClose(m->forward(x, {}).y, ref.y, kTol, "eval-mode y");
      m->train();
      torch::manual_seed(23);
      const torch::Tensor yTrain = m->forward(x, {}).y;
      EXPECT_TRUE(torch::isfinite(yTrain).all().item<bool>());
      EXPECT_GT(relativeError(yTrain, ref.y), 1e-6) << "dropout 0.5 changed nothing in training mode";
    });
  }
}
