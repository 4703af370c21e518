// Numerical backends of the low-rank bottleneck lab and the stable-rank lab (model_core/labs.h).
// Everything is computed in float64 on the CPU. The attention maps of the stable-rank lab are
// computed here from the layer contract (docs/attention-variants.md §1, §3) rather than through
// the attention modules: model_core_analysis does not link model_core_attention.

#include <ATen/ATen.h>
#include <torch/optim/lbfgs.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/input_checks.h"
#include "io/host_tensor_torch.h"
#include "model_core/analysis.h"
#include "model_core/labs.h"
#include "spec/validation.h"

namespace tensorscope::model_core {
namespace {

using analysis_detail::checkFinite;
using analysis_detail::Layout;

const at::TensorOptions kF64 = at::TensorOptions().dtype(at::kDouble);

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// Standard normals from std::mt19937_64 by Box-Muller (portable: no std::normal_distribution).
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : rng_(seed) {}
  double uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double next() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform01();  // (0, 1]
    const double u2 = uniform01();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 6.283185307179586476925286766559 * u2;  // 2 pi
    spare_ = radius * std::sin(angle);
    hasSpare_ = true;
    return radius * std::cos(angle);
  }
  at::Tensor normals(std::int64_t rows, std::int64_t cols) {
    at::Tensor t = at::empty({rows, cols}, kF64);
    double* p = t.data_ptr<double>();
    for (std::int64_t i = 0; i < rows * cols; ++i) p[i] = next();
    return t;
  }
  /// U(-a, a) entries.
  at::Tensor uniforms(std::int64_t rows, std::int64_t cols, double a) {
    at::Tensor t = at::empty({rows, cols}, kF64);
    double* p = t.data_ptr<double>();
    for (std::int64_t i = 0; i < rows * cols; ++i) p[i] = a * (2.0 * uniform01() - 1.0);
    return t;
  }

 private:
  std::mt19937_64 rng_;
  bool hasSpare_ = false;
  double spare_ = 0.0;
};

