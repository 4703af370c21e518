// Shared helpers of the tensor-network generator (see tensor_network_builder.h).
#include "tensor_network_builder.h"

#include <cmath>
#include <cstdio>
#include <utility>

namespace tensorscope::spec::detail {

Leg leg(char index, std::string symbol, std::int64_t size) { return Leg{index, std::move(symbol), size}; }

std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string letters(const std::vector<Leg>& legs) {
  std::string s;
  for (const auto& l : legs) s += l.index;
  return s;
}

std::int64_t elementCount(const std::vector<Leg>& legs) {
  std::int64_t n = 1;
  for (const auto& l : legs) n *= l.size;
  return n;
}

NetworkBuilder::NetworkBuilder(const AttentionSpec& spec, std::string title, std::string equation) : spec_(spec) {
  net_.title = std::move(title);
  net_.equation = std::move(equation);
}

void NetworkBuilder::node(TensorNode n) { net_.nodes.push_back(std::move(n)); }

void NetworkBuilder::weight(std::string id, std::string label, NodeKind kind, std::string binding, std::string role,
                            std::vector<Leg> legs, std::int64_t parameters) {
  TensorNode n;
  n.id = std::move(id);
  n.label = std::move(label);
  n.kind = kind;
  n.binding = std::move(binding);
  n.role = std::move(role);
  n.legs = std::move(legs);
  n.parameters = parameters;
  node(std::move(n));
}

void NetworkBuilder::constant(std::string id, std::string label, std::string recipe, std::string role,
                              std::vector<Leg> legs) {
  weight(std::move(id), std::move(label), NodeKind::Constant, std::move(recipe), std::move(role), std::move(legs), 0);
}

void NetworkBuilder::projection(const Projection& p) {
  TensorNode x;
  x.id = p.x_id;
  x.label = p.x_label;
  x.kind = NodeKind::Input;
  x.role = p.x_role;
  x.binding = "x";
  x.legs = {p.token, p.feature};
  x.batched = true;
  node(std::move(x));

  std::vector<Leg> wLegs = p.out;
  wLegs.push_back(p.feature);
  const std::int64_t outCount = elementCount(p.out);
  weight(p.w_id, p.w_label, NodeKind::Weight, p.prefix + ".weight", p.w_role, wLegs,
         p.again ? 0 : outCount * p.feature.size);

  PlanStep s;
  s.output = p.step;
  s.inputs = {p.x_id, p.w_id};
  const std::string out = letters(p.out);
  s.einsum = std::string("b") + p.token.index + p.feature.index + "," + out + p.feature.index + "->b" +
             p.token.index + out;
  s.role = p.step_role;
  if (spec_.bias && !p.no_bias) {
    TensorNode b;
    b.id = "b" + p.w_id.substr(1);
    b.label = "b" + p.w_label.substr(1);
    b.kind = NodeKind::Weight;
    b.binding = p.prefix + ".bias";
    b.role = "Bias of " + p.w_label + " (" + p.prefix + ".bias): added to the projection X·" + p.w_label +
             "ᵀ, as nn.Linear does.";
    b.legs = p.out;
    b.parameters = p.again ? 0 : outCount;
    b.adds_to = p.w_id;
    s.addends.push_back(b.id);
    node(std::move(b));
  }
  step(std::move(s));
}

void NetworkBuilder::outputProjection(const std::string& o, const Leg& n, const std::vector<Leg>& in, const Leg& f,
                                      std::string role) {
  std::vector<Leg> legs{f};
  legs.insert(legs.end(), in.begin(), in.end());
  const std::int64_t inCount = elementCount(in);
  std::string flat, axes;
  for (const auto& l : in) {
    flat += (flat.empty() ? "" : "·") + l.symbol;
    axes += (axes.empty() ? "" : ", ") + l.symbol;
  }
  weight("Wo", "W^O", NodeKind::Weight, "wo.weight",
         "Output projection W^O (wo.weight [F, " + flat + "]) viewed [F, " + axes + "]: y = " + role +
             "; its F leg is the output's F.",
         legs, f.size * inCount);
  PlanStep s;
  s.output = "y";
  s.inputs = {o, "Wo"};
  s.einsum = std::string("b") + n.index + letters(in) + "," + f.index + letters(in) + "->b" + n.index + f.index;
  s.role = "output y = " + role;
  if (spec_.bias) {
    TensorNode b;
    b.id = "bo";
    b.label = "b^O";
    b.kind = NodeKind::Weight;
    b.binding = "wo.bias";
    b.role = "Bias of W^O (wo.bias [F]): added to the output.";
    b.legs = {f};
    b.parameters = f.size;
    b.adds_to = "Wo";
    s.addends.push_back(b.id);
    node(std::move(b));
  }
  net_.output = "y";
  net_.output_legs = {n, f};
  step(std::move(s));
}

void NetworkBuilder::step(PlanStep s) { net_.plan.push_back(std::move(s)); }

void NetworkBuilder::box(SoftmaxBox b) { net_.boxes.push_back(std::move(b)); }

std::string NetworkBuilder::subscripts(const std::string& nodeId) const {
  for (const auto& n : net_.nodes)
    if (n.id == nodeId) return std::string(n.batched ? "b" : "") + letters(n.legs);
  return {};
}

std::string NetworkBuilder::biasOf(const std::string& weightId) const {
  for (const auto& n : net_.nodes)
    if (n.adds_to == weightId) return n.id;
  return {};
}

SoftmaxBox NetworkBuilder::headedSoftmaxBox(int D, std::string scaleLabel, const std::string& what) const {
  SoftmaxBox box;
  box.id = "attn";
  box.nodes = {"x_q", "Wq", "x_k", "Wk"};
  for (const char* w : {"Wq", "Wk"})
    if (const auto bias = biasOf(w); !bias.empty()) box.nodes.push_back(bias);
  box.normalized = 'm';
  box.query = 'n';
  box.scale = 1.0 / std::sqrt(static_cast<double>(D));
  box.scale_label = std::move(scaleLabel);
  box.causal = spec_.causal;
  box.label = "softmax";
  box.role = what + (spec_.causal ? "; causal: key m > query n gets -inf first." : ".");
  return box;
}

TensorNetwork NetworkBuilder::take(std::string maps, std::vector<std::int64_t> mapsShape) {
  net_.maps = std::move(maps);
  net_.maps_shape = std::move(mapsShape);
  return std::move(net_);
}

}  // namespace tensorscope::spec::detail
