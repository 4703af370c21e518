#pragma once
/// The tensor-network (tensor-diagram) description of an attention layer, generated from the same
/// AttentionSpec that builds the module (plain C++: no Qt, no torch).
///
/// A network is drawn (diagram_view) and evaluated (model_core's evaluator) from this one
/// description. Conventions follow the Tuformer paper's tensor diagrams:
///  * a tensor is a node; each of its axes is a leg labelled by a dimension symbol and size;
///  * a contraction joins legs that carry the same index; an index carried by three or more
///    tensors and kept in the result (e.g. H in MHSA) is a batch-multiplication hyperedge, drawn
///    as a joining dot;
///  * a softmax box encloses the tensors whose contraction is normalised (evaluated before
///    anything outside it), with its scale α and the normalised leg marked by a filled ball;
///  * elementwise operations (TP's Hadamard binding, linear THSA's kernel φ) are small boxes;
///  * legs of the output dangle.
/// The batch index `b` is implicit: inputs and outputs carry it, the papers' figures omit it.
///
/// Drawing conventions of the generator (the per-variant node sets are listed in tensor_network.cpp):
///  * the input X appears once per use (X^Q, X^K, X^V, X^R), all bound to the same x;
///  * a bias is a node whose `adds_to` names its weight: it is added to that weight's
///    projection, it is not contracted (contractions() and danglingLegs() skip it);
///  * a Kronecker core C = s·(A ⊗ B) splits the channel legs R into (H, D) and draws its factors:
///    A [H, H] and B [D, D] as nodes, a rank-1 B = c₂c₃ᵀ as two vectors, an identity factor as a
///    merged leg (both sides carry one index, no node), a ones factor 1·1ᵀ as two independent
///    contractions (no node: Σ_{d,d'} 1·… sums each side on its own), the scale s folded into α;
///    both factors identity (C = s·I_R) or both ones (C = s·1_R1_Rᵀ) keep one R leg; a
///    size-1 leg of an identity or ones factor is not drawn (heads_only: Fig. 10 right);
///  * causality is the -inf mask of a softmax box (`causal`) where a softmax follows, and a
///    lower-triangular constant node L (1 where key ≤ query) where the masked sum is multilinear
///    (thsa_linear, multilinear, dimwise); the plan evaluates L as prefix sums where it can.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

enum class NodeKind { Input, Weight, Core, Constant, Intermediate, Output };

/// One axis of a tensor.
struct Leg {
  char index = 0;       ///< einsum index letter, unique per distinct index in the network ('n', 'm', 'f', ...)
  std::string symbol;   ///< dimension symbol shown on the diagram: N, M, F, H, D, R, P, d, c
  std::int64_t size = 0;
};

struct TensorNode {
  std::string id;           ///< unique, e.g. "x_q", "Wq", "C", "A", "c2"
  std::string label;        ///< display text, e.g. "W^Q", "C", "X"
  NodeKind kind = NodeKind::Weight;
  std::string role;         ///< one sentence for hover: its role in the equation
  /// What the evaluator binds: a contract weight name ("wq.weight", "core", "core.A"), "x" for
  /// the input, or a constant recipe: "ones", "identity", "mean" (every entry 1/size, one leg),
  /// "lower_triangular" (two legs [i, j]: 1 where j ≤ i, else 0), "select:K" (two legs [u, i]: 1
  /// where u = K + i), "rotary:K" (legs [n, a, a']: the identity on a < K, then MLA's interleaved
  /// rotary turn at position n), "rotary_half:BASE" (legs [n, d, a]: TPA's half-split turn of T6, pairs
  /// (j, j + D/2) at the angle n·BASE^(−2j/D)); empty for intermediates.
  std::string binding;
  std::vector<Leg> legs;    ///< in the order of the bound tensor's axes, after a row-major view
  std::int64_t parameters = 0;  ///< trainable scalars this node holds (0 for inputs/constants)
  bool batched = false;     ///< carries the implicit batch index b first (inputs, intermediates)
  /// A bias: the id of the weight whose projection it is added to (its legs are that weight's
  /// output legs, with the same indices); empty for every other node.
  std::string adds_to;
};

