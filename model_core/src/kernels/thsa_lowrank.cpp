// The low-rank THSA kernel (see thsa_lowrank.h for the scheme).
#include "kernels/thsa_lowrank.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/columns.h"
#include "kernels/gemm.h"
#include "kernels/partials.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core::kernels {
namespace {

constexpr int64_t kRowBlock = 32;
constexpr int64_t kChunkValues = int64_t(1) << 16;  // logits per channel chunk (256 KB in float32)

template <typename T>
struct Geometry {
  const LowRankThsaProblem<T>& p;
  int64_t ld() const { return 3 * p.R; }
  const T* q(int64_t b) const { return p.qkv + b * p.N * ld(); }
  const T* k(int64_t b) const { return q(b) + p.R; }
  const T* v(int64_t b) const { return q(b) + 2 * p.R; }
  int64_t rowBlocks() const { return (p.N + kRowBlock - 1) / kRowBlock; }
  int64_t cols(int64_t i0, int64_t rows) const { return p.causal ? i0 + rows : p.N; }
  int64_t rowLength(int64_t n, int64_t cols) const { return p.causal ? n + 1 : cols; }
  /// Channels whose logits of one block fit the chunk.
  int64_t chunk() const { return std::clamp<int64_t>(kChunkValues / (kRowBlock * std::max<int64_t>(p.N, 1)), 1, p.R); }
};

template <typename T>
struct Scratch {
  std::vector<T> Vt;    // [rank, R] columns of V
  std::vector<T> qv;    // [rank, rows, R] q ⊙ V_j
  std::vector<T> G;     // [rank, rows·cols] base maps
  std::vector<T> dG;    // [rank, rows·cols]
  std::vector<T> L;     // [chunk, rows·cols] logits of a chunk of channels
  std::vector<T> vcol;  // [R, cols]
  std::vector<T> dvcol; // [R, cols]
  std::vector<T> dqv;   // [rows, R]
  Scratch(const Geometry<T>& g, bool backward) {
    const auto& p = g.p;
    const int64_t area = kRowBlock * p.N;
    Vt.resize(size_t(p.rank * p.R));
    for (int64_t r = 0; r < p.R; ++r)
      for (int64_t j = 0; j < p.rank; ++j) Vt[j * p.R + r] = p.V[r * p.rank + j];
    qv.resize(size_t(p.rank * kRowBlock * p.R));
    G.resize(size_t(p.rank * area));
    L.resize(size_t(g.chunk() * area));
    vcol.resize(size_t(p.R * p.N));
    if (backward) {
      dG.resize(size_t(p.rank * area));
      dvcol.resize(size_t(p.R * p.N));
      dqv.resize(size_t(kRowBlock * p.R));
    }
  }
};

/// q ⊙ V_j panels and the base maps G_j of rows [i0, i0 + rows) against keys [0, cols).
template <typename T>
void baseMaps(const Geometry<T>& g, int64_t b, int64_t i0, int64_t rows, int64_t cols, Scratch<T>& s) {
  const auto& p = g.p;
  const auto& ops = rowOps<T>();
  for (int64_t j = 0; j < p.rank; ++j) {
    T* panel = s.qv.data() + j * rows * p.R;
    for (int64_t i = 0; i < rows; ++i)
      ops.mul3(p.R, T(1), g.q(b) + (i0 + i) * g.ld(), s.Vt.data() + j * p.R, panel + i * p.R, false);
    gemm<T>(false, true, rows, cols, p.R, T(1), panel, p.R, g.k(b), g.ld(), T(0), s.G.data() + j * rows * cols, cols);
  }
}


}  // namespace

template <typename T>
void lowRankThsaForward(const LowRankThsaProblem<T>& p, T* omega, T* lse, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t N = p.N, R = p.R, rank = p.rank, blocks = g.rowBlocks(), chunk = g.chunk();
  par.run(p.B * blocks, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    Scratch<T> s(g, false);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, i0 = (item % blocks) * kRowBlock;
      const int64_t rows = std::min(kRowBlock, N - i0), cols = g.cols(i0, rows), area = rows * cols;
      baseMaps(g, b, i0, rows, cols, s);
      gatherColumns(g.v(b), g.ld(), cols, g.p.R, s.vcol.data());
      for (int64_t r0 = 0; r0 < R; r0 += chunk) {
        const int64_t cr = std::min(chunk, R - r0);
        gemm<T>(false, false, cr, area, rank, p.scale, p.U + r0 * rank, rank, s.G.data(), area, T(0), s.L.data(), area);
        for (int64_t c = 0; c < cr; ++c)
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t n = i0 + i, len = g.rowLength(n, cols);
            const T* row = s.L.data() + c * area + i * cols;
            T mn, mx, sum, dot;
            ops.minMax(row, len, &mn, &mx);
            ops.expSumDot(row, s.vcol.data() + (r0 + c) * cols, len, T(1), mx, &sum, &dot);
            omega[(b * N + n) * R + r0 + c] = dot / sum;
            lse[(b * R + r0 + c) * N + n] = mx + std::log(sum);
          }
      }
    }
  });
}

