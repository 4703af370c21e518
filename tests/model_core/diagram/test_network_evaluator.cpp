// The tensor diagram computes the layer: for every variant, every THSA core preset and custom
// Kronecker cores of every factor kind, causal and not, with and without biases, at random
// sizes, the network's plan evaluated on the module's weights equals the module's forward
// (float64, 1e-9 relative), display maps included.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <random>

#include "attention/attention_module.h"
#include "diagram/network_evaluator.h"
#include "model_core/diagram_check.h"
#include "spec/spec_json.h"
#include "spec/tensor_network.h"

namespace tensorscope::model_core {
namespace {

using spec::AttentionSpec;
using spec::FactorKind;

struct RandomSizes {
  std::mt19937 rng;
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  double normal() { return std::normal_distribution<double>(0.0, 1.0)(rng); }

  /// A spec of `preset` (a variant or core preset) at small random sizes.
  AttentionSpec spec(const std::string& preset, bool causal, bool bias) {
    auto s = spec::makeSpecPreset(preset);
    s.sizes.F = pick(2, 7);
    s.sizes.H = pick(1, 3);
    s.sizes.D = pick(1, 3);
    s.sizes.R = pick(1, 5);
    s.sizes.P = pick(1, 3);
    s.sizes.c = pick(1, 3);
    s.sizes.seq_len = pick(1, 5);
    s.dropout = 0.1;  // the diagram is the inference forward: dropout is off
    if (s.core) {
      if (s.core->preset == "heads_only" || s.core->preset == "trainable_heads_only") s.sizes.D = 1;
      s.sizes.R = s.sizes.H * s.sizes.D;
      s.core = spec::makeCorePreset(s.core->preset, s.sizes.H, s.sizes.D);
    }
    if (s.variant == spec::Variant::ThsaLinear || s.variant == spec::Variant::Multilinear) s.dropout = 0;
    s.causal = causal;
    s.bias = bias && !s.slots.latent.enabled() && !s.slots.tpa.enabled();  // MLA and TPA have no biases (§8.6, §8.7)
    return s;
  }

