// The tensor-network generator: structure per variant (Tuformer Figs. 3-5, 10), consistency,
// parameter counts and plan costs. Values are checked against the modules in diagram_tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "spec/cost_model.h"
#include "spec/tensor_network.h"

using namespace tensorscope::spec;

namespace {

AttentionSpec small(const std::string& preset, bool causal = false, bool bias = false) {
  auto s = makeSpecPreset(preset);
  s.sizes.F = 6;
  s.sizes.H = 3;
  s.sizes.D = s.core && (s.core->preset == "heads_only" || s.core->preset == "trainable_heads_only") ? 1 : 2;
  s.sizes.R = s.core ? s.sizes.H * s.sizes.D : 5;
  s.sizes.P = 2;
  s.sizes.c = 2;
  s.sizes.seq_len = 4;
  if (s.core) s.core = makeCorePreset(s.core->preset, s.sizes.H, s.sizes.D);
  if (s.slots.kv_groups > 1) s.sizes.H = 2 * s.slots.kv_groups;  // GQA: groups of two heads
  s.causal = causal;
  s.bias = bias && !s.slots.latent.enabled() && !s.slots.tpa.enabled();  // MLA and TPA have no biases (§8.6, §8.7)
  return s;
}

AttentionSpec kronecker(FactorKind a, FactorKind b, int H = 3, int D = 2) {
  auto s = small("thsa");
  s.sizes.H = H;
  s.sizes.D = D;
  s.sizes.R = H * D;
  CoreSpec c;
  c.preset = "custom";
  c.structure = CoreStructure::Kronecker;
  c.scale = 0.7;
  c.a.kind = a;
  c.b.kind = b;
  auto fill = [](CoreFactor& f, size_t n) {
    for (size_t i = 0; i < n; ++i) f.values.push_back(0.1 * double(i + 1));
  };
  if (a == FactorKind::Fixed || a == FactorKind::Trainable) fill(c.a, size_t(H) * H);
  if (b == FactorKind::Fixed || b == FactorKind::Trainable) fill(c.b, size_t(D) * D);
  if (b == FactorKind::Rank1) fill(c.b, 2 * size_t(D));
  s.core = c;
  return s;
}

std::vector<AttentionSpec> everySpec() {
  std::vector<AttentionSpec> out;
  for (const auto& name : specPresetNames())
    for (bool causal : {false, true})
      for (bool bias : {false, true}) out.push_back(small(name, causal, bias));
  const FactorKind kinds[] = {FactorKind::Identity, FactorKind::Ones, FactorKind::Fixed, FactorKind::Trainable,
                              FactorKind::Rank1};
  for (auto a : kinds)
    for (auto b : kinds)
      if (a != FactorKind::Rank1) {
        out.push_back(kronecker(a, b));
        out.push_back(kronecker(a, b, 1, 2));
        out.push_back(kronecker(a, b, 3, 1));
        out.push_back(kronecker(a, b, 1, 1));  // H = D = 1: with trivial factors no channel leg remains
      }
  auto lin = small("thsa_linear", true, true);
  lin.core = kronecker(FactorKind::Trainable, FactorKind::Rank1).core;
  out.push_back(lin);
  auto ml = small("multilinear");
  ml.core_softmax = false;
  out.push_back(ml);
  return out;
}

const TensorNode* node(const TensorNetwork& n, const std::string& id) {
  for (const auto& x : n.nodes)
    if (x.id == id) return &x;
  return nullptr;
}

std::set<std::string> nodeIds(const TensorNetwork& n) {
  std::set<std::string> s;
  for (const auto& x : n.nodes) s.insert(x.id);
  return s;
}

std::set<std::string> endNodes(const Contraction& c) {
  std::set<std::string> s;
  for (const auto& e : c.ends) s.insert(e.first);
  return s;
}

/// The contraction whose ends are exactly `nodes`, or nullptr.
const Contraction* joining(const std::vector<Contraction>& cs, const std::set<std::string>& nodes) {
  for (const auto& c : cs)
    if (endNodes(c) == nodes) return &c;
  return nullptr;
}

const SoftmaxBox* box(const TensorNetwork& n, const std::string& id) {
  for (const auto& b : n.boxes)
    if (b.id == id) return &b;
  return nullptr;
}

const PlanStep* step(const TensorNetwork& n, const std::string& id) {
  for (const auto& s : n.plan)
    if (s.output == id) return &s;
  return nullptr;
}

/// Drawn nodes a step depends on, through earlier steps.
std::set<std::string> sources(const TensorNetwork& n, const std::string& id) {
  std::set<std::string> out;
  if (node(n, id)) return {id};
  if (const auto* s = step(n, id)) {
    for (const auto& in : s->inputs) {
      auto sub = sources(n, in);
      out.insert(sub.begin(), sub.end());
    }
    out.insert(s->addends.begin(), s->addends.end());
  }
  return out;
}

std::multiset<std::string> openSymbols(const TensorNetwork& n) {
  std::multiset<std::string> s;
  for (const auto& [id, leg] : danglingLegs(n)) s.insert(node(n, id)->legs[size_t(leg)].symbol);
  for (const auto& c : contractions(n))
    if (c.dangling) s.insert(c.symbol);
  return s;
}

}  // namespace

