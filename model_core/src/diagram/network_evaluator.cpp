#include "diagram/network_evaluator.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tensorscope::model_core {
namespace {

using spec::PlanStep;
using spec::SoftmaxBox;

std::string shapeText(at::IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::int64_t axisOf(const std::string& subs, char index, const std::string& what) {
  const auto p = subs.find(index);
  if (p == std::string::npos) throw std::logic_error(what + ": index '" + std::string(1, index) + "' is not in " + subs);
  return static_cast<std::int64_t>(p);
}

/// `t` with subscripts `subs` laid out along `out`: axes permuted, missing ones inserted with
/// size 1 and, with `expand`, broadcast to their sizes.
torch::Tensor align(const torch::Tensor& t, const std::string& subs, const std::string& out, bool expand,
                    const std::map<char, std::int64_t>& sizes) {
  std::vector<std::int64_t> perm, shape, full;
  for (char ch : out)
    if (const auto p = subs.find(ch); p != std::string::npos) perm.push_back(static_cast<std::int64_t>(p));
  if (perm.size() != subs.size()) throw std::logic_error("cannot align " + subs + " to " + out);
  const auto u = t.permute(perm);
  std::int64_t k = 0;
  for (char ch : out) {
    const bool present = subs.find(ch) != std::string::npos;
    shape.push_back(present ? u.size(k++) : 1);
    full.push_back(present ? shape.back() : sizes.at(ch));
  }
  const auto v = u.reshape(shape);
  return expand ? v.expand(full) : v;
}

/// torch::einsum, with output indices no operand carries broadcast.
torch::Tensor einsumBroadcast(const std::vector<std::string>& subs, const std::vector<torch::Tensor>& operands,
                              const std::string& out, const std::map<char, std::int64_t>& sizes) {
  std::string present, eq;
  for (char ch : out)
    for (const auto& s : subs)
      if (s.find(ch) != std::string::npos) {
        present += ch;
        break;
      }
  for (size_t i = 0; i < subs.size(); ++i) eq += (i ? "," : "") + subs[i];
  const auto r = at::einsum(eq + "->" + present, operands);
  return present == out ? r : align(r, present, out, true, sizes);
}

/// Boolean mask, true where index `later` exceeds index `earlier` (laid out along `out`).
torch::Tensor futureEntries(const std::string& out, char later, char earlier, const torch::Tensor& like) {
  const auto opts = like.options().dtype(torch::kLong);
  std::vector<std::int64_t> shapeL(out.size(), 1), shapeE(out.size(), 1);
  const auto aL = axisOf(out, later, "mask"), aE = axisOf(out, earlier, "mask");
  shapeL[static_cast<size_t>(aL)] = like.size(aL);
  shapeE[static_cast<size_t>(aE)] = like.size(aE);
  return at::arange(like.size(aL), opts).view(shapeL) > at::arange(like.size(aE), opts).view(shapeE);
}

torch::Tensor constant(const spec::TensorNode& n, const torch::TensorOptions& opts) {
  std::vector<std::int64_t> shape;
  for (const auto& l : n.legs) shape.push_back(l.size);
  if (n.binding == "ones") return at::ones(shape, opts);
  if (n.binding == "identity" && shape.size() == 2 && shape[0] == shape[1]) return at::eye(shape[0], opts);
  if (n.binding == "mean" && shape.size() == 1) return at::full(shape, 1.0 / static_cast<double>(shape[0]), opts);
  if (n.binding == "lower_triangular" && shape.size() == 2) return at::ones(shape, opts).tril();
  if (n.binding == "group_tie" && shape.size() == 2 && shape[1] >= 1 && shape[0] % shape[1] == 0) {
    // The copy tensor of shared keys and values: T[h, g] = 1 where query head h reads group g = h/(H/G).
    const auto group = at::arange(shape[0], opts.dtype(at::kLong)).div(shape[0] / shape[1], "floor");
    return at::one_hot(group, shape[1]).to(opts.dtype());
  }
  if (n.binding == "diff_key_tie" && shape.size() == 3 && shape[1] == 2 && shape[2] >= 2 &&
      (2 * shape[0]) % shape[2] == 0) {
    // Differential attention's shared key maps: T[h, i, κ] = 1 where query map 2h + i reads key map
    // κ = ⌊(2h + i)/(H/G)⌋ of 2G (the official repeat_kv).
    const auto map = at::arange(2 * shape[0], opts.dtype(at::kLong)).div(2 * shape[0] / shape[2], "floor");
    return at::one_hot(map, shape[2]).to(opts.dtype()).view(shape);
  }
  if (n.binding.rfind("select:", 0) == 0 && shape.size() == 2) {
    // S[u, i] = 1 where u = offset + i: picks a block of a concatenated leg (MLA's query, latent).
    const std::int64_t offset = std::stoll(n.binding.substr(7));
    if (offset >= 0 && offset + shape[1] <= shape[0]) {
      auto S = at::zeros(shape, opts);
      S.narrow(0, offset, shape[1]).copy_(at::eye(shape[1], opts));
      return S;
    }
  }
  if (n.binding.rfind("rotary:", 0) == 0 && shape.size() == 3 && shape[1] == shape[2]) {
    // R[n, a, a'] = the identity on the first `offset` entries, then DeepSeek's interleaved turn of
    // the pairs (offset + 2j, offset + 2j + 1) by the angle n·10000^(−2j/r), r = size − offset.
    const std::int64_t offset = std::stoll(n.binding.substr(7)), N = shape[0], A = shape[1], r = A - offset;
    if (offset >= 0 && r >= 0 && r % 2 == 0) {
      const auto d64 = opts.dtype(at::kDouble);
      auto R = at::zeros(shape, d64);
      if (offset > 0) R.narrow(1, 0, offset).narrow(2, 0, offset).copy_(at::eye(offset, d64).expand({N, offset, offset}));
      const auto pos = at::arange(N, d64);
      for (std::int64_t j = 0; 2 * j < r; ++j) {
        const auto angle = pos * std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(r));
        const std::int64_t p = offset + 2 * j;
        R.select(1, p).select(1, p).copy_(at::cos(angle));
        R.select(1, p).select(1, p + 1).copy_(-at::sin(angle));
        R.select(1, p + 1).select(1, p).copy_(at::sin(angle));
        R.select(1, p + 1).select(1, p + 1).copy_(at::cos(angle));
      }
      return R.to(opts);
    }
  }
  if (n.binding.rfind("rotary_half:", 0) == 0 && shape.size() == 3 && shape[1] == shape[2] && shape[1] % 2 == 0) {
    // R[n, d, a]: T6's half-split rotary turn (tensorgi/TPA model/T6.py apply_rotary_emb, lines 55-62,
    // commit 3d7f51d) at position n with base BASE: out[j] = in[j]·cos + in[j + D/2]·sin and
    // out[j + D/2] = −in[j]·sin + in[j + D/2]·cos, angle n·BASE^(−2j/D) (TPA, §8.7).
    const double base = std::stod(n.binding.substr(12));
    const std::int64_t N = shape[0], D = shape[1], half = D / 2;
    const auto d64 = opts.dtype(at::kDouble);
    auto R = at::zeros(shape, d64);
    const auto pos = at::arange(N, d64);
    for (std::int64_t j = 0; j < half; ++j) {
      const auto angle = pos * std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(D));
      R.select(1, j).select(1, j).copy_(at::cos(angle));
      R.select(1, j).select(1, j + half).copy_(at::sin(angle));
      R.select(1, j + half).select(1, j).copy_(-at::sin(angle));
      R.select(1, j + half).select(1, j + half).copy_(at::cos(angle));
    }
    return R.to(opts);
  }
  if (n.binding.rfind("shift:", 0) == 0 && shape.size() == 3) {
    // Σ[n, a, i] = 1 where a = n + i − OFFSET and 0 ≤ a < size: the shift tensor of multi-token
    // attention's key-query convolution (§8.8; the kernel's entry i reads position n − OFFSET + i,
    // zero padding outside the map, as RAM's F.pad + F.conv2d, mta_transformer.py L497-518).
    const std::int64_t offset = std::stoll(n.binding.substr(6));
    auto S = at::zeros(shape, opts);
    for (std::int64_t p = 0; p < shape[0]; ++p)
      for (std::int64_t i = 0; i < shape[2]; ++i) {
        const std::int64_t a = p + i - offset;
        if (a >= 0 && a < shape[1]) S[p][a][i] = 1.0;
      }
    return S;
  }
  if (n.binding == "head_split" && shape.size() == 3 && shape[0] == shape[1] * shape[2]) {
    // δ[h, c, i] = 1 where h = c·g + i (g = shape[2]): the head leg split into groups (MTA's head
    // convolution, §8.8).
    return at::eye(shape[0], opts).view(shape);
  }
  if (n.binding.rfind("rotary_turn:", 0) == 0 && shape.size() >= 3 && shape.size() % 2 == 1) {
    // R[n, out…, in…] (spec/rotary_network.h): the rotary turn of the modules (applyRotary) applied
    // to every unit vector e_in of the X = Π out features at every position n, so the diagram and
    // the layer turn by one definition.
    std::stringstream fields(n.binding.substr(12));
    std::string pairs, block, base;
    std::getline(fields, pairs, ':');
    std::getline(fields, block, ':');
    std::getline(fields, base);
    const size_t k = (shape.size() - 1) / 2;
    std::int64_t X = 1, Xin = 1;
    for (size_t i = 0; i < k; ++i) {
      X *= shape[1 + i];
      Xin *= shape[1 + k + i];
    }
    if ((pairs == "half" || pairs == "interleaved") && !block.empty() && !base.empty() && X == Xin) {
      const std::int64_t N = shape[0];
      const auto d64 = opts.dtype(at::kDouble);
      const auto units = at::eye(X, d64).view({1, 1, X, X}).expand({1, N, X, X});  // [1, n, in, feature]
      const auto turned = applyRotary(units, std::stoll(block),
                                      pairs == "half" ? RotaryPairs::Half : RotaryPairs::Interleaved, std::stod(base));
      return turned[0].transpose(1, 2).contiguous().view(shape).to(opts);  // [n, out, in]
    }
  }
  throw std::invalid_argument("node '" + n.id + "' has an unknown binding '" + n.binding + "' for its legs");
}

