// Contraction stepping: the plan step by step (costs that add up to networkCost, result legs,
// what each step has contracted so far, boxes, equations), the enumeration of contraction orders
// and how a plan's cost grows with the sequence length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "spec/contraction_steps.h"
#include "spec/tensor_network.h"

using namespace tensorscope::spec;

namespace {

struct Shape {
  int F, H, D, R, P, c, seq;
};
const Shape kShapes[] = {{6, 3, 2, 5, 2, 2, 4}, {8, 2, 3, 7, 3, 3, 5}};

/// A preset at small sizes (a Kronecker core: R = H·D; heads-only cores: D = 1).
AttentionSpec sized(const std::string& preset, const Shape& z, bool causal, bool bias) {
  auto s = makeSpecPreset(preset);
  s.sizes.F = z.F;
  s.sizes.H = z.H;
  s.sizes.D = s.core && (s.core->preset == "heads_only" || s.core->preset == "trainable_heads_only") ? 1 : z.D;
  s.sizes.R = s.core ? s.sizes.H * s.sizes.D : z.R;
  s.sizes.P = z.P;
  s.sizes.c = z.c;
  s.sizes.seq_len = z.seq;
  if (s.core) s.core = makeCorePreset(s.core->preset, s.sizes.H, s.sizes.D);
  if (s.slots.kv_groups > 1) s.sizes.H = 2 * s.slots.kv_groups;  // GQA: groups of two heads
  if (s.slots.tpa.rope && s.slots.tpa.enabled()) s.sizes.D += s.sizes.D % 2;  // TPA's rotary turns pairs (§8.7)
  s.causal = causal;
  s.bias = bias && !s.slots.latent.enabled() && !s.slots.tpa.enabled();  // MLA and TPA have no biases (§8.6, §8.7)
  return s;
}

/// Every preset, causal or not, with and without biases, at both shapes: (title, network, batch).
struct Case {
  std::string name;
  TensorNetwork net;
  std::int64_t batch;
};
std::vector<Case> everyCase() {
  std::vector<Case> out;
  std::int64_t batch = 2;
  for (const auto& z : kShapes) {
    for (const auto& name : specPresetNames())
      for (bool causal : {false, true})
        for (bool bias : {false, true})
          out.push_back({name + (causal ? " causal" : "") + (bias ? " bias" : "") + " N=" + std::to_string(z.seq),
                         buildTensorNetwork(sized(name, z, causal, bias), z.seq), batch});
    ++batch;
  }
  return out;
}

const TensorNode* node(const TensorNetwork& n, const std::string& id) {
  for (const auto& x : n.nodes)
    if (x.id == id) return &x;
  return nullptr;
}

const StepInfo* stepNamed(const std::vector<StepInfo>& steps, const std::string& output) {
  for (const auto& s : steps)
    if (s.output == output) return &s;
  return nullptr;
}

const OrderComparison* comparisonAt(const TensorNetwork& net, const std::vector<OrderComparison>& cs,
                                    const std::string& output) {
  for (const auto& c : cs)
    if (net.plan[size_t(c.step)].output == output) return &c;
  return nullptr;
}

const ContractionOrder* orderNamed(const std::vector<ContractionOrder>& orders, const std::string& expression) {
  for (const auto& o : orders)
    if (o.expression == expression) return &o;
  return nullptr;
}

}  // namespace

TEST(ContractionSteps, StepFlopsAddUpToNetworkCost) {
  for (const auto& [name, net, batch] : everyCase()) {
    SCOPED_TRACE(name);
    const auto steps = contractionSteps(net, batch);
    ASSERT_EQ(steps.size(), net.plan.size());
    const auto cost = networkCost(net, batch);
    double flops = 0, largest = 0;
    for (const auto& s : steps) {
      EXPECT_GE(s.cost.flops, s.cost.contraction_flops);
      EXPECT_GE(s.cost.peak_elements, s.cost.result_elements);
      EXPECT_DOUBLE_EQ(s.peak_bytes, 4 * s.cost.peak_elements);
      if (!s.cost.needed_for_y) continue;
      flops += s.cost.flops;
      largest = std::max(largest, s.cost.peak_elements);
    }
    EXPECT_DOUBLE_EQ(flops, cost.flops);
    EXPECT_DOUBLE_EQ(largest, cost.largest_intermediate_elements);
    EXPECT_TRUE(steps.back().cost.needed_for_y);  // y; only display-map steps are left out
  }
}

