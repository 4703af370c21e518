#include "reference.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "attention/fused_attention.h"
#include "attention/rotary_rule.h"
#include "spec/core_spec.h"

namespace tensorscope::model_core::test {
namespace {

torch::Tensor f64(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kDouble).contiguous(); }

const torch::Tensor& weight(const WeightMap& w, const std::string& name) {
  const auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("reference: the module has no weight named '" + name + "'");
  return it->second;
}

void requireShape(const torch::Tensor& t, const std::vector<std::int64_t>& shape, const std::string& name) {
  if (t.sizes().vec() != shape) {
    std::ostringstream os;
    os << "reference: weight '" << name << "' has shape " << t.sizes() << ", expected " << at::IntArrayRef(shape);
    throw std::runtime_error(os.str());
  }
}

// nn.Linear: y[b,n,o] = Σ_i x[b,n,i]·W[o,i] + bias[o], weight [out, in].
torch::Tensor linear(const WeightMap& w, const std::string& prefix, const torch::Tensor& x, bool bias) {
  const std::int64_t B = x.size(0), N = x.size(1), in = x.size(2);
  const torch::Tensor& W = weight(w, prefix + ".weight");
  if (W.dim() != 2 || W.size(1) != in) requireShape(W, {W.size(0), in}, prefix + ".weight");
  const std::int64_t out = W.size(0);
  torch::Tensor bt = torch::zeros({out}, torch::kDouble);
  if (bias) {
    bt = weight(w, prefix + ".bias");
    requireShape(bt, {out}, prefix + ".bias");
  }
  torch::Tensor y = torch::zeros({B, N, out}, torch::kDouble);
  auto xa = x.accessor<double, 3>();
  auto Wa = W.accessor<double, 2>();
  auto ya = y.accessor<double, 3>();
  auto ba = bt.accessor<double, 1>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t o = 0; o < out; ++o) {
        double s = ba[o];
        for (std::int64_t i = 0; i < in; ++i) s += xa[b][n][i] * Wa[o][i];
        ya[b][n][o] = s;
      }
  return y;
}

// Softmax of a row in place (max-shifted).
void softmax(std::vector<double>& v) {
  if (v.empty()) return;
  const double mx = *std::max_element(v.begin(), v.end());
  double sum = 0.0;
  for (double& e : v) {
    e = std::exp(e - mx);
    sum += e;
  }
  for (double& e : v) e /= sum;
}

// φ(z) = elu(z) + 1.
double phi(double z) { return z > 0.0 ? z + 1.0 : std::exp(z); }

void checkInput(const spec::AttentionSpec& spec, const torch::Tensor& x) {
  if (x.dim() != 3 || x.size(2) != spec.sizes.F) throw std::runtime_error("reference: x must be [B, N, F]");
}

}  // namespace

WeightMap weightsOf(const AttentionModuleImpl& module) {
  WeightMap w;
  for (const NamedWeight& nw : module.namedWeights()) w[nw.name] = f64(nw.value);
  return w;
}

/// Rotary positions (contract §9) from the equations, in loops: in every block of `block` features
/// of token n, pair j — features (j, j + block/2) for Half, (2j, 2j + 1) for Interleaved — turned
/// by the angle n·base^(−2j/block): (a, b) → (a·cos − b·sin, a·sin + b·cos). t [B, N, X] float64.
torch::Tensor turnReference(const torch::Tensor& t, int block, const Rotary& rotary) {
  if (!rotary.on) return t;
  torch::Tensor out = t.clone();
  auto a = t.accessor<double, 3>();
  auto o = out.accessor<double, 3>();
  const int half = block / 2;
  const bool interleaved = rotary.pairs == RotaryPairs::Interleaved;
  for (std::int64_t b = 0; b < t.size(0); ++b)
    for (std::int64_t n = 0; n < t.size(1); ++n)
      for (std::int64_t first = 0; first < t.size(2); first += block)
        for (int j = 0; j < half; ++j) {
          const std::int64_t i1 = first + (interleaved ? 2 * j : j), i2 = first + (interleaved ? 2 * j + 1 : j + half);
          const double angle = static_cast<double>(n) * std::pow(rotary.base, -2.0 * j / block);
          o[b][n][i1] = a[b][n][i1] * std::cos(angle) - a[b][n][i2] * std::sin(angle);
          o[b][n][i2] = a[b][n][i1] * std::sin(angle) + a[b][n][i2] * std::cos(angle);
        }
  return out;
}

/// Differential attention (contract §8.5) in the first block (λ_init = 0.8 − 0.6·e⁰ = 0.2), written
/// from the equations: maps (h, i) of size D, value heads of size 2D, RMSNorm per head.
Reference referenceDifferential(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn,
                                const Rotary& rotary) {
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D, F = spec.sizes.F;
  // Shared K and V (the official repeat_kv): query map j = 2h + i reads key map ⌊j / (H/G)⌋ of 2G,
  // head h reads value head ⌊h / (H/G)⌋ of G.
  const int G = spec.slots.kv_groups > 0 ? spec.slots.kv_groups : H, rep = H / G;
  requireShape(weight(w, "wq.weight"), {2 * H * D, F}, "wq.weight");
  requireShape(weight(w, "wk.weight"), {2 * G * D, F}, "wk.weight");
  requireShape(weight(w, "wv.weight"), {2 * G * D, F}, "wv.weight");
  requireShape(weight(w, "wo.weight"), {F, 2 * H * D}, "wo.weight");
  requireShape(weight(w, "subln.weight"), {2 * D}, "subln.weight");
  const torch::Tensor q = turnReference(linear(w, "wq", x, spec.bias), spec.sizes.D, rotary),
                      k = turnReference(linear(w, "wk", x, spec.bias), spec.sizes.D, rotary),
                      v = linear(w, "wv", x, spec.bias);
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  const auto dotOf = [&](const char* a, const char* b) {
    const torch::Tensor &u = weight(w, a), &t = weight(w, b);
    requireShape(u, {D}, a);
    requireShape(t, {D}, b);
    double s = 0.0;
    for (int d = 0; d < D; ++d) s += u[d].item<double>() * t[d].item<double>();
    return s;
  };
  const double lambdaInit = 0.8 - 0.6 * std::exp(-0.3 * 0);
  const double lambda = std::exp(dotOf("lambda_q1", "lambda_k1")) - std::exp(dotOf("lambda_q2", "lambda_k2")) + lambdaInit;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Reference ref;
  ref.map_parts = torch::zeros({B, H, 2, N, N}, torch::kDouble);
  auto Pa = ref.map_parts.accessor<double, 5>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < 2; ++i)
        for (std::int64_t n = 0; n < N; ++n) {
          // P[b,h,i,n,m] = softmax_m(Σ_d q[b,n,(2h+i)D+d]·k[b,m,(2h+i)D+d]/√D) over the visible keys.
          const std::int64_t visible = spec.causal ? n + 1 : N;
          std::vector<double> p(static_cast<size_t>(visible));
          for (std::int64_t m = 0; m < visible; ++m) {
            double s = 0.0;
            for (int d = 0; d < D; ++d) s += qa[b][n][(2 * h + i) * D + d] * ka[b][m][((2 * h + i) / rep) * D + d];
            p[static_cast<size_t>(m)] = s * scale;
          }
          softmax(p);
          for (std::int64_t m = 0; m < visible; ++m) Pa[b][h][i][n][m] = p[static_cast<size_t>(m)];
        }
  ref.maps = torch::zeros({B, H, N, N}, torch::kDouble);
  auto Aa = ref.maps.accessor<double, 4>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t m = 0; m < N; ++m) Aa[b][h][n][m] = Pa[b][h][0][n][m] - lambda * Pa[b][h][1][n][m];
  // o_h = A_h·V_h (2D wide), then RMSNorm over those 2D features, its weight and 1 − λ_init.
  auto norm = weight(w, "subln.weight").accessor<double, 1>();
  torch::Tensor o = torch::zeros({B, N, 2 * H * D}, torch::kDouble);
  auto oa = o.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t n = 0; n < N; ++n)
      for (int h = 0; h < H; ++h) {
        std::vector<double> head(static_cast<size_t>(2 * D), 0.0);
        for (int e = 0; e < 2 * D; ++e)
          for (std::int64_t m = 0; m < N; ++m)
            head[static_cast<size_t>(e)] += Aa[b][h][n][m] * va[b][m][(h / rep) * 2 * D + e];
        double squares = 0.0;
        for (double u : head) squares += u * u;
        const double rms = std::sqrt(squares / (2 * D) + 1e-5);
        for (int e = 0; e < 2 * D; ++e)
          oa[b][n][h * 2 * D + e] = head[static_cast<size_t>(e)] / rms * norm[e] * (1.0 - lambdaInit);
      }
  ref.y = linear(w, "wo", o, spec.bias);
  return ref;
}