/// Differential attention's Λ = (1, −λ), λ = e^{λq1·λk1} − e^{λq2·λk2} + λ_init (first block).
torch::Tensor differentialMixing(const std::map<std::string, torch::Tensor>& w, const torch::TensorOptions& opts) {
  const auto get = [&](const char* name) {
    const auto it = w.find(name);
    if (it == w.end()) throw std::invalid_argument(std::string("no weight named '") + name + "' for differential attention's λ");
    return it->second.to(opts);
  };
  const auto lambda = at::exp(at::dot(get("lambda_q1"), get("lambda_k1"))) -
                      at::exp(at::dot(get("lambda_q2"), get("lambda_k2"))) + spec::diffLambdaInit(0);
  return at::stack({at::ones_like(lambda), -lambda});
}

}  // namespace

void toFloat64(torch::nn::Module& module) {
  at::NoGradGuard noGrad;
  for (auto& p : module.parameters(/*recurse=*/true))
    if (p.is_floating_point()) p.set_data(p.to(at::kDouble));
  for (auto& b : module.buffers(/*recurse=*/true))
    if (b.is_floating_point()) b.set_data(b.to(at::kDouble));
}

NetworkEvaluator::NetworkEvaluator(spec::TensorNetwork network) : network_(std::move(network)) {
  if (const auto problems = spec::checkNetwork(network_); !problems.empty()) {
    std::string msg = "inconsistent tensor network '" + network_.title + "':";
    for (const auto& p : problems) msg += "\n  " + p;
    throw std::invalid_argument(msg);
  }
}