/// The float32 row-major values of an [rows, cols] HostTensor as a float64 tensor.
at::Tensor matrixOf(const HostTensor& h, int rows, int cols) {
  at::Tensor t = at::empty({rows, cols}, kF64);
  std::transform(h.values.begin(), h.values.end(), t.data_ptr<double>(), [](float v) { return double(v); });
  return t;
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Throws unless h is a 2-D [rows, cols] tensor holding rows*cols values.
void checkMatrix(const std::string& fn, const std::string& what, const HostTensor& h) {
  if (h.shape.size() != 2)
    throw std::invalid_argument(fn + ": " + what + " must be a 2-D matrix; got shape " + shapeText(h.shape));
  const auto count = h.shape[0] * h.shape[1];
  if (h.shape[0] < 1 || h.shape[1] < 1)
    throw std::invalid_argument(fn + ": " + what + " must not be empty; got shape " + shapeText(h.shape));
  if (static_cast<std::int64_t>(h.values.size()) != count)
    throw std::invalid_argument(fn + ": " + what + " has shape " + shapeText(h.shape) + " (" + std::to_string(count) +
                                " entries) but holds " + std::to_string(h.values.size()) + " values");
}

// ---------------------------------------------------------------------------------------------
// Bottleneck fit
// ---------------------------------------------------------------------------------------------

/// Factors of L = U·Vᵀ and the mean row KL(P || softmax(L)) they reach.
struct Fit {
  at::Tensor U, V;
  double kl = 0.0;
  int iterations = 0;
};

/// Mean over rows of KL(P_i || softmax(L)_i); P > 0 everywhere.
double meanKl(const at::Tensor& P, const at::Tensor& logP, const at::Tensor& L) {
  // >= 0 in exact arithmetic; clamped against rounding at an exact fit.
  return std::max(0.0, (P * (logP - at::log_softmax(L, 1))).sum().item<double>() / static_cast<double>(P.size(0)));
}

/// L-BFGS (strong-Wolfe) on the mean row KL over U and V, gradients written by hand:
/// d/dL = (softmax(L) - P) / N, d/dU = G·V, d/dV = Gᵀ·U. Returns the better of start and end.
Fit refine(const at::Tensor& P, const at::Tensor& logP, at::Tensor U0, at::Tensor V0, int maxIterations) {
  Fit start{U0, V0, meanKl(P, logP, U0.mm(V0.t())), 0};
  if (maxIterations == 0) return start;
  const double n = static_cast<double>(P.size(0));
  at::Tensor U = U0.clone().set_requires_grad(true);
  at::Tensor V = V0.clone().set_requires_grad(true);
  torch::optim::LBFGS opt(std::vector<at::Tensor>{U, V}, torch::optim::LBFGSOptions(1.0)
                                                             .max_iter(maxIterations)
                                                             .max_eval(maxIterations * 5 / 4 + 1)
                                                             .tolerance_grad(1e-14)
                                                             .tolerance_change(1e-20)
                                                             .history_size(20)
                                                             .line_search_fn("strong_wolfe"));
  auto closure = [&]() -> at::Tensor {
    at::NoGradGuard noGrad;
    const at::Tensor logS = at::log_softmax(U.mm(V.t()), 1);
    const at::Tensor G = (logS.exp() - P) / n;
    U.mutable_grad() = G.mm(V);
    V.mutable_grad() = G.t().mm(U);
    return (P * (logP - logS)).sum() / n;
  };
  opt.step(closure);
  int iterations = 0;
  for (const auto& [key, state] : opt.state())
    iterations = static_cast<int>(static_cast<const torch::optim::LBFGSParamState&>(*state).n_iter());
  Fit end{U.detach().clone(), V.detach().clone(), 0.0, iterations};
  end.kl = meanKl(P, logP, end.U.mm(end.V.t()));
  return std::isfinite(end.kl) && end.kl <= start.kl ? end : start;
}

void checkTarget(const std::string& fn, const HostTensor& target) {
  checkMatrix(fn, "the target P", target);
  const auto n = target.shape[0];
  if (target.shape[1] != n)
    throw std::invalid_argument(fn + ": the target P must be square (N x N, queries x keys); got shape " +
                                shapeText(target.shape));
  if (n > kLabMaxTokens)
    throw std::invalid_argument(fn + ": the target P is " + std::to_string(n) + " x " + std::to_string(n) +
                                "; the lab takes N <= " + std::to_string(kLabMaxTokens));
  checkFinite(fn, Layout::Matrix, target.values.data(), n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (!(target.values[i * n + j] > 0.0f))
        throw std::invalid_argument(fn + ": entry (" + std::to_string(i) + ", " + std::to_string(j) + ") of the target P is " +
                                    num(target.values[i * n + j]) +
                                    "; every entry must be > 0 (softmax never gives 0; a causal map has zeros "
                                    "above its diagonal and cannot be a target)");
  for (std::int64_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) sum += target.values[i * n + j];
    if (std::abs(sum - 1.0) > 1e-6)
      throw std::invalid_argument(fn + ": row " + std::to_string(i) + " of the target P sums to " + num(sum) +
                                  "; every row must sum to 1 within 1e-6 (rows are queries, softmax over keys; "
                                  "transpose the paper's column-stochastic P)");
  }
}

}  // namespace

HostTensor randomAttentionPattern(int n, std::uint64_t seed, double concentration) {
  const std::string fn = "randomAttentionPattern";
  if (n < 1 || n > kLabMaxTokens)
    throw std::invalid_argument(fn + ": n must be in [1, " + std::to_string(kLabMaxTokens) + "]; got " + std::to_string(n));
  if (!(concentration >= 0.0 && concentration <= 5.0))
    throw std::invalid_argument(fn + ": concentration must be in [0, 5]; got " + num(concentration));
  Normal normal(seed);
  const at::Tensor G = normal.normals(n, n);
  at::Tensor P = at::softmax(G * concentration, 1);
  P = P / P.sum(1, true);
  return toHost(P);
}

