#pragma once
/// Numerical backends of two teaching labs (torch-free header; LibTorch only in
/// model_core/src/analysis/labs.cpp):
///
///  * the low-rank bottleneck lab (docs/attention-variants.md §2, Theorem 1 of "Low-Rank Bottleneck
///    in Multi-head Attention Models"): how closely can ONE head of size d_p reproduce a target
///    attention pattern P, as a function of d_p;
///  * the stable-rank lab (§3, Tuformer): a core C of a chosen stable rank, the per-channel maps of
///    a dense THSA layer with that core beside the per-head maps of an MHSA layer with
///    round(stable rank) heads, their spectra and parameter counts.
///
/// Convention for attention patterns: Tensorscope shows maps as the layers compute them, rows =
/// queries, columns = keys, softmax over keys, so every ROW sums to 1 (row-stochastic). The paper
/// writes X as d x n and applies the softmax column-wise, so its P is COLUMN-stochastic: the
/// paper's P is the transpose of the matrix these functions take and return. Transpose a
/// column-stochastic P before passing it in.
///
/// Every function validates its input and throws std::invalid_argument with a message that starts
/// with the function's name and says what is wrong. Randomness comes only from std::mt19937_64
/// seeded with the given seed (never a global generator): same seed and input, same result.

#include <cstdint>
#include <vector>

#include "model_core/host_tensor.h"
#include "spec/attention_spec.h"
#include "spec/cost_model.h"

