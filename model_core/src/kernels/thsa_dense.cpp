// The dense-core THSA kernel (see thsa_dense.h for the scheme and what it learned from).
#include "kernels/thsa_dense.h"

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
/// Scores per block: cb channels × 32 rows × the keys a row sees, kept near 64 Ki values (256 KB
/// in float32: inside a 512 KB-1 MB L2 beside the key panel).
constexpr int64_t kBlockValues = int64_t(1) << 16;
constexpr int64_t kMaxChannelBlock = 8;

int64_t channelBlock(int64_t N, int64_t R) {
  return std::clamp<int64_t>(kBlockValues / (kRowBlock * std::max<int64_t>(N, 1)), 1, std::min(kMaxChannelBlock, R));
}

template <typename T>
struct Geometry {
  const DenseThsaProblem<T>& p;
  int64_t cb;  // channels per block
  int64_t ld() const { return 3 * p.R; }
  const T* q(int64_t b) const { return p.qkv + b * p.N * ld(); }
  const T* k(int64_t b) const { return q(b) + p.R; }
  const T* v(int64_t b) const { return q(b) + 2 * p.R; }
  int64_t channelBlocks() const { return (p.R + cb - 1) / cb; }
  /// Keys seen by rows [i0, i0 + rows): all of them, or up to the block's last row when causal.
  int64_t cols(int64_t i0, int64_t rows) const { return p.causal ? i0 + rows : p.N; }
  /// Keys seen by row n within a block of `cols` keys.
  int64_t rowLength(int64_t n, int64_t cols) const { return p.causal ? n + 1 : cols; }
};

/// The stacked query panel of channels [r0, r0 + nc) and rows [i0, i0 + rows):
/// QT[(c·rows + i), s] = scale·C[r0 + c, s]·q[i0 + i, s].
template <typename T>
void buildPanel(const Geometry<T>& g, int64_t b, int64_t r0, int64_t nc, int64_t i0, int64_t rows, T* QT) {
  const auto& ops = rowOps<T>();
  const int64_t R = g.p.R;
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t i = 0; i < rows; ++i)
      ops.mul3(R, g.p.scale, g.p.C + (r0 + c) * R, g.q(b) + (i0 + i) * g.ld(), QT + (c * rows + i) * R, false);
}

}  // namespace

template <typename T>
void denseThsaForward(const DenseThsaProblem<T>& p, T* omega, T* lse, const Parallel& par) {
  const Geometry<T> g{p, channelBlock(p.N, p.R)};
  const int64_t N = p.N, R = p.R, cb = g.cb;
  const int64_t blocks = g.channelBlocks();
  par.run(p.B * blocks, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> QT(size_t(cb * kRowBlock * R)), S(size_t(cb * kRowBlock * N)), vcol(size_t(cb * N));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, r0 = (item % blocks) * cb, nc = std::min(cb, R - r0);
      gatherColumns(g.v(b) + r0, g.ld(), N, nc, vcol.data());
      for (int64_t i0 = 0; i0 < N; i0 += kRowBlock) {
        const int64_t rows = std::min(kRowBlock, N - i0), cols = g.cols(i0, rows);
        buildPanel(g, b, r0, nc, i0, rows, QT.data());
        gemm<T>(false, true, nc * rows, cols, R, T(1), QT.data(), R, g.k(b), g.ld(), T(0), S.data(), cols);
        for (int64_t c = 0; c < nc; ++c)
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t n = i0 + i, L = g.rowLength(n, cols);
            const T* row = S.data() + (c * rows + i) * cols;
            T mn, mx, sum, dot;
            ops.minMax(row, L, &mn, &mx);
            ops.expSumDot(row, vcol.data() + c * N, L, T(1), mx, &sum, &dot);
            omega[(b * N + n) * R + r0 + c] = dot / sum;
            lse[(b * R + r0 + c) * N + n] = mx + std::log(sum);
          }
      }
    }
  });
}