TEST(ContractionSteps, ResultLegsAreTheOutputSubscripts) {
  for (const auto& [name, net, batch] : everyCase()) {
    SCOPED_TRACE(name);
    std::map<char, Leg> legs;
    for (const auto& l : networkIndices(net)) legs[l.index] = l;
    const auto steps = contractionSteps(net, batch);
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto& plan = net.plan[i];
      std::string want = parseEinsum(plan.einsum).output;
      if (plan.op == PlanStep::Op::SelectLast) want.erase(want.find(plan.along), 1);
      if (plan.op == PlanStep::Op::Mean0) want.erase(0, 1);
      const auto& s = steps[i];
      EXPECT_EQ(s.index, int(i));
      EXPECT_EQ(s.operands, plan.inputs);
      ASSERT_EQ(s.result_legs.size(), want.size()) << s.output;
      double elements = 1;
      for (size_t a = 0; a < want.size(); ++a) {
        const auto& l = s.result_legs[a];
        EXPECT_EQ(l.index, want[a]);
        const std::int64_t size = want[a] == 'b' ? batch : legs.at(want[a]).size;
        EXPECT_EQ(l.size, size) << s.output << " axis " << a;
        EXPECT_EQ(l.symbol, want[a] == 'b' ? "B" : legs.at(want[a]).symbol);
        elements *= double(size);
      }
      EXPECT_DOUBLE_EQ(s.result_bytes, 4 * elements) << s.output;
      for (const auto& l : s.summed) EXPECT_EQ(parseEinsum(plan.einsum).output.find(l.index), std::string::npos);
    }
  }
}

TEST(ContractionSteps, DrawnNodesGrowAlongThePlanUpToEverythingYNeeds) {
  for (const auto& [name, net, batch] : everyCase()) {
    SCOPED_TRACE(name);
    const auto steps = contractionSteps(net, batch);
    std::map<std::string, std::set<std::string>> drawn;
    for (const auto& s : steps) {
      const std::set<std::string> mine(s.drawn_nodes.begin(), s.drawn_nodes.end());
      EXPECT_EQ(mine.size(), s.drawn_nodes.size()) << s.output;
      for (const auto& in : s.operands)
        if (drawn.count(in)) {
          EXPECT_TRUE(std::includes(mine.begin(), mine.end(), drawn[in].begin(), drawn[in].end())) << s.output;
        }
      for (const auto& n : s.new_nodes) {
        EXPECT_TRUE(mine.count(n)) << s.output;
        EXPECT_NE(node(net, n), nullptr);
      }
      drawn[s.output] = mine;
    }
    // y depends on every drawn node except those only the display maps use.
    std::set<std::string> yNeeds;
    std::function<void(const std::string&)> walk = [&](const std::string& id) {
      if (node(net, id)) {
        yNeeds.insert(id);
        return;
      }
      for (const auto& p : net.plan)
        if (p.output == id) {
          for (const auto& in : p.inputs) walk(in);
          yNeeds.insert(p.addends.begin(), p.addends.end());
        }
    };
    walk(net.output);
    std::set<std::string> expected;
    for (const auto& n : net.nodes) {
      bool usedByY = false;
      for (const auto& s : steps)
        if (s.cost.needed_for_y && std::count(s.new_nodes.begin(), s.new_nodes.end(), n.id)) usedByY = true;
      if (usedByY) expected.insert(n.id);
    }
    EXPECT_EQ(yNeeds, expected);
    EXPECT_EQ(drawn[net.output], expected);
  }
}

TEST(ContractionSteps, BoxedStepsCarryTheirBoxAndEquationsNameTheirOperands) {
  for (const auto& [name, net, batch] : everyCase()) {
    SCOPED_TRACE(name);
    const auto steps = contractionSteps(net, batch);
    int softmaxes = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto& s = steps[i];
      const auto op = net.plan[i].op;
      const bool boxed = op == PlanStep::Op::Softmax || op == PlanStep::Op::Normalize || op == PlanStep::Op::EluPlusOne;
      EXPECT_EQ(s.box, boxed ? net.plan[i].box : "") << s.output;
      if (boxed) {
        EXPECT_TRUE(std::any_of(net.boxes.begin(), net.boxes.end(), [&](const SoftmaxBox& b) { return b.id == s.box; }));
      }
      if (op == PlanStep::Op::Softmax) {
        ++softmaxes;
        EXPECT_NE(s.equation.find("softmax over"), std::string::npos) << s.equation;
      }
      EXPECT_EQ(s.equation.rfind(s.output + (s.result_legs.empty() ? " =" : "["), 0), 0u) << s.equation;
      for (const auto& in : s.operands) {
        const auto* n = node(net, in);
        EXPECT_NE(s.equation.find(n ? n->label : in), std::string::npos) << s.equation << " lacks " << in;
      }
      for (const auto& a : net.plan[i].addends) EXPECT_NE(s.equation.find(node(net, a)->label), std::string::npos);
    }
    if (net.title.rfind("MHSA", 0) == 0 || net.title.rfind("THSA", 0) == 0) {
      EXPECT_EQ(softmaxes, 1);
    }
  }
}