namespace tensorscope::model_core {

// ---------------------------------------------------------------------------------------------
// Low-rank bottleneck lab
// ---------------------------------------------------------------------------------------------

/// The largest pattern size N the lab accepts.
inline constexpr int kLabMaxTokens = 256;
/// The largest head size d_p the bottleneck lab accepts.
inline constexpr int kLabMaxHeadSize = 4096;

/// A random, strictly positive, row-stochastic N x N pattern (float32 [n, n]):
/// P = softmax over each row of (concentration * G), G i.i.d. standard normal (Box-Muller over
/// std::mt19937_64(seed)). concentration = 0 gives the uniform pattern; larger values give peakier
/// rows. Needs 1 <= n <= kLabMaxTokens and 0 <= concentration <= 5 (beyond 5 the smallest
/// entries leave the float32 range and the pattern would no longer be strictly positive).
/// Transpose it for the paper's column-stochastic P.
HostTensor randomAttentionPattern(int n, std::uint64_t seed, double concentration = 1.0);

/// Where the bottleneck fit starts.
enum class BottleneckInit {
  /// The default. If d_p >= the required rank (below), the exact construction; otherwise the
  /// best of two refined starts: the truncated SVD of the row-centred log P, and the previous
  /// (smaller) head size's solution padded with one new column.
  Svd,
  /// Small random factors (seeded) refined by the optimiser, never the exact construction or the
  /// SVD: a check that the optimiser itself reaches a representable P.
  Random,
};

struct BottleneckOptions {
  /// L-BFGS iterations (strong-Wolfe line search, float64) per start; 0 keeps the start. <= 100000.
  int max_iterations = 300;
  BottleneckInit init = BottleneckInit::Svd;
  std::uint64_t seed = 0;  ///< seeds the Random init only
};

/// The best single head of one size d_p found for the target.
struct BottleneckPoint {
  int head_size = 0;  ///< d_p
  /// PRIMARY error: max over entries |P_fit - P| (P renormalised per row in float64; the
  /// fitted map's worst entry, in probability units).
  double error = 0.0;
  double rms_error = 0.0;  ///< ||P_fit - P||_F / N (root mean square over the N^2 entries)
  /// The optimised objective: mean over query rows of KL(P_i || P_fit,i), in nats. Non-increasing
  /// in d_p by construction with BottleneckInit::Svd (each d_p may start from the previous one).
  double kl = 0.0;
  double initial_error = 0.0;  ///< `error` of the start that won, before refinement
  int iterations = 0;          ///< L-BFGS iterations of the start that won (0: no refinement)
  /// True when P was reproduced by construction (d_p >= required rank, init Svd): the theorem's
  /// L = log(P) shifted per query (its D_0), written as U·Vᵀ, without optimisation.
  bool exact_construction = false;
  /// True when d_p >= N: the regime where Theorem 1 guarantees an exact fit for every P.
  bool theorem_regime = false;
  HostTensor fitted;  ///< P_fit = softmax_rows(U·Vᵀ), float32 [N, N], rows sum to 1
};

struct BottleneckCurve {
  int n = 0;
  /// Rank of the row-centred log P = the smallest d_p whose head reproduces P exactly. Always
  /// <= N - 1 (centring removes the all-ones direction), N - 1 for a generic P, k for a P that
  /// is the softmax of rank-k logits. Singular values below max(1e-10·sigma_1, 2^-22·√N) do not
  /// count: the target's float32 rounding alone moves log P that much.
  int required_rank = 0;
  std::vector<double> log_p_singular_values;  ///< of the row-centred log P, descending (N values)
  std::vector<BottleneckPoint> points;        ///< one per requested head size, in the given order
};

/// For each d_p in `head_sizes`, the best error of a single head softmax(X·Wq·Wkᵀ·Xᵀ / √d_p)
/// (Wq, Wk: F x d_p) against the row-stochastic target P (N x N, float32).
///
/// Reduction (Theorem 1's proof): for an input X (N x F) of rank N (F >= N), the logits
/// L = X·Wq·Wkᵀ·Xᵀ/√d_p range over EVERY N x N matrix of rank <= d_p (X is onto; the scale is
/// absorbed into Wq). The row softmax is invariant to adding a constant to each row (the paper's
/// free diagonal D_0). So the lab fits L = U·Vᵀ, U, V in R^{N x d_p}, minimising the mean row
/// KL(P || softmax(L)) with L-BFGS in float64, starting from the truncated SVD of the row-centred
/// log P (BottleneckInit). Input X and the weights never need to be formed.
///
/// Threshold: centring each row of log P gives logits of rank <= N - 1 with the same softmax, so
/// every positive P is reached exactly from d_p = required_rank (N - 1 for a generic P), one
/// below the theorem's sufficient d_p >= N; below the required rank the error stays > 0. The
/// theorem's converse (d < n fails) concerns X with fewer than n dimensions, not this setting.
///
/// Requirements: target is [N, N] with 1 <= N <= kLabMaxTokens, finite, every entry > 0 (a
/// causal map has zeros: not a valid target), every row sums to 1 within 1e-6; head_sizes
/// non-empty, each in [1, kLabMaxHeadSize] (any order; repeats allowed). Cost: per d_p below the
/// required rank, up to 2 x max_iterations L-BFGS iterations of O(N^2 d_p).
BottleneckCurve fitLowRankBottleneck(const HostTensor& target, const std::vector<int>& head_sizes,
                                     const BottleneckOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Stable-rank lab
// ---------------------------------------------------------------------------------------------

/// How coreWithStableRank spreads the singular values (sigma_1 = 1 always).
enum class SpectrumShape {
  Flat,       ///< sigma_2 = ... = sigma_R = sqrt((s - 1) / (R - 1)): one dominant direction
  Geometric,  ///< sigma_i = rho^(i-1), rho in [0, 1] solved (bisection) so that sum rho^(2(i-1)) = s
};

/// Row-major R x R core C = U·diag(sigma)·Vᵀ in float64 with U, V Haar-random orthogonal (QR of a
/// seeded Gaussian matrix, signs fixed by diag(R)) and sigma as `shape` says, so its stable rank
/// ||C||_F^2 / ||C||_2^2 = sum sigma_i^2 equals `stable_rank` (to ~1e-12). Needs 1 <= r <= 1024
/// and stable_rank in [1, r] (stable_rank = 1: rank one; = r: C is orthogonal).
std::vector<double> coreWithStableRankValues(int r, double stable_rank, std::uint64_t seed,
                                             SpectrumShape shape = SpectrumShape::Flat);

/// The same core as float32 [r, r]. Rounding to float32 moves the stable rank by ~1e-7
/// relative; use coreWithStableRankValues where the exact value matters.
HostTensor coreWithStableRank(int r, double stable_rank, std::uint64_t seed,
                              SpectrumShape shape = SpectrumShape::Flat);

struct StableRankLabInput {
  int F = 16;  ///< model width, 1..1024
  int H = 4;   ///< heads of the THSA layer's R = H·D channels
  int D = 4;   ///< head (latent) size; R = H·D <= 256
  int N = 8;   ///< tokens, 1..kLabMaxTokens; R·N² <= 2^24
  HostTensor core;  ///< C, float32 [R, R], finite and not all zero (e.g. from coreWithStableRank)
  std::uint64_t seed = 0;
  /// Multiplies the q and k weights of both layers. 1 = the modules' own init (nn.Linear:
  /// U(-1/√F, 1/√F)), which gives nearly uniform maps; raise it (e.g. 4) to see sharper maps. > 0.
  double qk_gain = 1.0;
};

/// Both layers on the same random input [1, N, F] (x ~ N(0, 1)), computed in float64 from the
/// layer contract (docs/attention-variants.md §1, §3; no dropout, no bias, not causal):
///   THSA (dense core C, every entry trainable, as the `thsa` preset):
///     maps[r, n, m] = softmax_m( Σ_s C[r,s]·q[n,s]·k[m,s] / √R ),  q = x·Wqᵀ, k = x·Wkᵀ  (R x F);
///   MHSA with H' = max(1, round(stable rank of C)) heads of the SAME head size D (width H'·D,
///   which may differ from R):  maps[h, n, m] = softmax_m( q_h[n]·k_h[m] / √D ).
/// Shared weights: one seeded master Wq and Wk of max(R, H'·D) rows; THSA uses the first R rows,
/// MHSA the first H'·D (head h = rows h·D .. h·D+D-1, as the modules split heads). So with C =
/// the `mhsa` preset √H·(I_H ⊗ 1_D·1_Dᵀ) (stable rank H, so H' = H), the D channels of head h of
/// THSA show exactly MHSA's map h. The value and output weights do not affect the maps; they
/// count in the parameter counts only.
struct StableRankLab {
  int R = 0;
  int mhsa_heads = 0;      ///< H'
  int mhsa_head_size = 0;  ///< D
  double stable_rank = 0.0;             ///< of C (float32 entries, computed in float64)
  std::vector<double> singular_values;  ///< of C, descending (R values)
  HostTensor input;       ///< x [1, N, F]
  HostTensor wq, wk;      ///< THSA's [R, F] (q/k gain included)
  HostTensor mhsa_wq, mhsa_wk;  ///< MHSA's [H'·D, F] (the first H'·D rows of the masters)
  HostTensor thsa_maps;   ///< [R, N, N], rows sum to 1
  HostTensor mhsa_maps;   ///< [H', N, N], rows sum to 1
  spec::AttentionSpec thsa_spec;  ///< thsa, sizes F, H, D, R, seq_len N, dense custom core C
  spec::AttentionSpec mhsa_spec;  ///< mhsa, sizes F, H', D, seq_len N
  std::int64_t thsa_parameters = 0;  ///< spec::parameterCount(thsa_spec) = 4·F·R + R²
  std::int64_t mhsa_parameters = 0;  ///< spec::parameterCount(mhsa_spec) = 4·F·H'·D
  spec::LayerCost thsa_cost, mhsa_cost;  ///< spec::estimateCost(…, batch 1, N) of each
};

StableRankLab stableRankLab(const StableRankLabInput& input);

}  // namespace tensorscope::model_core
