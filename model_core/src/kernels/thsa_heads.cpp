// The head-map THSA kernel (see thsa_heads.h for the scheme).
#include "kernels/thsa_heads.h"

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

template <typename T>
struct Geometry {
  const HeadMapThsaProblem<T>& p;
  int64_t R() const { return p.R(); }
  int64_t ld() const { return 3 * p.R(); }
  const T* q(int64_t b) const { return p.qkv + b * p.N * ld(); }
  const T* k(int64_t b) const { return q(b) + R(); }
  const T* v(int64_t b) const { return q(b) + 2 * R(); }
  int64_t rowBlocks() const { return (p.N + kRowBlock - 1) / kRowBlock; }
  int64_t cols(int64_t i0, int64_t rows) const { return p.causal ? i0 + rows : p.N; }
  int64_t rowLength(int64_t n, int64_t cols) const { return p.causal ? n + 1 : cols; }
  /// The row's largest logit t·x given its smallest and largest x (t may be negative).
  static T shiftFor(T t, T mn, T mx) { return t >= 0 ? t * mx : t * mn; }
};

/// Per-thread buffers of one row block.
template <typename T>
struct Scratch {
  std::vector<T> qb;    // [rows, R] q ⊙ β (rank one)
  std::vector<T> base;  // [H, rows, cols] base maps
  std::vector<T> mixed; // [H, rows, cols] G = A·base (mixing), later ∂base
  std::vector<T> work;  // [rows, cols] P (ones) / ∂P
  std::vector<T> grad;  // [H, rows, cols] ∂G
  std::vector<T> vcol;  // [R, cols] value columns (rank one)
  std::vector<T> dvcol; // [R, cols]
  std::vector<T> dqb;   // [rows, R]
  std::vector<T> mn, mx;  // [H, rows] row extremes of G
  Scratch(const HeadMapThsaProblem<T>& p, bool backward) {
    const int64_t R = p.R(), N = p.N, H = p.H, blk = kRowBlock * N;
    qb.resize(size_t(kRowBlock * R));
    base.resize(size_t(H * blk));
    if (!p.identityA) mixed.resize(size_t(H * blk));
    work.resize(size_t(2 * blk));
    if (p.rank1) vcol.resize(size_t(R * N));
    mn.resize(size_t(H * kRowBlock));
    mx.resize(size_t(H * kRowBlock));
    if (backward) {
      grad.resize(size_t(H * blk));
      if (p.rank1) dvcol.resize(size_t(R * N));
      dqb.resize(size_t(kRowBlock * R));
    }
  }
};

/// The query panel of rows [i0, i0 + rows): q ⊙ (1_H ⊗ c₃) (rank one) in s.qb, or q itself.
/// Returns the panel and its row stride.
template <typename T>
std::pair<const T*, int64_t> queryPanel(const Geometry<T>& g, int64_t b, int64_t i0, int64_t rows, Scratch<T>& s) {
  const auto& p = g.p;
  if (!p.rank1) return {g.q(b) + i0 * g.ld(), g.ld()};
  const auto& ops = rowOps<T>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < p.H; ++h)
      ops.mul3(p.D, T(1), g.q(b) + (i0 + i) * g.ld() + h * p.D, p.c3, s.qb.data() + i * g.R() + h * p.D, false);
  return {s.qb.data(), g.R()};
}

/// base_h' = (q ⊙ β)_h'·k_h'ᵀ for every head, then G = A·base. Returns G ([H, rows, cols]).
template <typename T>
const T* headMaps(const Geometry<T>& g, int64_t b, std::pair<const T*, int64_t> qp, int64_t rows, int64_t cols,
                  Scratch<T>& s) {
  const auto& p = g.p;
  const auto& ops = rowOps<T>();
  const int64_t blk = rows * cols;
  for (int64_t h = 0; h < p.H; ++h)
    gemm<T>(false, true, rows, cols, p.D, T(1), qp.first + h * p.D, qp.second, g.k(b) + h * p.D, g.ld(), T(0),
            s.base.data() + h * blk, cols);
  if (p.identityA) return s.base.data();
  for (int64_t h = 0; h < p.H; ++h) {
    T* G = s.mixed.data() + h * blk;
    std::fill(G, G + blk, T(0));
    for (int64_t h2 = 0; h2 < p.H; ++h2)
      if (const T a = p.A[h * p.H + h2]; a != T(0)) ops.axpy(blk, a, s.base.data() + h2 * blk, G);
  }
  return s.mixed.data();
}

template <typename T>
void rowExtremes(const Geometry<T>& g, const T* G, int64_t i0, int64_t rows, int64_t cols, Scratch<T>& s) {
  const auto& ops = rowOps<T>();
  for (int64_t h = 0; h < g.p.H; ++h)
    for (int64_t i = 0; i < rows; ++i)
      ops.minMax(G + (h * rows + i) * cols, g.rowLength(i0 + i, cols), &s.mn[h * rows + i], &s.mx[h * rows + i]);
}