/// x·(mean(x²) + ε)^−½·γ over the last axis of t [B, N, K] (RMSNorm), in loops.
torch::Tensor rmsNormRows(const torch::Tensor& t, const torch::Tensor& gamma, double eps) {
  torch::Tensor out = t.clone();
  auto a = out.accessor<double, 3>();
  auto g = gamma.accessor<double, 1>();
  const std::int64_t K = t.size(2);
  for (std::int64_t b = 0; b < t.size(0); ++b)
    for (std::int64_t n = 0; n < t.size(1); ++n) {
      double squares = 0.0;
      for (std::int64_t i = 0; i < K; ++i) squares += a[b][n][i] * a[b][n][i];
      const double rms = std::sqrt(squares / static_cast<double>(K) + eps);
      for (std::int64_t i = 0; i < K; ++i) a[b][n][i] = a[b][n][i] / rms * g[i];
    }
  return out;
}

/// DeepSeek's interleaved rotary turn at position n: the pair (u_2j, u_2j+1) turned by n·θ^(−2j/r).
void rotate(std::vector<double>& u, std::int64_t n) {
  const std::size_t r = u.size();
  for (std::size_t j = 0; 2 * j < r; ++j) {
    const double angle = static_cast<double>(n) * std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(r));
    const double a = u[2 * j], b = u[2 * j + 1];
    u[2 * j] = a * std::cos(angle) - b * std::sin(angle);
    u[2 * j + 1] = a * std::sin(angle) + b * std::cos(angle);
  }
}

/// Multi-head latent attention (contract §8.6) from the equations, in the naive order whatever
/// slots.latent.order says (the orders are one function): q = x·W^Qᵀ (or W^Q_b·RMSNorm(W^Q_a·x)),
/// [c, k_pe] = x·W^KV_aᵀ, c ← RMSNorm(c) (ε = 10⁻⁶), k_h = W^UK_h·c, v_h = W^UV_h·c, rotary on q_pe
/// and the shared k_pe, logits (q_nope·k_nope + q_pe·k_pe)/√(D + r).
Reference referenceLatent(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn) {
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D, F = spec.sizes.F;
  const auto& l = spec.slots.latent;
  const int L = l.kv_rank, Rq = l.q_rank, r = l.rope_dim, Dq = D + r;
  const double eps = 1e-6;
  torch::Tensor q;
  if (Rq == 0) {
    requireShape(weight(w, "wq.weight"), {H * Dq, F}, "wq.weight");
    q = linear(w, "wq", x, false);
  } else {
    requireShape(weight(w, "wq_a.weight"), {Rq, F}, "wq_a.weight");
    requireShape(weight(w, "q_norm.weight"), {Rq}, "q_norm.weight");
    requireShape(weight(w, "wq_b.weight"), {H * Dq, Rq}, "wq_b.weight");
    q = linear(w, "wq_b", rmsNormRows(linear(w, "wq_a", x, false), weight(w, "q_norm.weight"), eps), false);
  }
  requireShape(weight(w, "wkv_a.weight"), {L + r, F}, "wkv_a.weight");
  requireShape(weight(w, "kv_norm.weight"), {L}, "kv_norm.weight");
  requireShape(weight(w, "wkv_b.weight"), {2 * H * D, L}, "wkv_b.weight");
  requireShape(weight(w, "wo.weight"), {F, H * D}, "wo.weight");
  const torch::Tensor kv = linear(w, "wkv_a", x, false);
  const torch::Tensor c = rmsNormRows(kv.narrow(2, 0, L).contiguous(), weight(w, "kv_norm.weight"), eps);
  const torch::Tensor kvb = linear(w, "wkv_b", c, false);  // [B, M, H·2D]: per head k_nope (D), then v (D)
  auto qa = q.accessor<double, 3>(), kva = kv.accessor<double, 3>(), kvba = kvb.accessor<double, 3>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dq));
  Reference ref;
  ref.maps = torch::zeros({B, H, N, N}, torch::kDouble);
  auto Pa = ref.maps.accessor<double, 4>();
  torch::Tensor o = torch::zeros({B, N, H * D}, torch::kDouble);
  auto oa = o.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<std::vector<double>> kPe(static_cast<std::size_t>(N));  // the shared rotary key of token m
    for (std::int64_t m = 0; m < N; ++m) {
      kPe[static_cast<std::size_t>(m)].resize(static_cast<std::size_t>(r));
      for (int j = 0; j < r; ++j) kPe[static_cast<std::size_t>(m)][static_cast<std::size_t>(j)] = kva[b][m][L + j];
      rotate(kPe[static_cast<std::size_t>(m)], m);
    }
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n) {
        std::vector<double> qPe(static_cast<std::size_t>(r));
        for (int j = 0; j < r; ++j) qPe[static_cast<std::size_t>(j)] = qa[b][n][h * Dq + D + j];
        rotate(qPe, n);
        const std::int64_t visible = spec.causal ? n + 1 : N;
        std::vector<double> p(static_cast<std::size_t>(visible));
        for (std::int64_t m = 0; m < visible; ++m) {
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += qa[b][n][h * Dq + d] * kvba[b][m][h * 2 * D + d];
          for (int j = 0; j < r; ++j) s += qPe[static_cast<std::size_t>(j)] * kPe[static_cast<std::size_t>(m)][static_cast<std::size_t>(j)];
          p[static_cast<std::size_t>(m)] = s * scale;
        }
        softmax(p);
        for (std::int64_t m = 0; m < visible; ++m) Pa[b][h][n][m] = p[static_cast<std::size_t>(m)];
        for (int d = 0; d < D; ++d) {
          double s = 0.0;
          for (std::int64_t m = 0; m < visible; ++m) s += p[static_cast<std::size_t>(m)] * kvba[b][m][h * 2 * D + D + d];
          oa[b][n][h * D + d] = s;
        }
      }
  }
  ref.y = linear(w, "wo", o, false);
  return ref;
}

/// T6's half-split rotary turn at position n with base `base` (contract §8.7): the pair (u_j, u_{j+D/2})
/// becomes (u_j·cos + u_{j+D/2}·sin, −u_j·sin + u_{j+D/2}·cos) at the angle n·base^(−2j/D).
void rotateHalf(double* u, int D, std::int64_t n, double base) {
  const int half = D / 2;
  for (int j = 0; j < half; ++j) {
    const double angle = static_cast<double>(n) * std::pow(base, -2.0 * j / static_cast<double>(D));
    const double a = u[j], b = u[j + half];
    u[j] = a * std::cos(angle) + b * std::sin(angle);
    u[j + half] = -a * std::sin(angle) + b * std::cos(angle);
  }
}

/// Tensor Product Attention (contract §8.7) from the equations, in loops: for each token the head
/// factors A[h, r] (x·W_Aᵀ, or the constant A_·), the feature factors B[r, :] (x·W_Bᵀ, turned for q
/// and k), q[h, d] = (1/R)·Σ_r A[h, r]·B[r, d]; queries x·Wqᵀ turned per head when R_Q = 0; then the
/// softmax attention of MHSA with 1/√D and W^O.
Reference referenceTpa(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn) {
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D, F = spec.sizes.F;
  const auto& t = spec.slots.tpa;
  const int ranks[3] = {t.q_rank, t.k_rank, t.v_rank};
  const char* names[3] = {"q", "k", "v"};
  std::vector<torch::Tensor> made;  // q, k, v [B, N, H, D]
  for (int i = 0; i < 3; ++i) {
    const int R = ranks[i];
    torch::Tensor out = torch::zeros({B, N, H, D}, torch::kDouble);
    auto oa = out.accessor<double, 4>();
    const bool turn = t.rope && i < 2;
    if (R == 0) {  // queries as MHSA
      requireShape(weight(w, "wq.weight"), {H * D, F}, "wq.weight");
      const torch::Tensor q = linear(w, "wq", x, false);
      auto qa = q.accessor<double, 3>();
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t n = 0; n < N; ++n)
          for (int h = 0; h < H; ++h) {
            std::vector<double> u(static_cast<std::size_t>(D));
            for (int d = 0; d < D; ++d) u[static_cast<std::size_t>(d)] = qa[b][n][h * D + d];
            if (turn) rotateHalf(u.data(), D, n, t.rope_base);
            for (int d = 0; d < D; ++d) oa[b][n][h][d] = u[static_cast<std::size_t>(d)];
          }
      made.push_back(out);
      continue;
    }
    const std::string v = names[i];
    torch::Tensor Bf;  // [B, N, R·D]
    if (t.contextual_b) {
      requireShape(weight(w, "W_B_" + v + ".weight"), {R * D, F}, "W_B_" + v + ".weight");
      Bf = linear(w, "W_B_" + v, x, false);
    } else {  // constant feature factors b [R, D], the same for every token (turned below by position)
      requireShape(weight(w, "B_" + v), {R, D}, "B_" + v);
      Bf = f64(weight(w, "B_" + v)).reshape({1, 1, R * D}).expand({B, N, R * D}).contiguous();
    }
    torch::Tensor Af;
    if (t.contextual_a) {
      requireShape(weight(w, "W_A_" + v + ".weight"), {H * R, F}, "W_A_" + v + ".weight");
      Af = linear(w, "W_A_" + v, x, false);  // [B, N, H·R]
    } else {
      requireShape(weight(w, "A_" + v), {H, R}, "A_" + v);
      Af = f64(weight(w, "A_" + v)).reshape({1, 1, H * R}).expand({B, N, H * R}).contiguous();
    }
    auto ba = Bf.accessor<double, 3>();
    auto aa = Af.accessor<double, 3>();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t n = 0; n < N; ++n) {
        std::vector<double> feat(static_cast<std::size_t>(R * D));
        for (int r = 0; r < R; ++r) {
          for (int d = 0; d < D; ++d) feat[static_cast<std::size_t>(r * D + d)] = ba[b][n][r * D + d];
          if (turn) rotateHalf(feat.data() + r * D, D, n, t.rope_base);
        }
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d) {
            double sum = 0.0;
            for (int r = 0; r < R; ++r) sum += aa[b][n][h * R + r] * feat[static_cast<std::size_t>(r * D + d)];
            oa[b][n][h][d] = sum / R;
          }
      }
    made.push_back(out);
  }
  requireShape(weight(w, "wo.weight"), {F, H * D}, "wo.weight");
  auto qa = made[0].accessor<double, 4>(), ka = made[1].accessor<double, 4>(), va = made[2].accessor<double, 4>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Reference ref;
  ref.maps = torch::zeros({B, H, N, N}, torch::kDouble);
  auto Pa = ref.maps.accessor<double, 4>();
  torch::Tensor o = torch::zeros({B, N, H * D}, torch::kDouble);
  auto oa = o.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t visible = spec.causal ? n + 1 : N;
        std::vector<double> p(static_cast<std::size_t>(visible));
        for (std::int64_t m = 0; m < visible; ++m) {
          double sum = 0.0;
          for (int d = 0; d < D; ++d) sum += qa[b][n][h][d] * ka[b][m][h][d];
          p[static_cast<std::size_t>(m)] = sum * scale;
        }
        softmax(p);
        for (std::int64_t m = 0; m < visible; ++m) Pa[b][h][n][m] = p[static_cast<std::size_t>(m)];
        for (int d = 0; d < D; ++d) {
          double sum = 0.0;
          for (std::int64_t m = 0; m < visible; ++m) sum += p[static_cast<std::size_t>(m)] * va[b][m][h][d];
          oa[b][n][h * D + d] = sum;
        }
      }
  if (t.group_norm) {  // T6's subln: each head's D outputs RMS-normalised (ε 1e-5), times γ [D]
    requireShape(weight(w, "subln.weight"), {D}, "subln.weight");
    o = rmsNormRows(o.view({B, N * H, D}), f64(weight(w, "subln.weight")), 1e-5).view({B, N, H * D});
  }
  ref.y = linear(w, "wo", o, false);
  return ref;
}

