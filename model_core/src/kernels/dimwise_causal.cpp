// The causal dimension-wise attention kernel (see dimwise_causal.h for the scheme).
#include "kernels/dimwise_causal.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/line_aligned.h"
#include "kernels/partials.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core::kernels {
static_assert(kDimwiseRowBlock == kDimwisePanel, "the forward walks one panel of rows at a time");
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
    constexpr int64_t P = kDimwisePanel;
    // The panel's buffers on 64-byte boundaries, so that each column of the panel is one cache line.
    constexpr int64_t pad = 64 / sizeof(T);
    // Each buffer starts a further cache line past a whole number of lines, so that the state's
    // column m and the filters' column m (8 KiB apart at d = 128) never share their low 12 address
    // bits: a load whose address matches an earlier store's in those bits waits for it (4K aliasing).
    LineVector<T> buffer(size_t((2 + C) * d * P + P + 8 * pad));
    T* next = buffer.data();
    auto take = [&](int64_t n) {
      T* at = next;
      next += (n + pad - 1) / pad * pad + pad;
      return at;
    };
    T *S = take(P * d), *Wp = take(C * d * P), *scratch = take(d * P), *rowMax = take(P);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / split.groups, grp = item % split.groups;
      const int64_t j0 = split.firstBlock(grp), j1 = split.endBlock(grp);
      // One panel of rows at a time over the whole sequence: its state and filter columns stay in L1.
      for (int64_t jb = j0; jb < j1; jb += kDimwiseRowBlock) {
        const int64_t nr = std::min(kDimwiseRowBlock, j1 - jb);
        // The panel's state (zero), maxima and filters, transposed: column m of rows [jb, jb + nr)
        // in one place, the lanes past nr zero.
        std::fill(S, S + P * d, T(0));
        std::fill(rowMax, rowMax + P, T(0));
        std::fill(Wp, Wp + C * d * P, T(0));
        for (int64_t c = 0; c < C; ++c)
          for (int64_t r = 0; r < nr; ++r) {
            const T* w = g.filterRow(c, jb + r);
            for (int64_t m = 0; m < d; ++m) Wp[(c * d + m) * P + r] = w[m];
          }
        DimwisePanel<T> fr;  // see row_ops.h
        fr.rows = nr, fr.d = d, fr.c = C, fr.S = S, fr.w = Wp, fr.ldo = d;
        fr.scratch = scratch, fr.rowMax = rowMax;
        for (int64_t i = 0; i < N; ++i) {
          fr.t = positionScale<T>(i);
          fr.q = g.q(b, i) + jb, fr.k = g.k(b, i), fr.v = g.v(b, i);
          fr.out = O + (b * N + i) * C * d + jb;
          fr.lse = lse + (b * N + i) * d + jb;
          ops.dimwiseForwardPanel(fr);  // S⁽ⁱ⁾ = S⁽ⁱ⁻¹⁾ + q_iᵀk_i on the rows, their softmax, O and lse
          if ((i + 1) % K == 0 && i + 1 < N) {
            const int64_t s = (i + 1) / K - 1;
            for (int64_t r = 0; r < nr; ++r) {
              T* row = checkpoints + g.checkpointAt(b, s, jb + r);
              for (int64_t m = 0; m < d; ++m) row[m] = S[m * P + r];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void dimwiseCausalBackward(const DimwiseCausalProblem<T>& p, const T* lse, const T* checkpoints, const T* O,
                           const T* dO, T* dqkv, T* dW, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t B = p.B, N = p.N, d = p.d, C = p.c, K = p.segment, ld = g.ld(), segments = p.segments();
  constexpr int64_t Q = kDimwiseChunk;
  const int64_t nch = (d + Q - 1) / Q, dp = nch * Q;  // chunks of a row, its padded length
  const ItemGroups split(B, d, par.threads);
  const int64_t groups = split.groups;
  // ∂k and ∂v of a sequence sum over its rows: straight into dqkv with one group, else one slab
  // [N, 2d] (∂k, ∂v) per group, added in group order below.
  std::vector<T> slabs(groups > 1 ? size_t(groups * B * N * 2 * d) : 0, T(0));
  std::fill(dqkv, dqkv + B * N * ld, T(0));
  RangeSums<T> dWRanges;
  par.run(B * groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    const int64_t rowsMax = std::min(kDimwiseRowBlock, d), Ks = std::min(K, N);
    // Chunk strides of the tiles, one cache line more than the positions they hold: power-of-two
    // strides put a row's chunks in one L1 set (and alias their loads with the stores 4 KiB apart).
    const int64_t ldp = Ks * Q + Q, ldvk = Ks * 2 * Q + Q;
    // The tiles (row_ops.h, DimwiseBackwardRun): chunks of Q values, zero past d, a segment's
    // positions side by side inside a chunk. P: block row r's t·p of the segment's position l at
    // (r·nch + i)·ldp + l·Q; VK and dVK: the segment's position l's v and k (∂v·t and ∂k) at
    // i·ldvk + 2l·Q; Wt: every filter row, row j's chunk i of W_c at ((j·nch + i)·C + c)·Q; dWt: ∂W
    // in that layout; D: the suffix accumulators of the item's rows, row j at j·dp.
    std::vector<T> S(size_t(rowsMax * d));
    LineVector<T> P(size_t(rowsMax * nch * ldp), T(0)), D(size_t(d * dp)), VK(size_t(nch * ldvk), T(0)), dVK(VK.size());
    LineVector<T> Wt(size_t(d * nch * C * Q), T(0));
    LineVector<T> dWt(Wt.size(), T(0));  // accumulated even when dW is not asked (a scratch target)
    for (int64_t j = 0; j < d; ++j)
      for (int64_t c = 0; c < C; ++c) {
        const T* w = g.filterRow(c, j);
        for (int64_t m0 = 0; m0 < d; m0 += Q)
          std::copy(w + m0, w + std::min(d, m0 + Q), Wt.data() + ((j * nch + m0 / Q) * C + c) * Q);
      }
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      const int64_t j0 = split.firstBlock(grp), j1 = split.endBlock(grp);
      if (j0 >= j1) continue;  // a group past the last row (its slab stays zero)
      const auto [kv, ldkv] = split.target(slabs, dqkv, b, grp, B, N, d, d);  // row n: ∂k at 0, ∂v at d
      std::fill(D.begin() + j0 * dp, D.begin() + j1 * dp, T(0));
      for (int64_t s = segments - 1; s >= 0; --s) {
        const int64_t i0 = s * K, i1 = std::min(N, i0 + K);
        // The segment's v and k in their tile, its ∂v and ∂k tile cleared.
        for (int64_t i = i0; i < i1; ++i) {
          const T *v = g.v(b, i), *k = g.k(b, i);
          for (int64_t m0 = 0; m0 < d; m0 += Q) {
            T* at = VK.data() + (m0 / Q) * ldvk + (i - i0) * 2 * Q;
            const int64_t w = std::min(Q, d - m0);
            std::copy(v + m0, v + m0 + w, at);
            std::copy(k + m0, k + m0 + w, at + Q);
          }
        }
        std::fill(dVK.begin(), dVK.end(), T(0));
        // One block of rows at a time (its probabilities over the segment, K·rows·d, stay in L2).
        for (int64_t jb = j0; jb < j1; jb += kDimwiseRowBlock) {
          const int64_t nr = std::min(kDimwiseRowBlock, j1 - jb);
          // The segment's probabilities, recomputed forward from its checkpoint in the forward's
          // order, each scaled by its position's t (ln t folded into the log-sum-exp: the runs save a
          // product).
          if (s == 0) std::fill(S.begin(), S.begin() + nr * d, T(0));
          else
            for (int64_t r = 0; r < nr; ++r)
              std::copy(checkpoints + g.checkpointAt(b, s - 1, jb + r),
                        checkpoints + g.checkpointAt(b, s - 1, jb + r) + d, S.begin() + r * d);
          for (int64_t i = i0; i < i1; ++i) {
            const T t = positionScale<T>(i), logT = std::log(t);
            const T *q = g.q(b, i), *k = g.k(b, i);
            const T* l = lse + (b * N + i) * d;
            for (int64_t r = 0; r < nr; ++r)
              ops.dimwiseRowRecompute(S.data() + r * d, k, q[jb + r], d, t, l[jb + r] - logT,
                                      P.data() + r * nch * ldp + (i - i0) * Q, ldp);
          }
          // The segment's positions from the last to the first, in runs of up to kDimwiseRunMax
          // positions per row (row_ops.h: D and the row's ∂W stay in registers over a run).
          for (int64_t e = i1; e > i0;) {
            const int64_t st = std::max(i0, e - kDimwiseRunMax), len = e - st;
            T scales[kDimwiseRunMax];
            for (int64_t l = 0; l < len; ++l) scales[l] = positionScale<T>(st + l);
            DimwiseBackwardRun<T> run;  // see row_ops.h
            run.chunks = nch, run.c = C, run.len = len, run.ldp = ldp;
            run.vk = VK.data() + (st - i0) * 2 * Q, run.dvk = dVK.data() + (st - i0) * 2 * Q, run.ldvk = ldvk;
            run.ldq = ld, run.t = scales, run.ldgi = C * d, run.ldgc = d, run.lddq = ld;
            for (int64_t r = 0; r < nr; ++r) {
              const int64_t j = jb + r;
              run.p = P.data() + r * nch * ldp + (st - i0) * Q;
              run.q = g.q(b, st) + j;
              run.g = dO + (b * N + st) * C * d + j;
              run.o = O + (b * N + st) * C * d + j;
              run.w = Wt.data() + j * nch * C * Q, run.dW = dWt.data() + j * nch * C * Q;
              run.D = D.data() + j * dp;
              run.dq = dqkv + (b * N + st) * ld + j;
              ops.dimwiseBackwardRun(run);  // ∂v·t, ∂W, D += ∂S⁽ⁱ⁾[j,:], ∂k and ∂q of the run
            }
            e = st;
          }
        }
        // The segment's ∂k and ∂v (the item's rows summed in increasing order) into the target, ∂v
        // unscaled by 1/t.
        for (int64_t i = i0; i < i1; ++i) {
          T* row = kv + i * ldkv;
          const T inverse = std::sqrt(T(i + 1));  // 1/t_i
          for (int64_t m0 = 0; m0 < d; m0 += Q) {
            const T* at = dVK.data() + (m0 / Q) * ldvk + (i - i0) * 2 * Q;
            for (int64_t m = m0; m < std::min(d, m0 + Q); ++m) {
              row[m] += at[Q + m - m0];
              row[d + m] += at[m - m0] * inverse;
            }
          }
        }
      }
    }
    if (dW) {
      std::vector<T> dWloc(size_t(C * d * d));
      for (int64_t j = 0; j < d; ++j)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t m0 = 0; m0 < d; m0 += Q) {
            const T* at = dWt.data() + ((j * nch + m0 / Q) * C + c) * Q;
            std::copy(at, at + std::min(Q, d - m0), dWloc.data() + (c * d + j) * d + m0);
          }
      dWRanges.add(begin, std::move(dWloc));
    }
  });
  if (groups > 1) addSlabs(slabs, groups, B, N, 2 * d, dqkv, ld, d);
  if (dW) dWRanges.sumInto(dW, size_t(C * d * d));
}

template void dimwiseCausalForward<float>(const DimwiseCausalProblem<float>&, float*, float*, float*, const Parallel&);
template void dimwiseCausalForward<double>(const DimwiseCausalProblem<double>&, double*, double*, double*,
                                           const Parallel&);
template void dimwiseCausalBackward<float>(const DimwiseCausalProblem<float>&, const float*, const float*,
                                           const float*, const float*, float*, float*, const Parallel&);
template void dimwiseCausalBackward<double>(const DimwiseCausalProblem<double>&, const double*, const double*,
                                            const double*, const double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