/// Value columns [R, cols] of sequence b (rank one: each channel reads its own column).

}  // namespace

template <typename T>
void headMapThsaForward(const HeadMapThsaProblem<T>& p, T* omega, T* lse, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t N = p.N, H = p.H, D = p.D, R = p.R(), S = p.softmaxes(), blocks = g.rowBlocks();
  par.run(p.B * blocks, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    Scratch<T> s(p, false);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, i0 = (item % blocks) * kRowBlock;
      const int64_t rows = std::min(kRowBlock, N - i0), cols = g.cols(i0, rows);
      const T* G = headMaps(g, b, queryPanel(g, b, i0, rows, s), rows, cols, s);
      rowExtremes(g, G, i0, rows, cols, s);
      if (!p.rank1) {
        T* P = s.work.data();
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t n = i0 + i, L = g.rowLength(n, cols);
            const T shift = Geometry<T>::shiftFor(p.scale, s.mn[h * rows + i], s.mx[h * rows + i]);
            T* prow = P + i * cols;
            const T sum = ops.expWrite(G + (h * rows + i) * cols, L, p.scale, shift, prow);
            const T inv = T(1) / sum;
            for (int64_t m = 0; m < L; ++m) prow[m] *= inv;
            std::fill(prow + L, prow + cols, T(0));
            lse[(b * S + h) * N + n] = shift + std::log(sum);
          }
          gemm<T>(false, false, rows, D, cols, T(1), P, cols, g.v(b) + h * D, g.ld(), T(0),
                  omega + (b * N + i0) * R + h * D, R);
        }
      } else {
        gatherColumns(g.v(b), g.ld(), cols, g.R(), s.vcol.data());
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < D; ++d) {
            const T tau = p.scale * p.c2[d];
            const int64_t c = h * D + d;
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t n = i0 + i, L = g.rowLength(n, cols);
              const T shift = Geometry<T>::shiftFor(tau, s.mn[h * rows + i], s.mx[h * rows + i]);
              T sum, dot;
              ops.expSumDot(G + (h * rows + i) * cols, s.vcol.data() + c * cols, L, tau, shift, &sum, &dot);
              omega[(b * N + n) * R + c] = dot / sum;
              lse[(b * S + c) * N + n] = shift + std::log(sum);
            }
          }
      }
    }
  });
}

