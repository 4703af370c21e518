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

constexpr int64_t kChunk = 32;  // positions between two checkpoints of the causal state

template <typename T>
T phiOf(T u) {
  return u > 0 ? u + 1 : std::exp(u);
}
template <typename T>
T phiPrime(T u) {
  return u > 0 ? T(1) : std::exp(u);
}

/// Channels per item: a block's state rows (block × R values) stay near 16 Ki values.
int64_t channelBlock(int64_t R) { return std::clamp<int64_t>((int64_t(1) << 14) / std::max<int64_t>(R, 1), 1, R); }

template <typename T>
struct Geometry {
  const LinearThsaProblem<T>& p;
  int64_t ld() const { return 3 * p.R; }
  const T* q(int64_t b, int64_t n) const { return p.qkv + (b * p.N + n) * ld(); }
  const T* k(int64_t b, int64_t n) const { return q(b, n) + p.R; }
  const T* v(int64_t b, int64_t n) const { return q(b, n) + 2 * p.R; }
  int64_t blocks() const { return (p.R + channelBlock(p.R) - 1) / channelBlock(p.R); }
};

/// K = φ(k) [N, R] and z: prefix sums of K [N, R] (causal) or its total in row 0 (full).
template <typename T>
void keyFeatures(const Geometry<T>& g, int64_t b, T* K, T* Z) {
  const int64_t N = g.p.N, R = g.p.R;
  for (int64_t n = 0; n < N; ++n) {
    const T* k = g.k(b, n);
    for (int64_t s = 0; s < R; ++s) K[n * R + s] = phiOf(k[s]);
  }
  std::fill(Z, Z + R, T(0));
  for (int64_t n = 0; n < N; ++n) {
    T* z = g.p.causal ? Z + n * R : Z;
    if (g.p.causal && n > 0) std::copy(Z + (n - 1) * R, Z + n * R, z);
    for (int64_t s = 0; s < R; ++s) z[s] += K[n * R + s];
  }
}

/// The state rows Sᵀ[r0 + r, :] = Σ_m v[m, r0 + r]·K_m over all positions (full layers).
template <typename T>
void fullState(const Geometry<T>& g, int64_t b, const T* K, int64_t r0, int64_t nr, T* St) {
  gemm<T>(true, false, nr, g.p.R, g.p.N, T(1), g.v(b, 0) + r0, g.ld(), K, g.p.R, T(0), St, g.p.R);
}

/// Adds position n to the causal state rows of channels [r0, r0 + nr).
template <typename T>
void advance(const Geometry<T>& g, int64_t b, int64_t n, const T* K, int64_t r0, int64_t nr, T* St) {
  const auto& ops = rowOps<T>();
  const T* v = g.v(b, n);
  for (int64_t r = 0; r < nr; ++r) ops.axpy(g.p.R, v[r0 + r], K + n * g.p.R, St + r * g.p.R);
}

}  // namespace

template <typename T>
void linearThsaForward(const LinearThsaProblem<T>& p, T* omega, T* den, const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t N = p.N, R = p.R, cb = channelBlock(R), blocks = g.blocks();
  par.run(p.B * blocks, [&](int64_t begin, int64_t end) {
    const auto& ops = rowOps<T>();
    std::vector<T> K(size_t(N * R)), Z(size_t(p.causal ? N * R : R)), St(size_t(cb * R));
    int64_t featuresOf = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, r0 = (item % blocks) * cb, nr = std::min(cb, R - r0);
      if (featuresOf != b) keyFeatures(g, b, K.data(), Z.data()), featuresOf = b;
      if (p.causal) std::fill(St.begin(), St.end(), T(0));
      else fullState(g, b, K.data(), r0, nr, St.data());
      for (int64_t n = 0; n < N; ++n) {
        const T* z = p.causal ? Z.data() + n * R : Z.data();
        const T* q = g.q(b, n);
        const T* v = g.v(b, n);
        for (int64_t r = 0; r < nr; ++r) {
          T num, d;
          if (p.causal)  // the state row takes position n, then serves it
            ops.advancePhiDot2(p.C + (r0 + r) * R, q, St.data() + r * R, K.data() + n * R, v[r0 + r], z, R, &num, &d);
          else
            ops.phiDot2(p.C + (r0 + r) * R, q, St.data() + r * R, z, R, &num, &d);
          omega[(b * N + n) * R + r0 + r] = num / d;
          den[(b * N + n) * R + r0 + r] = d;
        }
      }
    }
  });
}