/// Multi-token attention (contract §8.8) in the first block (norm_rescale's λ_init = 0.2), written
/// from the equations in loops over every index: the key-query convolutions, the head mixings, the
/// head norm and its gate.
Reference referenceMta(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn,
                       const Rotary& rotary) {
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D;
  const spec::Slots& slot = spec.slots;
  const spec::Mta& mta = slot.mta;
  const int G = slot.kv_groups > 0 ? slot.kv_groups : H;
  const auto group = [&](int h) { return h / (H / G); };
  requireShape(weight(w, "wq.weight"), {H * D, spec.sizes.F}, "wq.weight");
  requireShape(weight(w, "wk.weight"), {G * D, spec.sizes.F}, "wk.weight");
  requireShape(weight(w, "wv.weight"), {G * D, spec.sizes.F}, "wv.weight");
  const torch::Tensor q = turnReference(linear(w, "wq", x, spec.bias), D, rotary),
                      k = turnReference(linear(w, "wk", x, spec.bias), D, rotary), v = linear(w, "wv", x, spec.bias);
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  const auto at = [&](std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t m) {
    return static_cast<size_t>(((b * H + h) * N + n) * N + m);
  };
  const auto hidden = [&](std::int64_t n, std::int64_t m) { return spec.causal && m > n; };
  // S[b,h,n,m] = Σ_d q[b,n,h,d]·k[b,m,g(h),d]/√D.
  std::vector<double> S(static_cast<size_t>(B * H * N * N));
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t m = 0; m < N; ++m) {
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += qa[b][n][h * D + d] * ka[b][m][group(h) * D + d];
          S[at(b, h, n, m)] = s / std::sqrt(static_cast<double>(D));
        }
  // Ŝ[b,h,n,m] = Σ_{i<c_q} Σ_{j<c_k} θ[h,i,j]·Z[b,h,n−c_q+1+i, m−p+j], Z = S with hidden entries 0
  // and 0 outside the map; p = (c_k−1)/2 (both), c_k−1 (left), 0 (right).
  const auto convolve = [&](const std::vector<double>& in, const std::string& name, int cq, int ck) {
    const torch::Tensor& K = weight(w, name);
    requireShape(K, {H, cq, ck}, name);
    auto Ka = K.accessor<double, 3>();
    const int p = mta.pad == spec::MtaPad::Both ? (ck - 1) / 2 : mta.pad == spec::MtaPad::Left ? ck - 1 : 0;
    std::vector<double> out(in.size(), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t m = 0; m < N; ++m) {
            double s = 0.0;
            for (int i = 0; i < cq; ++i)
              for (int j = 0; j < ck; ++j) {
                const std::int64_t n2 = n - (cq - 1) + i, m2 = m - p + j;
                if (n2 < 0 || n2 >= N || m2 < 0 || m2 >= N || hidden(n2, m2)) continue;
                s += Ka[h][i][j] * in[at(b, h, n2, m2)];
              }
            out[at(b, h, n, m)] = s;
          }
    return out;
  };
  // Mixing across heads: out[l] = Σ_h C[l,h]·in[h] (C [H, H], to-head first).
  const auto mix = [&](const std::vector<double>& in, const std::string& name) {
    const torch::Tensor& C = weight(w, name);
    requireShape(C, {H, H}, name);
    auto Ca = C.accessor<double, 2>();
    std::vector<double> out(in.size(), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (int l = 0; l < H; ++l)
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t m = 0; m < N; ++m) {
            double s = 0.0;
            for (int h = 0; h < H; ++h) s += Ca[l][h] * in[at(b, h, n, m)];
            out[at(b, l, n, m)] = s;
          }
    return out;
  };
  if (mta.q_kernel > 0) S = convolve(S, "mta_kernel", mta.q_kernel, mta.k_kernel);
  if (slot.pre_mix) S = mix(S, "mix_pre");
  // The softmax over the keys a query may see; hidden weights are 0.
  std::vector<double> P(S.size(), 0.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t visible = spec.causal ? n + 1 : N;
        std::vector<double> row(static_cast<size_t>(visible));
        for (std::int64_t m = 0; m < visible; ++m) row[static_cast<size_t>(m)] = S[at(b, h, n, m)];
        softmax(row);
        for (std::int64_t m = 0; m < visible; ++m) P[at(b, h, n, m)] = row[static_cast<size_t>(m)];
      }
  if (mta.post_q_kernel > 0) {
    P = convolve(P, "mta_kernel_after_sm", mta.post_q_kernel, mta.post_k_kernel);
    for (std::int64_t b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t m = 0; m < N; ++m)
            if (hidden(n, m)) P[at(b, h, n, m)] = 0.0;
  }
  if (mta.head_group > 0) {
    // U[b, c·g + j] = Σ_i P[b, c·g + i]·κ[c, i, j] within each group c of g heads.
    const int g = mta.head_group;
    const torch::Tensor& Kh = weight(w, "head_kernel");
    requireShape(Kh, {H / g, g, g}, "head_kernel");
    auto Ka = Kh.accessor<double, 3>();
    std::vector<double> U(P.size(), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (int c = 0; c < H / g; ++c)
        for (int j = 0; j < g; ++j)
          for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t m = 0; m < N; ++m) {
              double s = 0.0;
              for (int i = 0; i < g; ++i) s += P[at(b, c * g + i, n, m)] * Ka[c][i][j];
              U[at(b, c * g + j, n, m)] = s;
            }
    P = U;
  } else if (slot.post_mix) {
    P = mix(P, "mix_post");
  }
  Reference ref;
  ref.maps = torch::tensor(P, torch::kDouble).view({B, H, N, N});
  // o[b,n,h,d] = Σ_m U[b,h,n,m]·v[b,m,g(h),d], then the head norm and the gate.
  torch::Tensor o = torch::zeros({B, N, H * D}, torch::kDouble);
  auto oa = o.accessor<double, 3>();
  const torch::Tensor gamma = mta.group_norm ? weight(w, "subln.weight") : torch::Tensor();
  if (mta.group_norm) requireShape(gamma, {D}, "subln.weight");
  const int outs = mta.out_gate == spec::Gate::Headwise ? 1 : D;
  torch::Tensor gw, gb;
  if (mta.out_gate != spec::Gate::None) {
    gw = weight(w, "gate.weight");
    gb = weight(w, "gate.bias");
    requireShape(gw, {outs, D}, "gate.weight");
    requireShape(gb, {outs}, "gate.bias");
  }
  const double rescale = mta.norm_rescale ? 1.0 - (0.8 - 0.6 * std::exp(-0.3 * 0)) : 1.0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t n = 0; n < N; ++n)
      for (int h = 0; h < H; ++h) {
        std::vector<double> head(static_cast<size_t>(D), 0.0);
        for (int d = 0; d < D; ++d)
          for (std::int64_t m = 0; m < N; ++m) head[static_cast<size_t>(d)] += P[at(b, h, n, m)] * va[b][m][group(h) * D + d];
        if (mta.group_norm) {
          double ms = 0.0;
          for (double e : head) ms += e * e / D;
          for (int d = 0; d < D; ++d)
            head[static_cast<size_t>(d)] *= gamma[d].item<double>() * rescale / std::sqrt(ms + 1e-5);
        }
        if (mta.out_gate != spec::Gate::None) {
          std::vector<double> gate(static_cast<size_t>(outs));
          for (int e = 0; e < outs; ++e) {
            double s = gb[e].item<double>();
            for (int d = 0; d < D; ++d) s += gw[e][d].item<double>() * head[static_cast<size_t>(d)];
            gate[static_cast<size_t>(e)] = 1.0 / (1.0 + std::exp(-s));
          }
          for (int d = 0; d < D; ++d) head[static_cast<size_t>(d)] *= gate[static_cast<size_t>(outs == 1 ? 0 : d)];
        }
        for (int d = 0; d < D; ++d) oa[b][n][h * D + d] = head[static_cast<size_t>(d)];
      }
  requireShape(weight(w, "wo.weight"), {spec.sizes.F, H * D}, "wo.weight");
  ref.y = linear(w, "wo", o, spec.bias);
  return ref;
}