template <typename T>
void denseThsaBackward(const DenseThsaProblem<T>& p, const T* omega, const T* lse, const T* dOmega, T* dqkv, T* dC,
                       const Parallel& par) {
  const Geometry<T> g{p, channelBlock(p.N, p.R)};
  const int64_t B = p.B, N = p.N, R = p.R, cb = g.cb, ld = g.ld();
  const int64_t blocks = g.channelBlocks();
  // dq and dk of a sequence sum over its channels: items are (sequence, group of channel blocks),
  // writing dqkv directly with one group, else each group's slab [N, 2, R] (partials.h).
  const ItemGroups split(B, blocks, par.threads);
  const int64_t groups = split.groups;
  std::fill(dqkv, dqkv + B * N * ld, T(0));
  std::vector<T> partial(groups > 1 ? size_t(groups * B * N * 2 * R) : 0, T(0));  // [G, B, N, 2, R]: dq, dk
  RangeSums<T> dCRanges;  // each range's own [R, R]
  par.run(B * groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> QT(size_t(cb * kRowBlock * R)), dQT(size_t(cb * kRowBlock * R)), S(size_t(cb * kRowBlock * N));
    std::vector<T> vcol(size_t(cb * N)), gcol(size_t(cb * N)), ocol(size_t(cb * N)), dv(size_t(cb * N));
    std::vector<T> dCloc(dC ? size_t(R * R) : 0, T(0));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      const auto [dq, ldAcc] = split.target(partial, dqkv, b, grp, B, N, R, 0);  // dq, then dk at + R
      T* dk = dq + R;
      const T* q = g.q(b);
      for (int64_t blk = split.firstBlock(grp); blk < split.endBlock(grp); ++blk) {
        const int64_t r0 = blk * cb, nc = std::min(cb, R - r0);
        gatherColumns(g.v(b) + r0, ld, N, nc, vcol.data());
        gatherColumns(dOmega + b * N * R + r0, R, N, nc, gcol.data());
        gatherColumns(omega + b * N * R + r0, R, N, nc, ocol.data());
        std::fill(dv.begin(), dv.end(), T(0));
        for (int64_t i0 = 0; i0 < N; i0 += kRowBlock) {
          const int64_t rows = std::min(kRowBlock, N - i0), cols = g.cols(i0, rows);
          buildPanel(g, b, r0, nc, i0, rows, QT.data());
          gemm<T>(false, true, nc * rows, cols, R, T(1), QT.data(), R, g.k(b), ld, T(0), S.data(), cols);
          for (int64_t c = 0; c < nc; ++c) {
            const T* lrow = lse + (b * R + r0 + c) * N;
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t n = i0 + i, L = g.rowLength(n, cols);
              T* row = S.data() + (c * rows + i) * cols;
              ops.softmaxColumnBackward(row, vcol.data() + c * N, L, T(1), lrow[n], gcol[c * N + n], ocol[c * N + n],
                                        dv.data() + c * N, row, false);
              std::fill(row + L, row + cols, T(0));  // keys this row does not see
            }
          }
          // S now holds ∂logits: ∂QT = ∂S·k and ∂k += ∂Sᵀ·QT.
          gemm<T>(false, false, nc * rows, R, cols, T(1), S.data(), cols, g.k(b), ld, T(0), dQT.data(), R);
          gemm<T>(true, false, cols, R, nc * rows, T(1), S.data(), cols, QT.data(), R, T(1), dk, ldAcc);
          for (int64_t c = 0; c < nc; ++c) {
            const T* Crow = p.C + (r0 + c) * R;
            for (int64_t i = 0; i < rows; ++i) {
              const T* d = dQT.data() + (c * rows + i) * R;
              ops.mul3(R, p.scale, Crow, d, dq + (i0 + i) * ldAcc, true);
              if (dC) ops.mul3(R, p.scale, q + (i0 + i) * ld, d, dCloc.data() + (r0 + c) * R, true);
            }
          }
        }
        for (int64_t c = 0; c < nc; ++c)
          for (int64_t m = 0; m < N; ++m) dqkv[(b * N + m) * ld + 2 * R + r0 + c] = dv[c * N + m];
      }
    }
    if (dC) dCRanges.add(begin, std::move(dCloc));
  });
  if (groups > 1) addSlabs(partial, groups, B, N, 2 * R, dqkv, ld, 0);
  if (dC) dCRanges.sumInto(dC, size_t(R * R));
}

template void denseThsaForward<float>(const DenseThsaProblem<float>&, float*, float*, const Parallel&);
template void denseThsaForward<double>(const DenseThsaProblem<double>&, double*, double*, const Parallel&);
template void denseThsaBackward<float>(const DenseThsaProblem<float>&, const float*, const float*, const float*,
                                       float*, float*, const Parallel&);
template void denseThsaBackward<double>(const DenseThsaProblem<double>&, const double*, const double*,
                                        const double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
