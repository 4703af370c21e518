#pragma once
// Private helpers of the tensor-network generator, shared by tensor_network_headed.cpp,
// tensor_network_thsa.cpp and tensor_network_tensorized.cpp (plain C++).

#include <cstdint>
#include <string>
#include <vector>

#include "spec/tensor_network.h"

namespace tensorscope::spec::detail {

Leg leg(char index, std::string symbol, std::int64_t size);

/// "%g" of a number, for scale labels.
std::string formatNumber(double v);

/// The letters of `legs`, in order.
std::string letters(const std::vector<Leg>& legs);

/// Product of the leg sizes.
std::int64_t elementCount(const std::vector<Leg>& legs);

/// One nn.Linear use: out = X·Wᵀ + b, drawn as the input node X, the weight W viewed
/// [out legs..., F] and (when the spec has biases) a bias node with W's out legs.
struct Projection {
  std::string step;        ///< id of the result, e.g. "q"
  std::string x_id;        ///< e.g. "x_q"
  std::string x_label;     ///< e.g. "X^Q"
  std::string x_role;
  Leg token;               ///< X's token leg (n or m)
  Leg feature;             ///< X's F leg, contracted with W's F leg (its own letter per pair)
  std::string w_id;        ///< e.g. "Wq"
  std::string w_label;     ///< e.g. "W^Q"
  std::string w_role;
  std::string prefix;      ///< contract name prefix, e.g. "wq"
  std::vector<Leg> out;    ///< W's output legs (row-major view of its first axis)
  std::string step_role;
  /// The weight drawn again for another path (a copy of one already drawn, e.g. MLA's value copy
  /// of W^DKV): its node holds no parameters of its own (they are counted once, on the first).
  bool again = false;
  /// No bias node whatever spec.bias says (collaborative attention's query, key and content-bias
  /// projections, which the official module builds with bias=False).
  bool no_bias = false;
};

class NetworkBuilder {
 public:
  NetworkBuilder(const AttentionSpec& spec, std::string title, std::string equation);

  const AttentionSpec& spec() const { return spec_; }

  void node(TensorNode n);
  void weight(std::string id, std::string label, NodeKind kind, std::string binding, std::string role,
              std::vector<Leg> legs, std::int64_t parameters);
  void constant(std::string id, std::string label, std::string recipe, std::string role, std::vector<Leg> legs);
  /// Adds X, W, the bias (when spec.bias) and the step computing `p.step` [b, token, out...].
  void projection(const Projection& p);
  /// y = o·Woᵀ + b: Wo viewed [F, in legs...] with its F leg `f` (dangling); `o` is the step id
  /// of the input with subscripts "b n <in letters>". Adds Wo, its bias and the step "y".
  void outputProjection(const std::string& o, const Leg& n, const std::vector<Leg>& in, const Leg& f,
                        std::string role);
  void step(PlanStep s);
  void box(SoftmaxBox b);

  /// Subscripts of a node as an einsum operand ("b" + legs when batched).
  std::string subscripts(const std::string& nodeId) const;
  /// The bias node id of a weight, or "" when the spec has no biases.
  std::string biasOf(const std::string& weightId) const;

  TensorNetwork take(std::string maps, std::vector<std::int64_t> mapsShape);
  /// The softmax box of a headed layer around X^Q, W^Q, X^K, W^K (and their biases): normalised
  /// over m for each query n, scaled by 1/√D (`scaleLabel`), causal as the spec; `what` begins
  /// the box's role.
  SoftmaxBox headedSoftmaxBox(int D, std::string scaleLabel, const std::string& what) const;

 private:
  const AttentionSpec& spec_;
  TensorNetwork net_;
};

/// The output gate of a headed layer (slot d) on the heads `o` [b, n, w, e]: the projection X^G,
/// σ and the product; returns the step id of the gated heads ("gated"), or `o` without a gate.
std::string headedOutputGate(NetworkBuilder& b, const Leg& n, const Leg& w, const Leg& dvo, const std::string& o);

TensorNetwork buildHeadedNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildCollaborativeNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildDifferentialNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildLatentNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildTpaNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildMtaNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildThsaNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildThsaLinearNetwork(const AttentionSpec& spec, std::int64_t seq);
TensorNetwork buildMultilinearNetwork(const AttentionSpec& spec);
TensorNetwork buildDimwiseNetwork(const AttentionSpec& spec, std::int64_t seq);

}  // namespace tensorscope::spec::detail