/// Slot (d), the output gate of a headed layer: o[b,n,h·D+d] ·= σ(x·W^Gᵀ)[b,n,h(·D+d)] (headwise
/// or elementwise); nothing without a gate. `o` is [B, N, H·D], `x` the float64 input.
void outputGate(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x, torch::Tensor& o) {
  if (spec.slots.gate == spec::Gate::None) return;
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D;
  const bool headwise = spec.slots.gate == spec::Gate::Headwise;
  requireShape(weight(w, "wg.weight"), {headwise ? H : H * D, spec.sizes.F}, "wg.weight");
  const torch::Tensor g = linear(w, "wg", x, spec.bias);
  auto ga = g.accessor<double, 3>();
  auto oa = o.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t n = 0; n < N; ++n)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) oa[b][n][h * D + d] *= 1.0 / (1.0 + std::exp(-ga[b][n][headwise ? h : h * D + d]));
}

/// Collaborative attention (§8.9; epfml/collaborative-attention), from its equations:
///   q̃ = x·W^Qᵀ, k̃ = x·W^Kᵀ [D̃] (no bias), c[m,h] = x_m·w^c_h,
///   logits[h,n,m] = (Σ_c q̃[n,c]·M[h,c]·k̃[m,c] + c[m,h]) / √(D̃/H), P = softmax over visible m,
///   o[n,h,d] = Σ_m P[h,n,m]·v[m,h·D+d], gate (slot d) as MHSA's, y = o·W^Oᵀ.
Reference referenceCollaborative(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn) {
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D, F = spec.sizes.F;
  const spec::Collaborative& k = spec.slots.collaborative;
  const int Dk = k.key_dim;
  requireShape(weight(w, "wq.weight"), {Dk, F}, "wq.weight");
  requireShape(weight(w, "wk.weight"), {Dk, F}, "wk.weight");
  requireShape(weight(w, "wv.weight"), {H * D, F}, "wv.weight");
  const torch::Tensor& M = weight(w, "mixing");
  requireShape(M, {H, Dk}, "mixing");
  const torch::Tensor q = linear(w, "wq", x, false), kk = linear(w, "wk", x, false), v = linear(w, "wv", x, spec.bias);
  torch::Tensor cb = torch::zeros({B, N, H}, torch::kDouble);
  if (k.content_bias) {
    requireShape(weight(w, "content_bias.weight"), {H, F}, "content_bias.weight");
    cb = linear(w, "content_bias", x, false);
  }
  auto qa = q.accessor<double, 3>(), ka = kk.accessor<double, 3>(), va = v.accessor<double, 3>(),
       cba = cb.accessor<double, 3>();
  auto Ma = M.accessor<double, 2>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dk) / H);
  Reference ref;
  ref.maps = torch::zeros({B, H, N, N}, torch::kDouble);
  auto Pa = ref.maps.accessor<double, 4>();
  torch::Tensor o = torch::zeros({B, N, H * D}, torch::kDouble);
  auto oa = o.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t visible = spec.causal ? n + 1 : N;
        std::vector<double> p(static_cast<size_t>(visible));
        for (std::int64_t m = 0; m < visible; ++m) {
          double s = cba[b][m][h];
          for (int c = 0; c < Dk; ++c) s += qa[b][n][c] * Ma[h][c] * ka[b][m][c];
          p[static_cast<size_t>(m)] = s * scale;
        }
        softmax(p);
        for (std::int64_t m = 0; m < visible; ++m) {
          Pa[b][h][n][m] = p[static_cast<size_t>(m)];
          for (int d = 0; d < D; ++d) oa[b][n][h * D + d] += p[static_cast<size_t>(m)] * va[b][m][h * D + d];
        }
      }
  outputGate(spec, w, x, o);
  requireShape(weight(w, "wo.weight"), {F, H * D}, "wo.weight");
  ref.y = linear(w, "wo", o, spec.bias);
  return ref;
}

Reference referenceHeaded(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn,
                          const Rotary& rotary) {
  checkInput(spec, xIn);
  if (spec.slots.collaborative.enabled()) return referenceCollaborative(spec, w, xIn);
  if (spec.slots.tpa.enabled()) return referenceTpa(spec, w, xIn);
  if (spec.slots.differential) return referenceDifferential(spec, w, xIn, rotary);
  if (spec.slots.latent.enabled()) return referenceLatent(spec, w, xIn);
  if (spec.slots.mta.enabled()) return referenceMta(spec, w, xIn, rotary);
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int H = spec.sizes.H, D = spec.sizes.D;
  const bool tp = spec.variant == spec::Variant::Tp;
  const spec::Slots& slot = spec.slots;
  // Slot (a): G key/value heads; query head h reads group h / (H/G) (section 8).
  const int G = slot.kv_groups > 0 ? slot.kv_groups : H;
  const auto group = [&](int h) { return h / (H / G); };
  const torch::Tensor q = turnReference(linear(w, "wq", x, spec.bias), spec.sizes.D, rotary),
                      k = turnReference(linear(w, "wk", x, spec.bias), spec.sizes.D, rotary),
                      v = linear(w, "wv", x, spec.bias);
  requireShape(weight(w, "wq.weight"), {H * D, spec.sizes.F}, "wq.weight");
  requireShape(weight(w, "wk.weight"), {G * D, spec.sizes.F}, "wk.weight");
  requireShape(weight(w, "wv.weight"), {G * D, spec.sizes.F}, "wv.weight");
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  // Scaled logits J[b,h,n,m] = Σ_d q[b,n,h,d]·k[b,m,g(h),d]/√D, for every (n, m).
  std::vector<double> J(static_cast<size_t>(B * H * N * N));
  const auto at = [&](std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t m) {
    return static_cast<size_t>(((b * H + h) * N + n) * N + m);
  };
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t m = 0; m < N; ++m) {
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += qa[b][n][h * D + d] * ka[b][m][group(h) * D + d];
          J[at(b, h, n, m)] = s * scale;
        }
  // Slot (b): L[b,l,n,m] = Σ_h mix_pre[l,h]·J[b,h,n,m], before the mask.
  std::vector<double> L = J;
  if (slot.pre_mix) {
    const torch::Tensor& C = weight(w, "mix_pre");
    requireShape(C, {H, H}, "mix_pre");
    auto Ca = C.accessor<double, 2>();
    for (std::int64_t b = 0; b < B; ++b)
      for (int l = 0; l < H; ++l)
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t m = 0; m < N; ++m) {
            double s = 0.0;
            for (int h = 0; h < H; ++h) s += Ca[l][h] * J[at(b, h, n, m)];
            L[at(b, l, n, m)] = s;
          }
  }
  // The softmax over the keys a query may see (m <= n when causal); masked weights are 0.
  torch::Tensor P = torch::zeros({B, H, N, N}, torch::kDouble);
  auto Pa = P.accessor<double, 4>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t visible = spec.causal ? n + 1 : N;
        std::vector<double> p(static_cast<size_t>(visible));
        for (std::int64_t m = 0; m < visible; ++m) p[static_cast<size_t>(m)] = L[at(b, h, n, m)];
        softmax(p);
        for (std::int64_t m = 0; m < visible; ++m) Pa[b][h][n][m] = p[static_cast<size_t>(m)];
      }
  // Slot (c): U[b,w,n,m] = Σ_l mix_post[w,l]·P[b,l,n,m]; the maps are what meets V.
  Reference ref;
  ref.maps = P;
  if (slot.post_mix) {
    const torch::Tensor& C = weight(w, "mix_post");
    requireShape(C, {H, H}, "mix_post");
    ref.maps = torch::zeros({B, H, N, N}, torch::kDouble);
    auto Ca = C.accessor<double, 2>();
    auto Ua = ref.maps.accessor<double, 4>();
    for (std::int64_t b = 0; b < B; ++b)
      for (int wh = 0; wh < H; ++wh)
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t m = 0; m < N; ++m) {
            double s = 0.0;
            for (int l = 0; l < H; ++l) s += Ca[wh][l] * Pa[b][l][n][m];
            Ua[b][wh][n][m] = s;
          }
  }
  auto Ua = ref.maps.accessor<double, 4>();
  torch::Tensor o = torch::zeros({B, N, H * D}, torch::kDouble);
  auto oa = o.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t m = 0; m < N; ++m)
          for (int d = 0; d < D; ++d) oa[b][n][h * D + d] += Ua[b][h][n][m] * va[b][m][group(h) * D + d];
  if (tp) {
    // Roles r = x·Wrᵀ [B, H, N, D]; the filler of head h is bound by the Hadamard product.
    const torch::Tensor r = linear(w, "wr", x, spec.bias);
    auto ra = r.accessor<double, 3>();
    ref.roles = torch::zeros({B, H, N, D}, torch::kDouble);
    auto rola = ref.roles.accessor<double, 4>();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t n = 0; n < N; ++n)
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d) {
            rola[b][h][n][d] = ra[b][n][h * D + d];
            oa[b][n][h * D + d] *= ra[b][n][h * D + d];
          }
  }
  outputGate(spec, w, x, o);
  requireShape(weight(w, "wo.weight"), {spec.sizes.F, H * D}, "wo.weight");
  ref.y = linear(w, "wo", o, spec.bias);
  return ref;
}

