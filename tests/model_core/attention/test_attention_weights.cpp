// Weight names and shapes as the contract lists them, loadWeights (round trip and every kind of
// rejection in one message), parameter counts against spec::parameterCount and the analytic
// formulas, input checks, and the multilinear memory guard.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention_module.h"
#include "attention/multilinear.h"
#include "reference.h"
#include "spec/validation.h"
#include "spec/core_spec.h"
#include "spec/cost_model.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::test;

namespace {

using Shape = std::vector<std::int64_t>;
using Pairs = std::vector<std::pair<std::string, torch::Tensor>>;

std::string label(const Case& c) {
  return describe(c.spec) + " B=" + std::to_string(c.batch) + " N=" + std::to_string(c.seq);
}

/// What the contract requires a weight file to hold.
struct Expected {
  std::map<std::string, Shape> required;         // name -> shape
  std::map<std::string, bool> derived;           // for required names whose derived flag is pinned
  std::map<std::string, Shape> optional;         // may be present (identity / ones factors)
};

Expected expectedWeights(const spec::AttentionSpec& s) {
  const spec::Sizes& z = s.sizes;
  const std::int64_t F = z.F;
  Expected e;
  auto linear = [&](const std::string& name, std::int64_t out, std::int64_t in) {
    e.required[name + ".weight"] = {out, in};
    e.derived[name + ".weight"] = false;
    if (s.bias) {
      e.required[name + ".bias"] = {out};
      e.derived[name + ".bias"] = false;
    }
  };
  switch (s.variant) {
    case spec::Variant::Mhsa:
    case spec::Variant::FixedHead:
    case spec::Variant::Tp: {
      const auto& slot = s.slots;
      if (slot.tpa.enabled()) {  // §8.7: T6's names, no biases
        const auto& t = slot.tpa;
        const int ranks[3] = {t.q_rank, t.k_rank, t.v_rank};
        const char* names[3] = {"q", "k", "v"};
        if (t.q_rank == 0) linear("wq", static_cast<std::int64_t>(z.H) * z.D, F);
        for (int i = 0; i < 3; ++i) {
          if (ranks[i] == 0) continue;
          const std::string v = names[i];
          if (t.contextual_a) {
            linear("W_A_" + v, static_cast<std::int64_t>(z.H) * ranks[i], F);
          } else {
            e.required["A_" + v] = {z.H, ranks[i]};
            e.derived["A_" + v] = false;
          }
          if (t.contextual_b) {
            linear("W_B_" + v, static_cast<std::int64_t>(ranks[i]) * z.D, F);
          } else {
            e.required["B_" + v] = {ranks[i], z.D};
            e.derived["B_" + v] = false;
          }
        }
        if (t.group_norm) {
          e.required["subln.weight"] = {z.D};
          e.derived["subln.weight"] = false;
        }
        linear("wo", F, static_cast<std::int64_t>(z.H) * z.D);
        break;
      }
      if (slot.latent.enabled()) {  // §8.6: the official MLA names, no biases
        const auto& l = slot.latent;
        const std::int64_t Hq = static_cast<std::int64_t>(z.H) * (z.D + l.rope_dim);
        if (l.q_rank == 0) {
          linear("wq", Hq, F);
        } else {
          linear("wq_a", l.q_rank, F);
          e.required["q_norm.weight"] = {l.q_rank};
          e.derived["q_norm.weight"] = false;
          linear("wq_b", Hq, l.q_rank);
        }
        linear("wkv_a", l.kv_rank + l.rope_dim, F);
        e.required["kv_norm.weight"] = {l.kv_rank};
        e.derived["kv_norm.weight"] = false;
        linear("wkv_b", 2LL * z.H * z.D, l.kv_rank);
        linear("wo", F, static_cast<std::int64_t>(z.H) * z.D);
        break;
      }
      if (slot.collaborative.enabled()) {  // §8.9: epfml's names; query, key and content bias never biased
        const std::int64_t Dk = slot.collaborative.key_dim, HD = static_cast<std::int64_t>(z.H) * z.D;
        const auto weightOnly = [&](const std::string& name, std::vector<std::int64_t> shape) {
          e.required[name] = std::move(shape);
          e.derived[name] = false;
        };
        weightOnly("wq.weight", {Dk, F});
        weightOnly("wk.weight", {Dk, F});
        weightOnly("mixing", {z.H, Dk});
        if (slot.collaborative.content_bias) weightOnly("content_bias.weight", {z.H, F});
        linear("wv", HD, F);
        if (slot.gate != spec::Gate::None) linear("wg", slot.gate == spec::Gate::Headwise ? z.H : HD, F);
        linear("wo", F, HD);
        break;
      }
      if (slot.differential) {  // §8.5: two maps of size D and a value of size 2D per head
        const std::int64_t HD2 = 2LL * z.H * z.D, GD2 = 2LL * (slot.kv_groups > 0 ? slot.kv_groups : z.H) * z.D;
        linear("wq", HD2, F);
        linear("wk", GD2, F);
        linear("wv", GD2, F);
        linear("wo", F, HD2);
        for (const char* n : {"lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"}) {
          e.required[n] = {z.D};
          e.derived[n] = false;
        }
        e.required["subln.weight"] = {2LL * z.D};
        e.derived["subln.weight"] = false;
        break;
      }
      const std::int64_t HD = static_cast<std::int64_t>(z.H) * z.D;
      // Section 8's slots: G key/value heads, the H x H mixings, the gate.
      const std::int64_t GD = static_cast<std::int64_t>(slot.kv_groups > 0 ? slot.kv_groups : z.H) * z.D;
      linear("wq", HD, F);
      linear("wk", GD, F);
      linear("wv", GD, F);
      if (s.variant == spec::Variant::Tp) linear("wr", HD, F);
      if (slot.gate != spec::Gate::None) linear("wg", slot.gate == spec::Gate::Headwise ? z.H : HD, F);
      for (const auto& [on, name] : {std::pair{slot.pre_mix, "mix_pre"}, std::pair{slot.post_mix, "mix_post"}})
        if (on) {
          e.required[name] = {z.H, z.H};
          e.derived[name] = false;
        }
      // §8.8 (multi-token attention): RAM's names; the kernels [H, c_q, c_k] (the official
      // [H, 1, c_q, c_k] without its 1), the head convolution [H/g, g, g], the norm γ [D] and the
      // gate Linear(D, 1 or D) with its bias.
      const auto& mta = slot.mta;
      auto param = [&](const std::string& name, Shape shape) {
        e.required[name] = std::move(shape);
        e.derived[name] = false;
      };
      if (mta.q_kernel > 0) param("mta_kernel", {z.H, mta.q_kernel, mta.k_kernel});
      if (mta.post_q_kernel > 0) param("mta_kernel_after_sm", {z.H, mta.post_q_kernel, mta.post_k_kernel});
      if (mta.head_group > 0) param("head_kernel", {z.H / mta.head_group, mta.head_group, mta.head_group});
      if (mta.group_norm) param("subln.weight", {z.D});
      if (mta.out_gate != spec::Gate::None) {
        const std::int64_t outs = mta.out_gate == spec::Gate::Headwise ? 1 : z.D;
        param("gate.weight", {outs, z.D});
        param("gate.bias", {outs});
      }
      linear("wo", F, HD);
      break;
    }
    case spec::Variant::Thsa:
    case spec::Variant::ThsaLinear: {
      const std::int64_t R = z.R, H = z.H, D = z.D;
      for (const char* n : {"wq", "wk", "wv"}) linear(n, R, F);
      linear("wo", F, R);
      e.required["core"] = {R, R};
      const spec::CoreSpec& core = *s.core;
      if (core.structure == spec::CoreStructure::Dense) {
        if (!core.isFrozen()) e.derived["core"] = false;
        break;
      }
      e.derived["core"] = true;  // structured: C follows from the factors
      if (core.structure == spec::CoreStructure::LowRank) {  // C = U·Vᵀ: core.U and core.V [R, ρ]
        for (const char* name : {"core.U", "core.V"}) {
          e.required[name] = {R, core.rank};
          if (core.factors_trainable) e.derived[name] = false;
        }
        break;
      }
      auto factor = [&](const std::string& name, spec::FactorKind kind, std::int64_t n) {
        switch (kind) {
          case spec::FactorKind::Trainable:
            e.required[name] = {n, n};
            e.derived[name] = false;
            break;
          case spec::FactorKind::Fixed: e.required[name] = {n, n}; break;
          case spec::FactorKind::Rank1:
            e.required["core.c2"] = {n};
            e.required["core.c3"] = {n};
            if (core.b.trainable_rank1) e.derived["core.c2"] = e.derived["core.c3"] = false;
            break;
          case spec::FactorKind::Identity:
          case spec::FactorKind::Ones: e.optional[name] = {n, n}; break;
        }
      };
      factor("core.A", core.a.kind, H);
      factor("core.B", core.b.kind, D);
      break;
    }
    case spec::Variant::Multilinear: {
      const std::int64_t R = z.R, N = z.seq_len;
      for (const char* n : {"wq", "wk", "wv"}) linear(n, R, F);
      e.required["cores"] = {z.P, R};
      e.derived["cores"] = false;
      linear("wo", F, N * N);
      break;
    }
    case spec::Variant::Dimwise: {
      const std::int64_t d = z.R, c = z.c;
      for (const char* n : {"wq", "wk", "wv"}) linear(n, d, F);
      e.required["conv"] = {c, d, d};
      e.derived["conv"] = false;
      linear("wo", F, c * d);
      break;
    }
  }
  return e;
}

void checkWeightNames(const Case& c) {
  torch::manual_seed(1);
  AttentionModule m = makeAttentionModule(c.spec);
  const Expected e = expectedWeights(c.spec);
  std::set<std::string> seen;
  for (const NamedWeight& nw : m->namedWeights()) {
    EXPECT_TRUE(seen.insert(nw.name).second) << "duplicate weight name " << nw.name;
    const Shape shape = nw.value.sizes().vec();
    if (auto it = e.required.find(nw.name); it != e.required.end()) {
      EXPECT_EQ(shape, it->second) << nw.name;
    } else if (auto opt = e.optional.find(nw.name); opt != e.optional.end()) {
      EXPECT_EQ(shape, opt->second) << nw.name;
    } else {
      ADD_FAILURE() << "weight '" << nw.name << "' is not a contract name for " << describe(c.spec);
    }
    if (auto d = e.derived.find(nw.name); d != e.derived.end()) {
      EXPECT_EQ(nw.derived(), d->second) << nw.name << (d->second ? " must be derived" : " must be loadable");
    }
    if (!nw.derived()) {
      EXPECT_EQ(nw.target.sizes().vec(), shape) << nw.name << ": value and target differ in shape";
    }
  }
  for (const auto& [name, shape] : e.required) EXPECT_TRUE(seen.count(name)) << "missing weight " << name;
}

/// Independent of spec::parameterCount: the formulas of the contract and docs/cost-model.md.
std::int64_t analyticCount(const spec::AttentionSpec& s) {
  const spec::Sizes& z = s.sizes;
  const std::int64_t F = z.F, H = z.H, D = z.D, R = z.R, HD = H * D;
  const std::int64_t b = s.bias ? 1 : 0;
  switch (s.variant) {
    case spec::Variant::Mhsa:
    case spec::Variant::FixedHead: {
      // Section 8: W^K, W^V of G heads; Cᵖʳᵉ, C′ H x H each; W^G [H·D or H, F].
      const auto& slot = s.slots;
      // §8.5: W^Q, W^K, W^V [2HD, F], W^O [F, 2HD], four λ vectors [D] and the norm's γ [2D].
      // §8.6: W^Q [H(D + r), F] or W^Q_a [q, F], its norm γ [q], W^Q_b [H(D + r), q]; W^KV_a [L + r, F],
      // its norm γ [L], W^KV_b [2HD, L], W^O [F, HD].
      // §8.7: per factorised projection (rank R) W_A [H·R, F] (or constant A [H, R]) and W_B [R·D, F];
      // W^Q [HD, F] when R_Q = 0; W^O [F, HD] (paper Table 1: F·(R_Q + R_K + R_V)·(H + D) + F·H·D);
      // constant feature factors B [R, D] in place of W_B; T6's head norm γ [D].
      if (slot.tpa.enabled()) {
        const auto& t = slot.tpa;
        std::int64_t total = HD * F + (t.q_rank == 0 ? F * HD : 0) + (t.group_norm ? D : 0);
        for (const std::int64_t R : {t.q_rank, t.k_rank, t.v_rank})
          total += R * D * (t.contextual_b ? F : 1) + (t.contextual_a ? F : 1) * H * R;
        return total;
      }
      if (slot.latent.enabled()) {
        const std::int64_t L = slot.latent.kv_rank, q = slot.latent.q_rank, r = slot.latent.rope_dim;
        const std::int64_t query = q == 0 ? F * H * (D + r) : F * q + q + q * H * (D + r);
        return query + F * (L + r) + L + 2 * HD * L + HD * F;
      }
      if (slot.collaborative.enabled()) {  // §8.9: 2·F·D̃ + H·D̃ (+ F·H) + W^V, W^O and the gate
        const std::int64_t Dk = slot.collaborative.key_dim;
        const std::int64_t gates = slot.gate == spec::Gate::None ? 0 : slot.gate == spec::Gate::Headwise ? H : HD;
        return 2 * F * Dk + H * Dk + (slot.collaborative.content_bias ? F * H : 0) + 2 * F * HD + F * gates +
               b * (HD + F + gates);
      }
      const std::int64_t GD = (slot.kv_groups > 0 ? slot.kv_groups : H) * D;
      if (slot.differential) return 4 * F * HD + 4 * F * GD + 6 * D + b * (2 * HD + 4 * GD + F);
      // §8.8: H·c_q·c_k per convolution, H·g for the head convolution, D for the norm, D + 1 or
      // D·D + D for the gate.
      const auto& mta = slot.mta;
      const std::int64_t mtaCount = H * mta.q_kernel * mta.k_kernel + H * mta.post_q_kernel * mta.post_k_kernel +
                                    H * mta.head_group + (mta.group_norm ? D : 0) +
                                    (mta.out_gate == spec::Gate::None       ? 0
                                     : mta.out_gate == spec::Gate::Headwise ? D + 1
                                                                             : D * D + D);
      const std::int64_t gates = slot.gate == spec::Gate::None ? 0 : slot.gate == spec::Gate::Headwise ? H : HD;
      // A drawn mixing trains only the entries its mask leaves trainable (an empty mask: all H·H).
      const auto mixing = [H](bool on, const spec::HeadMixing& m) -> std::int64_t {
        if (!on) return 0;
        if (m.trainable_mask.empty()) return H * H;
        return std::count(m.trainable_mask.begin(), m.trainable_mask.end(), 1);
      };
      return 2 * F * HD + 2 * F * GD + mixing(slot.pre_mix, slot.pre_mixing) + mixing(slot.post_mix, slot.post_mixing) +
             F * gates + mtaCount + b * (HD + 2 * GD + F + gates);
    }
    case spec::Variant::Tp: return 5 * F * HD + b * (4 * HD + F);
    case spec::Variant::Thsa:
    case spec::Variant::ThsaLinear: {
      std::int64_t core = 0;
      const spec::CoreSpec& c = *s.core;
      if (c.structure == spec::CoreStructure::Dense) {
        for (unsigned char t : c.trainable_mask) core += t ? 1 : 0;
      } else if (c.structure == spec::CoreStructure::LowRank) {
        core = c.factors_trainable ? 2 * R * c.rank : 0;
      } else {
        if (c.a.kind == spec::FactorKind::Trainable) core += H * H;
        if (c.b.kind == spec::FactorKind::Trainable) core += D * D;
        if (c.b.kind == spec::FactorKind::Rank1 && c.b.trainable_rank1) core += 2 * D;
      }
      return 4 * F * R + b * (3 * R + F) + core;
    }
    case spec::Variant::Multilinear: {
      const std::int64_t N = z.seq_len;
      return 3 * F * R + F * N * N + z.P * R + b * (3 * R + F);
    }
    case spec::Variant::Dimwise: return 3 * F * R + F * z.c * R + z.c * R * R + b * (3 * R + F);
  }
  return -1;
}

void checkCounts(const spec::AttentionSpec& s, const std::string& what) {
  SCOPED_TRACE(what);
  torch::manual_seed(2);
  AttentionModule m = makeAttentionModule(s);
  const std::int64_t count = m->trainableParameterCount();
  EXPECT_EQ(count, spec::parameterCount(s));
  EXPECT_EQ(count, analyticCount(s));
  std::int64_t requiresGrad = 0;
  for (const torch::Tensor& p : m->parameters())
    if (p.requires_grad()) requiresGrad += p.numel();
  // A dense core with a partial mask may train one [R, R] tensor whose frozen entries are masked,
  // so only there may more scalars require grad than are trained.
  const bool partialDense = s.core && s.core->structure == spec::CoreStructure::Dense && !s.core->isFrozen() &&
                            s.core->trainableCount(s.sizes.H, s.sizes.D, s.sizes.R) <
                                static_cast<long long>(s.sizes.R) * s.sizes.R;
  // Likewise a head mixing with frozen entries (one [H, H] parameter, its frozen entries masked).
  const auto partial = [](const spec::HeadMixing& m) {
    return std::count(m.trainable_mask.begin(), m.trainable_mask.end(), 0) > 0;
  };
  if (partialDense || partial(s.slots.pre_mixing) || partial(s.slots.post_mixing)) {
    EXPECT_GE(requiresGrad, count) << "scalars that require grad";
  } else {
    EXPECT_EQ(requiresGrad, count) << "scalars that require grad";
  }
}

void expectRejected(AttentionModuleImpl& m, const Pairs& pairs, const std::vector<std::string>& mentions) {
  try {
    m.loadWeights(pairs);
    ADD_FAILURE() << "loadWeights accepted bad weights";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    for (const std::string& part : mentions)
      EXPECT_NE(what.find(part), std::string::npos) << "message lacks '" << part << "':\n" << what;
  }
}

Pairs without(Pairs pairs, const std::string& name) {
  std::erase_if(pairs, [&](const auto& p) { return p.first == name; });
  return pairs;
}

Pairs replaced(Pairs pairs, const std::string& name, const torch::Tensor& value) {
  for (auto& p : pairs)
    if (p.first == name) p.second = value;
  return pairs;
}

}  // namespace

