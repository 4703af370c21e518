// The linear THSA kernel (see thsa_linear.h for the scheme).
#include "kernels/thsa_linear.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/partials.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core::kernels {
namespace {

constexpr int64_t kChunk = 32;  // positions between two checkpoints of the causal state; one backward block
static_assert(kChunk <= kPhiBlockMaxLen);

/// Channels per backward item: a block's state rows (block × R values) stay near 16 Ki values. (A
/// causal block keeps its checkpoints; blocks sized for L2 instead measured the same, bench/README.md.)
int64_t channelBlock(int64_t R) { return std::clamp<int64_t>((int64_t(1) << 14) / std::max<int64_t>(R, 1), 1, R); }

/// Forward panels: channels padded to kPhiPanelAlign, at most kPanel of them per item (the panel's
/// state columns, R × kPanel values, stay in L1/L2 while the item walks the positions).
constexpr int64_t kPanel = 64;
int64_t paddedChannels(int64_t R) { return (R + kPhiPanelAlign - 1) / kPhiPanelAlign * kPhiPanelAlign; }

template <typename T>
struct Geometry {
  const LinearThsaProblem<T>& p;
  int64_t ld() const { return 3 * p.R; }
  const T* q(int64_t b, int64_t n) const { return p.qkv + (b * p.N + n) * ld(); }
  const T* k(int64_t b, int64_t n) const { return q(b, n) + p.R; }
  const T* v(int64_t b, int64_t n) const { return q(b, n) + 2 * p.R; }
  int64_t block() const { return channelBlock(p.R); }
  int64_t blocks() const { return (p.R + block() - 1) / block(); }
};

/// K = φ(k) [N, R] and z: prefix sums of K [N, R] (causal) or its total in row 0 (full).
template <typename T>
void keyFeatures(const Geometry<T>& g, int64_t b, T* K, T* Z) {
  const int64_t N = g.p.N, R = g.p.R;
  const auto& ops = rowOps<T>();
  for (int64_t n = 0; n < N; ++n) ops.phiRow(g.k(b, n), R, K + n * R);
  std::fill(Z, Z + R, T(0));
  for (int64_t n = 0; n < N; ++n) {
    T* z = g.p.causal ? Z + n * R : Z;
    if (g.p.causal && n > 0) std::copy(Z + (n - 1) * R, Z + n * R, z);
    ops.axpy(R, T(1), K + n * R, z);
  }
}

/// The state rows of channels [r0, r0 + nr) over positions [n0, n1): St = beta·St + Σ_m v[m, r]·K_m
/// (Sᵀ[r, :]), one GEMM.
template <typename T>
void addState(const Geometry<T>& g, int64_t b, const T* K, int64_t r0, int64_t nr, int64_t n0, int64_t n1, T beta, T* St) {
  gemm<T>(true, false, nr, g.p.R, n1 - n0, T(1), g.v(b, n0) + r0, g.ld(), K + n0 * g.p.R, g.p.R, beta, St, g.p.R);
}

}  // namespace

template <typename T>
void linearThsaForward(const LinearThsaProblem<T>& p, T* omega, T* den, const Parallel& par) {
  // Vectorised across channels (phiPanel): each φ(C[r,s]·q[n,s]) meets its state entry S[s,r] and
  // z[s] in one pass, with no horizontal sums; Cᵀ is padded once to the panel alignment.
  const Geometry<T> g{p};
  const int64_t N = p.N, R = p.R, Rp = paddedChannels(R), panels = (Rp + kPanel - 1) / kPanel;
  std::vector<T> Ct(size_t(R * Rp), T(0));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t s = 0; s < R; ++s) Ct[s * Rp + r] = p.C[r * R + s];
  par.run(p.B * panels, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> K(size_t(N * R)), Z(size_t(p.causal ? N * R : R)), S(size_t(R * kPanel));
    std::vector<T> vpad(kPanel, T(0)), num(kPanel), dn(kPanel);
    int64_t featuresOf = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / panels, r0 = (item % panels) * kPanel;
      const int64_t width = std::min(kPanel, Rp - r0), nr = std::min(width, R - r0);
      if (featuresOf != b) keyFeatures(g, b, K.data(), Z.data()), featuresOf = b;
      std::fill(S.begin(), S.end(), T(0));  // padded columns stay zero
      if (!p.causal)  // S[:, panel] = Σ_m K_mᵀ·v[m, panel]
        gemm<T>(true, false, R, nr, N, T(1), K.data(), R, g.v(b, 0) + r0, g.ld(), T(0), S.data(), width);
      for (int64_t n = 0; n < N; ++n) {
        const T* z = p.causal ? Z.data() + n * R : Z.data();
        if (p.causal) std::copy(g.v(b, n) + r0, g.v(b, n) + r0 + nr, vpad.begin());
        ops.phiPanel(Ct.data() + r0, Rp, S.data(), width, g.q(b, n), z, R, width,
                     p.causal ? K.data() + n * R : nullptr, vpad.data(), num.data(), dn.data());
        T* o = omega + (b * N + n) * R + r0;
        T* d = den + (b * N + n) * R + r0;
        for (int64_t j = 0; j < nr; ++j) o[j] = num[j] / dn[j], d[j] = dn[j];
      }
    }
  });
}

