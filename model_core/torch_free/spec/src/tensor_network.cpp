// Tensor-network generator: dispatch, and the analyses shared by every network (contractions,
// dangling legs, consistency checks, cost).
//
// What each variant draws (ids; X is bound to the input x, every W to its contract weight):
//  * mhsa / fixed_head: X^Q [N,F], X^K [M,F], X^V [M,F]; W^Q, W^K, W^V [H,D,F]; W^O [F,H,D].
//    H is one hyperedge of W^Q, W^K, W^V, W^O (head batch multiplication, Tuformer Fig. 3b);
//    D joins W^Q–W^K (latent contraction) and W^V–W^O. Softmax box {X^Q, W^Q, X^K, W^K},
//    α = 1/√D, ball on M.
//  * tp: as mhsa plus X^R [N,F] and W^R [H,D,F]; the binding ō ⊙ r is the batch multiplication
//    of W^V, W^R, W^O along D and H (and of X^Q, X^R along N, kept in the output); the plan
//    evaluates it as an elementwise (Hadamard) step.
//  * thsa: X^Q, X^K, X^V; W^Q, W^K [R,F]; W^V [R,F]; W^O [F,R]; C [R,R] inside the softmax box
//    between the query and key legs: hyperedge s (C, W^Q, W^K), hyperedge r (C, W^V, W^O);
//    α = 1/√R. Kronecker cores split R into (H, D) and draw their factors (tensor_network.h).
//  * thsa_linear: as thsa with C whole, φ boxes around {X^Q, W^Q, C} and {X^K, W^K}, and a
//    normalisation box (no exp) with its ball on M; causal sums are prefix sums in the plan.
//  * multilinear: X^Q [N,F], X^K [N,F], X^V [N,F]; W^Q, W^K, W^V [R,F]; G [P,R] (the block-term
//    cores, in a softmax box over R when core_softmax); 1/P [P] (mean over the cores); W^O
//    [F,N,N]; causal: two lower-triangular masks L [N,N] on (query, key) and (query, value).
//  * dimwise: X^Q [M,F], X^K [M,F] (their token legs contract: S = qᵀk), X^V [N,F]; W^Q, W^K,
//    W^V [d,F]; W_c [c,d,d]; W^O [F,c,d]; softmax box {X^Q, W^Q, X^K, W^K} with ball on the last
//    d leg, α = 1/√N; causal: a lower-triangular L [N,M] inside the box and α = 1/√i.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "spec/contraction_steps.h"
#include "spec/validation.h"
#include "tensor_network_builder.h"