Reference referenceThsa(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn,
                        const Rotary& rotary) {
  checkInput(spec, xIn);
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int R = spec.sizes.R;
  const torch::Tensor& C = weight(w, "core");
  requireShape(C, {R, R}, "core");
  const torch::Tensor q = turnReference(linear(w, "wq", x, spec.bias), spec.sizes.D, rotary),
                      k = turnReference(linear(w, "wk", x, spec.bias), spec.sizes.D, rotary),
                      v = linear(w, "wv", x, spec.bias);
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  auto Ca = C.accessor<double, 2>();
  Reference ref;
  ref.maps = torch::zeros({B, R, N, N}, torch::kDouble);
  torch::Tensor omega = torch::zeros({B, N, R}, torch::kDouble);
  auto pa = ref.maps.accessor<double, 4>();
  auto oa = omega.accessor<double, 3>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(R));
  for (std::int64_t b = 0; b < B; ++b)
    for (int r = 0; r < R; ++r)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t L = spec.causal ? n + 1 : N;
        std::vector<double> p(static_cast<size_t>(L));
        for (std::int64_t m = 0; m < L; ++m) {
          double s = 0.0;
          for (int t = 0; t < R; ++t) s += Ca[r][t] * qa[b][n][t] * ka[b][m][t];
          p[static_cast<size_t>(m)] = s * scale;
        }
        softmax(p);
        for (std::int64_t m = 0; m < L; ++m) {
          pa[b][r][n][m] = p[static_cast<size_t>(m)];
          oa[b][n][r] += p[static_cast<size_t>(m)] * va[b][m][r];
        }
      }
  ref.y = linear(w, "wo", omega, spec.bias);
  return ref;
}

Reference referenceThsaLinear(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn) {
  checkInput(spec, xIn);
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int R = spec.sizes.R;
  const torch::Tensor& C = weight(w, "core");
  requireShape(C, {R, R}, "core");
  const torch::Tensor q = linear(w, "wq", x, spec.bias), k = linear(w, "wk", x, spec.bias),
                      v = linear(w, "wv", x, spec.bias);
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  auto Ca = C.accessor<double, 2>();
  Reference ref;
  ref.maps = torch::zeros({B, R, N, N}, torch::kDouble);
  torch::Tensor omega = torch::zeros({B, N, R}, torch::kDouble);
  auto pa = ref.maps.accessor<double, 4>();
  auto oa = omega.accessor<double, 3>();
  for (std::int64_t b = 0; b < B; ++b)
    for (int r = 0; r < R; ++r)
      for (std::int64_t n = 0; n < N; ++n) {
        std::vector<double> a(static_cast<size_t>(R));
        for (int s = 0; s < R; ++s) a[static_cast<size_t>(s)] = phi(Ca[r][s] * qa[b][n][s]);
        const std::int64_t L = spec.causal ? n + 1 : N;
        std::vector<double> sim(static_cast<size_t>(L));
        double den = 0.0;
        for (std::int64_t m = 0; m < L; ++m) {
          double s = 0.0;
          for (int t = 0; t < R; ++t) s += a[static_cast<size_t>(t)] * phi(ka[b][m][t]);
          sim[static_cast<size_t>(m)] = s;
          den += s;
        }
        double num = 0.0;
        for (std::int64_t m = 0; m < L; ++m) {
          pa[b][r][n][m] = sim[static_cast<size_t>(m)] / den;
          num += sim[static_cast<size_t>(m)] * va[b][m][r];
        }
        oa[b][n][r] = num / den;
      }
  ref.y = linear(w, "wo", omega, spec.bias);
  return ref;
}

Reference referenceMultilinear(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn) {
  checkInput(spec, xIn);
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int R = spec.sizes.R, P = spec.sizes.P;
  const torch::Tensor& g = weight(w, "cores");
  requireShape(g, {P, R}, "cores");
  // Effective core weights: softmax(g_p) over r (paper) or g_p (authors' code).
  torch::Tensor eff = g.clone();
  if (spec.core_softmax) {
    auto ea = eff.accessor<double, 2>();
    for (int p = 0; p < P; ++p) {
      std::vector<double> row(static_cast<size_t>(R));
      for (int r = 0; r < R; ++r) row[static_cast<size_t>(r)] = ea[p][r];
      softmax(row);
      for (int r = 0; r < R; ++r) ea[p][r] = row[static_cast<size_t>(r)];
    }
  }
  const torch::Tensor q = linear(w, "wq", x, spec.bias), k = linear(w, "wk", x, spec.bias),
                      v = linear(w, "wv", x, spec.bias);
  // T[b,i,j,k] = (1/P) Σ_p Σ_r g_p[r]·q[b,i,r]·k[b,j,r]·v[b,k,r].
  torch::Tensor T = torch::einsum("pr,bir,bjr,bkr->bijk", {eff, q, k, v}) / static_cast<double>(P);
  T = T.contiguous();
  if (spec.causal) {
    auto Ta = T.accessor<double, 4>();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t j = 0; j < N; ++j)
          for (std::int64_t kk = 0; kk < N; ++kk)
            if (j > i || kk > i) Ta[b][i][j][kk] = 0.0;
  }
  requireShape(weight(w, "wo.weight"), {spec.sizes.F, N * N}, "wo.weight");
  Reference ref;
  ref.y = linear(w, "wo", T.reshape({B, N, N * N}), spec.bias);  // vec row-major: j·N + k
  const torch::Tensor gbar = eff.mean(0);
  ref.maps = torch::einsum("r,bir,bjr->bij", {gbar, q, k});
  return ref;
}

Reference referenceDimwise(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& xIn) {
  checkInput(spec, xIn);
  const torch::Tensor x = f64(xIn);
  const std::int64_t B = x.size(0), N = x.size(1);
  const int d = spec.sizes.R, c = spec.sizes.c;
  const torch::Tensor& W = weight(w, "conv");
  requireShape(W, {c, d, d}, "conv");
  const torch::Tensor q = linear(w, "wq", x, spec.bias), k = linear(w, "wk", x, spec.bias),
                      v = linear(w, "wv", x, spec.bias);
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  Reference ref;
  ref.maps = torch::zeros({B, d, d}, torch::kDouble);
  torch::Tensor kr = torch::zeros({B, N, d, d}, torch::kDouble);  // Khatri-Rao tensor, N×d×d per batch
  auto mapa = ref.maps.accessor<double, 3>();
  auto kra = kr.accessor<double, 4>();
  // f = row softmax (over the last axis m) of S·scale.
  auto rowSoftmax = [d](const std::vector<double>& S, double scale) {
    std::vector<double> f(S.size());
    for (int j = 0; j < d; ++j) {
      std::vector<double> row(static_cast<size_t>(d));
      for (int m = 0; m < d; ++m) row[static_cast<size_t>(m)] = S[static_cast<size_t>(j * d + m)] * scale;
      softmax(row);
      for (int m = 0; m < d; ++m) f[static_cast<size_t>(j * d + m)] = row[static_cast<size_t>(m)];
    }
    return f;
  };
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<double> S(static_cast<size_t>(d) * d, 0.0);
    std::vector<double> f;
    if (!spec.causal) {
      for (std::int64_t n = 0; n < N; ++n)
        for (int j = 0; j < d; ++j)
          for (int m = 0; m < d; ++m) S[static_cast<size_t>(j * d + m)] += qa[b][n][j] * ka[b][n][m];
      f = rowSoftmax(S, 1.0 / std::sqrt(static_cast<double>(N)));
    }
    for (std::int64_t i = 0; i < N; ++i) {
      if (spec.causal) {
        // Prefix sum S⁽ⁱ⁾ = Σ_{n≤i} q_nᵀ k_n, scaled by 1/√i with i 1-based.
        for (int j = 0; j < d; ++j)
          for (int m = 0; m < d; ++m) S[static_cast<size_t>(j * d + m)] += qa[b][i][j] * ka[b][i][m];
        f = rowSoftmax(S, 1.0 / std::sqrt(static_cast<double>(i + 1)));
      }
      for (int j = 0; j < d; ++j)
        for (int m = 0; m < d; ++m) kra[b][i][j][m] = f[static_cast<size_t>(j * d + m)] * va[b][i][m];
    }
    for (int j = 0; j < d; ++j)
      for (int m = 0; m < d; ++m) mapa[b][j][m] = f.empty() ? 0.0 : f[static_cast<size_t>(j * d + m)];
  }
  // O_c[b,i,j] = Σ_m W_c[j,m]·KR[b,i,j,m]; filters concatenated filter-major: column c·d + j.
  const torch::Tensor O = torch::einsum("cjm,bijm->bicj", {W, kr}).reshape({B, N, c * d});
  requireShape(weight(w, "wo.weight"), {spec.sizes.F, c * d}, "wo.weight");
  ref.y = linear(w, "wo", O.contiguous(), spec.bias);
  return ref;
}