TEST(TensorNetwork, EverySpecGivesASoundNetwork) {
  for (const auto& s : everySpec()) {
    const auto net = buildTensorNetwork(s, 4);
    SCOPED_TRACE(net.title);
    const auto problems = checkNetwork(net);
    EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front());
    // The output's legs are N and F, and they are exactly the open legs of the diagram.
    ASSERT_EQ(net.output_legs.size(), 2u);
    EXPECT_EQ(net.output_legs[0].symbol, "N");
    EXPECT_EQ(net.output_legs[1].symbol, "F");
    EXPECT_EQ(openSymbols(net), (std::multiset<std::string>{"N", "F"}));
    // Trainable scalars of the nodes add up to the layer's parameter count.
    std::int64_t params = 0;
    for (const auto& x : net.nodes) params += x.parameters;
    EXPECT_EQ(params, parameterCount(s));
    // Every drawn node is used by the plan, and every softmax box holds exactly what its step contracts.
    std::set<std::string> used;
    for (const auto& st : net.plan) {
      used.insert(st.inputs.begin(), st.inputs.end());
      used.insert(st.addends.begin(), st.addends.end());
      if (st.op == PlanStep::Op::Softmax || st.op == PlanStep::Op::Normalize) {
        const auto* b = box(net, st.box);
        ASSERT_NE(b, nullptr);
        const auto src = sources(net, st.output);
        EXPECT_EQ(src, std::set<std::string>(b->nodes.begin(), b->nodes.end())) << st.output;
      }
    }
    for (const auto& x : net.nodes) EXPECT_TRUE(used.count(x.id)) << x.id;
    EXPECT_FALSE(net.maps.empty());
  }
}