TEST(AttentionWeights, NamesAndShapesFollowTheContract) {
  // Every covered configuration, then every spec preset.
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (const Case& c : coveredCases(causal, bias, 200 + (causal ? 2 : 0) + (bias ? 1 : 0), true)) {
        SCOPED_TRACE(label(c));
        guarded(label(c), [&] { checkWeightNames(c); });
      }
  for (const std::string& name : spec::specPresetNames()) {
    const spec::AttentionSpec s = spec::makeSpecPreset(name);
    SCOPED_TRACE(name);
    guarded(name, [&] { checkWeightNames({s, 1, s.sizes.seq_len}); });
  }
  // Trainable factors start at the spec's values: skip_right A = √H·I, skip_left c₂ = c₃ = H^¼·1
  // (float32 init, so float32 tolerance).
  const int H = 3, D = 2;
  AttentionModule right = buildDouble(thsaPresetSpec(spec::Variant::Thsa, "skip_right", 5, H, D, false, false), 1);
  AttentionModule left = buildDouble(thsaPresetSpec(spec::Variant::Thsa, "skip_left", 5, H, D, false, false), 1);
  const WeightMap wr = weightsOf(*right), wl = weightsOf(*left);
  ASSERT_EQ(wr.count("core.A"), 1u);
  ASSERT_EQ(wl.count("core.c2"), 1u);
  ASSERT_EQ(wl.count("core.c3"), 1u);
  expectClose(wr.at("core.A"), std::sqrt(3.0) * torch::eye(H, torch::kDouble), 1e-6, "skip_right A");
  expectClose(wl.at("core.c2"), std::pow(3.0, 0.25) * torch::ones({D}, torch::kDouble), 1e-6, "skip_left c2");
  expectClose(wl.at("core.c3"), std::pow(3.0, 0.25) * torch::ones({D}, torch::kDouble), 1e-6, "skip_left c3");
}