// MHSA at B = 2, N = M = 3, H = 2, D = 2, F = 4, no biases.
TEST(ContractionSteps, MhsaStepsByHand) {
  auto s = makeSpecPreset("mhsa");
  s.sizes.F = 4;
  s.sizes.H = 2;
  s.sizes.D = 2;
  s.bias = false;
  const auto net = buildTensorNetwork(s, 3);
  const auto steps = contractionSteps(net, 2);
  const auto* q = stepNamed(steps, "q");
  ASSERT_NE(q, nullptr);
  EXPECT_DOUBLE_EQ(q->cost.flops, 2.0 * 2 * 3 * 2 * 2 * 4);  // 2·B·N·H·D·F
  EXPECT_EQ(q->equation, "q[b,n,h,d] = Σ_f X^Q[b,n,f]·W^Q[h,d,f]");
  EXPECT_EQ(q->new_nodes, (std::vector<std::string>{"x_q", "Wq"}));

  const auto* p = stepNamed(steps, "P");
  ASSERT_NE(p, nullptr);
  const double terms = 2.0 * 2 * 3 * 3;  // B·H·N·M
  EXPECT_DOUBLE_EQ(p->cost.contraction_flops, 2 * terms * 2);  // 2 per multiply-add over D
  EXPECT_DOUBLE_EQ(p->cost.flops, 2 * terms * 2 + 6 * terms);  // + softmax (5) and its scale (1)
  EXPECT_DOUBLE_EQ(p->result_bytes, 4 * terms);
  EXPECT_EQ(p->box, "attn");
  ASSERT_EQ(p->summed.size(), 1u);
  EXPECT_EQ(p->summed[0].symbol, "D");
  EXPECT_EQ(p->equation, "P[b,h,n,m] = Σ_d q[b,n,h,d]·k[b,m,h,d]  → softmax over m, α = 1/√D");
  EXPECT_EQ(p->drawn_nodes, (std::vector<std::string>{"x_q", "Wq", "x_k", "Wk"}));
  EXPECT_TRUE(p->new_nodes.empty());
}

TEST(ContractionSteps, OrderCountIsTheDoubleFactorial) {
  const std::size_t want[] = {1, 1, 1, 3, 15, 105, 945};
  for (int k = 0; k <= kMaxOrderOperands; ++k) EXPECT_EQ(contractionOrderCount(k), want[k]) << k;
  // A chain a·b·c·… of k matrices: every order is enumerated once.
  const std::string letters = "ijklmnop";
  for (int k = 1; k <= kMaxOrderOperands; ++k) {
    std::string einsum;
    std::vector<std::string> labels;
    std::map<char, std::int64_t> sizes;
    for (int i = 0; i < k; ++i) {
      if (i) einsum += ',';
      einsum += letters.substr(size_t(i), 2);
      labels.push_back(std::string("A") += std::to_string(i));
      sizes[letters[size_t(i)]] = i + 2;
    }
    sizes[letters[size_t(k)]] = 3;
    einsum += "->" + letters.substr(0, 1) + letters.substr(size_t(k), 1);
    const auto orders = contractionOrders(einsum, labels, sizes);
    EXPECT_EQ(orders.size(), contractionOrderCount(k));
    std::set<std::string> distinct;
    for (const auto& o : orders) distinct.insert(o.expression);
    EXPECT_EQ(distinct.size(), orders.size());
  }
}