  spec::CoreFactor factor(FactorKind k, int n, bool trainableRank1 = true) {
    spec::CoreFactor f;
    f.kind = k;
    f.trainable_rank1 = trainableRank1;
    const int count = k == FactorKind::Fixed || k == FactorKind::Trainable ? n * n : k == FactorKind::Rank1 ? 2 * n : 0;
    for (int i = 0; i < count; ++i) f.values.push_back(normal());
    return f;
  }
};

void expectMatches(const AttentionSpec& s, std::uint64_t seed) {
  const auto c = checkDiagram(s, 1 + static_cast<std::int64_t>(seed % 3), 1 + static_cast<std::int64_t>(seed % 5), seed);
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_LE(c.max_abs_diff_y, 1e-10) << c.message;
  EXPECT_LE(c.max_abs_diff_maps, 1e-10) << c.message;
}

const char* const kVariants[] = {"mhsa", "fixed_head", "thsa", "thsa_linear", "tp", "multilinear", "dimwise"};

TEST(DiagramEvaluator, EveryVariantMatchesTheModule) {
  RandomSizes r{std::mt19937(11)};
  std::uint64_t seed = 100;
  for (const char* v : kVariants)
    for (bool causal : {false, true})
      for (bool bias : {false, true})
        for (int trial = 0; trial < 3; ++trial) {
          auto s = r.spec(v, causal, bias);
          s.core_softmax = trial != 1;
          SCOPED_TRACE(std::string(v) + (causal ? " causal" : "") + (bias ? " bias" : ""));
          expectMatches(s, ++seed);
        }
}

TEST(DiagramEvaluator, MlaInBothOrdersMatchesTheModule) {
  // Multi-head latent attention (§8.6): one network, the plan in the naive or the absorbed order;
  // a full W^Q or a query latent; a rotary part or none (then no sum of logits).
  RandomSizes r{std::mt19937(17)};
  std::uint64_t seed = 300;
  for (auto order : {spec::LatentOrder::Naive, spec::LatentOrder::Absorbed})
    for (int qRank : {0, 3})
      for (int rope : {0, 2, 4})
        for (bool causal : {false, true}) {
          auto s = r.spec("mla", causal, false);
          s.slots.latent = {r.pick(1, 5), qRank, rope, order};
          SCOPED_TRACE(spec::toJson(s, -1));
          expectMatches(s, ++seed);
        }
}

TEST(DiagramEvaluator, TpaMatchesTheModule) {
  // Tensor product attention (§8.7): contextual or constant head factors, constant feature factors
  // (then the head factors are contextual), factorised or MHSA queries (T6_kvonly), the half-split
  // rotary on the feature factors (two bases) or off, T6's head norm with a constant-factor form.
  RandomSizes r{std::mt19937(19)};
  std::uint64_t seed = 400;
  for (int factors = 0; factors < 3; ++factors)
    for (int qRank : {0, 2})
      for (double base : {0.0, 10000.0, 30.0})
        for (bool causal : {false, true}) {
          auto s = r.spec("tpa", causal, false);
          s.sizes.D = 2 * r.pick(1, 2);
          s.slots.tpa.q_rank = qRank;
          s.slots.tpa.k_rank = r.pick(1, 3);
          s.slots.tpa.v_rank = r.pick(1, 3);
          s.slots.tpa.contextual_a = factors != 1;
          s.slots.tpa.contextual_b = factors != 2;
          s.slots.tpa.group_norm = factors != 0;
          s.slots.tpa.rope = base > 0;
          if (base > 0) s.slots.tpa.rope_base = base;
          SCOPED_TRACE(spec::toJson(s, -1));
          expectMatches(s, ++seed);
        }
}

TEST(DiagramEvaluator, CollaborativeMatchesTheModule) {
  // Collaborative attention (§8.9): the three-tensor logits Q̃·M·K̃ over the shared key leg, the
  // content bias added before the softmax (or absent), the 1/√(D̃/H) box scale with D̃ below, at and
  // above H·D (not a multiple of H), biases only on W^V and W^O, the gate of slot (d).
  RandomSizes r{std::mt19937(29)};
  std::uint64_t seed = 700;
  for (int form = 0; form < 3; ++form)
    for (bool causal : {false, true})
      for (bool bias : {false, true}) {
        auto s = r.spec("collaborative", causal, bias);
        auto& c = s.slots.collaborative;
        c.key_dim = form == 0 ? 5 : form == 1 ? s.sizes.H * s.sizes.D : 2 * s.sizes.H * s.sizes.D + 1;
        c.content_bias = form != 1;
        c.init = form == 1 ? spec::MixingInit::Concatenate : spec::MixingInit::Normal;
        s.slots.gate = form == 2 ? spec::Gate::Elementwise : form == 0 ? spec::Gate::Headwise : spec::Gate::None;
        SCOPED_TRACE(spec::toJson(s, -1));
        expectMatches(s, ++seed);
      }
}

TEST(DiagramEvaluator, MtaMatchesTheModule) {
  // Multi-token attention (§8.8): the shift tensors of each pad, convolutions before and/or after
  // the softmax, the head convolution in groups or the full mixings, shared K/V, the norm and gates.
  RandomSizes r{std::mt19937(23)};
  std::uint64_t seed = 500;
  for (auto pad : {spec::MtaPad::Both, spec::MtaPad::Left, spec::MtaPad::Right})
    for (int form = 0; form < 3; ++form)
      for (bool causal : {false, true}) {
        auto s = r.spec("mta", causal, form == 1);
        auto& m = s.slots.mta;
        m.pad = pad;
        m.q_kernel = form == 2 ? 0 : r.pick(1, 3);
        m.k_kernel = form == 2 ? 0 : 2 * r.pick(0, 2) + 1;
        m.post_q_kernel = form == 0 ? 0 : r.pick(1, 3);
        m.post_k_kernel = form == 0 ? 0 : 2 * r.pick(0, 1) + 1;
        if (form == 1) {  // head groups of two, shared K/V, an elementwise gate, the rescale
          s.sizes.H = 4;
          s.slots.post_mix = false;
          s.slots.kv_groups = 2;
          m.head_group = 2;
          m.norm_rescale = true;
          m.out_gate = spec::Gate::Elementwise;
        }
        if (form == 2) {
          s.slots.pre_mix = false;
          m.group_norm = false;
        }
        SCOPED_TRACE(spec::toJson(s, -1));
        expectMatches(s, ++seed);
      }
}

TEST(DiagramEvaluator, RotaryLayersMatchTheModuleWithTheTurnsDrawnOnTheQueryAndKeyLegs) {
  // Rotary positions (§9): the turns R^Q and R^K on the query and key legs make the diagram compute
  // the turned layer, in both pairings, for every kind of layer that takes them; the diagram of the
  // other pairing (or none) does not (negative control).
  RandomSizes r{std::mt19937(23)};
  std::uint64_t seed = 500;
  for (const char* preset : {"mhsa", "fixed_head", "tp", "gqa", "mqa", "talking_heads", "gated", "gated_headwise", "diff", "thsa", "skip_right"})
    for (const char* positions : {"rotary", "rotary_interleaved"})
      for (bool causal : {false, true}) {
        auto s = r.spec(preset, causal, std::string(preset) != "diff" && causal);
        s.sizes.D = 4;  // D = 2 would make the two pairings one ((0, 1) either way)
        if (std::string(preset) == "gqa" || std::string(preset) == "diff") {
          s = spec::makeSpecPreset(preset);
          s.sizes.H = std::string(preset) == "diff" ? 2 : 4;
          s.sizes.D = 4;
          s.sizes.F = std::string(preset) == "diff" ? 16 : 5;  // diff: 2·H·D = F
          s.causal = causal;
        }
        s.sizes.R = s.sizes.H * s.sizes.D;  // thsa turns blocks of D in R = H·D
        if (s.core) s.core = spec::makeCorePreset(s.core->preset, s.sizes.H, s.sizes.D);
        SCOPED_TRACE(std::string(preset) + " " + positions + (causal ? " causal" : ""));
        const auto c = checkDiagram(s, 2, 5, ++seed, positions);
        EXPECT_TRUE(c.ok) << c.message;
        EXPECT_LE(c.max_abs_diff_y, 1e-10) << c.message;
        EXPECT_LE(c.max_abs_diff_maps, 1e-10) << c.message;
        // The turns are drawn: R^Q on W^Q's side of the query leg, R^K on the key's.
        const Rotary rot = rotaryFromPositions(positions);
        const auto net = layerNetwork(s, 5, rot);
        EXPECT_TRUE(spec::checkNetwork(net).empty()) << spec::checkNetwork(net).front();
        int turns = 0;
        for (const auto& n : net.nodes)
          if (n.binding.rfind("rotary_turn:", 0) == 0) ++turns;
        EXPECT_EQ(turns, 2);
        // Negative control: the module turned one way, the diagram the other way (or not at all).
        torch::manual_seed(seed);
        auto module = makeAttentionModule(s);
        toFloat64(*module);
        module->eval();
        module->setRotary(rot);
        at::NoGradGuard noGrad;
        for (auto& p : module->parameters()) p.add_(0.1 * at::randn_like(p));
        const auto x = at::randn({2, 5, s.sizes.F}, at::TensorOptions().dtype(at::kDouble));
        const auto want = module->forward(x, {}).y;
        Rotary other = rot;
        other.pairs = rot.pairs == RotaryPairs::Half ? RotaryPairs::Interleaved : RotaryPairs::Half;
        for (const Rotary& wrong : {other, Rotary{}}) {
          const auto got = NetworkEvaluator(layerNetwork(s, 5, wrong)).evaluate(module->namedWeights(), x, false).y;
          EXPECT_GT((got - want).abs().max().item<double>(), 1e-6);
        }
        EXPECT_LE((NetworkEvaluator(net).evaluate(module->namedWeights(), x, false).y - want).abs().max().item<double>(), 1e-10);
      }
  // A layer that takes no rotary positions says why.
  const auto linear = checkDiagram(r.spec("thsa_linear", false, false), 1, 3, 7, "rotary");
  EXPECT_FALSE(linear.ok);
  EXPECT_NE(linear.message.find("thsa_linear takes no rotary positions"), std::string::npos) << linear.message;
}

TEST(DiagramEvaluator, EveryCorePresetMatchesTheModule) {
  RandomSizes r{std::mt19937(12)};
  std::uint64_t seed = 200;
  for (const auto& preset : spec::corePresetNames())
    for (const char* variant : {"thsa", "thsa_linear"})
      for (bool causal : {false, true})
        for (bool bias : {false, true})
          for (int trial = 0; trial < 2; ++trial) {
            auto s = r.spec("core:" + preset, causal, bias);
            if (std::string(variant) == "thsa_linear") {
              s.variant = spec::Variant::ThsaLinear;
              s.dropout = 0;
            }
            SCOPED_TRACE(preset + " " + variant + (causal ? " causal" : "") + (bias ? " bias" : ""));
            expectMatches(s, ++seed);
          }
}

TEST(DiagramEvaluator, CustomKroneckerCoresOfEveryFactorKind) {
  RandomSizes r{std::mt19937(13)};
  std::uint64_t seed = 300;
  const FactorKind aKinds[] = {FactorKind::Identity, FactorKind::Ones, FactorKind::Fixed, FactorKind::Trainable};
  const std::pair<FactorKind, bool> bKinds[] = {{FactorKind::Identity, true}, {FactorKind::Ones, true},
                                                {FactorKind::Fixed, true},    {FactorKind::Trainable, true},
                                                {FactorKind::Rank1, true},    {FactorKind::Rank1, false}};
  for (auto a : aKinds)
    for (auto [b, trainRank1] : bKinds)
      for (int trial = 0; trial < 4; ++trial) {
        auto s = r.spec("thsa", trial & 1, trial & 2);
        if (trial == 3) s.sizes.H = 1;  // size-1 factors: legs dropped or kept by kind
        if (trial == 1) s.sizes.D = 1;
        s.sizes.R = s.sizes.H * s.sizes.D;
        spec::CoreSpec core;
        core.preset = "custom";
        core.structure = spec::CoreStructure::Kronecker;
        core.scale = 0.5 + r.pick(0, 3) * 0.5;
        core.a = r.factor(a, s.sizes.H);
        core.b = r.factor(b, s.sizes.D, trainRank1);
        s.core = core;
        SCOPED_TRACE("A " + std::string(spec::toString(a)) + ", B " + std::string(spec::toString(b)) +
                     (trainRank1 ? "" : " (fixed)") + ", H=" + std::to_string(s.sizes.H) +
                     ", D=" + std::to_string(s.sizes.D) + (s.causal ? " causal" : "") + (s.bias ? " bias" : ""));
        expectMatches(s, ++seed);
        if (trial == 0) {  // the same core in the linear layer, where C enters whole
          s.variant = spec::Variant::ThsaLinear;
          s.dropout = 0;
          s.causal = true;
          expectMatches(s, ++seed);
        }
      }
}

TEST(DiagramEvaluator, DenseCoreWithFrozenEntries) {
  RandomSizes r{std::mt19937(14)};
  auto s = r.spec("thsa", true, true);
  for (size_t i = 0; i < s.core->trainable_mask.size(); ++i) {
    s.core->trainable_mask[i] = static_cast<unsigned char>(i % 3 != 0);
    s.core->dense_values[i] = r.normal();
  }
  expectMatches(s, 400);
}

/// Module, weights and input of a spec, in float64 with perturbed parameters.
struct Fixture {
  AttentionModule module{nullptr};
  at::Tensor x;
  Fixture(const AttentionSpec& s, std::int64_t B, std::int64_t N) {
    torch::manual_seed(7);
    module = makeAttentionModule(s);
    toFloat64(*module);
    module->eval();
    at::NoGradGuard g;
    for (auto& p : module->parameters()) p.add_(0.1 * at::randn_like(p));
    x = at::randn({B, N, s.sizes.F}, at::TensorOptions().dtype(at::kDouble));
  }
};

TEST(DiagramEvaluator, PrefixSumsAreTheDrawnMaskContraction) {
  // A PrefixSum step is an einsum with the lower-triangular L; evaluated literally it agrees.
  RandomSizes r{std::mt19937(15)};
  for (const char* v : {"dimwise", "thsa_linear"}) {
    const auto s = r.spec(v, true, true);
    Fixture f(s, 2, 5);
    auto net = spec::buildTensorNetwork(s, 5);
    const auto fast = NetworkEvaluator(net).evaluate(f.module->namedWeights(), f.x);
    int literal = 0;
    for (auto& st : net.plan)
      if (st.op == spec::PlanStep::Op::PrefixSum) {
        st.op = spec::PlanStep::Op::None;
        ++literal;
      }
    EXPECT_GT(literal, 0);
    const auto slow = NetworkEvaluator(net).evaluate(f.module->namedWeights(), f.x);
    EXPECT_LE((fast.y - slow.y).abs().max().item<double>(), 1e-12) << v;
  }
}

TEST(DiagramEvaluator, MaskAndMeanOperations) {
  // Mask3 and Mean0 compute what multilinear's drawn L nodes and 1/P node compute.
  RandomSizes r{std::mt19937(16)};
  const auto s = r.spec("multilinear", true, false);
  const std::int64_t N = s.sizes.seq_len;
  Fixture f(s, 2, N);
  auto net = spec::buildTensorNetwork(s, N);
  for (auto& st : net.plan) {
    if (st.output == "Tm") st = {"Tm", {"T"}, "bnjk->bnjk", spec::PlanStep::Op::Mask3, "", 1.0, {}, 0, ""};
    if (st.output == "gbar") st = {"gbar", {st.inputs[0]}, "pr->pr", spec::PlanStep::Op::Mean0, "", 1.0, {}, 0, ""};
  }
  ForwardOptions o;
  o.with_maps = true;
  const auto want = f.module->forward(f.x, o);
  const auto got = NetworkEvaluator(net).evaluate(f.module->namedWeights(), f.x);
  EXPECT_LE((got.y - want.y).abs().max().item<double>(), 1e-10);
  EXPECT_LE((got.maps - want.maps).abs().max().item<double>(), 1e-10);
}

TEST(DiagramEvaluator, ReportsProblems) {
  RandomSizes r{std::mt19937(17)};
  auto s = r.spec("skip_right", false, false);
  s.sizes.H = 3;
  s.sizes.R = 3 * s.sizes.D;
  s.core = spec::makeCorePreset("skip_right", 3, s.sizes.D);
  Fixture f(s, 1, 3);
  const NetworkEvaluator ev(spec::buildTensorNetwork(s, 3));
  auto weights = f.module->namedWeights();
  weights.erase(std::remove_if(weights.begin(), weights.end(), [](const NamedWeight& w) { return w.name == "core.A"; }),
                weights.end());
  EXPECT_THROW(ev.evaluate(weights, f.x), std::invalid_argument);
  EXPECT_THROW(ev.evaluate(f.module->namedWeights(), f.x.narrow(1, 0, 2)), std::invalid_argument);
  // A transposed factor changes the values: the check would see it.
  auto swapped = f.module->namedWeights();
  for (auto& w : swapped)
    if (w.name == "core.A") w.value = w.value.t().contiguous();
  const auto good = ev.evaluate(f.module->namedWeights(), f.x), bad = ev.evaluate(swapped, f.x);
  EXPECT_GT((good.y - bad.y).abs().max().item<double>(), 1e-6);

  auto net = spec::buildTensorNetwork(s, 3);
  net.plan.back().inputs[0] = "nowhere";
  EXPECT_THROW(NetworkEvaluator{net}, std::invalid_argument);

  auto invalid = s;
  invalid.sizes.R += 1;
  const auto c = checkDiagram(invalid, 1, 3, 1);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("R = H*D"), std::string::npos) << c.message;
  EXPECT_FALSE(checkDiagram(s, 0, 3, 1).ok);
  const auto fine = checkDiagram(s, 2, 4, 1);
  EXPECT_TRUE(fine.ok) << fine.message;
  EXPECT_NE(fine.message.find("max |Δy|"), std::string::npos);
}

}  // namespace
}  // namespace tensorscope::model_core