TEST(AttentionWeights, TrainableCountEqualsSpecParameterCount) {
  // Every spec preset (default sizes), then every covered configuration.
  for (const std::string& name : spec::specPresetNames())
    for (bool bias : {false, true}) {
      spec::AttentionSpec s = spec::makeSpecPreset(name);
      s.bias = bias;
      if (bias && (s.slots.latent.enabled() || s.slots.tpa.enabled())) {  // MLA and TPA have no biases (§8.6, §8.7)
        EXPECT_FALSE(spec::validate(s).empty()) << name;
        continue;
      }
      guarded(name, [&] { checkCounts(s, name + (bias ? " bias" : " no-bias")); });
    }
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (const Case& c : coveredCases(causal, bias, 210 + (causal ? 2 : 0) + (bias ? 1 : 0), true))
        guarded(label(c), [&] { checkCounts(c.spec, label(c)); });
}

TEST(AttentionWeights, LoadWeightsRoundTripGivesIdenticalOutputs) {
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (const Case& c : coveredCases(causal, bias, 220 + (causal ? 2 : 0) + (bias ? 1 : 0), true)) {
        SCOPED_TRACE(label(c));
        guarded(label(c), [&] {
          AttentionModule a = buildDouble(c.spec, 1);
          perturbParameters(*a, 2);
          AttentionModule b = buildDouble(c.spec, 3);
          AttentionModule d = buildDouble(c.spec, 4);
          b->loadWeights(weightPairs(*a, true));   // everything, derived entries included
          d->loadWeights(weightPairs(*a, false));  // parameters only
          const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, 5);
          torch::NoGradGuard noGrad;
          const torch::Tensor ya = a->forward(x, {}).y;
          expectClose(b->forward(x, {}).y, ya, 0.0, "y after loading all weights");
          expectClose(d->forward(x, {}).y, ya, 0.0, "y after loading parameters only");
          const WeightMap wa = weightsOf(*a), wb = weightsOf(*b);
          ASSERT_EQ(wa.size(), wb.size());
          for (const auto& [name, value] : wa) expectClose(wb.at(name), value, 0.0, "weight " + name);
        });
      }
}

