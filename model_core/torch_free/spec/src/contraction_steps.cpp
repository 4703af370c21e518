// Contraction stepping (spec/contraction_steps.h): the per-step cost that networkCost sums, the
// step-by-step view of a plan, and the enumeration of pairwise contraction orders. Every pairwise
// contraction, of a plan step or of an enumerated order, is counted by one function, costTree; the
// per-element work of a step by elementwiseFlops.
#include "spec/contraction_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "tensor_network_builder.h"

namespace tensorscope::spec {
namespace {

/// Index letter -> size. A letter it lacks counts 1 (networkCost's rule).
using IndexSizes = std::map<char, double>;

double count(const IndexSizes& size, const std::string& subs) {
  double n = 1;
  for (char ch : subs)
    if (const auto it = size.find(ch); it != size.end()) n *= it->second;
  return n;
}

bool has(const std::string& s, char ch) { return s.find(ch) != std::string::npos; }

IndexSizes networkSizes(const TensorNetwork& net, std::int64_t batch) {
  IndexSizes size;
  for (const auto& l : networkIndices(net)) size[l.index] = static_cast<double>(l.size);
  size['b'] = static_cast<double>(batch);
  return size;
}

const SoftmaxBox* findBox(const TensorNetwork& net, const std::string& id) {
  for (const auto& b : net.boxes)
    if (b.id == id) return &b;
  return nullptr;
}

/// A contraction order over k operands: node i < k is operand i; node k + j joins pairs[j]
/// (children before parents); the last node is the result — with one operand, the operand itself.
using Pairs = std::vector<std::pair<int, int>>;

struct TreeCost {
  double flops = 0;
  std::vector<std::string> subs;  ///< per node: the indices it keeps
  std::vector<double> elements;   ///< per node; the result's is count(output) (broadcast indices included)
};

/// The one cost rule: a pair keeps the indices that the output or an operand outside it carries
/// and costs 2 FLOPs per term (all indices of both sides) when it sums one, else 1 per element; a
/// lone operand that drops indices is a reduction costing 1 per input element.
TreeCost costTree(const std::vector<std::string>& operands, const std::string& output, const Pairs& pairs,
                  const IndexSizes& size) {
  const size_t k = operands.size();
  if (k == 0 || k > 64 || pairs.size() + 1 != k) throw std::invalid_argument("a contraction order needs 1 to 64 operands");
  TreeCost c;
  c.subs = operands;
  std::vector<std::uint64_t> within;  // per node: the operands it holds
  for (size_t i = 0; i < k; ++i) {
    within.push_back(std::uint64_t{1} << i);
    c.elements.push_back(count(size, operands[i]));
  }
  if (k == 1 && operands.front().size() > output.size()) c.flops += count(size, operands.front());
  for (const auto& [l, r] : pairs) {
    const std::uint64_t held = within[static_cast<size_t>(l)] | within[static_cast<size_t>(r)];
    std::string keep = output;
    for (size_t i = 0; i < k; ++i)
      if (!(held >> i & 1)) keep += operands[i];
    std::string all = c.subs[static_cast<size_t>(l)];
    for (char ch : c.subs[static_cast<size_t>(r)])
      if (!has(all, ch)) all += ch;
    std::string kept;
    for (char ch : all)
      if (has(keep, ch)) kept += ch;
    c.flops += (kept.size() < all.size() ? 2.0 : 1.0) * count(size, all);
    c.subs.push_back(kept);
    c.elements.push_back(count(size, kept));
    within.push_back(held);
  }
  c.elements.back() = count(size, output);
  return c;
}

/// Left to right: ((0·1)·2)·…, the order of a plan step.
Pairs leftToRight(size_t k) {
  Pairs p;
  for (size_t i = 1; i < k; ++i) p.push_back({i == 1 ? 0 : static_cast<int>(k + i - 2), static_cast<int>(i)});
  return p;
}

/// Text of every node of an order: a pair shows its part with more operands first (ties: the part
/// holding the earlier operand), a compound part in parentheses.
std::vector<std::string> orderTexts(const std::vector<std::string>& labels, const Pairs& pairs) {
  const size_t k = labels.size();
  std::vector<std::string> text = labels;
  std::vector<int> operands(k, 1), first(k);
  for (size_t i = 0; i < k; ++i) first[i] = static_cast<int>(i);
  auto part = [&](int node) { return static_cast<size_t>(node) < k ? text[static_cast<size_t>(node)] : "(" + text[static_cast<size_t>(node)] + ")"; };
  for (auto [l, r] : pairs) {
    const auto L = static_cast<size_t>(l), R = static_cast<size_t>(r);
    if (operands[R] > operands[L] || (operands[R] == operands[L] && first[R] < first[L])) std::swap(l, r);
    text.push_back(part(l) + "·" + part(r));
    operands.push_back(operands[L] + operands[R]);
    first.push_back(std::min(first[L], first[R]));
  }
  return text;
}

/// Cost and text of one order (largest: the first largest tensor it creates, the result included).
ContractionOrder costOrder(const std::vector<std::string>& operands, const std::string& output,
                           const std::vector<std::string>& labels, const Pairs& pairs, const IndexSizes& size) {
  const auto tree = costTree(operands, output, pairs, size);
  const auto text = orderTexts(labels, pairs);
  ContractionOrder o;
  o.expression = text.back();
  o.flops = tree.flops;
  const size_t from = pairs.empty() ? 0 : operands.size();  // the tensors the order creates
  for (size_t n = from; n < tree.elements.size(); ++n)
    if (tree.elements[n] > o.largest_elements) {
      o.largest_elements = tree.elements[n];
      o.largest = text[n];
    }
  return o;
}

/// Every binary tree over k operands, as Pairs, in a fixed order: a set splits into the part holding
/// its lowest operand and the rest.
std::vector<Pairs> allOrders(int k) {
  using Merges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // (part, part) in post-order
  std::map<std::uint32_t, std::vector<Merges>> memo;
  auto trees = [&](auto&& self, std::uint32_t set) -> const std::vector<Merges>& {
    if (const auto it = memo.find(set); it != memo.end()) return it->second;
    std::vector<Merges> out;
    const std::uint32_t lowest = set & (~set + 1), rest = set ^ lowest;
    if (rest == 0) out.push_back({});
    for (std::uint32_t r = rest; rest != 0; r = (r - 1) & rest) {
      const std::uint32_t a = lowest | r, b = set ^ a;
      if (b != 0)
        for (const auto& ta : self(self, a))
          for (const auto& tb : self(self, b)) {
            Merges m = ta;
            m.insert(m.end(), tb.begin(), tb.end());
            m.push_back({a, b});
            out.push_back(std::move(m));
          }
      if (r == 0) break;
    }
    return memo[set] = std::move(out);
  };
  std::vector<Pairs> out;
  for (const auto& merges : trees(trees, (std::uint32_t{1} << k) - 1)) {
    std::map<std::uint32_t, int> node;
    for (int i = 0; i < k; ++i) node[std::uint32_t{1} << i] = i;
    Pairs p;
    for (const auto& [a, b] : merges) {
      p.push_back({node.at(a), node.at(b)});
      node[a | b] = k + static_cast<int>(p.size()) - 1;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ContractionOrder> enumerateOrders(const std::vector<std::string>& operands, const std::string& output,
                                              const std::vector<std::string>& labels, const IndexSizes& size) {
  if (operands.size() > static_cast<size_t>(kMaxOrderOperands))
    throw std::invalid_argument(std::to_string(operands.size()) + " operands: contraction orders are enumerated up to " +
                                std::to_string(kMaxOrderOperands));
  if (labels.size() != operands.size()) throw std::invalid_argument("one label per operand is needed");
  std::vector<ContractionOrder> out;
  for (const auto& p : allOrders(static_cast<int>(operands.size()))) out.push_back(costOrder(operands, output, labels, p, size));
  return out;
}

/// Steps y depends on, walking back from the output (node ids are included, harmlessly).
std::set<std::string> neededForY(const TensorNetwork& net) {
  std::set<std::string> needed{net.output};
  for (auto it = net.plan.rbegin(); it != net.plan.rend(); ++it)
    if (needed.count(it->output)) needed.insert(it->inputs.begin(), it->inputs.end());
  return needed;
}

/// FLOPs per result element besides the contraction: scale, addends, the op (as the cost model).
double elementwiseFlops(const PlanStep& s, const TensorNetwork& net) {
  double per = (s.scale != 1.0 ? 1.0 : 0.0) + static_cast<double>(s.addends.size());
  switch (s.op) {
    case PlanStep::Op::Softmax: {
      const SoftmaxBox* box = findBox(net, s.box);
      const bool scaled = box && (box->scale != 1.0 || box->position_scale);
      return per + 5.0 + (scaled ? 1.0 : 0.0);
    }
    case PlanStep::Op::EluPlusOne:
    case PlanStep::Op::Normalize: return per + 2.0;
    case PlanStep::Op::Sigmoid: return per + 4.0;  // negate, exp, add one, divide (as the cost model)
    case PlanStep::Op::RmsNorm: return per + 3.0;  // square and sum, divide (the root per row is negligible)
    case PlanStep::Op::Mask3:
    case PlanStep::Op::Mean0: return per + 1.0;
    case PlanStep::Op::PrefixSum:  // its cumulative sum is counted with the contraction
    case PlanStep::Op::None:
    case PlanStep::Op::SelectLast: return per;
    case PlanStep::Op::Divide: return 1.0;  // the whole step: one division per element
    case PlanStep::Op::Add: return 1.0;     // the whole step: one addition per element
  }
  return per;
}

/// The einsum a PrefixSum step multiplies before its cumulative sum: the operands without L, and
/// the result with L's kept index n replaced by `along` (the product lives at every m).
std::pair<std::vector<std::string>, std::string> prefixProduct(const EinsumTerms& t) {
  auto operands = t.operands;
  const std::string mask = operands.back();
  operands.pop_back();
  std::string result = t.output;
  std::replace(result.begin(), result.end(), mask[0], mask[1]);
  return {operands, result};
}

}  // namespace

std::vector<StepCost> planStepCosts(const TensorNetwork& net, std::int64_t batch) {
  const IndexSizes size = networkSizes(net, batch);
  const auto needed = neededForY(net);
  std::vector<StepCost> out;
  for (const auto& s : net.plan) {
    StepCost c;
    c.needed_for_y = needed.count(s.output) > 0;
    const auto t = parseEinsum(s.einsum);
    c.result_elements = count(size, t.output);
    std::vector<double> partials;
    if (s.op != PlanStep::Op::Divide && s.op != PlanStep::Op::Add) {
      auto [operands, result] = s.op == PlanStep::Op::PrefixSum ? prefixProduct(t) : std::pair{t.operands, t.output};
      const auto tree = costTree(operands, result, leftToRight(operands.size()), size);
      c.contraction_flops = tree.flops + (s.op == PlanStep::Op::PrefixSum ? c.result_elements : 0.0);
      if (tree.elements.size() > operands.size() + 1)
        partials.assign(tree.elements.begin() + static_cast<std::ptrdiff_t>(operands.size()), tree.elements.end() - 1);
    }
    c.flops = c.contraction_flops + elementwiseFlops(s, net) * c.result_elements;
    for (double e : partials)
      if (e > c.peak_elements) {
        c.peak_elements = e;
        c.peak = s.output + " (partial)";
      }
    if (c.result_elements > c.peak_elements) {
      c.peak_elements = c.result_elements;
      c.peak = s.output;
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

Leg legOf(const std::map<char, Leg>& legs, char ch) {
  const auto it = legs.find(ch);
  return it != legs.end() ? it->second : Leg{ch, std::string(1, ch), 1};
}

/// "i,j,k"
std::string commaList(const std::string& subs) {
  std::string s;
  for (char ch : subs) {
    if (!s.empty()) s += ',';
    s += ch;
  }
  return s;
}

/// "name[i,j]" (a scalar: the name alone).
std::string tensorText(const std::string& name, const std::string& subs) {
  return subs.empty() ? name : name + "[" + commaList(subs) + "]";
}

std::string stepEquation(const PlanStep& s, const EinsumTerms& t, const std::string& summed,
                         const std::map<std::string, const TensorNode*>& nodes, const TensorNetwork& net) {
  auto name = [&](const std::string& id) {
    const auto it = nodes.find(id);
    return it != nodes.end() ? it->second->label : id;
  };
  std::string eq = tensorText(s.output, t.output) + " = ";
  std::vector<std::string> factors;
  for (size_t i = 0; i < s.inputs.size() && i < t.operands.size(); ++i) factors.push_back(tensorText(name(s.inputs[i]), t.operands[i]));
  if (s.op == PlanStep::Op::Divide && factors.size() == 2) return eq + factors[0] + " / " + factors[1];
  if (s.op == PlanStep::Op::Add && factors.size() == 2) return eq + factors[0] + " + " + factors[1];
  if (s.scale != 1.0) eq += detail::formatNumber(s.scale) + "·";
  if (!summed.empty()) eq += "Σ_" + (summed.size() == 1 ? summed : "{" + commaList(summed) + "}") + " ";
  for (size_t i = 0; i < factors.size(); ++i) eq += (i ? "·" : "") + factors[i];
  for (const auto& a : s.addends) {
    const auto it = nodes.find(a);
    eq += " + " + (it != nodes.end() ? tensorText(it->second->label, detail::letters(it->second->legs)) : a);
  }
  const SoftmaxBox* box = findBox(net, s.box);
  const std::string n = box ? std::string(1, box->normalized) : "", q = box ? std::string(1, box->query) : "";
  switch (s.op) {
    case PlanStep::Op::Softmax:
      eq += "  → softmax over " + n;
      if (box && !box->scale_label.empty() && (box->scale != 1.0 || box->position_scale)) eq += ", α = " + box->scale_label;
      if (box && box->causal) eq += ", masked where " + n + " > " + q;
      break;
    case PlanStep::Op::Normalize:
      eq += "  → normalise over " + n;
      if (box && box->causal) eq += ", 0 where " + n + " > " + q;
      break;
    case PlanStep::Op::EluPlusOne: eq += "  → " + (box && !box->label.empty() ? box->label : "elu + 1") + ", entrywise"; break;
    case PlanStep::Op::PrefixSum:
      eq += "  (prefix sums over " + std::string(1, s.along) + " ≤ " + t.operands.back().substr(0, 1) + ", L not formed)";
      break;
    case PlanStep::Op::SelectLast: eq += "  → last entry along " + std::string(1, s.along); break;
    case PlanStep::Op::Sigmoid: eq += "  → σ, entrywise"; break;
    case PlanStep::Op::RmsNorm: eq += "  → ÷ root mean square over " + std::string(1, s.along); break;
    case PlanStep::Op::Mask3: {
      const auto& o = t.output;
      if (o.size() >= 3) {
        const std::string i(1, o[o.size() - 3]), j(1, o[o.size() - 2]), k(1, o[o.size() - 1]);
        eq += "  → 0 where " + j + " > " + i + " or " + k + " > " + i;
      }
      break;
    }
    case PlanStep::Op::Mean0: eq += "  → mean over " + t.output.substr(0, 1); break;
    case PlanStep::Op::None:
    case PlanStep::Op::Divide:
    case PlanStep::Op::Add: break;
  }
  return eq;
}

}  // namespace

std::vector<StepInfo> contractionSteps(const TensorNetwork& net, std::int64_t batch) {
  const auto costs = planStepCosts(net, batch);
  std::map<char, Leg> legs;
  for (const auto& l : networkIndices(net)) legs[l.index] = l;
  legs['b'] = Leg{'b', "B", batch};
  std::map<std::string, const TensorNode*> nodes;
  for (const auto& n : net.nodes) nodes[n.id] = &n;
  std::map<std::string, std::set<std::string>> dependsOn;  // step output -> drawn node ids

  std::vector<StepInfo> out;
  for (size_t i = 0; i < net.plan.size(); ++i) {
    const auto& s = net.plan[i];
    const auto t = parseEinsum(s.einsum);
    StepInfo info;
    info.index = static_cast<int>(i);
    info.output = s.output;
    info.role = s.role;
    info.op = s.op;
    info.operands = s.inputs;
    std::set<std::string>& deps = dependsOn[s.output];
    auto use = [&](const std::string& id) {
      if (nodes.count(id)) {
        deps.insert(id);
        if (std::find(info.new_nodes.begin(), info.new_nodes.end(), id) == info.new_nodes.end()) info.new_nodes.push_back(id);
      } else if (const auto it = dependsOn.find(id); it != dependsOn.end() && id != s.output) {
        deps.insert(it->second.begin(), it->second.end());
      }
    };
    for (const auto& in : s.inputs) use(in);
    for (const auto& a : s.addends) use(a);
    for (const auto& n : net.nodes)
      if (deps.count(n.id)) info.drawn_nodes.push_back(n.id);
    if (s.op == PlanStep::Op::Softmax || s.op == PlanStep::Op::Normalize || s.op == PlanStep::Op::EluPlusOne) info.box = s.box;

    std::string kept = t.output;
    if (s.op == PlanStep::Op::SelectLast) kept.erase(std::remove(kept.begin(), kept.end(), s.along), kept.end());
    if (s.op == PlanStep::Op::Mean0 && !kept.empty()) kept.erase(0, 1);
    double resultElements = 1;
    for (char ch : kept) {
      info.result_legs.push_back(legOf(legs, ch));
      resultElements *= static_cast<double>(info.result_legs.back().size);
    }
    std::string summed;
    for (const auto& o : t.operands)
      for (char ch : o)
        if (!has(t.output, ch) && !has(summed, ch)) summed += ch;
    for (char ch : summed) info.summed.push_back(legOf(legs, ch));

    info.cost = costs[i];
    info.result_bytes = kFloat32Bytes * resultElements;
    info.peak_bytes = kFloat32Bytes * info.cost.peak_elements;
    info.equation = stepEquation(s, t, s.op == PlanStep::Op::Divide ? "" : summed, nodes, net);
    out.push_back(std::move(info));
  }
  return out;
}

std::size_t contractionOrderCount(int operands) {
  std::size_t n = 1;
  for (int i = 2; i < operands; ++i) n *= static_cast<std::size_t>(2 * i - 1);
  return n;
}

std::vector<ContractionOrder> contractionOrders(const std::string& einsum, const std::vector<std::string>& labels,
                                                const std::map<char, std::int64_t>& sizes) {
  const auto t = parseEinsum(einsum);
  IndexSizes size;
  for (const auto& [ch, n] : sizes) size[ch] = static_cast<double>(n);
  return enumerateOrders(t.operands, t.output, labels, size);
}

namespace {

/// Joins the plan's steps back into whole contractions (the rule: OrderComparison).
class Joiner {
 public:
  Joiner(const TensorNetwork& net, std::int64_t batch) : net_(net), size_(networkSizes(net, batch)) {
    std::map<std::string, int> uses, user;
    for (size_t i = 0; i < net.plan.size(); ++i) {
      producer_[net.plan[i].output] = static_cast<int>(i);
      for (const auto& in : net.plan[i].inputs) {
        ++uses[in];
        user[in] = static_cast<int>(i);
      }
    }
    joined_into_.assign(net.plan.size(), -1);
    for (size_t i = 0; i < net.plan.size(); ++i) {
      const auto& s = net.plan[i];
      const bool plain = s.op == PlanStep::Op::None && s.scale == 1.0 && s.addends.empty() && s.inputs.size() >= 2;
      if (!plain || uses[s.output] != 1 || s.output == net.output || s.output == net.maps) continue;
      const int consumer = user[s.output];
      const auto consumerOp = net.plan[static_cast<size_t>(consumer)].op;
      if (consumerOp != PlanStep::Op::Divide && consumerOp != PlanStep::Op::Add) joined_into_[i] = consumer;
    }
  }

  /// Whether step i is a comparison's root (not joined into a later step, not a Divide).
  bool root(size_t i) const {
    return joined_into_[i] < 0 && net_.plan[i].op != PlanStep::Op::Divide && net_.plan[i].op != PlanStep::Op::Add;
  }

  struct Join {
    std::vector<std::string> ids, subs;
    std::vector<int> steps;
    IndexSizes size;
    std::string output;
    Pairs plan;  ///< over the operands (a PrefixSum's L excluded)
  };

  Join join(int root) {
    Join j;
    j.size = size_;
    nodes_.clear();
    const auto t = parseEinsum(net_.plan[static_cast<size_t>(root)].einsum);
    std::map<char, char> identity;  // the root step keeps its letters
    std::set<char> used{'b'};
    for (const auto& subs : t.operands)
      for (char ch : subs) identity[ch] = ch;
    for (char ch : t.output) identity[ch] = ch;
    for (const auto& [ch, same] : identity) used.insert(ch);
    expand(root, identity, used, j);
    j.output = t.output;
    std::sort(j.steps.begin(), j.steps.end());
    // Plan nodes -> Pairs: operands keep their index, pairs are numbered after them in order.
    const int k = static_cast<int>(j.ids.size());
    std::vector<int> id(nodes_.size());
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].leaf >= 0) {
        id[n] = nodes_[n].leaf;
      } else {
        j.plan.push_back({id[static_cast<size_t>(nodes_[n].left)], id[static_cast<size_t>(nodes_[n].right)]});
        id[n] = k + static_cast<int>(j.plan.size()) - 1;
      }
    }
    return j;
  }

 private:
  struct Node {
    int leaf = -1, left = -1, right = -1;
  };

  int add(Node n) {
    nodes_.push_back(n);
    return static_cast<int>(nodes_.size()) - 1;
  }

  /// Appends step si's operands (renamed by `rename`, a step letter -> join letter) and its plan
  /// order; returns the plan node of its result.
  int expand(int si, const std::map<char, char>& rename, std::set<char>& used, Join& j) {
    const auto& s = net_.plan[static_cast<size_t>(si)];
    const auto t = parseEinsum(s.einsum);
    auto renamed = [&](const std::string& subs) {
      std::string r;
      for (char ch : subs) r += rename.at(ch);
      return r;
    };
    const size_t contracted = t.operands.size() - (s.op == PlanStep::Op::PrefixSum ? 1 : 0);
    int cur = -1;
    for (size_t i = 0; i < t.operands.size(); ++i) {
      const std::string subs = renamed(t.operands[i]);
      int node = -1;
      const auto p = producer_.find(s.inputs[i]);
      if (i < contracted && p != producer_.end() && joined_into_[static_cast<size_t>(p->second)] == si) {
        const auto tp = parseEinsum(net_.plan[static_cast<size_t>(p->second)].einsum);
        std::map<char, char> inner;
        for (size_t c = 0; c < tp.output.size() && c < subs.size(); ++c) inner[tp.output[c]] = subs[c];
        for (const auto& o : tp.operands)
          for (char ch : o)
            if (!inner.count(ch)) inner[ch] = fresh(ch, used, j);
        node = expand(p->second, inner, used, j);
      } else {
        j.ids.push_back(s.inputs[i]);
        j.subs.push_back(subs);
        node = add({static_cast<int>(j.ids.size()) - 1, -1, -1});
      }
      if (i < contracted) cur = cur < 0 ? node : add({-1, cur, node});
    }
    j.steps.push_back(si);
    return cur;
  }

  /// A join letter for a step's own summed index: itself when free, else a fresh letter of its size.
  char fresh(char ch, std::set<char>& used, Join& j) const {
    char pick = ch;
    if (used.count(ch)) {
      pick = 0;
      for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZacdefghijklmnopqrstuvwxyz"))
        if (!used.count(c)) {
          pick = c;
          break;
        }
      if (!pick) throw std::invalid_argument("a contraction with more than 52 indices cannot be joined");
      const auto it = size_.find(ch);
      j.size[pick] = it != size_.end() ? it->second : 1.0;
    }
    used.insert(pick);
    return pick;
  }

  const TensorNetwork& net_;
  IndexSizes size_;
  std::vector<int> joined_into_;
  std::map<std::string, int> producer_;
  std::vector<Node> nodes_;
};

}  // namespace

std::vector<OrderComparison> compareContractionOrders(const TensorNetwork& net, std::int64_t batch) {
  const auto costs = planStepCosts(net, batch);
  std::map<std::string, std::string> label;
  for (const auto& n : net.nodes) label[n.id] = n.label;
  Joiner joiner(net, batch);
  std::vector<OrderComparison> out;
  for (size_t i = 0; i < net.plan.size(); ++i) {
    if (!joiner.root(i)) continue;
    const auto j = joiner.join(static_cast<int>(i));
    if (j.ids.size() < 3) continue;
    OrderComparison c;
    c.step = static_cast<int>(i);
    c.joined_steps = j.steps;
    c.operands = j.ids;
    for (const auto& id : j.ids) c.labels.push_back(label.count(id) ? label[id] : id);
    for (size_t o = 0; o < j.subs.size(); ++o) c.einsum += (o ? "," : "") + j.subs[o];
    c.einsum += "->" + j.output;
    for (char ch : c.einsum)
      if (ch != ',' && ch != '-' && ch != '>') c.sizes[ch] = static_cast<std::int64_t>(count(j.size, std::string(1, ch)));
    c.needed_for_y = costs[i].needed_for_y;

    const auto& step = net.plan[i];
    c.prefix_sum = step.op == PlanStep::Op::PrefixSum;
    c.plan.expression = orderTexts(c.labels, j.plan).back();
    if (c.prefix_sum)
      c.plan.expression = "Σ_{" + std::string(1, step.along) + "≤" + j.subs.back().substr(0, 1) + "}(" + c.plan.expression + ")";
    for (int s : j.steps) {
      const auto& sc = costs[static_cast<size_t>(s)];
      c.plan.flops += sc.contraction_flops;
      if (sc.peak_elements > c.plan.largest_elements) {
        c.plan.largest_elements = sc.peak_elements;
        c.plan.largest = sc.peak;
      }
    }

    c.order_count = contractionOrderCount(static_cast<int>(j.ids.size()));
    c.cheapest = c.most_expensive = c.least_memory = c.plan;
    if (j.ids.size() > static_cast<size_t>(kMaxOrderOperands)) {
      c.enumerated = false;
      c.note = std::to_string(j.ids.size()) + " operands: orders are enumerated up to " + std::to_string(kMaxOrderOperands);
    } else {
      c.orders = enumerateOrders(j.subs, j.output, c.labels, j.size);
      c.cheapest = c.most_expensive = c.least_memory = c.orders.front();
      for (const auto& o : c.orders) {
        const auto& lo = c.cheapest;
        if (o.flops < lo.flops || (o.flops == lo.flops && o.largest_elements < lo.largest_elements)) c.cheapest = o;
        const auto& hi = c.most_expensive;
        if (o.flops > hi.flops || (o.flops == hi.flops && o.largest_elements > hi.largest_elements)) c.most_expensive = o;
        const auto& mem = c.least_memory;
        if (o.largest_elements < mem.largest_elements || (o.largest_elements == mem.largest_elements && o.flops < mem.flops))
          c.least_memory = o;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

SequenceScaling costVersusSequence(const AttentionSpec& spec, const std::vector<std::int64_t>& seqs,
                                   std::int64_t batch) {
  auto point = [&](std::int64_t n) {
    const auto c = networkCost(buildTensorNetwork(spec, n), batch);
    return ScalingPoint{n, c.flops, c.largest_intermediate_elements, c.largest_intermediate};
  };
  SequenceScaling out;
  if (spec.variant == Variant::Multilinear) {
    out.seq_fixed = true;
    out.note = "multilinear fixes N = seq_len = " + std::to_string(spec.sizes.seq_len) +
               ": its output projection W^O is [F, N, N]";
    out.points.push_back(point(spec.sizes.seq_len));
  } else {
    for (auto n : seqs) out.points.push_back(point(n));
  }
  out.flops_exponent = out.memory_exponent = std::numeric_limits<double>::quiet_NaN();
  if (out.points.size() >= 2) {
    const auto& a = out.points[out.points.size() - 2];
    const auto& b = out.points.back();
    if (a.seq != b.seq) {
      const double span = std::log(static_cast<double>(b.seq) / static_cast<double>(a.seq));
      out.flops_exponent = std::log(b.flops / a.flops) / span;
      out.memory_exponent = std::log(b.largest_intermediate_elements / a.largest_intermediate_elements) / span;
    }
  }
  return out;
}

}  // namespace tensorscope::spec