TEST(TensorNetwork, MhsaIsFigure3b) {
  const auto s = small("mhsa", true);
  const auto net = buildTensorNetwork(s, 4);
  EXPECT_EQ(nodeIds(net), (std::set<std::string>{"x_q", "x_k", "x_v", "Wq", "Wk", "Wv", "Wo"}));
  EXPECT_EQ(node(net, "Wq")->legs.size(), 3u);  // [H, D, F] from wq.weight [H·D, F]
  EXPECT_EQ(node(net, "Wo")->legs[0].symbol, "F");
  const auto cs = contractions(net);
  const auto* h = joining(cs, {"Wq", "Wk", "Wv", "Wo"});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->symbol, "H");
  EXPECT_TRUE(h->hyperedge());
  ASSERT_NE(joining(cs, {"Wq", "Wk"}), nullptr);  // latent contraction D
  EXPECT_EQ(joining(cs, {"Wq", "Wk"})->symbol, "D");
  EXPECT_EQ(joining(cs, {"Wv", "Wo"})->symbol, "D");
  EXPECT_EQ(joining(cs, {"x_k", "x_v"})->symbol, "M");
  // Each X/W pair has its own F letter.
  std::set<char> fLetters;
  for (const auto& c : cs)
    if (c.symbol == "F") fLetters.insert(c.index);
  EXPECT_EQ(fLetters.size(), 3u);
  ASSERT_EQ(net.boxes.size(), 1u);
  const auto& b = net.boxes[0];
  EXPECT_EQ(std::set<std::string>(b.nodes.begin(), b.nodes.end()), (std::set<std::string>{"x_q", "Wq", "x_k", "Wk"}));
  EXPECT_EQ(b.normalized, 'm');
  EXPECT_EQ(b.query, 'n');
  EXPECT_TRUE(b.causal);
  EXPECT_DOUBLE_EQ(b.scale, 1.0 / std::sqrt(2.0));
  EXPECT_EQ(net.maps_shape, (std::vector<std::int64_t>{3, 4, 4}));
}

TEST(TensorNetwork, BiasNodesAttachToTheirWeights) {
  const auto net = buildTensorNetwork(small("mhsa", false, true), 4);
  for (const auto& [bias, w] : std::map<std::string, std::string>{{"bq", "Wq"}, {"bk", "Wk"}, {"bv", "Wv"}, {"bo", "Wo"}}) {
    const auto* n = node(net, bias);
    ASSERT_NE(n, nullptr) << bias;
    EXPECT_EQ(n->adds_to, w);
    for (const auto& c : contractions(net)) EXPECT_EQ(endNodes(c).count(bias), 0u);
  }
  EXPECT_EQ(node(net, "bq")->binding, "wq.bias");
  const auto& b = net.boxes[0].nodes;
  EXPECT_NE(std::find(b.begin(), b.end(), "bq"), b.end());
  EXPECT_EQ(std::find(b.begin(), b.end(), "bv"), b.end());
}

TEST(TensorNetwork, TpBindsFillerAndRole) {
  const auto net = buildTensorNetwork(small("tp"), 4);
  EXPECT_TRUE(node(net, "Wr") && node(net, "x_r"));
  const auto cs = contractions(net);
  EXPECT_NE(joining(cs, {"Wq", "Wk", "Wv", "Wr", "Wo"}), nullptr);  // H
  const auto* d = joining(cs, {"Wv", "Wr", "Wo"});                   // binding along D
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->hyperedge());
  const auto* n = joining(cs, {"x_q", "x_r"});  // binding along N, kept in the output
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->dangling);
  EXPECT_TRUE(n->hyperedge());
  ASSERT_NE(step(net, "bound"), nullptr);
  EXPECT_EQ(step(net, "bound")->einsum, "bnhe,bnhe->bnhe");
}

TEST(TensorNetwork, DenseThsaIsFigure4b) {
  const auto s = small("thsa");
  const auto net = buildTensorNetwork(s, 4);
  const auto* C = node(net, "C");
  ASSERT_NE(C, nullptr);
  EXPECT_EQ(C->binding, "core");
  EXPECT_EQ(C->legs[0].size, 6);
  const auto cs = contractions(net);
  const auto* sIdx = joining(cs, {"C", "Wq", "Wk"});
  const auto* rIdx = joining(cs, {"C", "Wv", "Wo"});
  ASSERT_TRUE(sIdx && rIdx);
  EXPECT_TRUE(sIdx->hyperedge());
  EXPECT_TRUE(rIdx->hyperedge());
  EXPECT_EQ(sIdx->symbol, "R");
  const auto& b = net.boxes.at(0);
  EXPECT_NE(std::find(b.nodes.begin(), b.nodes.end(), "C"), b.nodes.end());
  EXPECT_DOUBLE_EQ(b.scale, 1.0 / std::sqrt(6.0));
  // The captions follow logits_r = Σ_s C[r,s]·Q_s·K_sᵀ: W^Q and W^K meet C's column leg s, W^V its
  // row leg r (finding N9: they once put W^Q on "C's query side", the rows).
  EXPECT_NE(node(net, "Wq")->role.find("C's column legs s"), std::string::npos) << node(net, "Wq")->role;
  EXPECT_NE(node(net, "Wk")->role.find("C's column legs s"), std::string::npos) << node(net, "Wk")->role;
  EXPECT_NE(node(net, "Wv")->role.find("C's row leg r"), std::string::npos) << node(net, "Wv")->role;
  for (const char* id : {"Wq", "Wk"}) EXPECT_EQ(node(net, id)->role.find("query side"), std::string::npos) << id;
}