Reference referenceForward(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x,
                           const Rotary& rotary) {
  if (rotary.on && !rotaryProblem(spec).empty())
    throw std::invalid_argument("reference: rotary positions on " + describe(spec) + ": " + rotaryProblem(spec));
  switch (spec.variant) {
    case spec::Variant::Mhsa:
    case spec::Variant::FixedHead:
    case spec::Variant::Tp: return referenceHeaded(spec, w, x, rotary);
    case spec::Variant::Thsa: return referenceThsa(spec, w, x, rotary);
    case spec::Variant::ThsaLinear: return referenceThsaLinear(spec, w, x);
    case spec::Variant::Multilinear: return referenceMultilinear(spec, w, x);
    case spec::Variant::Dimwise: return referenceDimwise(spec, w, x);
  }
  throw std::runtime_error("reference: unknown variant");
}

spec::AttentionSpec makeSpec(spec::Variant variant, const spec::Sizes& sizes, bool causal, bool bias) {
  spec::AttentionSpec s;
  s.variant = variant;
  s.sizes = sizes;
  s.causal = causal;
  s.bias = bias;
  s.dropout = 0.0;
  return s;
}

spec::AttentionSpec thsaPresetSpec(spec::Variant variant, const std::string& preset, int F, int H, int D,
                                   bool causal, bool bias) {
  spec::Sizes z;
  z.F = F;
  z.H = H;
  z.D = D;
  z.R = H * D;
  spec::AttentionSpec s = makeSpec(variant, z, causal, bias);
  s.core = spec::makeCorePreset(preset, H, D);
  return s;
}

namespace {
std::vector<double> randomValues(std::mt19937& rng, size_t n, double mean, double sd) {
  std::normal_distribution<double> dist(mean, sd);
  std::vector<double> v(n);
  for (double& e : v) e = dist(rng);
  return v;
}
}  // namespace

spec::CoreSpec customKroneckerCore(spec::FactorKind a, spec::FactorKind b, int H, int D, double scale,
                                   bool rank1Trainable, std::uint32_t seed) {
  std::mt19937 rng(seed);
  spec::CoreSpec c;
  c.preset = "custom";
  c.structure = spec::CoreStructure::Kronecker;
  c.scale = scale;
  c.a.kind = a;
  c.b.kind = b;
  auto fill = [&rng](spec::CoreFactor& f, int n) {
    if (f.kind == spec::FactorKind::Fixed || f.kind == spec::FactorKind::Trainable)
      f.values = randomValues(rng, static_cast<size_t>(n) * n, 0.2, 0.8);
    else if (f.kind == spec::FactorKind::Rank1)
      f.values = randomValues(rng, 2 * static_cast<size_t>(n), 0.5, 0.7);
  };
  fill(c.a, H);
  fill(c.b, D);
  c.b.trainable_rank1 = rank1Trainable;
  return c;
}

spec::CoreSpec customDenseCore(int R, std::uint32_t seed) {
  std::mt19937 rng(seed);
  spec::CoreSpec c;
  c.preset = "custom";
  c.structure = spec::CoreStructure::Dense;
  c.a = {};
  c.b = {};
  c.dense_values = randomValues(rng, static_cast<size_t>(R) * R, 0.3, 1.0);
  std::bernoulli_distribution coin(0.5);
  c.trainable_mask.resize(static_cast<size_t>(R) * R);
  for (auto& m : c.trainable_mask) m = coin(rng) ? 1 : 0;
  if (c.trainable_mask.size() >= 2) {
    c.trainable_mask[0] = 1;
    c.trainable_mask[1] = 0;
  }
  return c;
}

