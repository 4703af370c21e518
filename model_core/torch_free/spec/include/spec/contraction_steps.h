#pragma once
/// Contraction stepping: a TensorNetwork's evaluation plan one step at a time (the teaching view's
/// Next / Back / Play), and what other contraction orders would cost (its cost view). Plain C++.
///
/// Conventions:
///  * costs are counted exactly as networkCost documents (tensor_network.h) — networkCost is the
///    sum of planStepCosts over the steps y needs, so the two cannot disagree;
///  * element counts include the batch B; memory is float32 (kFloat32Bytes per element);
///  * indices are the network's einsum letters; the batch letter b is Leg{'b', "B", B}, every other
///    letter carries the symbol and size networkIndices gives it;
///  * "drawn nodes" are TensorNetwork::nodes (biases included); a step output that is not a drawn
///    node (an intermediate) is named by its id.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spec/attention_spec.h"
#include "spec/tensor_network.h"

namespace tensorscope::spec {

inline constexpr double kFloat32Bytes = 4.0;

/// What one plan step costs at batch B, counted as networkCost documents.
struct StepCost {
  /// The einsum as the plan evaluates it: pairwise left to right, or a one-operand reduction; a
  /// PrefixSum's cumulative sum over `along` included (it is the contraction with L); 0 for Divide.
  double contraction_flops = 0;
  /// contraction_flops plus the per-element work: scale, addends and the op (Divide: 1 per element).
  double flops = 0;
  double result_elements = 0;  ///< the einsum's result, [output subscripts] (before SelectLast / Mean0)
  /// The largest tensor the step creates, pairwise partials included (the first one on ties, partials
  /// before the result), and its id: the step output, or "<output> (partial)" as networkCost names it.
  double peak_elements = 0;
  std::string peak;
  /// y depends on the step; a step that only computes display maps is not counted by networkCost.
  bool needed_for_y = true;
};

/// The cost of every step of `network.plan`, in plan order. Throws std::invalid_argument on an
/// einsum without "->".
std::vector<StepCost> planStepCosts(const TensorNetwork& network, std::int64_t batch);

/// One step of the plan as the stepping view shows it.
struct StepInfo {
  int index = 0;                        ///< position in network.plan
  std::string output;                   ///< PlanStep::output
  std::string role;                     ///< PlanStep::role
  PlanStep::Op op = PlanStep::Op::None;
  std::vector<std::string> operands;    ///< PlanStep::inputs
  /// Every drawn node the result depends on — its operands and addends that are drawn nodes, and
  /// those of the steps that computed its other operands, transitively: what the diagram highlights
  /// as contracted into this result. In network.nodes order.
  std::vector<std::string> drawn_nodes;
  /// The drawn nodes this step uses itself (operands, then addends), once each, in step order.
  std::vector<std::string> new_nodes;
  /// The box this step evaluates (Softmax, Normalize: its SoftmaxBox; EluPlusOne: its Elementwise
  /// box); empty for every other op.
  std::string box;
  /// The result's axes: the output subscripts, less `along` for SelectLast and the first axis for
  /// Mean0 (the axes those ops drop).
  std::vector<Leg> result_legs;
  /// Indices of the operands that the result does not keep (summed; a PrefixSum's `along` too),
  /// in order of first appearance.
  std::vector<Leg> summed;
  StepCost cost;
  double result_bytes = 0;  ///< float32 bytes of result_legs at batch B
  double peak_bytes = 0;    ///< float32 bytes of cost.peak_elements
  /// The step in readable text, drawn nodes by their labels and intermediates by their ids, indices
  /// by their letters: "P[b,h,n,m] = Σ_d q[b,n,h,d]·k[b,m,h,d]  → softmax over m, α = 1/√D".
  std::string equation;
};

/// The plan, step by step, at batch B (network from buildTensorNetwork; throws
/// std::invalid_argument on an einsum without "->").
std::vector<StepInfo> contractionSteps(const TensorNetwork& network, std::int64_t batch);

/// One way to contract the operands of an einsum two at a time.
struct ContractionOrder {
  /// Parenthesised, operands by label, "·" for a pairwise contraction; a pair shows its part with
  /// more operands first (on ties the part holding the earlier operand): "(φ(K)·V)·φ(Q)".
  std::string expression;
  double flops = 0;             ///< pairwise counting as networkCost: 2 per term of a pair that sums an index, else 1 per element
  double largest_elements = 0;  ///< the largest tensor the order creates, the result included
  std::string largest;          ///< that tensor: a sub-expression of `expression` (the plan: networkCost's id)
};

/// Orders are enumerated up to this many operands ((2k-3)!! = 945 at 6).
inline constexpr int kMaxOrderOperands = 6;

/// Number of contraction orders (binary trees with unordered children over k distinct operands):
/// (2k-3)!! for k ≥ 2, and 1 for k ≤ 1.
std::size_t contractionOrderCount(int operands);

/// Every pairwise contraction order of `einsum` ("nd,md,me->ne"), operands named by `labels`,
/// index sizes by `sizes` (a letter it lacks counts 1, as in networkCost). A pair keeps the indices
/// that the output or an operand outside it carries and sums the rest. One operand: a single
/// "order", a reduction costing 1 per input element when it drops an index. Throws
/// std::invalid_argument for more than kMaxOrderOperands operands, a labels count that differs,
/// or an einsum without "->".
std::vector<ContractionOrder> contractionOrders(const std::string& einsum, const std::vector<std::string>& labels,
                                                const std::map<char, std::int64_t>& sizes);

/// The plan's order of one contraction against every other order.
///
/// The plan splits some contractions into several steps (dense THSA: qt = C·q, then the logits
/// qt·k); the comparison joins them back. A step is joined into the step that uses its output when
/// it is a plain einsum of two or more operands (op None, scale 1, no addends), its output is used
/// exactly once (by a step that is not a Divide) and is neither y nor the maps. One comparison is
/// made per remaining step (Divide excluded) whose joined einsum has three or more operands.
/// A comparison's operands are drawn nodes and step outputs (a bias or an op in between ends the
/// join), its indices the network's letters, renamed to a fresh letter where two steps reuse one.
struct OrderComparison {
  int step = 0;                       ///< plan index of the step whose result it computes
  std::vector<int> joined_steps;      ///< plan indices of the steps it joins, in plan order (`step` last)
  std::string einsum;                 ///< the joined einsum, e.g. "rs,bns,bms->brnm"
  std::vector<std::string> operands;  ///< ids, in einsum order
  std::vector<std::string> labels;    ///< drawn nodes' labels, intermediates' ids
  std::map<char, std::int64_t> sizes; ///< size of every letter of `einsum` (b = batch)
  bool needed_for_y = true;           ///< as StepCost
  /// `step` is a PrefixSum: the plan sums the lower-triangular L cumulatively (linear in N); the
  /// enumerated orders contract L as the dense [N, N] matrix the einsum names.
  bool prefix_sum = false;
  /// The plan's own order; its cost is its steps' contraction_flops and largest peak, exactly as
  /// networkCost counts them. A PrefixSum shows as "Σ_{m≤n}(…)" around the other operands.
  ContractionOrder plan;
  std::size_t order_count = 0;        ///< contractionOrderCount(operands)
  /// False beyond kMaxOrderOperands operands (`note` says so): then `orders` is empty and the
  /// three picks below equal `plan`.
  bool enumerated = true;
  std::string note;
  std::vector<ContractionOrder> orders;  ///< contractionOrders(einsum, labels, sizes)
  /// Fewest FLOPs (ties: the smaller largest tensor, then the first enumerated).
  ContractionOrder cheapest;
  /// Most FLOPs (ties: the larger largest tensor, then the first enumerated).
  ContractionOrder most_expensive;
  /// Smallest largest tensor (ties: fewer FLOPs, then the first enumerated): the memory an order
  /// cannot avoid — dense THSA's logits are [B, R, N, M] whichever order.
  ContractionOrder least_memory;
};

/// Every comparison of `network`'s plan at batch B, in plan order of `step`.
std::vector<OrderComparison> compareContractionOrders(const TensorNetwork& network, std::int64_t batch);

/// networkCost at one sequence length N (= M).
struct ScalingPoint {
  std::int64_t seq = 0;
  double flops = 0;
  double largest_intermediate_elements = 0;
  std::string largest_intermediate;  ///< node id, as NetworkCost
};

/// How the plan's cost grows with the sequence length.
struct SequenceScaling {
  std::vector<ScalingPoint> points;  ///< one per requested N, in the order given
  /// The variant fixes N (multilinear: W^O is [F, N, N] at sizes.seq_len): `points` holds the one
  /// point at seq_len and `note` says why.
  bool seq_fixed = false;
  std::string note;
  /// log-log slopes between the last two points (≈ 1: linear in N, ≈ 2: quadratic); NaN with fewer
  /// than two distinct N.
  double flops_exponent = 0;
  double memory_exponent = 0;
};

/// Builds the network of `spec` at each N of `seqs` and costs its plan at batch B (throws
/// std::invalid_argument for an invalid spec or an N < 1).
SequenceScaling costVersusSequence(const AttentionSpec& spec, const std::vector<std::int64_t>& seqs,
                                   std::int64_t batch);

}  // namespace tensorscope::spec