template <typename T>
void lowRankThsaBackward(const LowRankThsaProblem<T>& p, const T* omega, const T* lse, const T* dOmega, T* dqkv, T* dU,
                         T* dV, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t B = p.B, N = p.N, R = p.R, rank = p.rank, ld = g.ld(), blocks = g.rowBlocks(), chunk = g.chunk();
  const ItemGroups split(B, blocks, par.threads);  // see partials.h
  const int64_t groups = split.groups;
  std::fill(dqkv, dqkv + B * N * ld, T(0));
  std::vector<T> slabs(groups > 1 ? size_t(groups * B * N * 2 * R) : 0, T(0));  // dk, dv per group
  RangeSums<T> ranges;  // per range [dU (R·rank), dVt (rank·R)]
  par.run(B * groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    Scratch<T> s(g, true);
    std::vector<T> acc(size_t(2 * R * rank), T(0));
    T* dUloc = acc.data();
    T* dVt = dUloc + R * rank;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      const auto [dk, ldAcc] = split.target(slabs, dqkv, b, grp, B, N, R, R);  // dk, then dv at + R
      T* dv = dk + R;
      const T* dO = dOmega + b * N * R;
      const T* O = omega + b * N * R;
      for (int64_t blk = split.firstBlock(grp); blk < split.endBlock(grp); ++blk) {
        const int64_t i0 = blk * kRowBlock, rows = std::min(kRowBlock, N - i0), cols = g.cols(i0, rows);
        const int64_t area = rows * cols;
        baseMaps(g, b, i0, rows, cols, s);
        gatherColumns(g.v(b), g.ld(), cols, g.p.R, s.vcol.data());
        std::fill(s.dG.begin(), s.dG.begin() + rank * area, T(0));
        std::fill(s.dvcol.begin(), s.dvcol.begin() + R * cols, T(0));
        for (int64_t r0 = 0; r0 < R; r0 += chunk) {
          const int64_t cr = std::min(chunk, R - r0);
          T* L = s.L.data();
          gemm<T>(false, false, cr, area, rank, p.scale, p.U + r0 * rank, rank, s.G.data(), area, T(0), L, area);
          for (int64_t c = 0; c < cr; ++c)
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t n = i0 + i, len = g.rowLength(n, cols), r = r0 + c;
              T* row = L + c * area + i * cols;
              ops.softmaxColumnBackward(row, s.vcol.data() + r * cols, len, T(1), lse[(b * R + r) * N + n],
                                        dO[n * R + r], O[n * R + r], s.dvcol.data() + r * cols, row, false);
              std::fill(row + len, row + cols, T(0));
            }
          // L now holds ∂logits: ∂U = t·∂L·Gᵀ, ∂G += t·Uᵀ·∂L.
          gemm<T>(false, true, cr, rank, area, p.scale, L, area, s.G.data(), area, T(1), dUloc + r0 * rank, rank);
          gemm<T>(true, false, rank, area, cr, p.scale, p.U + r0 * rank, rank, L, area, T(1), s.dG.data(), area);
        }
        for (int64_t m = 0; m < cols; ++m)
          for (int64_t c = 0; c < R; ++c) dv[m * ldAcc + c] += s.dvcol[c * cols + m];
        // G_j = (q ⊙ V_j)·kᵀ: ∂(q ⊙ V_j) = ∂G_j·k, ∂k += ∂G_jᵀ·(q ⊙ V_j), ∂q += ∂(q ⊙ V_j) ⊙ V_j.
        for (int64_t j = 0; j < rank; ++j) {
          const T* dGj = s.dG.data() + j * area;
          const T* panel = s.qv.data() + j * rows * R;
          gemm<T>(false, false, rows, R, cols, T(1), dGj, cols, g.k(b), ld, T(0), s.dqv.data(), R);
          gemm<T>(true, false, cols, R, rows, T(1), dGj, cols, panel, R, T(1), dk, ldAcc);
          for (int64_t i = 0; i < rows; ++i) {
            const T* d = s.dqv.data() + i * R;
            ops.mul3(R, T(1), d, s.Vt.data() + j * R, dqkv + (b * N + i0 + i) * ld, true);
            ops.mul3(R, T(1), d, g.q(b) + (i0 + i) * ld, dVt + j * R, true);
          }
        }
      }
    }
    ranges.add(begin, std::move(acc));
  });
  if (groups > 1) addSlabs(slabs, groups, B, N, 2 * R, dqkv, ld, R);
  std::vector<T> total(size_t(2 * R * rank));
  ranges.sumInto(total.data(), total.size());
  if (dU) std::copy(total.begin(), total.begin() + R * rank, dU);
  if (dV)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < rank; ++j) dV[r * rank + j] = total[R * rank + j * R + r];
}

template void lowRankThsaForward<float>(const LowRankThsaProblem<float>&, float*, float*, const Parallel&);
template void lowRankThsaForward<double>(const LowRankThsaProblem<double>&, double*, double*, const Parallel&);
template void lowRankThsaBackward<float>(const LowRankThsaProblem<float>&, const float*, const float*, const float*,
                                         float*, float*, float*, const Parallel&);
template void lowRankThsaBackward<double>(const LowRankThsaProblem<double>&, const double*, const double*,
                                          const double*, double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