std::vector<Case> coveredCases(bool causal, bool bias, std::uint32_t seed, bool allKronecker) {
  using spec::FactorKind;
  using spec::Variant;
  std::mt19937 rng(seed);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<Case> out;
  auto add = [&](spec::AttentionSpec s, int seq) { out.push_back({std::move(s), pick(1, 2), seq}); };

  {  // mhsa with the prevalent heuristic D = F/H
    spec::Sizes z;
    z.H = pick(1, 3);
    z.D = pick(1, 4);
    z.F = z.H * z.D;
    add(makeSpec(Variant::Mhsa, z, causal, bias), pick(1, 6));
  }
  for (Variant v : {Variant::FixedHead, Variant::Tp}) {  // head size free of F and H
    spec::Sizes z;
    z.H = pick(1, 3);
    z.D = pick(1, 5);
    z.F = pick(2, 12);
    add(makeSpec(v, z, causal, bias), pick(1, 6));
  }
  for (Variant v : {Variant::Thsa, Variant::ThsaLinear}) {
    for (const std::string& preset : spec::corePresetNames()) {
      const bool unitHeads = preset == "heads_only" || preset == "trainable_heads_only";
      const int H = unitHeads ? pick(2, 4) : pick(1, 3);
      const int D = unitHeads ? 1 : pick(2, 3);
      add(thsaPresetSpec(v, preset, pick(2, 12), H, D, causal, bias), pick(1, 6));
    }
    struct Kinds {
      FactorKind a, b;
      bool rank1Trainable;
    };
    std::vector<Kinds> kinds;
    if (allKronecker) {
      for (FactorKind a : {FactorKind::Identity, FactorKind::Ones, FactorKind::Fixed, FactorKind::Trainable}) {
        for (FactorKind b : {FactorKind::Ones, FactorKind::Identity, FactorKind::Fixed, FactorKind::Trainable})
          kinds.push_back({a, b, false});
        kinds.push_back({a, FactorKind::Rank1, true});
        kinds.push_back({a, FactorKind::Rank1, false});
      }
    } else {
      kinds = {{FactorKind::Identity, FactorKind::Rank1, true}, {FactorKind::Ones, FactorKind::Identity, false},
               {FactorKind::Fixed, FactorKind::Fixed, false},   {FactorKind::Trainable, FactorKind::Trainable, false},
               {FactorKind::Trainable, FactorKind::Rank1, false}, {FactorKind::Fixed, FactorKind::Ones, false}};
    }
    for (const Kinds& k : kinds) {
      const int H = pick(2, 3), D = pick(2, 3);
      spec::AttentionSpec s = thsaPresetSpec(v, "mhsa", pick(2, 12), H, D, causal, bias);
      s.core = customKroneckerCore(k.a, k.b, H, D, 0.5 + 0.25 * pick(0, 4), k.rank1Trainable,
                                   static_cast<std::uint32_t>(rng()));
      add(std::move(s), pick(1, 6));
    }
    {  // dense core with a partial trainable mask; R need not factor as H·D
      spec::Sizes z;
      z.R = pick(2, 6);
      z.H = 1;
      z.D = z.R;
      z.F = pick(2, 12);
      spec::AttentionSpec s = makeSpec(v, z, causal, bias);
      s.core = customDenseCore(z.R, static_cast<std::uint32_t>(rng()));
      add(std::move(s), pick(1, 6));
    }
  }
  for (bool coreSoftmax : {true, false}) {
    spec::Sizes z;
    z.F = pick(2, 10);
    z.R = pick(1, 5);
    z.P = pick(1, 3);
    z.seq_len = pick(1, 5);
    spec::AttentionSpec s = makeSpec(Variant::Multilinear, z, causal, bias);
    s.core_softmax = coreSoftmax;
    add(std::move(s), z.seq_len);
  }
  {
    spec::Sizes z;
    z.F = pick(2, 10);
    z.R = pick(1, 5);
    z.c = pick(1, 3);
    add(makeSpec(Variant::Dimwise, z, causal, bias), pick(1, 6));
  }
  {  // the slots of section 8 on mhsa and fixed_head (shared K/V groups, talking heads, gates);
     // last, so that the cases above keep their random sizes
    struct SlotCase {
      Variant variant;
      int kvGroups;  // 1: MQA; 2: G = H/2 groups of two heads; 0: a K/V head per query head
      bool pre, post;
      spec::Gate gate;
    };
    for (const SlotCase& sc : {SlotCase{Variant::Mhsa, 1, false, false, spec::Gate::None},  // MQA: G = 1
                               SlotCase{Variant::Mhsa, 2, false, false, spec::Gate::None},
                               SlotCase{Variant::Mhsa, 0, true, false, spec::Gate::None},
                               SlotCase{Variant::Mhsa, 0, false, true, spec::Gate::None},
                               SlotCase{Variant::FixedHead, 0, true, true, spec::Gate::Elementwise},
                               SlotCase{Variant::Mhsa, 0, false, false, spec::Gate::Headwise},
                               SlotCase{Variant::FixedHead, 2, true, true, spec::Gate::Headwise}}) {
      spec::Sizes z;
      z.H = sc.kvGroups > 0 ? 2 * pick(1, 2) : pick(1, 3);
      z.D = pick(1, 3);
      z.F = pick(2, 10);
      spec::AttentionSpec s = makeSpec(sc.variant, z, causal, bias);
      s.slots.kv_groups = sc.kvGroups == 1 ? 1 : sc.kvGroups == 2 ? z.H / 2 : 0;
      s.slots.pre_mix = sc.pre;
      s.slots.post_mix = sc.post;
      s.slots.gate = sc.gate;
      add(std::move(s), pick(1, 6));
    }
    // Differential attention (§8.5), with a key/value head per head, shared by pairs of heads
    // (H/G = 2: both maps of a head read one key map) and by all heads (G = 1, H = 3).
    for (int shared : {0, 2, 1}) {
      spec::Sizes z;
      z.H = shared == 2 ? 2 * pick(1, 2) : shared == 1 ? 3 : pick(1, 3);
      z.D = pick(1, 3);
      z.F = pick(2, 10);
      spec::AttentionSpec s = makeSpec(shared == 2 ? Variant::FixedHead : Variant::Mhsa, z, causal, bias);
      s.slots.differential = true;
      s.slots.kv_groups = shared == 2 ? z.H / 2 : shared;
      add(std::move(s), pick(1, 6));
    }
    if (!bias) {  // multi-head latent attention (§8.6; it has no biases): both orders, q_rank and rope_dim 0 or not
      struct LatentCase {
        Variant variant;
        bool queryLatent;
        int ropePairs;
        spec::LatentOrder order;
      };
      for (const LatentCase& lc : {LatentCase{Variant::Mhsa, false, 1, spec::LatentOrder::Naive},
                                   LatentCase{Variant::Mhsa, true, 2, spec::LatentOrder::Absorbed},
                                   LatentCase{Variant::FixedHead, false, 0, spec::LatentOrder::Absorbed},
                                   LatentCase{Variant::FixedHead, true, 1, spec::LatentOrder::Naive}}) {
        spec::Sizes z;
        z.H = pick(1, 3);
        z.D = pick(1, 3);
        z.F = pick(2, 10);
        spec::AttentionSpec s = makeSpec(lc.variant, z, causal, bias);
        s.slots.latent.kv_rank = pick(1, 4);
        s.slots.latent.q_rank = lc.queryLatent ? pick(1, 4) : 0;
        s.slots.latent.rope_dim = 2 * lc.ropePairs;
        s.slots.latent.order = lc.order;
        add(std::move(s), pick(1, 6));
      }
    }
    if (!bias) {  // tensor product attention (§8.7; no biases): contextual or constant head factors,
                  // contextual or constant feature factors, factorised or MHSA queries (T6_kvonly), the
                  // rotary on or off, T6's head norm on or off
      struct TpaCase {
        Variant variant;
        bool factorisedQuery, contextual, rope;
        bool contextualB = true, groupNorm = false;
      };
      for (const TpaCase& tc : {TpaCase{Variant::Mhsa, true, true, true}, TpaCase{Variant::Mhsa, false, true, true},
                                TpaCase{Variant::FixedHead, true, false, true},
                                TpaCase{Variant::FixedHead, true, true, false},
                                TpaCase{Variant::Mhsa, false, false, false},
                                TpaCase{Variant::Mhsa, true, true, true, false, true},
                                TpaCase{Variant::FixedHead, false, true, false, false, false},
                                TpaCase{Variant::Mhsa, true, false, true, true, true}}) {
        spec::Sizes z;
        z.H = pick(1, 3);
        z.D = 2 * pick(1, 2);
        z.F = pick(2, 10);
        spec::AttentionSpec s = makeSpec(tc.variant, z, causal, bias);
        s.slots.tpa.q_rank = tc.factorisedQuery ? pick(1, 3) : 0;
        s.slots.tpa.k_rank = pick(1, 3);
        s.slots.tpa.v_rank = pick(1, 3);
        s.slots.tpa.contextual_a = tc.contextual;
        s.slots.tpa.contextual_b = tc.contextualB;
        s.slots.tpa.group_norm = tc.groupNorm;
        s.slots.tpa.rope = tc.rope;
        s.slots.tpa.rope_base = tc.rope ? 10000.0 : s.slots.tpa.rope_base;
        if (tc.variant == Variant::FixedHead && tc.rope) s.slots.tpa.rope_base = 50.0;  // another base
        add(std::move(s), pick(1, 6));
      }
    }
    {  // multi-token attention (§8.8): each pad, the convolutions before and/or after the softmax,
       // the head convolution in groups or over all heads, post_mix, shared K/V, norm and gates
      struct MtaCase {
        Variant variant;
        int cq, ck, postCq, postCk;
        spec::MtaPad pad;
        int headGroup;  // -1: H (all heads); 0: none; else that size (H = 2·headGroup)
        bool pre, post, shared, norm, rescale;
        spec::Gate gate;
      };
      using P = spec::MtaPad;
      using spec::Gate;
      for (const MtaCase& mc : {MtaCase{Variant::Mhsa, 2, 3, 0, 0, P::Both, 0, false, false, false, false, false, Gate::None},
                                MtaCase{Variant::Mhsa, 3, 3, 2, 1, P::Both, -1, true, false, false, true, false, Gate::Headwise},
                                MtaCase{Variant::FixedHead, 2, 2, 0, 0, P::Left, 2, true, false, true, true, true, Gate::Elementwise},
                                MtaCase{Variant::Mhsa, 0, 0, 3, 2, P::Right, 0, false, true, false, false, false, Gate::None},
                                MtaCase{Variant::Mhsa, 1, 1, 1, 3, P::Both, 1, false, false, false, false, false, Gate::Headwise},
                                MtaCase{Variant::Mhsa, 0, 0, 0, 0, P::Both, 0, false, false, false, true, false, Gate::Headwise}}) {
        spec::Sizes z;
        z.H = mc.headGroup > 1 || mc.shared ? 4 : pick(1, 3);
        z.D = pick(1, 3);
        z.F = pick(2, 10);
        spec::AttentionSpec s = makeSpec(mc.variant, z, causal, bias);
        spec::Mta& m = s.slots.mta;
        m.q_kernel = mc.cq;
        m.k_kernel = mc.ck;
        m.post_q_kernel = mc.postCq;
        m.post_k_kernel = mc.postCk;
        m.pad = mc.pad;
        m.head_group = mc.headGroup < 0 ? z.H : mc.headGroup;
        m.group_norm = mc.norm;
        m.norm_rescale = mc.rescale;
        m.out_gate = mc.gate;
        s.slots.pre_mix = mc.pre;
        s.slots.post_mix = mc.post;
        s.slots.kv_groups = mc.shared ? z.H / 2 : 0;
        add(std::move(s), pick(2, 7));
      }
    }
    {  // collaborative attention (§8.9): D̃ below, at and above H·D (not a multiple of H), with and
       // without the content bias, each mixing init, with a gate
      struct CollabCase {
        Variant variant;
        int keyDim;  // -1: H·D; else that width
        bool contentBias;
        spec::MixingInit init;
        spec::Gate gate;
      };
      using spec::Gate;
      using spec::MixingInit;
      for (const CollabCase& cc : {CollabCase{Variant::Mhsa, 3, true, MixingInit::Normal, Gate::None},
                                   CollabCase{Variant::Mhsa, -1, false, MixingInit::Concatenate, Gate::None},
                                   CollabCase{Variant::FixedHead, 7, true, MixingInit::Concatenate, Gate::Headwise},
                                   CollabCase{Variant::Mhsa, 5, false, MixingInit::Normal, Gate::Elementwise}}) {
        spec::Sizes z;
        z.H = pick(1, 3);
        z.D = pick(1, 3);
        z.F = pick(2, 10);
        spec::AttentionSpec s = makeSpec(cc.variant, z, causal, bias);
        s.slots.collaborative.key_dim = cc.keyDim < 0 ? z.H * z.D : cc.keyDim;
        s.slots.collaborative.content_bias = cc.contentBias;
        s.slots.collaborative.init = cc.init;
        s.slots.gate = cc.gate;
        add(std::move(s), pick(1, 6));
      }
    }
    {  // drawn slot values (spec/slot_values.h; last, so that the cases above keep their sizes):
       // talking heads starting from drawn mixings with frozen entries, and MTA from drawn kernels
       // with a partly frozen post mixing
      const auto drawnMixing = [](int H, int salt) {
        std::vector<double> v(static_cast<size_t>(H) * H);
        std::vector<unsigned char> m(v.size());
        for (int i = 0; i < H; ++i)
          for (int j = 0; j < H; ++j) {
            v[size_t(i) * H + j] = (i == j ? 0.9 : 0.0) + 0.2 * ((i + 2 * j + salt) % 3 - 1);
            m[size_t(i) * H + j] = (i + j + salt) % 2 == 0;
          }
        return spec::HeadMixing{v, m};
      };
      for (int which = 0; which < 2; ++which) {
        spec::Sizes z;
        z.H = 2 + which;
        z.D = pick(1, 3);
        z.F = pick(2, 10);
        spec::AttentionSpec s = makeSpec(which ? Variant::FixedHead : Variant::Mhsa, z, causal, bias);
        s.slots.pre_mix = s.slots.post_mix = true;
        s.slots.pre_mixing = drawnMixing(z.H, 1);
        s.slots.pre_mixing.trainable_mask.assign(s.slots.pre_mixing.values.size(), 1);  // drawn, all trained
        s.slots.post_mixing = drawnMixing(z.H, which);
        if (which) {  // with MTA's convolutions drawn too
          spec::Mta& m = s.slots.mta;
          m.q_kernel = 2, m.k_kernel = 3, m.post_q_kernel = 2, m.post_k_kernel = 2;
          m.pad = spec::MtaPad::Left;  // an even key kernel needs a one-sided pad
          for (int i = 0; i < z.H * 2 * 3; ++i) m.kernel_values.push_back(0.1 * ((i * 7) % 5) - 0.1);
          for (int i = 0; i < z.H * 2 * 2; ++i) m.post_kernel_values.push_back(0.25 * ((i * 3) % 4));
        }
        add(std::move(s), pick(2, 6));
      }
    }
  }
  return out;
}