namespace tensorscope::spec {

TensorNetwork buildTensorNetwork(const AttentionSpec& spec, std::int64_t seq) {
  if (const auto issues = validate(spec); !issues.empty())
    throw std::invalid_argument("invalid attention spec:\n" + formatIssues(issues));
  if (seq < 1) throw std::invalid_argument("a tensor network needs at least one token; got N = " + std::to_string(seq));
  switch (spec.variant) {
    case Variant::Mhsa:
    case Variant::FixedHead:
    case Variant::Tp: return detail::buildHeadedNetwork(spec, seq);
    case Variant::Thsa: return detail::buildThsaNetwork(spec, seq);
    case Variant::ThsaLinear: return detail::buildThsaLinearNetwork(spec, seq);
    case Variant::Multilinear: return detail::buildMultilinearNetwork(spec);
    case Variant::Dimwise: return detail::buildDimwiseNetwork(spec, seq);
  }
  throw std::invalid_argument("unknown attention variant");
}

EinsumTerms parseEinsum(const std::string& einsum) {
  const auto arrow = einsum.find("->");
  if (arrow == std::string::npos) throw std::invalid_argument("einsum '" + einsum + "' has no '->'");
  EinsumTerms t;
  t.output = einsum.substr(arrow + 2);
  std::string cur;
  for (char ch : einsum.substr(0, arrow)) {
    if (ch == ',') {
      t.operands.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  t.operands.push_back(cur);
  return t;
}

namespace {

bool isBias(const TensorNode& n) { return !n.adds_to.empty(); }

/// Index letter -> the legs carrying it, over the drawn (non-bias) nodes.
std::map<char, std::vector<std::pair<std::string, int>>> carriers(const TensorNetwork& net) {
  std::map<char, std::vector<std::pair<std::string, int>>> out;
  for (const auto& n : net.nodes) {
    if (isBias(n)) continue;
    for (int i = 0; i < static_cast<int>(n.legs.size()); ++i) out[n.legs[static_cast<size_t>(i)].index].push_back({n.id, i});
  }
  return out;
}

bool isOutputIndex(const TensorNetwork& net, char index) {
  return std::any_of(net.output_legs.begin(), net.output_legs.end(), [&](const Leg& l) { return l.index == index; });
}

}  // namespace

std::vector<Leg> networkIndices(const TensorNetwork& net) {
  std::vector<Leg> out;
  for (const auto& n : net.nodes)
    for (const auto& l : n.legs)
      if (std::none_of(out.begin(), out.end(), [&](const Leg& o) { return o.index == l.index; })) out.push_back(l);
  return out;
}

std::vector<Contraction> contractions(const TensorNetwork& net) {
  const auto byIndex = carriers(net);
  std::vector<Contraction> out;
  for (const auto& l : networkIndices(net)) {
    const auto it = byIndex.find(l.index);
    if (it == byIndex.end() || it->second.size() < 2) continue;
    Contraction c;
    c.index = l.index;
    c.symbol = l.symbol;
    c.size = l.size;
    c.ends = it->second;
    c.dangling = isOutputIndex(net, l.index);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::pair<std::string, int>> danglingLegs(const TensorNetwork& net) {
  const auto byIndex = carriers(net);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& n : net.nodes) {
    if (isBias(n)) continue;
    for (int i = 0; i < static_cast<int>(n.legs.size()); ++i)
      if (byIndex.at(n.legs[static_cast<size_t>(i)].index).size() == 1) out.push_back({n.id, i});
  }
  return out;
}

std::vector<std::string> checkNetwork(const TensorNetwork& net) {
  std::vector<std::string> problems;
  auto fail = [&](std::string p) { problems.push_back(std::move(p)); };
  std::map<std::string, const TensorNode*> nodes;
  std::map<char, Leg> sizes;
  for (const auto& n : net.nodes) {
    if (!nodes.emplace(n.id, &n).second) fail("node id '" + n.id + "' appears twice");
    for (const auto& l : n.legs) {
      if (l.index == 'b') fail("node '" + n.id + "' uses the batch letter b for a leg");
      if (l.size < 1) fail("node '" + n.id + "' has a leg of size " + std::to_string(l.size));
      const auto [it, fresh] = sizes.emplace(l.index, l);
      if (!fresh && (it->second.size != l.size || it->second.symbol != l.symbol))
        fail(std::string("index '") + l.index + "' has two sizes or symbols (node '" + n.id + "')");
    }
  }
  for (const auto& n : net.nodes)
    if (isBias(n) && !nodes.count(n.adds_to)) fail("bias '" + n.id + "' adds to unknown node '" + n.adds_to + "'");
  std::map<std::string, const SoftmaxBox*> boxes;
  for (const auto& b : net.boxes) {
    boxes[b.id] = &b;
    for (const auto& id : b.nodes)
      if (!nodes.count(id)) fail("box '" + b.id + "' names unknown node '" + id + "'");
    if (b.kind != SoftmaxBox::Kind::Elementwise && !sizes.count(b.normalized))
      fail("box '" + b.id + "' normalises an unknown index");
  }
  std::set<std::string> defined;
  for (const auto& s : net.plan) {
    EinsumTerms t;
    try {
      t = parseEinsum(s.einsum);
    } catch (const std::invalid_argument& e) {
      fail(e.what());
      continue;
    }
    if (t.operands.size() != s.inputs.size())
      fail("step '" + s.output + "': " + std::to_string(s.inputs.size()) + " inputs for einsum '" + s.einsum + "'");
    for (size_t i = 0; i < s.inputs.size() && i < t.operands.size(); ++i) {
      const auto& in = s.inputs[i];
      if (const auto it = nodes.find(in); it != nodes.end()) {
        const std::string want = std::string(it->second->batched ? "b" : "") + detail::letters(it->second->legs);
        if (t.operands[i] != want)
          fail("step '" + s.output + "': operand '" + in + "' has subscripts " + t.operands[i] + ", its legs say " + want);
      } else if (!defined.count(in)) {
        fail("step '" + s.output + "' uses '" + in + "' before it is computed");
      }
    }
    for (char ch : t.output)
      if (ch != 'b' && !sizes.count(ch)) fail("step '" + s.output + "' outputs unknown index " + std::string(1, ch));
    if (std::set<char>(t.output.begin(), t.output.end()).size() != t.output.size())
      fail("step '" + s.output + "' repeats an output index");
    for (const auto& a : s.addends) {
      const auto it = nodes.find(a);
      if (it == nodes.end() || !isBias(*it->second)) fail("step '" + s.output + "' adds '" + a + "', not a bias node");
      else
        for (const auto& l : it->second->legs)
          if (t.output.find(l.index) == std::string::npos) fail("step '" + s.output + "': addend '" + a + "' does not fit");
    }
    const bool boxed = s.op == PlanStep::Op::Softmax || s.op == PlanStep::Op::Normalize;
    if (boxed) {
      const auto it = boxes.find(s.box);
      if (it == boxes.end()) fail("step '" + s.output + "' names unknown box '" + s.box + "'");
      else if (t.output.find(it->second->normalized) == std::string::npos ||
               ((it->second->causal || it->second->position_scale) && t.output.find(it->second->query) == std::string::npos))
        fail("step '" + s.output + "' lacks the normalised or query index of box '" + s.box + "'");
    }
    if (s.op == PlanStep::Op::RmsNorm && t.output.find(s.along) == std::string::npos)
      fail("step '" + s.output + "': RmsNorm runs along '" + std::string(1, s.along) + "', which its result lacks");
    if (s.op == PlanStep::Op::SelectLast && t.output.find(s.along) == std::string::npos)
      fail("step '" + s.output + "' runs along an index it does not output");
    if (s.op == PlanStep::Op::PrefixSum) {
      const auto it = s.inputs.empty() ? nodes.end() : nodes.find(s.inputs.back());
      if (it == nodes.end() || it->second->binding != "lower_triangular" || t.operands.back().size() != 2 ||
          t.operands.back()[1] != s.along || t.output.find(s.along) != std::string::npos ||
          t.output.find(t.operands.back()[0]) == std::string::npos)
        fail("step '" + s.output + "': a prefix sum needs a last operand L [n, along] with n kept and along summed");
    }
    if (s.op == PlanStep::Op::Divide && t.operands.size() != 2) fail("step '" + s.output + "': Divide needs two operands");
    if (s.op == PlanStep::Op::Add && t.operands.size() != 2) fail("step '" + s.output + "': Add needs two operands");
    if (nodes.count(s.output) || !defined.insert(s.output).second) fail("step output '" + s.output + "' is not a new id");
  }
  if (net.plan.empty() || net.plan.back().output != net.output) fail("the plan does not end in the output");
  else if (net.output_legs.size() != 2 ||
           parseEinsum(net.plan.back().einsum).output !=
               std::string("b") + net.output_legs[0].index + net.output_legs[1].index)
    fail("the output is not [b, N, F]");
  if (!net.maps.empty() && !defined.count(net.maps)) fail("maps '" + net.maps + "' is not a step output");
  return problems;
}

NetworkCost networkCost(const TensorNetwork& net, std::int64_t batch) {
  // The per-step counting is planStepCosts' (contraction_steps.cpp), shared with contraction stepping.
  NetworkCost cost;
  for (const auto& s : planStepCosts(net, batch)) {
    if (!s.needed_for_y) continue;
    cost.flops += s.flops;
    if (s.peak_elements > cost.largest_intermediate_elements) {
      cost.largest_intermediate_elements = s.peak_elements;
      cost.largest_intermediate = s.peak;
    }
  }
  return cost;
}

}  // namespace tensorscope::spec