/// A box around part of the network. `Softmax` (the paper's notation): the contraction of
/// `nodes` gives logits that are scaled by `scale` and normalised over the leg with index
/// `normalized`; with `causal`, entries whose normalised index exceeds the `query` index get
/// -inf first. `Normalize` (kernel attention): the same without exp — entries (non-negative) are
/// divided by their sum over `normalized`, causal entries are 0. `Elementwise`: a function
/// (`label`, e.g. φ) applied entry by entry to the contraction of `nodes`; no ball.
/// Boxes may nest: `nodes` lists every node inside, including those of inner boxes.
struct SoftmaxBox {
  enum class Kind { Softmax, Normalize, Elementwise };
  std::string id;
  std::vector<std::string> nodes;  ///< node ids drawn inside the box
  char normalized = 0;             ///< the normalised index (filled ball on this leg)
  char query = 0;                  ///< the index it is compared with for the causal mask
  double scale = 1.0;              ///< α
  std::string scale_label;         ///< e.g. "1/√D"
  bool causal = false;
  Kind kind = Kind::Softmax;
  std::string label;               ///< e.g. "softmax", "φ = elu + 1", "normalise"
  std::string role;                ///< hover text
  /// α varies with position: the logits at (1-based) position i of index `query` are scaled by
  /// 1/√i instead of `scale` (dimwise causal, S⁽ⁱ⁾/√i).
  bool position_scale = false;
};

/// One step of the evaluation plan: an einsum over earlier tensors, then an optional operation.
/// Steps run in order; every step's output is a new (intermediate or output) tensor.
///
/// Einsum: operands are node ids (a batched node's subscripts are "b" then its legs' indices) or
/// earlier step outputs (whose subscripts each step names afresh). An output index carried by no
/// operand is a broadcast (the result is constant along it). The result is multiplied by `scale`,
/// then each tensor in `addends` (bias nodes, aligned by their legs' indices) is added, then `op`
/// runs:
///  * Softmax / Normalize: as the SoftmaxBox `box` says (its scale, normalised index and mask);
///  * EluPlusOne: elu(z) + 1 entrywise (`box` names the Elementwise box it draws);
///  * Divide: the einsum has two operands and is not evaluated: operand 0 / operand 1, entrywise,
///    both aligned to the output subscripts;
///  * PrefixSum: the last operand is a "lower_triangular" constant L [n, m] and `along` is m: the
///    result is the einsum, computed in O(N) as the cumulative sum over m of the other operands'
///    product (Σ_m L[n,m]·x[m] = Σ_{m≤n} x[m]; N = M);
///  * SelectLast: keeps the last entry along index `along` and drops that axis;
///  * Mask3: the result's last three axes [i, j, k]: entries with j > i or k > i become 0;
///  * Mean0: the mean over the result's first axis, which is dropped.
struct PlanStep {
  /// RmsNorm: divides by the root mean square along `along` (plus ε = 1e-5 under the root).
  /// Add: like Divide, operand 0 + operand 1, entrywise, aligned to the output (a sum of two
  /// contractions, e.g. MLA's content and rotary logits).
  enum class Op { None, Softmax, EluPlusOne, Normalize, Mask3, Mean0, Divide, PrefixSum, SelectLast, Sigmoid, RmsNorm, Add };
  std::string output;               ///< node id of the result
  std::vector<std::string> inputs;  ///< node ids, in einsum operand order
  std::string einsum;               ///< e.g. "bnf,rf->bnr" (b = batch)
  Op op = Op::None;
  std::string box;                  ///< Softmax: the SoftmaxBox id giving scale, index and mask
  double scale = 1.0;               ///< multiplies the einsum result before `op`
  std::vector<std::string> addends; ///< bias node ids added after the scale
  char along = 0;                   ///< PrefixSum / SelectLast / RmsNorm: the index it runs along
  std::string role;                 ///< what the step computes, e.g. "logits q·kᵀ per head"
  double eps = 1e-5;                ///< RmsNorm: ε under the root (differential attention 1e-5, MLA 1e-6)
};