TEST(AttentionWeights, LoadWeightsReportsEveryProblemInOneMessage) {
  for (spec::Variant v : {spec::Variant::Thsa, spec::Variant::ThsaLinear}) {
    const spec::AttentionSpec s = thsaPresetSpec(v, "skip_right", 5, 2, 3, false, true);
    SCOPED_TRACE(describe(s));
    guarded(describe(s), [&] {
      AttentionModule m = buildDouble(s, 1);
      const torch::Tensor x = randomInput(2, 4, 5, 2);
      torch::Tensor before;
      {
        torch::NoGradGuard noGrad;
        before = m->forward(x, {}).y;
      }
      const Pairs good = weightPairs(*m, true);
      const torch::Tensor core = weightsOf(*m).at("core");
      Pairs bad = without(good, "wq.weight");
      bad = replaced(bad, "wk.weight", torch::zeros({7, 5}, torch::kDouble));
      bad = replaced(bad, "core", core + 1.0);
      bad.emplace_back("bogus.weight", torch::zeros({3}, torch::kDouble));
      expectRejected(*m, bad, {"wq.weight", "wk.weight", "bogus.weight", "core"});
      torch::NoGradGuard noGrad;
      expectClose(m->forward(x, {}).y, before, 0.0, "a rejected load must leave the module unchanged");
    });
  }
}

