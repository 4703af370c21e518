#pragma once
// Hand-made tensor networks for the diagram tests, independent of the generator: a small THSA
// (Tuformer Fig. 4b) and a network with nested boxes, a bias and an elementwise operation.

#include <string>
#include <vector>

#include "spec/tensor_network.h"

namespace diagram_test {

using tensorscope::spec::Leg;
using tensorscope::spec::NodeKind;
using tensorscope::spec::SoftmaxBox;
using tensorscope::spec::TensorNetwork;
using tensorscope::spec::TensorNode;

inline TensorNode node(std::string id, std::string label, NodeKind kind, std::vector<Leg> legs,
                       std::int64_t parameters = 0, std::string binding = {}) {
  TensorNode n;
  n.id = std::move(id);
  n.label = std::move(label);
  n.kind = kind;
  n.legs = std::move(legs);
  n.parameters = parameters;
  n.binding = std::move(binding);
  n.role = "role of " + n.id;
  n.batched = kind == NodeKind::Input;
  return n;
}

/// THSA with R = 6, F = 5, N = M = 4: two hyperedges (s: W^Q, W^K, C; r: C, W^V, W^O), one
/// softmax box with its ball on M, dangling N and F.
inline TensorNetwork smallThsa() {
  const Leg n{'n', "N", 4}, m{'m', "M", 4}, f{'f', "F", 5}, g{'g', "F", 5}, u{'u', "F", 5}, o{'o', "F", 5};
  const Leg r{'r', "R", 6}, s{'s', "R", 6};
  TensorNetwork net;
  net.title = "THSA test: core C";
  net.equation = "Ω_r = softmax_M(Σ_s C[r,s]·Q_s·K_sᵀ / √R)·V_r";
  net.nodes = {node("x_q", "X^Q", NodeKind::Input, {n, f}, 0, "x"),
               node("Wq", "W^Q", NodeKind::Weight, {s, f}, 30, "wq.weight"),
               node("x_k", "X^K", NodeKind::Input, {m, g}, 0, "x"),
               node("Wk", "W^K", NodeKind::Weight, {s, g}, 30, "wk.weight"),
               node("x_v", "X^V", NodeKind::Input, {m, u}, 0, "x"),
               node("Wv", "W^V", NodeKind::Weight, {r, u}, 30, "wv.weight"),
               node("C", "C", NodeKind::Core, {r, s}, 36, "core"),
               node("Wo", "W^O", NodeKind::Weight, {o, r}, 30, "wo.weight")};
  SoftmaxBox box;
  box.id = "attn";
  box.nodes = {"x_q", "Wq", "x_k", "Wk", "C"};
  box.normalized = 'm';
  box.query = 'n';
  box.scale_label = "1/√R";
  box.label = "softmax";
  net.boxes = {box};
  net.output = "y";
  net.output_legs = {n, o};
  return net;
}

/// A box inside a box (an elementwise φ around X^Q, W^Q inside a normalisation box over M), a
/// bias on W^Q, and a constant L outside joined to X^K by M and to W^Q, W^O by the hyperedge d.
inline TensorNetwork nestedBoxes() {
  const Leg n{'n', "N", 3}, m{'m', "M", 3}, f{'f', "F", 2}, g{'g', "F", 2}, d{'d', "d", 4}, o{'o', "F", 2};
  TensorNetwork net;
  net.title = "nested";
  net.nodes = {node("x_q", "X^Q", NodeKind::Input, {n, f}, 0, "x"),
               node("Wq", "W^Q", NodeKind::Weight, {d, f}, 8, "wq.weight"),
               node("x_k", "X^K", NodeKind::Input, {m, g}, 0, "x"),
               node("L", "L", NodeKind::Constant, {d, m}, 0, "ones"),
               node("Wo", "W^O", NodeKind::Weight, {o, d}, 8, "wo.weight")};
  TensorNode bias = node("bq", "b^Q", NodeKind::Weight, {d}, 4, "wq.bias");
  bias.adds_to = "Wq";
  net.nodes.push_back(bias);
  SoftmaxBox outer;
  outer.id = "outer";
  outer.kind = SoftmaxBox::Kind::Normalize;
  outer.label = "normalise";
  outer.nodes = {"x_q", "Wq", "bq", "x_k"};
  outer.normalized = 'm';
  SoftmaxBox inner;
  inner.id = "phi";
  inner.kind = SoftmaxBox::Kind::Elementwise;
  inner.label = "φ = elu + 1";
  inner.nodes = {"x_q", "Wq", "bq"};
  net.boxes = {outer, inner};
  net.output_legs = {n, o};
  return net;
}

}  // namespace diagram_test
