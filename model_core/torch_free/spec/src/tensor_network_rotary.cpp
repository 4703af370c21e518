// Rotary turns on a layer's tensor diagram (spec/rotary_network.h; contract §9).
#include <algorithm>
#include <cstddef>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "spec/rotary_network.h"

namespace tensorscope::spec {

namespace {

std::string numberText(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

bool usedBy(const PlanStep& s, const std::string& id) {
  return std::find(s.inputs.begin(), s.inputs.end(), id) != s.inputs.end() ||
         std::find(s.addends.begin(), s.addends.end(), id) != s.addends.end();
}

/// Adds the turn of the step `name` ("q" or "k"), whose result becomes `name`_raw.
void turn(TensorNetwork& net, const std::string& name, const std::string& rotId, const std::string& rotLabel,
          const RotaryTurns& r, std::string& freeLetters) {
  const auto at = std::find_if(net.plan.begin(), net.plan.end(), [&](const PlanStep& s) { return s.output == name; });
  if (at == net.plan.end())
    throw std::invalid_argument("rotary positions: the diagram '" + net.title + "' has no step '" + name + "' to turn");
  const size_t stepIndex = static_cast<size_t>(at - net.plan.begin());
  PlanStep& step = net.plan[stepIndex];
  EinsumTerms terms = parseEinsum(step.einsum);
  const std::string out = terms.output;
  if (out.size() < 3 || out[0] != 'b')
    throw std::invalid_argument("rotary positions: step '" + name + "' gives '" + out + "', not [b, token, features…]");
  std::map<char, Leg> legs;
  for (const auto& l : networkIndices(net)) legs[l.index] = l;
  for (const char c : out.substr(1))
    if (!legs.count(c)) throw std::invalid_argument(std::string("rotary positions: no drawn leg carries index '") + c + "'");
  // The trailing feature legs whose sizes multiply to a multiple of the block.
  std::string turned;
  std::int64_t size = 1;
  for (size_t i = out.size(); i-- > 2;) {
    turned.insert(turned.begin(), out[i]);
    size *= legs[out[i]].size;
    if (size % r.block == 0) break;
  }
  if (size % r.block != 0)
    throw std::invalid_argument("rotary positions: the features of '" + name + "' (" + std::to_string(size) +
                                ") are not whole blocks of " + std::to_string(r.block));
  if (freeLetters.size() < turned.size()) throw std::invalid_argument("rotary positions: the diagram has no index letters left");
  const std::string fresh = freeLetters.substr(0, turned.size());
  freeLetters.erase(0, turned.size());
  const auto rename = [&](std::string subs) {
    for (auto& c : subs)
      if (const auto p = turned.find(c); p != std::string::npos) c = fresh[p];
    return subs;
  };
  // W^Q's (and its bias's) copies of the turned legs get the fresh letters.
  std::vector<std::string> renamedNodes;
  const auto renameNode = [&](const std::string& id) {
    for (size_t i = 0; i < net.plan.size(); ++i)
      if (i != stepIndex && usedBy(net.plan[i], id))
        throw std::invalid_argument("rotary positions: node '" + id + "' of step '" + name + "' is used by step '" +
                                    net.plan[i].output + "' too");
    for (auto& n : net.nodes)
      if (n.id == id) {
        for (auto& l : n.legs)
          if (const auto p = turned.find(l.index); p != std::string::npos) l.index = fresh[p];
        renamedNodes.push_back(id);
      }
  };
  for (size_t j = 0; j < step.inputs.size(); ++j) {
    const std::string renamed = rename(terms.operands[j]);
    if (renamed != terms.operands[j]) {
      renameNode(step.inputs[j]);
      terms.operands[j] = renamed;
    }
  }
  for (const auto& a : step.addends) renameNode(a);
  std::string einsum;
  for (const auto& o : terms.operands) einsum += (einsum.empty() ? "" : ",") + o;
  const std::string raw = rename(out);
  step.einsum = einsum + "->" + raw;
  step.output = name + "_raw";
  step.role += " before the rotary turn";

  TensorNode R;
  R.id = rotId;
  R.label = rotLabel;
  R.kind = NodeKind::Constant;
  R.binding = std::string("rotary_turn:") + (r.interleaved ? "interleaved" : "half") + ":" + std::to_string(r.block) +
              ":" + numberText(r.base);
  R.role = std::string("Rotary turn of the ") + (name == "q" ? "queries at their position n" : "keys at their position m") +
           ": each pair " + (r.interleaved ? "(2j, 2j+1)" : "(j, j+D/2)") + " of every block of " +
           std::to_string(r.block) + " features turned by the angle (position)·" + numberText(r.base) + "^(−2j/" +
           std::to_string(r.block) + ") (contract §9).";
  R.legs.push_back(legs[out[1]]);
  for (const char c : turned) R.legs.push_back(legs[c]);
  for (size_t i = 0; i < turned.size(); ++i) {
    Leg l = legs[turned[i]];
    l.index = fresh[i];
    R.legs.push_back(l);
  }
  PlanStep t;
  t.output = name;
  t.inputs = {name + "_raw", rotId};
  t.einsum = raw + "," + out[1] + turned + fresh + "->" + out;
  t.role = std::string(name == "q" ? "queries" : "keys") + " turned by their position (rotary)";
  for (auto& box : net.boxes)
    for (const auto& id : renamedNodes)
      if (std::find(box.nodes.begin(), box.nodes.end(), id) != box.nodes.end() &&
          std::find(box.nodes.begin(), box.nodes.end(), rotId) == box.nodes.end())
        box.nodes.push_back(rotId);
  net.nodes.push_back(std::move(R));
  net.plan.insert(net.plan.begin() + static_cast<std::ptrdiff_t>(stepIndex) + 1, std::move(t));
}

}  // namespace

TensorNetwork withRotaryTurns(TensorNetwork net, const RotaryTurns& r) {
  if (r.block <= 0 || r.block % 2 != 0)
    throw std::invalid_argument("rotary positions turn pairs of features; the block is " + std::to_string(r.block));
  for (const auto& s : net.plan)
    if (s.output == "q_raw" || s.output == "k_raw")
      throw std::invalid_argument("rotary positions: the diagram '" + net.title + "' is turned already");
  // Index letters no node or step uses.
  std::string used;
  for (const auto& n : net.nodes)
    for (const auto& l : n.legs) used += l.index;
  for (const auto& s : net.plan) used += s.einsum;
  std::string freeLetters;
  for (const char c : std::string("acdefghijklmnopqrstuvwxyzACDEFGHIJKLMNOPQRSTUVWXYZ"))
    if (used.find(c) == std::string::npos) freeLetters += c;
  turn(net, "q", "Rq", "R^Q", r, freeLetters);
  turn(net, "k", "Rk", "R^K", r, freeLetters);
  net.title += std::string(", rotary positions (") + (r.interleaved ? "interleaved" : "half-split") + " pairs)";
  net.equation += ";  Q and K turned by R_n, R_m (rotary, §9)";
  return net;
}

}  // namespace tensorscope::spec