std::vector<Case> casesOf(spec::Variant variant, bool causal, bool bias, std::uint32_t seed, bool allKronecker) {
  std::vector<Case> out;
  for (Case& c : coveredCases(causal, bias, seed, allKronecker))
    if (c.spec.variant == variant) out.push_back(std::move(c));
  return out;
}

spec::AttentionSpec headed(int F, int H, int D, bool causal, bool bias) {
  spec::Sizes z;
  z.F = F;
  z.H = H;
  z.D = D;
  return makeSpec(spec::Variant::Mhsa, z, causal, bias);
}

std::map<std::string, torch::Tensor> parametersOf(AttentionModuleImpl& module) {
  std::map<std::string, torch::Tensor> out;
  for (auto& p : module.named_parameters(true)) out[p.key()] = p.value().detach().clone();
  return out;
}

void assign(AttentionModuleImpl& target, const std::map<std::string, torch::Tensor>& weights) {
  torch::NoGradGuard noGrad;
  auto params = target.named_parameters(true);
  for (const auto& [name, value] : weights) {
    if (!params.contains(name)) {
      ADD_FAILURE() << "assign: the module has no parameter " << name;
      continue;
    }
    params[name].copy_(value);
  }
}

void assignShared(AttentionModuleImpl& target, const std::map<std::string, torch::Tensor>& weights) {
  std::map<std::string, torch::Tensor> shared;
  const auto params = target.named_parameters(true);
  for (const auto& [name, value] : weights)
    if (params.contains(name)) shared[name] = value;
  assign(target, shared);
}

torch::Tensor run(AttentionModuleImpl& module, const torch::Tensor& x) {
  torch::NoGradGuard noGrad;
  return module.forward(x, {}).y;
}

LayerRun runWithGradients(const spec::AttentionSpec& spec, const torch::Tensor& x, bool fused, std::uint64_t seed) {
  setFusedAttentionEnabled(fused);
  LayerRun out;
  try {
    AttentionModule m = buildDouble(spec, seed);
    perturbParameters(*m, seed + 1);
    ForwardOptions o;
    o.with_maps = true;
    const auto r = m->forward(x, o);
    r.y.pow(2).sum().backward();
    out.y = r.y.detach();
    out.maps = r.maps.detach();
    for (auto& p : m->named_parameters(true)) out.grads[p.key()] = p.value().grad().clone();
  } catch (...) {
    setFusedAttentionEnabled(true);
    throw;
  }
  setFusedAttentionEnabled(true);
  return out;
}

void expectSameRun(const LayerRun& got, const LayerRun& want, double tolerance, const std::string& what) {
  expectClose(got.y, want.y, tolerance, "y, " + what);
  expectClose(got.maps, want.maps, tolerance, "maps, " + what);
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (const auto& [name, g] : want.grads) {
    ASSERT_TRUE(got.grads.count(name)) << name << ", " << what;
    expectClose(got.grads.at(name), g, 10 * tolerance, "d" + name + ", " + what);
  }
}

AttentionModule buildDouble(const spec::AttentionSpec& spec, std::uint64_t seed) {
  torch::manual_seed(seed);
  AttentionModule m = makeAttentionModule(spec);
  m->to(torch::kDouble);
  m->eval();
  return m;
}

void perturbParameters(AttentionModuleImpl& module, std::uint64_t seed, double amplitude) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(seed);
  for (torch::Tensor& p : module.parameters()) p.add_(torch::randn_like(p) * amplitude);
}

std::vector<std::pair<std::string, torch::Tensor>> weightPairs(const AttentionModuleImpl& module,
                                                               bool includeDerived) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const NamedWeight& nw : module.namedWeights())
    if (includeDerived || !nw.derived()) out.emplace_back(nw.name, nw.value.detach().clone());
  return out;
}

torch::Tensor randomInput(int B, int N, int F, std::uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({B, N, F}, torch::kDouble);
}

double relativeError(const torch::Tensor& a, const torch::Tensor& b) {
  if (!a.defined() || !b.defined() || a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
  if (a.numel() == 0) return 0.0;
  const torch::Tensor ad = f64(a), bd = f64(b);
  const double diff = (ad - bd).abs().max().item<double>();
  const double scale = std::max(1.0, bd.abs().max().item<double>());
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff / scale;
}

std::string firstLine(const std::string& message) { return message.substr(0, message.find('\n')); }

double centralDifference(torch::Tensor flat, int64_t i, double h, const std::function<double()>& loss) {
  torch::NoGradGuard noGrad;
  const double v = flat[i].item<double>();
  flat[i] = v + h;
  const double plus = loss();
  flat[i] = v - h;
  const double minus = loss();
  flat[i] = v;
  return (plus - minus) / (2 * h);
}

void expectClose(const torch::Tensor& actual, const torch::Tensor& expected, double tol, const std::string& what) {
  const double err = relativeError(actual, expected);
  if (err <= tol) return;
  std::ostringstream os;
  os << what << ": relative error " << err << " > " << tol;
  if (!actual.defined() || !expected.defined()) {
    os << " (actual " << (actual.defined() ? "defined" : "undefined") << ", expected "
       << (expected.defined() ? "defined" : "undefined") << ")";
  } else {
    os << " (actual shape " << actual.sizes() << ", expected " << expected.sizes() << ")";
    if (actual.sizes() == expected.sizes() && actual.numel() > 0) {
      const torch::Tensor diff = (f64(actual) - f64(expected)).abs().reshape({-1});
      const std::int64_t at = diff.argmax().item<std::int64_t>();
      os << "; worst flat index " << at << ": actual " << f64(actual).reshape({-1})[at].item<double>()
         << ", expected " << f64(expected).reshape({-1})[at].item<double>();
    }
  }
  ADD_FAILURE() << os.str();
}

std::string describe(const spec::AttentionSpec& spec) {
  std::ostringstream os;
  os << spec::toString(spec.variant);
  if (spec.core) {
    const spec::CoreSpec& c = *spec.core;
    os << " core=" << c.preset << "/" << spec::toString(c.structure);
    if (c.structure == spec::CoreStructure::Kronecker)
      os << "(s=" << c.scale << ", A=" << spec::toString(c.a.kind) << ", B=" << spec::toString(c.b.kind)
         << (c.b.kind == spec::FactorKind::Rank1 ? (c.b.trainable_rank1 ? " trainable" : " fixed") : "") << ")";
  }
  const spec::Sizes& z = spec.sizes;
  os << (spec.causal ? " causal" : " non-causal") << (spec.bias ? " bias" : " no-bias") << " F=" << z.F
     << " H=" << z.H << " D=" << z.D << " R=" << z.R << " P=" << z.P << " c=" << z.c << " seq_len=" << z.seq_len;
  if (spec.variant == spec::Variant::Multilinear) os << (spec.core_softmax ? " core_softmax" : " raw_cores");
  return os.str();
}

}  // namespace tensorscope::model_core::test