BottleneckCurve fitLowRankBottleneck(const HostTensor& target, const std::vector<int>& head_sizes,
                                     const BottleneckOptions& options) {
  const std::string fn = "fitLowRankBottleneck";
  checkTarget(fn, target);
  if (head_sizes.empty()) throw std::invalid_argument(fn + ": head_sizes is empty; give at least one head size d_p");
  for (std::size_t i = 0; i < head_sizes.size(); ++i)
    if (head_sizes[i] < 1 || head_sizes[i] > kLabMaxHeadSize)
      throw std::invalid_argument(fn + ": head size d_p = " + std::to_string(head_sizes[i]) + " (entry " + std::to_string(i) +
                                  ") must be in [1, " + std::to_string(kLabMaxHeadSize) + "]");
  if (options.max_iterations < 0 || options.max_iterations > 100000)
    throw std::invalid_argument(fn + ": max_iterations must be in [0, 100000]; got " + std::to_string(options.max_iterations));

  const int n = target.rows();
  at::Tensor P = matrixOf(target, n, n);
  P = P / P.sum(1, true);  // exactly stochastic in float64
  const at::Tensor logP = P.log();
  // The theorem's D_0 chosen per query so each row of the logits has mean 0: same softmax.
  const at::Tensor centred = logP - logP.mean(1, true);
  const auto [Us, S, Vh] = at::linalg_svd(centred, false);

  BottleneckCurve curve;
  curve.n = n;
  const double* s = S.data_ptr<double>();
  curve.log_p_singular_values.assign(s, s + S.numel());
  // The target arrives as float32: rounding each P_ij moves log P_ij by up to 2^-24, which puts
  // singular values up to ~2^-24·√N·few into any spectrum. Those do not count.
  const double tol = std::max(1e-10 * s[0], std::ldexp(std::sqrt(static_cast<double>(n)), -22));
  for (std::int64_t i = 0; i < S.numel(); ++i)
    if (s[i] > tol) ++curve.required_rank;

  auto finish = [&](BottleneckPoint& pt, const at::Tensor& L) {
    const at::Tensor fit = at::softmax(L, 1);
    const at::Tensor diff = fit - P;
    pt.error = diff.abs().max().item<double>();
    pt.rms_error = diff.norm().item<double>() / n;
    pt.kl = meanKl(P, logP, L);
    pt.fitted = toHost(fit);
  };
  auto errorOf = [&](const at::Tensor& U, const at::Tensor& V) {
    return (at::softmax(U.mm(V.t()), 1) - P).abs().max().item<double>();
  };

  std::vector<int> sizes = head_sizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::map<int, BottleneckPoint> byHeadSize;
  Fit previous;  // the best factors of the previous (smaller) refined head size
  int previousSize = 0;
  for (const int d : sizes) {
    BottleneckPoint pt;
    pt.head_size = d;
    pt.theorem_regime = d >= n;
    if (options.init == BottleneckInit::Svd && d >= curve.required_rank) {
      // Exact: L = the centred log P itself (d >= N: U = centred log P, V = I), or its SVD cut
      // at the required rank (which loses nothing: the rest of the spectrum is rounding).
      pt.exact_construction = true;
      const at::Tensor L = d >= n ? centred
                                  : Us.narrow(1, 0, curve.required_rank).mul(S.narrow(0, 0, curve.required_rank))
                                        .mm(Vh.narrow(0, 0, curve.required_rank));
      finish(pt, L);
      pt.initial_error = pt.error;
      byHeadSize[d] = pt;
      continue;
    }
    std::vector<std::pair<at::Tensor, at::Tensor>> starts;
    if (options.init == BottleneckInit::Svd) {
      const int k = std::min(d, n);
      const at::Tensor root = S.narrow(0, 0, k).sqrt();
      starts.emplace_back(Us.narrow(1, 0, k) * root, Vh.narrow(0, 0, k).t() * root);
      if (previous.U.defined() && previousSize < d) {
        // Previous solution plus new columns: zero in U (L unchanged, so the start is exactly the
        // previous optimum), small in V along the next right singular vectors (so U's new columns
        // receive gradient).
        const int extra = d - previousSize;
        at::Tensor dirs = at::zeros({n, extra}, kF64);
        const int avail = std::max(0, std::min(extra, n - previousSize));
        if (avail > 0) dirs.narrow(1, 0, avail).copy_(Vh.narrow(0, previousSize, avail).t());
        starts.emplace_back(at::cat({previous.U, at::zeros({n, extra}, kF64)}, 1),
                            at::cat({previous.V, 1e-3 * dirs}, 1));
      }
    } else {
      Normal normal(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(d));
      starts.emplace_back(0.1 * normal.normals(n, d), 0.1 * normal.normals(n, d));
    }
    Fit best;
    double bestInitialError = 0.0;
    for (const auto& [U0, V0] : starts) {
      Fit f = refine(P, logP, U0, V0, options.max_iterations);
      if (!best.U.defined() || f.kl < best.kl) {
        best = f;
        bestInitialError = errorOf(U0, V0);
      }
    }
    finish(pt, best.U.mm(best.V.t()));
    pt.initial_error = bestInitialError;
    pt.iterations = best.iterations;
    previous = best;
    previousSize = d;
    byHeadSize[d] = pt;
  }
  for (const int d : head_sizes) curve.points.push_back(byHeadSize.at(d));
  return curve;
}