TEST(TensorNetwork, KroneckerPresetsDrawTheirFactors) {
  // mhsa preset: Proposition 1 — the same contractions as MHSA, with α = √H/√R = 1/√D.
  auto net = buildTensorNetwork(small("core:mhsa"), 4);
  auto cs = contractions(net);
  EXPECT_EQ(nodeIds(net), (std::set<std::string>{"x_q", "x_k", "x_v", "Wq", "Wk", "Wv", "Wo"}));
  EXPECT_EQ(joining(cs, {"Wq", "Wk", "Wv", "Wo"})->symbol, "H");
  EXPECT_EQ(joining(cs, {"Wq", "Wk"})->symbol, "D");
  EXPECT_EQ(joining(cs, {"Wv", "Wo"})->symbol, "D");
  EXPECT_NEAR(net.boxes.at(0).scale, 1.0 / std::sqrt(2.0), 1e-15);
  EXPECT_EQ(net.boxes.at(0).scale_label, "√H/√R = 1/√D");

  net = buildTensorNetwork(small("skip_left"), 4);  // I_H ⊗ c₂c₃ᵀ
  cs = contractions(net);
  EXPECT_EQ(node(net, "c2")->legs.at(0).symbol, "D");
  EXPECT_NE(joining(cs, {"c3", "Wq", "Wk"}), nullptr);
  EXPECT_NE(joining(cs, {"c2", "Wv", "Wo"}), nullptr);
  EXPECT_NE(joining(cs, {"Wq", "Wk", "Wv", "Wo"}), nullptr);
  EXPECT_EQ(node(net, "A"), nullptr);

  net = buildTensorNetwork(small("skip_right"), 4);  // C₁ ⊗ 1·1ᵀ
  cs = contractions(net);
  EXPECT_EQ(node(net, "A")->binding, "core.A");
  EXPECT_NE(joining(cs, {"A", "Wq", "Wk"}), nullptr);
  EXPECT_NE(joining(cs, {"A", "Wv", "Wo"}), nullptr);
  EXPECT_NE(joining(cs, {"Wq", "Wk"}), nullptr);

  net = buildTensorNetwork(small("heads_only"), 4);  // Fig. 10 right: no D legs
  cs = contractions(net);
  EXPECT_EQ(node(net, "Wq")->legs.size(), 2u);
  EXPECT_NE(joining(cs, {"Wq", "Wk", "Wv", "Wo"}), nullptr);

  net = buildTensorNetwork(small("trainable_heads_only"), 4);
  EXPECT_EQ(node(net, "A")->parameters, 9);

  net = buildTensorNetwork(small("single_head"), 4);  // Fig. 10 left: one head of size R
  cs = contractions(net);
  EXPECT_EQ(joining(cs, {"Wq", "Wk"})->symbol, "R");
  EXPECT_EQ(joining(cs, {"Wv", "Wo"})->symbol, "R");
  for (const auto& c : cs) EXPECT_FALSE(c.hyperedge()) << c.symbol;
}

