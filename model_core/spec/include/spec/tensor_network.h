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

#include <cstdint>
#include <string>
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
  /// the input, or a constant recipe ("ones", "identity"); empty for intermediates.
  std::string binding;
  std::vector<Leg> legs;    ///< in the order of the bound tensor's axes, after a row-major view
  std::int64_t parameters = 0;  ///< trainable scalars this node holds (0 for inputs/constants)
  bool batched = false;     ///< carries the implicit batch index b first (inputs, intermediates)
};

/// A softmax box: the contraction of `nodes` (and any steps feeding them) gives logits that are
/// scaled by `scale` and normalised over the leg with index `normalized`; with `causal`, entries
/// whose normalised index exceeds `query` index get -inf first.
struct SoftmaxBox {
  std::string id;
  std::vector<std::string> nodes;  ///< node ids drawn inside the box
  char normalized = 0;             ///< the normalised index (filled ball on this leg)
  char query = 0;                  ///< the index it is compared with for the causal mask
  double scale = 1.0;              ///< α
  std::string scale_label;         ///< e.g. "1/√D"
  bool causal = false;
};

/// One step of the evaluation plan: an einsum over earlier tensors, then an optional operation.
/// Steps run in order; every step's output is a new (intermediate or output) tensor.
struct PlanStep {
  enum class Op { None, Softmax, EluPlusOne, Normalize, Mask3, Mean0 };
  std::string output;               ///< node id of the result
  std::vector<std::string> inputs;  ///< node ids, in einsum operand order
  std::string einsum;               ///< e.g. "bnf,rf->bnr" (b = batch)
  Op op = Op::None;
  std::string box;                  ///< Softmax: the SoftmaxBox id giving scale, index and mask
  double scale = 1.0;               ///< multiplies the einsum result before `op`
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
};

/// A contraction drawn on the diagram: an index and the (node, leg) ends that carry it.
struct Contraction {
  char index = 0;
  std::string symbol;
  std::int64_t size = 0;
  std::vector<std::pair<std::string, int>> ends;  ///< (node id, leg position)
  bool hyperedge() const { return ends.size() >= 3; }
};

/// Builds the network of a valid spec (throws std::invalid_argument otherwise). `seq` is the
/// number of tokens N (= M) the diagram shows and the evaluator expects.
TensorNetwork buildTensorNetwork(const AttentionSpec& spec, std::int64_t seq);

/// Contractions among the drawn nodes (legs sharing an index), including hyperedges; indices
/// carried by a single drawn node are dangling legs (see danglingLegs).
std::vector<Contraction> contractions(const TensorNetwork& network);
/// (node id, leg position) of every dangling leg of the drawn nodes.
std::vector<std::pair<std::string, int>> danglingLegs(const TensorNetwork& network);

/// Cost of evaluating the plan in its order: FLOPs (2 per multiply-add of each einsum plus the
/// step operations) and the largest intermediate, for batch B.
struct NetworkCost {
  double flops = 0;
  double largest_intermediate_elements = 0;
  std::string largest_intermediate;  ///< node id
};
NetworkCost networkCost(const TensorNetwork& network, std::int64_t batch);

}  // namespace tensorscope::spec