// ---------------------------------------------------------------------------------------------
// Stable-rank lab
// ---------------------------------------------------------------------------------------------

std::vector<double> coreWithStableRankValues(int r, double stable_rank, std::uint64_t seed, SpectrumShape shape) {
  const std::string fn = "coreWithStableRank";
  if (r < 1 || r > 1024) throw std::invalid_argument(fn + ": r must be in [1, 1024]; got " + std::to_string(r));
  if (!(stable_rank >= 1.0 && stable_rank <= static_cast<double>(r)))
    throw std::invalid_argument(fn + ": the stable rank of an " + std::to_string(r) + " x " + std::to_string(r) +
                                " core lies in [1, " + std::to_string(r) + "]; got " + num(stable_rank));
  std::vector<double> sigma(static_cast<std::size_t>(r), 0.0);
  sigma[0] = 1.0;
  if (r > 1 && shape == SpectrumShape::Flat) {
    const double t = std::sqrt((stable_rank - 1.0) / (r - 1.0));
    for (int i = 1; i < r; ++i) sigma[i] = t;
  } else if (r > 1) {
    auto sumSquares = [r](double rho) {  // sum_{i<r} rho^(2i), increasing in rho on [0, 1]
      double total = 0.0, term = 1.0;
      for (int i = 0; i < r; ++i, term *= rho * rho) total += term;
      return total;
    };
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 200 && lo < hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      if (mid <= lo || mid >= hi) break;
      (sumSquares(mid) < stable_rank ? lo : hi) = mid;
    }
    const double rho = std::abs(sumSquares(lo) - stable_rank) <= std::abs(sumSquares(hi) - stable_rank) ? lo : hi;
    for (int i = 1; i < r; ++i) sigma[i] = sigma[i - 1] * rho;
  }
  Normal normal(seed);
  auto orthogonal = [&]() {  // Haar: QR of a Gaussian matrix, column signs fixed by diag(R)
    const auto [Q, Rm] = at::linalg_qr(normal.normals(r, r));
    at::Tensor signs = Rm.diagonal().sign();
    signs = at::where(signs == 0, at::ones_like(signs), signs);
    return Q * signs;
  };
  const at::Tensor U = orthogonal();
  const at::Tensor V = orthogonal();
  const at::Tensor C = (U * at::tensor(sigma, kF64)).mm(V.t()).contiguous();
  return std::vector<double>(C.data_ptr<double>(), C.data_ptr<double>() + C.numel());
}

HostTensor coreWithStableRank(int r, double stable_rank, std::uint64_t seed, SpectrumShape shape) {
  const auto values = coreWithStableRankValues(r, stable_rank, seed, shape);
  return toHost(at::tensor(values, kF64).view({r, r}));
}