// Linear attention without the normaliser: y[n,e] = Σ_{m,d} φ(Q)[n,d]·φ(K)[m,d]·V[m,e].
TEST(ContractionSteps, LinearAttentionOrdersByHand) {
  const std::vector<std::string> labels{"φ(Q)", "φ(K)", "V"};
  auto orders = [&](std::int64_t N) {
    return contractionOrders("nd,md,me->ne", labels, {{'n', N}, {'m', N}, {'d', 8}, {'e', 8}});
  };
  const auto o = orders(100);
  ASSERT_EQ(o.size(), 3u);
  const auto* kv = orderNamed(o, "(φ(K)·V)·φ(Q)");
  const auto* qk = orderNamed(o, "(φ(Q)·φ(K))·V");
  const auto* qv = orderNamed(o, "(φ(Q)·V)·φ(K)");
  ASSERT_TRUE(kv && qk && qv);
  EXPECT_DOUBLE_EQ(kv->flops, 2.0 * 100 * 8 * 8 + 2.0 * 100 * 8 * 8);  // Σ_m then Σ_d: 2·M·D·E + 2·N·D·E
  EXPECT_DOUBLE_EQ(kv->largest_elements, 100.0 * 8);                    // the result [N, E]
  EXPECT_DOUBLE_EQ(qk->flops, 2.0 * 100 * 100 * 8 + 2.0 * 100 * 100 * 8);
  EXPECT_DOUBLE_EQ(qk->largest_elements, 100.0 * 100);  // the map φ(Q)·φ(K)ᵀ [N, M]
  EXPECT_EQ(qk->largest, "φ(Q)·φ(K)");
  EXPECT_DOUBLE_EQ(qv->flops, 3.0 * 100 * 8 * 100 * 8);  // an outer product (1 per element), then Σ_{m,d}
  // Doubling N: K·V first doubles, Q·K first quadruples.
  const auto o2 = orders(200);
  EXPECT_DOUBLE_EQ(orderNamed(o2, kv->expression)->flops, 2 * kv->flops);
  EXPECT_DOUBLE_EQ(orderNamed(o2, qk->expression)->flops, 4 * qk->flops);
}

TEST(ContractionSteps, EveryComparisonHoldsThePlanAmongItsOrders) {
  for (const auto& [name, net, batch] : everyCase()) {
    SCOPED_TRACE(name);
    const auto costs = planStepCosts(net, batch);
    for (const auto& c : compareContractionOrders(net, batch)) {
      SCOPED_TRACE(c.einsum);
      EXPECT_GE(c.operands.size(), 3u);
      EXPECT_NE(net.plan[size_t(c.step)].op, PlanStep::Op::Divide);
      ASSERT_FALSE(c.joined_steps.empty());
      EXPECT_EQ(c.joined_steps.back(), c.step);
      double flops = 0;
      for (int s : c.joined_steps) flops += costs[size_t(s)].contraction_flops;
      EXPECT_DOUBLE_EQ(c.plan.flops, flops);
      for (char ch : c.einsum)
        if (ch != ',' && ch != '-' && ch != '>') {
          EXPECT_TRUE(c.sizes.count(ch)) << ch;
        }
      if (!c.enumerated) {  // beyond the cap: causal multilinear without biases joins 7 operands into y
        EXPECT_GT(c.operands.size(), size_t(kMaxOrderOperands));
        EXPECT_TRUE(c.orders.empty());
        EXPECT_FALSE(c.note.empty());
        EXPECT_EQ(c.cheapest.expression, c.plan.expression);
        continue;
      }
      EXPECT_EQ(c.orders.size(), c.order_count);
      EXPECT_EQ(c.order_count, contractionOrderCount(int(c.operands.size())));
      for (const auto& o : c.orders) {
        EXPECT_LE(c.cheapest.flops, o.flops);
        EXPECT_GE(c.most_expensive.flops, o.flops);
        EXPECT_LE(c.least_memory.largest_elements, o.largest_elements);
      }
      if (c.prefix_sum) {
        EXPECT_EQ(c.plan.expression.rfind("Σ_{", 0), 0u) << c.plan.expression;
        continue;
      }
      // The plan is one of the enumerated orders, at the same cost.
      const auto* mine = orderNamed(c.orders, c.plan.expression);
      ASSERT_NE(mine, nullptr) << c.plan.expression;
      EXPECT_DOUBLE_EQ(mine->flops, c.plan.flops);
      EXPECT_DOUBLE_EQ(mine->largest_elements, c.plan.largest_elements);
    }
  }
}

TEST(ContractionSteps, DenseThsaMaterialisesBRNMWhicheverOrder) {
  const std::int64_t B = 2, N = 40, R = 6;
  const auto net = buildTensorNetwork(sized("thsa", kShapes[0], false, true), N);
  const auto cs = compareContractionOrders(net, B);
  const auto* logits = comparisonAt(net, cs, "P");
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->operands, (std::vector<std::string>{"C", "q", "k"}));
  EXPECT_EQ(logits->joined_steps.size(), 2u);  // qt = C·q, then the logits
  EXPECT_EQ(logits->plan.expression, "(C·q)·k");
  EXPECT_EQ(logits->order_count, 3u);
  for (const auto& o : logits->orders) EXPECT_GE(o.largest_elements, double(B * R * N * N)) << o.expression;
  EXPECT_DOUBLE_EQ(logits->least_memory.largest_elements, double(B * R * N * N));
}