TEST(AttentionWeights, LoadWeightsRejectsEachProblemAlone) {
  for (const Case& c : coveredCases(false, true, 230, false)) {
    SCOPED_TRACE(label(c));
    guarded(label(c), [&] {
      AttentionModule m = buildDouble(c.spec, 1);
      const Pairs good = weightPairs(*m, true);
      m->loadWeights(good);  // the module's own weights are accepted
      expectRejected(*m, without(good, "wv.weight"), {"wv.weight"});
      Pairs unknown = good;
      unknown.emplace_back("wz.weight", torch::zeros({2, 2}, torch::kDouble));
      expectRejected(*m, unknown, {"wz.weight"});
      const torch::Tensor wo = weightsOf(*m).at("wo.weight");
      expectRejected(*m, replaced(good, "wo.weight", torch::zeros({wo.size(0), wo.size(1) + 1}, torch::kDouble)),
                     {"wo.weight"});
      if (c.spec.core && c.spec.core->structure == spec::CoreStructure::Kronecker) {
        const torch::Tensor core = weightsOf(*m).at("core");
        torch::Tensor off = core.clone();
        off[0][core.size(1) - 1].add_(0.5);
        expectRejected(*m, replaced(good, "core", off), {"core"});
      }
    });
  }
}

TEST(AttentionWeights, RejectedLoadLeavesTheModuleUnchanged) {
  // Valid weights of another module plus one inconsistent derived `core`: the load is refused,
  // and the module must still compute what it computed before (no partial copy).
  for (const char* preset : {"mhsa", "skip_left", "skip_right"}) {
    const spec::AttentionSpec s = thsaPresetSpec(spec::Variant::Thsa, preset, 5, 2, 3, true, true);
    SCOPED_TRACE(describe(s));
    guarded(describe(s), [&] {
      AttentionModule m = buildDouble(s, 1);
      AttentionModule other = buildDouble(s, 2);
      perturbParameters(*other, 3);
      const torch::Tensor x = randomInput(2, 4, 5, 4);
      torch::Tensor before;
      {
        torch::NoGradGuard noGrad;
        before = m->forward(x, {}).y;
      }
      const Pairs pairs = weightPairs(*other, true);
      expectRejected(*m, replaced(pairs, "core", weightsOf(*other).at("core") + 0.5), {"core"});
      torch::NoGradGuard noGrad;
      expectClose(m->forward(x, {}).y, before, 0.0, "y after a rejected load");
    });
  }
}

