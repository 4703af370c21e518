// The causal dimension-wise attention kernel (see dimwise_causal.h for the scheme).
#include "kernels/dimwise_causal.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/partials.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core::kernels {
namespace {

template <typename T>
struct Geometry {
  const DimwiseCausalProblem<T>& p;
  int64_t ld() const { return 3 * p.d; }
  const T* q(int64_t b, int64_t n) const { return p.qkv + (b * p.N + n) * ld(); }
  const T* k(int64_t b, int64_t n) const { return q(b, n) + p.d; }
  const T* v(int64_t b, int64_t n) const { return q(b, n) + 2 * p.d; }
  const T* filterRow(int64_t c, int64_t j) const { return p.W + (c * p.d + j) * p.d; }
  /// Checkpoint s (the state after positions [0, (s+1)·K)) of sequence b, row j.
  int64_t checkpointAt(int64_t b, int64_t s, int64_t j) const { return ((b * p.checkpoints() + s) * p.d + j) * p.d; }
};

/// 1/√(i+1): the causal scale of position i (0-based).
template <typename T>
T positionScale(int64_t i) {
  return T(1) / std::sqrt(T(i + 1));
}

}  // namespace

template <typename T>
void dimwiseCausalForward(const DimwiseCausalProblem<T>& p, T* O, T* lse, T* checkpoints, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t N = p.N, d = p.d, C = p.c, K = p.segment;
  const ItemGroups split(p.B, d, par.threads);  // rows of a sequence split only when B is small
  par.run(p.B * split.groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> S, u(static_cast<size_t>(d));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / split.groups, grp = item % split.groups;
      const int64_t j0 = split.firstBlock(grp), j1 = split.endBlock(grp), nr = j1 - j0;
      if (nr <= 0) continue;
      S.assign(size_t(nr * d), T(0));  // rows [j0, j1) of the running state
      for (int64_t i = 0; i < N; ++i) {
        const T t = positionScale<T>(i);
        const T *q = g.q(b, i), *k = g.k(b, i), *v = g.v(b, i);
        T* o = O + (b * N + i) * C * d;
        T* l = lse + (b * N + i) * d;
        for (int64_t r = 0; r < nr; ++r) {
          const int64_t j = j0 + r;
          // S⁽ⁱ⁾[j,:] = S⁽ⁱ⁻¹⁾[j,:] + q[i,j]·k_i, its softmax and p ⊙ v = u·inverseSum in two passes.
          T inverseSum;
          l[j] = ops.dimwiseRowForward(S.data() + r * d, k, q[j], v, d, t, u.data(), &inverseSum);
          for (int64_t c = 0; c < C; ++c) o[c * d + j] = ops.dot(d, g.filterRow(c, j), u.data()) * inverseSum;
        }
        if ((i + 1) % K == 0 && i + 1 < N) {
          const int64_t s = (i + 1) / K - 1;
          for (int64_t r = 0; r < nr; ++r)
            std::copy(S.begin() + r * d, S.begin() + (r + 1) * d, checkpoints + g.checkpointAt(b, s, j0 + r));
        }
      }
    }
  });
}

template <typename T>
void dimwiseCausalBackward(const DimwiseCausalProblem<T>& p, const T* lse, const T* checkpoints, const T* dO, T* dqkv,
                           T* dW, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t B = p.B, N = p.N, d = p.d, C = p.c, K = p.segment, ld = g.ld(), segments = p.segments();
  const ItemGroups split(B, d, par.threads);
  const int64_t groups = split.groups;
  // ∂k and ∂v of a sequence sum over its rows: straight into dqkv with one group, else one slab
  // [N, 2d] (∂k, ∂v) per group, added in group order below.
  std::vector<T> slabs(groups > 1 ? size_t(groups * B * N * 2 * d) : 0, T(0));
  std::fill(dqkv, dqkv + B * N * ld, T(0));
  RangeSums<T> dWRanges;
  par.run(B * groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> S, P, D, G(static_cast<size_t>(d));
    std::vector<T> dWloc(size_t(C * d * d), T(0));  // accumulated even when dW is not asked (a scratch target)
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      const int64_t j0 = split.firstBlock(grp), j1 = split.endBlock(grp), nr = j1 - j0;
      if (nr <= 0) continue;
      const auto [kv, ldkv] = split.target(slabs, dqkv, b, grp, B, N, d, d);  // row n: ∂k at 0, ∂v at d
      S.resize(size_t(nr * d));
      P.resize(size_t(std::min(K, N) * nr * d));
      D.assign(size_t(nr * d), T(0));
      for (int64_t s = segments - 1; s >= 0; --s) {
        const int64_t i0 = s * K, i1 = std::min(N, i0 + K);
        // The segment's probabilities, recomputed forward from its checkpoint in the forward's order.
        if (s == 0) std::fill(S.begin(), S.end(), T(0));
        else
          for (int64_t r = 0; r < nr; ++r)
            std::copy(checkpoints + g.checkpointAt(b, s - 1, j0 + r),
                      checkpoints + g.checkpointAt(b, s - 1, j0 + r) + d, S.begin() + r * d);
        for (int64_t i = i0; i < i1; ++i) {
          const T t = positionScale<T>(i);
          const T *q = g.q(b, i), *k = g.k(b, i);
          const T* l = lse + (b * N + i) * d;
          for (int64_t r = 0; r < nr; ++r)
            ops.dimwiseRowRecompute(S.data() + r * d, k, q[j0 + r], d, t, l[j0 + r], P.data() + ((i - i0) * nr + r) * d);
        }
        for (int64_t i = i1 - 1; i >= i0; --i) {
          const T t = positionScale<T>(i);
          const T *q = g.q(b, i), *k = g.k(b, i), *v = g.v(b, i);
          const T* go = dO + (b * N + i) * C * d;
          T* dk = kv + i * ldkv;
          T* dv = dk + d;
          T* dq = dqkv + (b * N + i) * ld;
          DimwiseRowBackward<T> rb;  // see row_ops.h
          rb.d = d, rb.c = C, rb.v = v, rb.k = k, rb.t = t;
          rb.ldw = d * d, rb.ldg = d, rb.dv = dv, rb.dk = dk, rb.scratch = G.data();
          for (int64_t r = 0; r < nr; ++r) {
            const int64_t j = j0 + r;
            rb.p = P.data() + ((i - i0) * nr + r) * d;
            rb.qj = q[j];
            rb.w = g.filterRow(0, j), rb.g = go + j;
            rb.dW = dWloc.data() + j * d;
            rb.D = D.data() + r * d;
            dq[j] = ops.dimwiseRowBackward(rb);  // ∂v, ∂W, D += ∂S⁽ⁱ⁾[j,:], ∂k; ⟨D, k_i⟩
          }
        }
      }
    }
    if (dW) dWRanges.add(begin, std::move(dWloc));
  });
  if (groups > 1) addSlabs(slabs, groups, B, N, 2 * d, dqkv, ld, d);
  if (dW) dWRanges.sumInto(dW, size_t(C * d * d));
}

template void dimwiseCausalForward<float>(const DimwiseCausalProblem<float>&, float*, float*, float*, const Parallel&);
template void dimwiseCausalForward<double>(const DimwiseCausalProblem<double>&, double*, double*, double*,
                                           const Parallel&);
template void dimwiseCausalBackward<float>(const DimwiseCausalProblem<float>&, const float*, const float*,
                                           const float*, float*, float*, const Parallel&);
template void dimwiseCausalBackward<double>(const DimwiseCausalProblem<double>&, const double*, const double*,
                                            const double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