std::map<std::string, torch::Tensor> NetworkEvaluator::bind(const std::vector<NamedWeight>& weights,
                                                            const torch::Tensor& x) const {
  std::map<std::string, torch::Tensor> byName;
  for (const auto& w : weights) byName[w.name] = w.value;
  std::map<std::string, torch::Tensor> out;
  for (const auto& n : network_.nodes) {
    std::vector<std::int64_t> shape;
    for (const auto& l : n.legs) shape.push_back(l.size);
    if (n.binding == "x") {
      if (x.dim() != 3 || x.size(1) != shape.at(0) || x.size(2) != shape.at(1))
        throw std::invalid_argument("the network expects x [B, " + std::to_string(shape.at(0)) + ", " +
                                    std::to_string(shape.at(1)) + "]; got " + shapeText(x.sizes()));
      out[n.id] = x;
    } else if (const auto it = byName.find(n.binding); it != byName.end()) {
      std::int64_t count = 1;
      for (auto s : shape) count *= s;
      if (it->second.numel() != count)
        throw std::invalid_argument("weight '" + n.binding + "' " + shapeText(it->second.sizes()) +
                                    " does not fit node '" + n.id + "' " + shapeText(shape));
      out[n.id] = it->second.to(x.options()).reshape(shape);
    } else if (n.binding == "diff_lambda") {
      out[n.id] = differentialMixing(byName, x.options());
    } else if (n.kind == spec::NodeKind::Constant) {
      out[n.id] = constant(n, x.options());
    } else {
      throw std::invalid_argument("no weight named '" + n.binding + "' for node '" + n.id + "'");
    }
  }
  return out;
}