TEST(TensorNetwork, KroneckerFactorKindsAndScale) {
  auto net = buildTensorNetwork(kronecker(FactorKind::Fixed, FactorKind::Trainable), 4);
  EXPECT_EQ(node(net, "A")->parameters, 0);
  EXPECT_EQ(node(net, "B")->parameters, 4);
  EXPECT_EQ(net.boxes.at(0).scale_label, "s/√R, s = 0.7");
  EXPECT_NEAR(net.boxes.at(0).scale, 0.7 / std::sqrt(6.0), 1e-15);
  net = buildTensorNetwork(kronecker(FactorKind::Identity, FactorKind::Identity), 4);  // s·I_R: R heads of size 1
  EXPECT_EQ(joining(contractions(net), {"Wq", "Wk", "Wv", "Wo"})->symbol, "R");
  net = buildTensorNetwork(kronecker(FactorKind::Ones, FactorKind::Identity), 4);
  const auto cs = contractions(net);
  EXPECT_EQ(joining(cs, {"Wq", "Wk", "Wv", "Wo"})->symbol, "D");
  EXPECT_EQ(joining(cs, {"Wq", "Wk"})->symbol, "H");
}

TEST(TensorNetwork, ThsaLinearHasKernelBoxesAndNoSoftmax) {
  for (bool causal : {false, true}) {
    const auto net = buildTensorNetwork(small("thsa_linear", causal), 4);
    std::map<SoftmaxBox::Kind, int> kinds;
    for (const auto& b : net.boxes) ++kinds[b.kind];
    EXPECT_EQ(kinds[SoftmaxBox::Kind::Softmax], 0);
    EXPECT_EQ(kinds[SoftmaxBox::Kind::Elementwise], 2);
    EXPECT_EQ(kinds[SoftmaxBox::Kind::Normalize], 1);
    EXPECT_EQ(box(net, "attn")->normalized, 'm');
    EXPECT_EQ(step(net, "S")->op, causal ? PlanStep::Op::PrefixSum : PlanStep::Op::None);
    EXPECT_EQ(node(net, "L") != nullptr, causal);
    EXPECT_NE(joining(contractions(net), {"C", "Wq", "Wk"}), nullptr);
  }
}

TEST(TensorNetwork, MultilinearBlockTerms) {
  auto s = small("multilinear", true);
  const auto net = buildTensorNetwork(s, 99);  // N is fixed by seq_len
  EXPECT_EQ(net.output_legs[0].size, 4);
  const auto* G = node(net, "G");
  ASSERT_NE(G, nullptr);
  EXPECT_EQ(G->binding, "cores");
  EXPECT_EQ(G->legs[0].symbol, "P");
  EXPECT_EQ(node(net, "Wo")->legs.size(), 3u);  // [F, N, N]
  const auto cs = contractions(net);
  EXPECT_NE(joining(cs, {"G", "Wq", "Wk", "Wv"}), nullptr);
  EXPECT_NE(joining(cs, {"G", "mean"}), nullptr);
  EXPECT_NE(joining(cs, {"x_k", "Lj", "Wo"}), nullptr);
  EXPECT_NE(joining(cs, {"x_v", "Lk", "Wo"}), nullptr);
  EXPECT_EQ(box(net, "cores")->normalized, 'r');
  s.core_softmax = false;
  s.causal = false;
  EXPECT_TRUE(buildTensorNetwork(s, 4).boxes.empty());
}