/// The whole network of one layer.
struct TensorNetwork {
  std::string title;                 ///< e.g. "THSA, skip-right core C = C₁ ⊗ 1·1ᵀ"
  std::string equation;              ///< the layer's equation in plain text
  std::vector<TensorNode> nodes;     ///< everything drawn (intermediates only when shown)
  std::vector<SoftmaxBox> boxes;
  std::vector<PlanStep> plan;        ///< evaluation order; the last step's output is y [b, n, f]
  std::string output;                ///< node id of y
  std::string maps;                  ///< node id of the display maps (contract's definition), if any
  /// The module's display-map shape after the batch (e.g. {R, N, M}); the maps step's result is
  /// viewed row-major as [B, maps_shape...].
  std::vector<std::int64_t> maps_shape;
  std::vector<Leg> output_legs;      ///< y's legs after the batch: N then F
};

/// A contraction drawn on the diagram: an index and the (node, leg) ends that carry it.
struct Contraction {
  char index = 0;
  std::string symbol;
  std::int64_t size = 0;
  std::vector<std::pair<std::string, int>> ends;  ///< (node id, leg position)
  /// The index is also a leg of the output (e.g. N shared by TP's X^Q and X^R): the joining dot
  /// carries one more, dangling, leg.
  bool dangling = false;
  bool hyperedge() const { return ends.size() + (dangling ? 1 : 0) >= 3; }
};

/// Builds the network of a valid spec (throws std::invalid_argument otherwise). `seq` is the
/// number of tokens N (= M) the diagram shows and the evaluator expects; multilinear, whose
/// output projection fixes N, always uses sizes.seq_len.
TensorNetwork buildTensorNetwork(const AttentionSpec& spec, std::int64_t seq);

/// Contractions among the drawn nodes (legs sharing an index), including hyperedges; indices
/// carried by a single drawn node are dangling legs (see danglingLegs). Bias nodes are skipped.
std::vector<Contraction> contractions(const TensorNetwork& network);
/// (node id, leg position) of every dangling leg of the drawn nodes.
std::vector<std::pair<std::string, int>> danglingLegs(const TensorNetwork& network);

/// The operand subscripts and output subscripts of an einsum string ("bnf,hdf->bnhd").
struct EinsumTerms {
  std::vector<std::string> operands;
  std::string output;
};
/// Splits an einsum string; throws std::invalid_argument when it has no "->".
EinsumTerms parseEinsum(const std::string& einsum);

/// Every distinct index of the drawn nodes, once, in order of first appearance.
std::vector<Leg> networkIndices(const TensorNetwork& network);

/// Consistency problems of a network (empty when sound): unique ids, one size per index,
/// operands defined before use with subscripts matching their legs, boxes naming real nodes,
/// the plan ending in the output [b, N, F].
std::vector<std::string> checkNetwork(const TensorNetwork& network);

/// Cost of evaluating the plan in its order: FLOPs (2 per multiply-add of each einsum plus the
/// step operations) and the largest intermediate, for batch B.
/// Counting: an einsum runs left to right, two operands at a time; a pair that sums an index
/// costs 2 FLOPs per term, one that sums none 1 per result element; a one-operand reduction 1 per
/// input element. A scale, an addend, Divide, PrefixSum and Mask3 cost 1 per element, EluPlusOne 2,
/// Normalize 2, Softmax 5 (as the cost model). Only steps that y depends on are counted (the
/// display maps are extra); every tensor a step creates, pairwise ones included, is an intermediate.
struct NetworkCost {
  double flops = 0;
  double largest_intermediate_elements = 0;
  std::string largest_intermediate;  ///< node id
};
NetworkCost networkCost(const TensorNetwork& network, std::int64_t batch);

}  // namespace tensorscope::spec