torch::Tensor NetworkEvaluator::runStep(const PlanStep& s, const std::map<std::string, torch::Tensor>& values,
                                        const std::map<char, std::int64_t>& sizes, torch::Tensor* preOp) const {
  const auto terms = spec::parseEinsum(s.einsum);
  const std::string& out = terms.output;
  std::vector<torch::Tensor> operands;
  for (const auto& in : s.inputs) operands.push_back(values.at(in));
  if (s.op == PlanStep::Op::Divide)
    return align(operands[0], terms.operands[0], out, true, sizes) / align(operands[1], terms.operands[1], out, true, sizes);
  if (s.op == PlanStep::Op::Add)
    return align(operands[0], terms.operands[0], out, true, sizes) + align(operands[1], terms.operands[1], out, true, sizes);

  torch::Tensor r;
  if (s.op == PlanStep::Op::PrefixSum) {
    // Σ_m L[n,m]·x[m] = cumulative sum over m: evaluate the other operands along m, then sum.
    const std::string mask = terms.operands.back();
    std::string along = out;
    along[static_cast<size_t>(axisOf(out, mask[0], s.output))] = mask[1];
    std::vector<std::string> subs(terms.operands.begin(), terms.operands.end() - 1);
    operands.pop_back();
    r = einsumBroadcast(subs, operands, along, sizes).cumsum(axisOf(along, mask[1], s.output));
  } else {
    r = einsumBroadcast(terms.operands, operands, out, sizes);
  }
  if (s.scale != 1.0) r = r * s.scale;
  for (const auto& a : s.addends) {
    const auto& n = *std::find_if(network_.nodes.begin(), network_.nodes.end(), [&](const auto& x) { return x.id == a; });
    std::string subs;
    for (const auto& l : n.legs) subs += l.index;
    r = r + align(values.at(a), subs, out, false, sizes);
  }
  const SoftmaxBox* box = nullptr;
  for (const auto& b : network_.boxes)
    if (b.id == s.box) box = &b;
  switch (s.op) {
    case PlanStep::Op::None:
    case PlanStep::Op::Divide:
    case PlanStep::Op::Add:
    case PlanStep::Op::PrefixSum: return r;
    case PlanStep::Op::Softmax: {
      if (box->position_scale) {
        const auto q = axisOf(out, box->query, s.output);
        std::vector<std::int64_t> shape(out.size(), 1);
        shape[static_cast<size_t>(q)] = r.size(q);
        r = r / at::arange(1, r.size(q) + 1, r.options()).sqrt().view(shape);
      } else if (box->scale != 1.0) {
        r = r * box->scale;
      }
      if (box->causal)
        r = r.masked_fill(futureEntries(out, box->normalized, box->query, r), -std::numeric_limits<double>::infinity());
      if (preOp) *preOp = r;
      return at::softmax(r, axisOf(out, box->normalized, s.output));
    }
    case PlanStep::Op::Normalize:
      if (box->causal) r = r.masked_fill(futureEntries(out, box->normalized, box->query, r), 0.0);
      if (preOp) *preOp = r;
      return r / r.sum(axisOf(out, box->normalized, s.output), /*keepdim=*/true);
    case PlanStep::Op::EluPlusOne:
      if (preOp) *preOp = r;
      return at::elu(r) + 1.0;
    case PlanStep::Op::Sigmoid:
      if (preOp) *preOp = r;
      return at::sigmoid(r);
    case PlanStep::Op::RmsNorm:
      return r * at::rsqrt(r.pow(2).mean(axisOf(out, s.along, s.output), /*keepdim=*/true) + s.eps);
    case PlanStep::Op::Mask3: {
      const std::int64_t d = r.dim();
      if (d < 3) throw std::logic_error("step '" + s.output + "': Mask3 needs three axes");
      const std::string ijk = out.substr(out.size() - 3);
      return r.masked_fill(futureEntries(out, ijk[1], ijk[0], r) | futureEntries(out, ijk[2], ijk[0], r), 0.0);
    }
    case PlanStep::Op::Mean0: return r.mean(0);
    case PlanStep::Op::SelectLast: return r.select(axisOf(out, s.along, s.output), -1);
  }
  throw std::logic_error("unknown plan operation");
}