template <typename T>
void linearThsaBackward(const LinearThsaProblem<T>& p, const T* omega, const T* den, const T* dOmega, T* dqkv, T* dC,
                        const Parallel& par) {
  const Geometry<T> g{p};
  const int64_t B = p.B, N = p.N, R = p.R, ld = g.ld(), cb = channelBlock(R), blocks = g.blocks();
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
    std::vector<T> checkpoints(p.causal ? size_t(chunks * cb * R) : 0), states(p.causal ? size_t(kChunk * cb * R) : 0);
    std::vector<T> dS(size_t(cb * R)), dzBar(static_cast<size_t>(R)), dzPos(static_cast<size_t>(R));
    std::vector<T> dCloc(size_t(R * R), T(0));  // accumulated even when dC is not asked (a scratch target)
    int64_t featuresOf = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / groups, grp = item % groups;
      if (featuresOf != b) keyFeatures(g, b, K.data(), Z.data()), featuresOf = b;
      T* slab = slabs.data() + (grp * B + b) * N * 2 * R;  // row n: dq at 0, ∂K at R
      for (int64_t blk = split.firstBlock(grp); blk < split.endBlock(grp); ++blk) {
        const int64_t r0 = blk * cb, nr = std::min(cb, R - r0), area = nr * R;
        if (p.causal) {
          std::fill(St.begin(), St.end(), T(0));
          for (int64_t n = 0; n < N; ++n) {
            if (n % kChunk == 0) std::copy(St.begin(), St.begin() + area, checkpoints.begin() + (n / kChunk) * area);
            advance(g, b, n, K.data(), r0, nr, St.data());
          }
        } else {
          fullState(g, b, K.data(), r0, nr, St.data());
        }
        std::fill(dS.begin(), dS.end(), T(0));
        std::fill(dzBar.begin(), dzBar.end(), T(0));
        for (int64_t c = chunks - 1; c >= 0; --c) {
          const int64_t n0 = c * kChunk, n1 = std::min(N, n0 + kChunk);
          if (p.causal) {  // the prefix states of this chunk, from its checkpoint
            std::copy(checkpoints.begin() + c * area, checkpoints.begin() + (c + 1) * area, St.begin());
            for (int64_t n = n0; n < n1; ++n) {
              advance(g, b, n, K.data(), r0, nr, St.data());
              std::copy(St.begin(), St.begin() + area, states.begin() + (n - n0) * area);
            }
          }
          for (int64_t n = n1 - 1; n >= n0; --n) {
            const T* S = p.causal ? states.data() + (n - n0) * area : St.data();
            const T* z = p.causal ? Z.data() + n * R : Z.data();
            const T* q = g.q(b, n);
            T* dq = slab + n * 2 * R;
            std::fill(dzPos.begin(), dzPos.end(), T(0));
            // S_n holds K_n·v_nᵀ (causal): with the suffix row ∂S̄ updated by position n,
            // ∂v[n,r] = ∂S̄[r,:]·K_n and ∂K_n += Σ_r v[n,r]·∂S̄[r,:] (+ ∂z̄ below), in the same pass.
            T* dv = dqkv + (b * N + n) * ld + 2 * R;
            const T* v = g.v(b, n);
            T* dK = slab + n * 2 * R + R;
            for (int64_t r = 0; r < nr; ++r) {
              const int64_t at = (b * N + n) * R + r0 + r;
              const T dNum = dOmega[at] / den[at], dDen = -dOmega[at] * omega[at] / den[at];
              T* dc = dCloc.data() + (r0 + r) * R;
              if (p.causal)
                dv[r0 + r] = ops.phiBackwardCausal(p.C + (r0 + r) * R, q, S + r * R, z, R, dNum, dDen, dq, dc,
                                                   dS.data() + r * R, dzPos.data(), K.data() + n * R, v[r0 + r], dK);
              else
                ops.phiBackward(p.C + (r0 + r) * R, q, S + r * R, z, R, dNum, dDen, dq, dc, dS.data() + r * R,
                                dzPos.data());
            }
            ops.axpy(R, T(1), dzPos.data(), dzBar.data());
            if (p.causal) ops.axpy(R, T(1), dzBar.data(), dK);
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
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      T* dk = dqkv + (b * N + n) * ld + R;
      const T* k = g.k(b, n);
      for (int64_t s = 0; s < R; ++s) dk[s] *= phiPrime(k[s]);
    }
  if (dC) dCRanges.sumInto(dC, size_t(R * R));
}

template void linearThsaForward<float>(const LinearThsaProblem<float>&, float*, float*, const Parallel&);
template void linearThsaForward<double>(const LinearThsaProblem<double>&, double*, double*, const Parallel&);
template void linearThsaBackward<float>(const LinearThsaProblem<float>&, const float*, const float*, const float*,
                                        float*, float*, const Parallel&);
template void linearThsaBackward<double>(const LinearThsaProblem<double>&, const double*, const double*,
                                         const double*, double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
