// What the diagram's inspector shows (model_core/network_values.h): every node and every plan
// step of every preset's network, each checked against its own definition recomputed here from
// the values it consumes (an einsum on the stored operands, then the step's operation), the
// weights against the module's, and the output and maps against the module's forward.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cstdio>

#include "attention/attention_module.h"
#include "model_core/network_values.h"
#include "spec/tensor_network.h"

namespace tensorscope::model_core {
namespace {

at::Tensor tensorOf(const HostTensor& h) {
  return at::tensor(h.values, at::kFloat).reshape(h.shape).to(at::kDouble);
}

void expectClose(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.sizes().equals(want.sizes())) << what << ": " << got.sizes() << " vs " << want.sizes();
  const double scale = std::max(1.0, want.abs().max().item<double>());
  EXPECT_LE((got - want).abs().max().item<double>(), 2e-5 * scale) << what;
}

/// The module designNetworkValues builds, rebuilt the same way, and its input.
struct SameModule {
  AttentionModule module{nullptr};
  at::Tensor x;
  SameModule(const spec::AttentionSpec& s, std::int64_t N, std::uint64_t seed) {
    torch::manual_seed(seed);
    module = makeAttentionModule(s);
    module->eval();
    at::NoGradGuard noGrad;
    for (auto& p : module->parameters()) p.add_(0.1 * at::randn_like(p));
    x = at::randn({1, N, s.sizes.F});
  }
};

/// Recomputes a step with no operation, or a softmax/φ over an einsum, from the stored values of
/// its operands; other operations (divide, prefix sums, masks, means) are checked by their
/// consumers and the final output. Returns whether the step was recomputed.
bool checkStep(const spec::TensorNetwork& net, const spec::PlanStep& s, const NetworkValues& v) {
  using Op = spec::PlanStep::Op;
  if (s.op != Op::None && s.op != Op::EluPlusOne && s.op != Op::Softmax && s.op != Op::Sigmoid) return false;
  const auto terms = spec::parseEinsum(s.einsum);
  std::vector<at::Tensor> operands;
  for (const auto& in : s.inputs) operands.push_back(tensorOf(*v.find(in)));
  std::string eq;
  for (size_t i = 0; i < terms.operands.size(); ++i) eq += (i ? "," : "") + terms.operands[i];
  // Broadcast outputs (an index no operand carries) are left to the consumers.
  for (char ch : terms.output)
    if (eq.find(ch) == std::string::npos) return false;
  auto want = at::einsum(eq + "->" + terms.output, operands) * s.scale;
  for (const auto& a : s.addends) {
    const auto& node = *std::find_if(net.nodes.begin(), net.nodes.end(), [&](const auto& n) { return n.id == a; });
    std::string subs;
    for (const auto& l : node.legs) subs += l.index;
    // A bias's legs are the trailing axes of the projection it is added to.
    EXPECT_EQ(terms.output.substr(terms.output.size() - subs.size()), subs) << s.output;
    want = want + tensorOf(*v.find(a));
  }
  if (s.op == Op::EluPlusOne) want = at::elu(want) + 1.0;
  if (s.op == Op::Sigmoid) want = at::sigmoid(want);
  if (s.op == Op::Softmax) {
    const auto& box = *std::find_if(net.boxes.begin(), net.boxes.end(), [&](const auto& b) { return b.id == s.box; });
    if (box.causal || box.position_scale) return false;  // masks and per-position scales: checked through y
    const auto axis = static_cast<std::int64_t>(terms.output.find(box.normalized));
    want = at::softmax(want * box.scale, axis);
  }
  expectClose(tensorOf(*v.find(s.output)), want, "step " + s.output + " (" + s.einsum + ")");
  return true;
}

TEST(NetworkValues, EveryTensorOfEveryPresetIsWhatItsDefinitionGives) {
  std::uint64_t seed = 40;
  int recomputed = 0, steps = 0;
  for (const auto& name : spec::specPresetNames())
    for (bool causal : {false, true}) {
      SCOPED_TRACE(name + (causal ? " causal" : ""));
      auto s = spec::makeSpecPreset(name);
      s.causal = causal;
      s.bias = seed % 2 == 0 && !s.slots.latent.enabled() && !s.slots.tpa.enabled();  // MLA and TPA have no biases (§8.6, §8.7)
      const std::int64_t N = 5;
      const auto v = designNetworkValues(s, N, ++seed);
      const auto& net = v.network;
      // Every node and every step has a value.
      for (const auto& n : net.nodes) ASSERT_NE(v.find(n.id), nullptr) << n.id;
      for (const auto& st : net.plan) ASSERT_NE(v.find(st.output), nullptr) << st.output;
      // Each node's value has its legs' sizes (after the batch for batched ones).
      for (const auto& n : net.nodes) {
        std::vector<std::int64_t> shape;
        if (n.batched) shape.push_back(1);
        for (const auto& l : n.legs) shape.push_back(l.size);
        EXPECT_EQ(v.find(n.id)->shape, shape) << n.id;
      }
      SameModule same(s, s.variant == spec::Variant::Multilinear ? s.sizes.seq_len : N, seed);
      // The input and the weights are the module's.
      for (const auto& n : net.nodes)
        if (n.binding == "x") expectClose(tensorOf(*v.find(n.id)), same.x.to(at::kDouble), n.id);
      for (const auto& w : same.module->namedWeights())
        for (const auto& n : net.nodes)
          if (n.binding == w.name)
            expectClose(tensorOf(*v.find(n.id)).flatten(), w.value.to(at::kDouble).flatten(), n.id + " = " + w.name);
      for (const auto& st : net.plan) {
        recomputed += checkStep(net, st, v) ? 1 : 0;
        ++steps;
        // A softmax step's logits (masked entries -inf) give its result through the softmax alone.
        if (st.op == spec::PlanStep::Op::Softmax) {
          const auto* logits = v.find(st.output + ".logits");
          ASSERT_NE(logits, nullptr) << st.output;
          const auto& box = *std::find_if(net.boxes.begin(), net.boxes.end(), [&](const auto& b) { return b.id == st.box; });
          const auto out = spec::parseEinsum(st.einsum).output;
          const auto axis = static_cast<std::int64_t>(out.find(box.normalized));
          expectClose(tensorOf(*v.find(st.output)), at::softmax(tensorOf(*logits), axis), st.output + " from its logits");
        }
      }
      // The output and the display maps are the module's forward.
      ForwardOptions o;
      o.with_maps = true;
      at::NoGradGuard noGrad;
      const auto out = same.module->forward(same.x, o);
      expectClose(tensorOf(*v.find(net.output)), out.y.to(at::kDouble), "y");
      if (!net.maps.empty())
        expectClose(tensorOf(*v.find(net.maps)).reshape(out.maps.sizes()), out.maps.to(at::kDouble), "maps");
    }
  // Most steps are einsums, softmaxes or φ; the rest are checked through what consumes them.
  EXPECT_GT(recomputed, steps / 2) << recomputed << " of " << steps << " steps recomputed";
  std::printf("%d of %d plan steps recomputed from their operands\n", recomputed, steps);
}

TEST(NetworkValues, RefusesAnInvalidDesignWithTheField) {
  auto s = spec::makeSpecPreset("thsa");
  s.sizes.R = s.sizes.R + 1;  // no longer H·D
  try {
    designNetworkValues(s, 4, 1);
    FAIL() << "an invalid design was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not valid"), std::string::npos) << e.what();
  }
  EXPECT_THROW(designNetworkValues(spec::makeSpecPreset("mhsa"), 0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace tensorscope::model_core