TEST(AttentionWeights, WrongInputsAndInvalidSpecsAreRejected) {
  for (const Case& c : coveredCases(true, false, 240, false)) {
    SCOPED_TRACE(label(c));
    torch::manual_seed(1);
    AttentionModule m = makeAttentionModule(c.spec);
    const int F = c.spec.sizes.F, N = c.seq;
    EXPECT_THROW(m->forward(torch::randn({c.batch, N, F + 1}), {}), std::invalid_argument);
    EXPECT_THROW(m->forward(torch::randn({N, F}), {}), std::invalid_argument);
    if (c.spec.variant == spec::Variant::Multilinear) {
      EXPECT_THROW(m->forward(torch::randn({c.batch, N + 1, F}), {}), std::invalid_argument);
    }
  }
  // An invalid spec is refused when building.
  spec::AttentionSpec s = makeSpec(spec::Variant::Thsa, spec::Sizes{}, false, false);  // no core
  EXPECT_THROW(makeAttentionModule(s), std::invalid_argument);
  s.variant = spec::Variant::Mhsa;
  s.sizes.H = 0;
  EXPECT_THROW(makeAttentionModule(s), std::invalid_argument);
}

TEST(AttentionMemoryGuard, MultilinearRefusesTooLargeBatchesBeforeAllocating) {
  {
    // B·N·R = 2^24·2^7 = 2^31 values for each of q, k, v, a and the work tensors (T, which the CPU
    // path never forms, would be B·N³ = 2^45): tens of GiB. The input is an expanded view (no
    // memory); the guard must refuse before any B·N-sized intermediate exists.
    spec::Sizes z;
    z.F = 1;
    z.R = 1;
    z.P = 1;
    z.seq_len = 128;
    torch::manual_seed(1);
    AttentionModule m = makeAttentionModule(makeSpec(spec::Variant::Multilinear, z, true, false));
    const torch::Tensor x = torch::zeros({1, 128, 1}).expand({1 << 24, 128, 1});
    try {
      torch::NoGradGuard noGrad;
      m->forward(x, {});
      ADD_FAILURE() << "a multilinear batch of tens of GiB was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << firstLine(e.what());
    }
  }
  // The limit is adjustable: a batch just under it runs, one over it is refused.
  spec::Sizes z;
  z.F = 4;
  z.R = 3;
  z.P = 2;
  z.seq_len = 6;
  const spec::AttentionSpec s = makeSpec(spec::Variant::Multilinear, z, false, false);
  AttentionModule m = buildDouble(s, 1);
  auto* ml = dynamic_cast<MultilinearImpl*>(m.get());
  ASSERT_NE(ml, nullptr);
  const torch::Tensor small = randomInput(1, 6, 4, 2);
  const torch::Tensor big = randomInput(64, 6, 4, 3);
  const double bigBytes = spec::estimateCost(s, 64, 6, 8).activation_bytes;
  const double smallBytes = spec::estimateCost(s, 1, 6, 8).activation_bytes;
  ASSERT_LT(smallBytes, bigBytes);
  ml->setMaxActivationBytes(0.5 * (smallBytes + bigBytes));
  torch::NoGradGuard noGrad;
  EXPECT_NO_THROW(m->forward(small, {}));
  try {
    m->forward(big, {});
    ADD_FAILURE() << "a batch over the limit was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << firstLine(e.what());
  }
  ml->setMaxActivationBytes(4.0 * bigBytes);
  EXPECT_NO_THROW(m->forward(big, {}));
}