TEST(TensorNetwork, DimwiseKhatriRao) {
  for (bool causal : {false, true}) {
    const auto net = buildTensorNetwork(small("dimwise", causal), 4);
    const auto cs = contractions(net);
    EXPECT_NE(joining(cs, {"Wq", "W", "Wo"}), nullptr);  // row d of f(S): batch multiplication
    EXPECT_NE(joining(cs, {"Wk", "Wv", "W"}), nullptr);  // last d: normalised, then contracted
    EXPECT_NE(joining(cs, {"W", "Wo"}), nullptr);        // filters c
    const auto& b = *box(net, "attn");
    EXPECT_EQ(b.normalized, 'e');
    EXPECT_DOUBLE_EQ(b.scale, 0.5);  // 1/√N
    EXPECT_EQ(b.position_scale, causal);
    EXPECT_EQ(joining(cs, causal ? std::set<std::string>{"x_q", "x_k", "L"} : std::set<std::string>{"x_q", "x_k"})
                  ->symbol,
              "M");
    EXPECT_EQ(net.maps_shape, (std::vector<std::int64_t>{5, 5}));
  }
}

// The plan follows the modules' contraction order, so it costs what the cost model says. (Not
// compared: D = 1 cores, whose latent "sum" has one term — the plan counts a product, the cost
// model a multiply-add; A = 1·1ᵀ, which the plan sums where the module mixes heads; multilinear,
// whose mask and mean the diagram draws as nodes.)
TEST(TensorNetwork, PlanCostMatchesTheCostModel) {
  for (const std::string name : {"mhsa", "fixed_head", "tp", "thsa", "core:mhsa", "skip_left", "skip_right",
                                 "thsa_linear", "dimwise"})
    for (bool causal : {false, true})
      for (bool bias : {false, true}) {
        const auto s = small(name, causal, bias);
        SCOPED_TRACE(name);
        const auto net = buildTensorNetwork(s, 7);
        EXPECT_DOUBLE_EQ(networkCost(net, 3).flops, estimateCost(s, 3, 7).forward_flops);
      }
}

TEST(TensorNetwork, DenseThsaNeedsMNRMemory) {
  auto s = small("thsa");
  const std::int64_t B = 2, N = 40, R = 6;
  const auto dense = networkCost(buildTensorNetwork(s, N), B);
  EXPECT_EQ(dense.largest_intermediate, "P");
  EXPECT_DOUBLE_EQ(dense.largest_intermediate_elements, double(B * R * N * N));
  const auto preset = networkCost(buildTensorNetwork(small("core:mhsa"), N), B);
  EXPECT_DOUBLE_EQ(preset.largest_intermediate_elements, double(B * 3 * N * N));  // H maps: D times less
  const auto linear = networkCost(buildTensorNetwork(small("thsa_linear"), N), B);
  EXPECT_LT(linear.largest_intermediate_elements, double(B * N * R * R + 1));
}

TEST(TensorNetwork, DimwiseAndLinearThsaAreLinearInN) {
  auto flops = [](const AttentionSpec& s, std::int64_t N) { return networkCost(buildTensorNetwork(s, N), 2).flops; };
  for (const std::string name : {"dimwise", "thsa_linear"})
    for (bool causal : {false, true}) {
      const auto s = small(name, causal);
      const double f1 = flops(s, 16), f2 = flops(s, 32), f3 = flops(s, 48);
      EXPECT_NEAR(f3 - 2 * f2 + f1, 0.0, 1e-9 * f3) << name;  // no N² term
      EXPECT_GT(f2, f1);
    }
  const auto m = small("mhsa");
  EXPECT_GT(flops(m, 48) - 2 * flops(m, 32) + flops(m, 16), 0.0);  // MHSA: quadratic
}

TEST(TensorNetwork, RejectsInvalidInput) {
  auto s = small("thsa");
  s.core->dense_values.pop_back();
  EXPECT_THROW(buildTensorNetwork(s, 4), std::invalid_argument);
  EXPECT_THROW(buildTensorNetwork(small("mhsa"), 0), std::invalid_argument);
  EXPECT_THROW(parseEinsum("ab,bc"), std::invalid_argument);
  auto net = buildTensorNetwork(small("mhsa"), 4);
  net.plan[0].einsum = "bnf,hdg->bnhd";
  EXPECT_FALSE(checkNetwork(net).empty());
}