template <typename T>
void linearThsaBackward(const LinearThsaProblem<T>& p, const T* omega, const T* den, const T* dOmega, T* dqkv, T* dC,
                        const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t B = p.B, N = p.N, R = p.R, ld = g.ld(), cb = g.block(), blocks = g.blocks();
  // dq and ∂K of a sequence sum over its channels: items are (sequence, group of channel blocks),
  // one group when the sequences alone keep the threads busy, else one slab [N, 2, R] per group.
  const ItemGroups split(B, blocks, par.threads);  // see partials.h
  const int64_t groups = split.groups;
  std::vector<T> slabs(size_t(groups * B * N * 2 * R), T(0));  // dq, ∂K
  std::fill(dqkv, dqkv + B * N * ld, T(0));
  RangeSums<T> dCRanges;
  const int64_t chunks = (N + kChunk - 1) / kChunk;
  par.run(B * groups, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> K(size_t(N * R)), Z(size_t(p.causal ? N * R : R)), St(size_t(cb * R));
    std::vector<T> checkpoints(p.causal ? size_t(chunks * cb * R) : 0);
    std::vector<T> dS(size_t(cb * R)), dzBar(static_cast<size_t>(R)), dzChunk(p.causal ? size_t(kChunk * R) : 0);
    std::vector<T> dNum(size_t(kChunk * cb)), dDen(size_t(kChunk * cb));
    std::vector<T> dCloc(size_t(R * R), T(0));  // accumulated even when dC is not asked (a scratch target)
    int64_t featuresOf = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      if (featuresOf != b) keyFeatures(g, b, K.data(), Z.data()), featuresOf = b;
      T* slab = slabs.data() + (grp * B + b) * N * 2 * R;  // row n: dq at 0, ∂K at R
      for (int64_t blk = split.firstBlock(grp); blk < split.endBlock(grp); ++blk) {
        const int64_t r0 = blk * cb, nr = std::min(cb, R - r0), area = nr * R;
        if (p.causal) {  // the state before each chunk, and after the last position in St
          std::fill(checkpoints.begin(), checkpoints.begin() + area, T(0));
          for (int64_t c = 0; c < chunks; ++c) {
            const int64_t n0 = c * kChunk, n1 = std::min(N, n0 + kChunk);
            T* next = c + 1 < chunks ? checkpoints.data() + (c + 1) * area : St.data();
            std::copy(checkpoints.begin() + c * area, checkpoints.begin() + (c + 1) * area, next);
            addState(g, b, K.data(), r0, nr, n0, n1, T(1), next);
          }
        } else {
          addState(g, b, K.data(), r0, nr, 0, N, T(0), St.data());
        }
        std::fill(dS.begin(), dS.end(), T(0));
        std::fill(dzBar.begin(), dzBar.end(), T(0));
        for (int64_t c = chunks - 1; c >= 0; --c) {
          const int64_t n0 = c * kChunk, len = std::min(N, n0 + kChunk) - n0;
          // Causal: the state after the chunk's last position. The pass above ends with it for the
          // last chunk; an earlier one starts from the next chunk's checkpoint, so the rewinding
          // (inside phiBackwardBlock) never runs over more than kChunk positions.
          const T* Send = p.causal && c + 1 < chunks ? checkpoints.data() + (c + 1) * area : St.data();
          for (int64_t j = 0; j < len; ++j)  // ∂num = ∂Ω/den and ∂den = −∂Ω·Ω/den
            for (int64_t r = 0; r < nr; ++r) {
              const int64_t at = (b * N + n0 + j) * R + r0 + r;
              dNum[size_t(j * cb + r)] = dOmega[at] / den[at];
              dDen[size_t(j * cb + r)] = -dOmega[at] * omega[at] / den[at];
            }
          if (p.causal) std::fill(dzChunk.begin(), dzChunk.end(), T(0));
          for (int64_t r = 0; r < nr; r += kPhiBlockMaxRows) {
            PhiBackwardBlock<T> pb;
            pb.rows = std::min(kPhiBlockMaxRows, nr - r), pb.len = len, pb.R = R;
            pb.c = p.C + (r0 + r) * R, pb.s = Send + r * R;
            pb.q = g.q(b, n0), pb.ldq = ld;
            pb.z = p.causal ? Z.data() + n0 * R : Z.data();
            pb.a = dNum.data() + r, pb.b = dDen.data() + r, pb.ldab = cb;
            pb.dq = slab + n0 * 2 * R, pb.lddq = 2 * R;
            pb.dc = dCloc.data() + (r0 + r) * R, pb.ds = dS.data() + r * R;
            if (p.causal) {
              // S_n holds K_n·v_nᵀ: with the suffix ∂S̄ updated by position n, ∂v[n,r] = ∂S̄[r,:]·K_n
              // (written straight into dqkv) and ∂K_n += Σ_r v[n,r]·∂S̄[r,:] (+ ∂z̄ below).
              pb.k = K.data() + n0 * R, pb.w = g.v(b, n0) + r0 + r, pb.ldw = ld;
              pb.dz = dzChunk.data();
              pb.dk = slab + n0 * 2 * R + R, pb.lddk = 2 * R;
              pb.sums = dqkv + (b * N + n0) * ld + 2 * R + r0 + r, pb.ldsums = ld;
            } else {
              pb.dz = dzBar.data();  // the sum over every position
            }
            ops.phiBackwardBlock(pb);
          }
          if (p.causal)  // ∂K_n += ∂z̄ after position n, the suffix sum of the per-position ∂z
            for (int64_t j = len - 1; j >= 0; --j) {
              ops.axpy(R, T(1), dzChunk.data() + j * R, dzBar.data());
              ops.axpy(R, T(1), dzBar.data(), slab + (n0 + j) * 2 * R + R);
            }
        }
        if (!p.causal) {
          // S = Σ_m K_m·v_mᵀ over every m: ∂v[:, block] = K·∂S̄ᵀ, ∂K += v[:, block]·∂S̄ + ∂z̄.
          gemm<T>(false, true, N, nr, R, T(1), K.data(), R, dS.data(), R, T(0), dqkv + b * N * ld + 2 * R + r0, ld);
          gemm<T>(false, false, N, R, nr, T(1), g.v(b, 0) + r0, ld, dS.data(), R, T(1), slab + R, 2 * R);
          for (int64_t n = 0; n < N; ++n) ops.axpy(R, T(1), dzBar.data(), slab + n * 2 * R + R);
        }
      }
    }
    if (dC) dCRanges.add(begin, std::move(dCloc));
  });
  // Sum the groups' slabs (dq, ∂K); dk = ∂K ⊙ φ'(k).
  addSlabs(slabs, groups, B, N, 2 * R, dqkv, ld, 0);
  const auto& ops = rowOps<T>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) ops.phiPrimeScale(g.k(b, n), R, dqkv + (b * N + n) * ld + R);
  if (dC) dCRanges.sumInto(dC, size_t(R * R));
}

template void linearThsaForward<float>(const LinearThsaProblem<float>&, float*, float*, const Parallel&);
template void linearThsaForward<double>(const LinearThsaProblem<double>&, double*, double*, const Parallel&);
template void linearThsaBackward<float>(const LinearThsaProblem<float>&, const float*, const float*, const float*,
                                        float*, float*, const Parallel&);
template void linearThsaBackward<double>(const LinearThsaProblem<double>&, const double*, const double*,
                                         const double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