TEST(ContractionSteps, LinearThsaContractsKeysWithValuesFirst) {
  for (const std::int64_t N : {64, 128}) {
    const auto net = buildTensorNetwork(sized("thsa_linear", kShapes[0], false, true), N);
    const auto cs = compareContractionOrders(net, 2);
    const auto* num = comparisonAt(net, cs, "num");
    ASSERT_NE(num, nullptr);
    EXPECT_EQ(num->plan.expression, "(phik·v)·phiq");
    EXPECT_DOUBLE_EQ(num->plan.flops, num->cheapest.flops);
    EXPECT_EQ(num->most_expensive.expression, "(phiq·v)·phik");
    EXPECT_GE(num->most_expensive.largest_elements, 2.0 * N * N);
  }
  auto ratio = [](const std::string& pick) {
    auto flops = [&](std::int64_t N) {
      const auto net = buildTensorNetwork(sized("thsa_linear", kShapes[0], false, true), N);
      const auto cs = compareContractionOrders(net, 2);
      const auto* c = comparisonAt(net, cs, "num");
      return pick == "plan" ? c->plan.flops : c->most_expensive.flops;
    };
    return flops(2048) / flops(1024);
  };
  EXPECT_NEAR(ratio("plan"), 2.0, 1e-9);
  EXPECT_NEAR(ratio("worst"), 4.0, 1e-9);
}

TEST(ContractionSteps, CausalPrefixSumsBeatEveryDenseOrder) {
  for (const std::string name : {"dimwise", "thsa_linear"}) {
    SCOPED_TRACE(name);
    const auto net = buildTensorNetwork(sized(name, kShapes[0], true, true), 64);
    const auto cs = compareContractionOrders(net, 2);
    const auto* sums = comparisonAt(net, cs, "S");
    ASSERT_NE(sums, nullptr);
    EXPECT_TRUE(sums->prefix_sum);
    EXPECT_EQ(sums->operands.back(), "L");
    EXPECT_LT(sums->plan.flops, sums->cheapest.flops);
  }
}

TEST(ContractionSteps, CostVersusSequence) {
  const std::vector<std::int64_t> seqs{1024, 2048, 4096, 8192};
  auto scaling = [&](const std::string& name) { return costVersusSequence(makeSpecPreset(name), seqs, 2); };
  auto lastRatio = [](const SequenceScaling& s) { return s.points.back().flops / s.points[s.points.size() - 2].flops; };
  for (const std::string name : {"mhsa", "thsa"}) {
    const auto s = scaling(name);
    ASSERT_EQ(s.points.size(), seqs.size());
    EXPECT_FALSE(s.seq_fixed);
    EXPECT_NEAR(lastRatio(s), 4.0, 0.15) << name;
    EXPECT_NEAR(s.flops_exponent, 2.0, 0.05) << name;
    EXPECT_NEAR(s.memory_exponent, 2.0, 1e-9) << name;
  }
  for (const std::string name : {"dimwise", "thsa_linear"}) {
    const auto s = scaling(name);
    EXPECT_NEAR(lastRatio(s), 2.0, 0.05) << name;
    EXPECT_NEAR(s.flops_exponent, 1.0, 0.05) << name;
  }
  const auto thsa = makeSpecPreset("thsa");
  for (const auto& p : scaling("thsa").points)
    EXPECT_DOUBLE_EQ(p.largest_intermediate_elements, 2.0 * thsa.sizes.R * double(p.seq) * double(p.seq));
  const auto ml = scaling("multilinear");
  EXPECT_TRUE(ml.seq_fixed);
  EXPECT_FALSE(ml.note.empty());
  ASSERT_EQ(ml.points.size(), 1u);
  EXPECT_EQ(ml.points[0].seq, makeSpecPreset("multilinear").sizes.seq_len);
  EXPECT_TRUE(std::isnan(ml.flops_exponent));
}

TEST(ContractionSteps, RejectsInvalidInput) {
  std::map<char, std::int64_t> sizes{{'a', 2}};
  EXPECT_THROW(contractionOrders("a,a,a,a,a,a,a->a", std::vector<std::string>(7, "x"), sizes), std::invalid_argument);
  EXPECT_THROW(contractionOrders("a,a->a", {"x"}, sizes), std::invalid_argument);
  EXPECT_THROW(contractionOrders("a,a", {"x", "y"}, sizes), std::invalid_argument);
  EXPECT_THROW(costVersusSequence(makeSpecPreset("mhsa"), {0}, 1), std::invalid_argument);
}