template <typename T>
void headMapThsaBackward(const HeadMapThsaProblem<T>& p, const T* omega, const T* lse, const T* dOmega, T* dqkv,
                         T* dA, T* dc2, T* dc3, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t B = p.B, N = p.N, H = p.H, D = p.D, R = p.R(), S = p.softmaxes(), ld = g.ld();
  const int64_t blocks = g.rowBlocks();
  // dk and dv of a sequence sum over its rows: items are (sequence, group of row blocks), each group
  // with its own slab [N, 2R] (dk, dv) unless one group serves (partials.h). dq rows belong to one item.
  const ItemGroups split(B, blocks, par.threads);
  const int64_t groups = split.groups;
  std::fill(dqkv, dqkv + B * N * ld, T(0));
  std::vector<T> slabs(groups > 1 ? size_t(groups * B * N * 2 * R) : 0, T(0));
  const size_t nParams = size_t(H * H + 2 * D);  // dA, dc2, dc3 per range
  RangeSums<T> params;
  par.run(B * groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    Scratch<T> s(p, true);
    std::vector<T> acc(nParams, T(0));
    T* accA = acc.data();
    T* accC2 = accA + H * H;
    T* accC3 = accC2 + D;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      const auto [dk, ldAcc] = split.target(slabs, dqkv, b, grp, B, N, R, R);  // dk, then dv at + R
      T* dv = dk + R;
      const T* dO = dOmega + b * N * R;
      const T* O = omega + b * N * R;
      for (int64_t blk = split.firstBlock(grp); blk < split.endBlock(grp); ++blk) {
        const int64_t i0 = blk * kRowBlock, rows = std::min(kRowBlock, N - i0), cols = g.cols(i0, rows);
        const int64_t area = rows * cols;
        const auto qp = queryPanel(g, b, i0, rows, s);
        const T* G = headMaps(g, b, qp, rows, cols, s);
        T* dG = s.grad.data();
        std::fill(dG, dG + H * area, T(0));
        if (!p.rank1) {
          T* P = s.work.data();
          T* dP = P + area;
          for (int64_t h = 0; h < H; ++h) {
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t n = i0 + i, L = g.rowLength(n, cols);
              ops.expWrite(G + (h * rows + i) * cols, L, p.scale, lse[(b * S + h) * N + n], P + i * cols);
              std::fill(P + i * cols + L, P + (i + 1) * cols, T(0));
            }
            gemm<T>(true, false, cols, D, rows, T(1), P, cols, dO + i0 * R + h * D, R, T(1), dv + h * D, ldAcc);
            gemm<T>(false, true, rows, cols, D, T(1), dO + i0 * R + h * D, R, g.v(b) + h * D, ld, T(0), dP, cols);
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t n = i0 + i, L = g.rowLength(n, cols);
              const T delta = ops.dot(D, dO + n * R + h * D, O + n * R + h * D);
              ops.softmaxRowBackward(P + i * cols, dP + i * cols, L, p.scale, delta, dG + (h * rows + i) * cols);
            }
          }
        } else {
          gatherColumns(g.v(b), g.ld(), cols, g.R(), s.vcol.data());
          std::fill(s.dvcol.begin(), s.dvcol.begin() + R * cols, T(0));
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < D; ++d) {
              const T tau = p.scale * p.c2[d];
              const int64_t c = h * D + d;
              T sum = 0;
              for (int64_t i = 0; i < rows; ++i) {
                const int64_t n = i0 + i, L = g.rowLength(n, cols);
                sum += ops.softmaxColumnBackward(G + (h * rows + i) * cols, s.vcol.data() + c * cols, L, tau,
                                                 lse[(b * S + c) * N + n], dO[n * R + c], O[n * R + c],
                                                 s.dvcol.data() + c * cols, dG + (h * rows + i) * cols, true);
              }
              accC2[d] += p.scale * sum;
            }
          for (int64_t m = 0; m < cols; ++m)
            for (int64_t c = 0; c < R; ++c) dv[m * ldAcc + c] += s.dvcol[c * cols + m];
        }
        // ∂G → ∂base through the mixing (∂A first, while the base maps are intact).
        const T* dBase = dG;
        if (!p.identityA) {
          for (int64_t h = 0; h < H; ++h)
            for (int64_t h2 = 0; h2 < H; ++h2)
              accA[h * H + h2] += ops.dot(area, dG + h * area, s.base.data() + h2 * area);
          T* db = s.mixed.data();
          std::fill(db, db + H * area, T(0));
          for (int64_t h = 0; h < H; ++h)
            for (int64_t h2 = 0; h2 < H; ++h2)
              if (const T a = p.A[h * H + h2]; a != T(0)) ops.axpy(area, a, dG + h * area, db + h2 * area);
          dBase = db;
        }
        // base_h' = (q ⊙ β)_h'·k_h'ᵀ: ∂(q ⊙ β) = ∂base·k, ∂k += ∂baseᵀ·(q ⊙ β).
        for (int64_t h = 0; h < H; ++h) {
          gemm<T>(false, false, rows, D, cols, T(1), dBase + h * area, cols, g.k(b) + h * D, ld, T(0),
                  s.dqb.data() + h * D, R);
          gemm<T>(true, false, cols, D, rows, T(1), dBase + h * area, cols, qp.first + h * D, qp.second, T(1),
                  dk + h * D, ldAcc);
        }
        for (int64_t i = 0; i < rows; ++i) {
          T* dq = dqkv + (b * N + i0 + i) * ld;
          const T* dqb = s.dqb.data() + i * R;
          if (!p.rank1) {
            std::copy(dqb, dqb + R, dq);
            continue;
          }
          const T* q = g.q(b) + (i0 + i) * ld;
          for (int64_t h = 0; h < H; ++h) {
            ops.mul3(D, T(1), dqb + h * D, p.c3, dq + h * D, false);
            ops.mul3(D, T(1), dqb + h * D, q + h * D, accC3, true);
          }
        }
      }
    }
    params.add(begin, std::move(acc));
  });
  if (groups > 1) addSlabs(slabs, groups, B, N, 2 * R, dqkv, ld, R);
  std::vector<T> total(nParams);
  params.sumInto(total.data(), nParams);
  if (dA) std::copy(total.begin(), total.begin() + H * H, dA);
  if (dc2) std::copy(total.begin() + H * H, total.begin() + H * H + D, dc2);
  if (dc3) std::copy(total.begin() + H * H + D, total.end(), dc3);
}

template void headMapThsaForward<float>(const HeadMapThsaProblem<float>&, float*, float*, const Parallel&);
template void headMapThsaForward<double>(const HeadMapThsaProblem<double>&, double*, double*, const Parallel&);
template void headMapThsaBackward<float>(const HeadMapThsaProblem<float>&, const float*, const float*, const float*,
                                         float*, float*, float*, float*, const Parallel&);
template void headMapThsaBackward<double>(const HeadMapThsaProblem<double>&, const double*, const double*,
                                          const double*, double*, double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