StableRankLab stableRankLab(const StableRankLabInput& in) {
  const std::string fn = "stableRankLab";
  auto range = [&](const char* name, long long v, long long lo, long long hi) {
    if (v < lo || v > hi)
      throw std::invalid_argument(fn + ": " + name + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "]; got " + std::to_string(v));
  };
  range("F", in.F, 1, 1024);
  range("H", in.H, 1, 256);
  range("D", in.D, 1, 256);
  range("R = H*D", static_cast<long long>(in.H) * in.D, 1, 256);
  range("N", in.N, 1, kLabMaxTokens);
  const int R = in.H * in.D, N = in.N, F = in.F, D = in.D;
  if (static_cast<long long>(R) * N * N > (1LL << 24))
    throw std::invalid_argument(fn + ": R*N*N = " + std::to_string(static_cast<long long>(R) * N * N) +
                                " map entries; at most 2^24 (16,777,216)");
  if (!(std::isfinite(in.qk_gain) && in.qk_gain > 0.0))
    throw std::invalid_argument(fn + ": qk_gain must be a finite number > 0; got " + num(in.qk_gain));
  checkMatrix(fn, "the core C", in.core);
  if (in.core.shape[0] != R || in.core.shape[1] != R)
    throw std::invalid_argument(fn + ": the core C must be R x R = " + std::to_string(R) + " x " + std::to_string(R) +
                                " (R = H*D); got " + shapeText(in.core.shape));
  checkFinite(fn, Layout::Matrix, in.core.values.data(), R, R);

  StableRankLab out;
  out.R = R;
  const CoreAnalysis a = analyzeCore(in.core.values, R, R);
  if (a.spectral_norm == 0.0) throw std::invalid_argument(fn + ": the core C is all zeros; it has no heads");
  out.stable_rank = a.stable_rank;
  out.singular_values = a.singular_values;
  const int Hp = std::max(1, static_cast<int>(std::lround(a.stable_rank)));
  out.mhsa_heads = Hp;
  out.mhsa_head_size = D;
  const long long widthP = static_cast<long long>(Hp) * D;
  if (widthP * F > (1LL << 22))
    throw std::invalid_argument(fn + ": the comparison MHSA has " + std::to_string(Hp) + " heads of size " + std::to_string(D) +
                                " (width " + std::to_string(widthP) + "); F * width = " + std::to_string(widthP * F) +
                                " weights exceed 2^22; lower F, D or the stable rank of C");

  // Specs: what the UI would train, and the source of the parameter counts.
  out.thsa_spec.variant = spec::Variant::Thsa;
  out.thsa_spec.sizes.F = F;
  out.thsa_spec.sizes.H = in.H;
  out.thsa_spec.sizes.D = D;
  out.thsa_spec.sizes.R = R;
  out.thsa_spec.sizes.seq_len = N;
  spec::CoreSpec core;
  core.preset = "custom";
  core.structure = spec::CoreStructure::Dense;
  core.dense_values.assign(in.core.values.begin(), in.core.values.end());
  core.trainable_mask.assign(static_cast<std::size_t>(R) * R, 1);
  out.thsa_spec.core = core;
  out.mhsa_spec.variant = spec::Variant::Mhsa;
  out.mhsa_spec.sizes.F = F;
  out.mhsa_spec.sizes.H = Hp;
  out.mhsa_spec.sizes.D = D;
  out.mhsa_spec.sizes.R = static_cast<int>(widthP);
  out.mhsa_spec.sizes.seq_len = N;
  for (const auto* s : {&out.thsa_spec, &out.mhsa_spec})
    if (const auto issues = spec::validate(*s); !issues.empty())
      throw std::invalid_argument(fn + ": invalid " + std::string(spec::toString(s->variant)) + " layer:\n" +
                                  spec::formatIssues(issues));
  out.thsa_cost = spec::estimateCost(out.thsa_spec, 1, N);
  out.mhsa_cost = spec::estimateCost(out.mhsa_spec, 1, N);
  out.thsa_parameters = out.thsa_cost.parameters;
  out.mhsa_parameters = out.mhsa_cost.parameters;

  // Random input and shared q/k weights (nn.Linear's init, times the gain).
  Normal normal(in.seed);
  const at::Tensor x = normal.normals(N, F);
  const std::int64_t rows = std::max<std::int64_t>(R, widthP);
  const double bound = 1.0 / std::sqrt(static_cast<double>(F));
  const at::Tensor Wq = normal.uniforms(rows, F, bound) * in.qk_gain;
  const at::Tensor Wk = normal.uniforms(rows, F, bound) * in.qk_gain;
  out.input = toHost(x.view({1, N, F}));
  out.wq = toHost(Wq.narrow(0, 0, R));
  out.wk = toHost(Wk.narrow(0, 0, R));
  out.mhsa_wq = toHost(Wq.narrow(0, 0, widthP));
  out.mhsa_wk = toHost(Wk.narrow(0, 0, widthP));

  // THSA (§3): logits[r, n, m] = sum_s C[r, s] q[n, s] k[m, s] / sqrt(R), softmax over m.
  {
    const at::Tensor C = matrixOf(in.core, R, R);
    const at::Tensor q = x.mm(Wq.narrow(0, 0, R).t());  // [N, R]
    const at::Tensor k = x.mm(Wk.narrow(0, 0, R).t());
    const at::Tensor qc = C.unsqueeze(1) * q.unsqueeze(0);  // [R, N, R]: (r, n, s)
    out.thsa_maps = toHost(at::softmax(qc.matmul(k.t()) / std::sqrt(static_cast<double>(R)), -1));
  }
  // MHSA (§1): head h uses rows h*D .. h*D+D-1; logits q_h·k_hᵀ / sqrt(D).
  {
    const at::Tensor q = x.mm(Wq.narrow(0, 0, widthP).t()).view({N, Hp, D}).permute({1, 0, 2});  // [H', N, D]
    const at::Tensor k = x.mm(Wk.narrow(0, 0, widthP).t()).view({N, Hp, D}).permute({1, 0, 2});
    out.mhsa_maps = toHost(at::softmax(q.matmul(k.transpose(1, 2)) / std::sqrt(static_cast<double>(D)), -1));
  }
  return out;
}

}  // namespace tensorscope::model_core