void NetworkEvaluator::run(std::map<std::string, torch::Tensor>& values, const std::set<std::string>& needed,
                           std::int64_t batch, bool logits) const {
  std::map<char, std::int64_t> sizes{{'b', batch}};
  for (const auto& l : spec::networkIndices(network_)) sizes[l.index] = l.size;
  for (const auto& s : network_.plan) {
    if (!needed.empty() && !needed.count(s.output)) continue;
    torch::Tensor pre;
    values[s.output] = runStep(s, values, sizes, logits ? &pre : nullptr);
    if (pre.defined()) values[s.output + ".logits"] = pre;
  }
}

NetworkValue NetworkEvaluator::evaluate(const std::vector<NamedWeight>& weights, const torch::Tensor& x,
                                        bool withMaps) const {
  auto values = bind(weights, x);
  std::set<std::string> needed{network_.output};
  if (withMaps && !network_.maps.empty()) needed.insert(network_.maps);
  for (auto it = network_.plan.rbegin(); it != network_.plan.rend(); ++it)
    if (needed.count(it->output)) needed.insert(it->inputs.begin(), it->inputs.end());
  run(values, needed, x.size(0));
  NetworkValue v;
  v.y = values.at(network_.output);
  if (withMaps && !network_.maps.empty()) {
    std::vector<std::int64_t> shape{x.size(0)};
    shape.insert(shape.end(), network_.maps_shape.begin(), network_.maps_shape.end());
    v.maps = values.at(network_.maps).reshape(shape);
  }
  return v;
}

std::map<std::string, torch::Tensor> NetworkEvaluator::evaluateAll(const std::vector<NamedWeight>& weights,
                                                                   const torch::Tensor& x) const {
  auto values = bind(weights, x);
  run(values, {}, x.size(0), /*logits=*/true);
  return values;
}

}  // namespace tensorscope::model_core
