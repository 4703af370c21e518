#include "kernels/mla_latent.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/rotary_pairs.h"

namespace tensorscope::model_core::kernels {

namespace {

constexpr int64_t kBlock = 64;  ///< tokens a work item takes (and ∂g's partial sums cover)

/// DeepSeek's interleaved pairs (2j, 2j + 1).
template <typename T>
inline void turnInterleaved(const T* in, T* out, const T* c, const T* s, int64_t half) {
  turnPairs<PairLayout::Interleaved>(in, out, c, s, half);
}
template <typename T>
inline void turnInterleavedBack(const T* in, T* out, const T* c, const T* s, int64_t half) {
  turnPairsBack<PairLayout::Interleaved>(in, out, c, s, half);
}

}  // namespace

int64_t mlaLatentBlocks(int64_t tokens) { return (tokens + kBlock - 1) / kBlock; }

template <typename T>
void mlaLatentForward(const MlaLatentProblem<T>& p, T* query, T* key, T* value, T* rstd, const Parallel& parallel) {
  const int64_t H = p.H, D = p.D, L = p.L, r = p.r, half = r / 2, Wq = L + r;
  parallel.run(mlaLatentBlocks(p.tokens), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin * kBlock; t < std::min(p.tokens, end * kBlock); ++t) {
      const int64_t n = t % p.N;
      const T *c = p.cos + n * half, *s = p.sin + n * half;
      const T* q = p.q + t * p.ldq;
      for (int64_t h = 0; h < H; ++h) turnInterleaved(q + h * (D + r) + D, query + (t * H + h) * Wq + L, c, s, half);
      const T* __restrict x = p.kv + t * p.ldkv;
      const T* __restrict g = p.norm;
      T sq = 0;
#pragma omp simd reduction(+ : sq)
      for (int64_t j = 0; j < L; ++j) sq += x[j] * x[j];
      const T st = T(1) / std::sqrt(sq / T(std::max<int64_t>(L, 1)) + T(p.eps));
      rstd[t] = st;
      T* __restrict k = key + t * (L + r);
      T* __restrict v = value + t * L;
#pragma omp simd
      for (int64_t j = 0; j < L; ++j) k[j] = x[j] * st * g[j];
      std::copy(k, k + L, v);
      turnInterleaved(x + L, k + L, c, s, half);
    }
  });
}

template <typename T>
void mlaLatentBackward(const MlaLatentProblem<T>& p, const T* dquery, const T* dkey, const T* dvalue, const T* rstd,
                       T* dq, int64_t lddq, T* dkv, int64_t lddkv, T* dnorm, const Parallel& parallel) {
  const int64_t H = p.H, D = p.D, L = p.L, r = p.r, half = r / 2, Wq = L + r;
  const int64_t blocks = mlaLatentBlocks(p.tokens);
  std::vector<T> partials(static_cast<size_t>(blocks * L), T(0));
  parallel.run(blocks, [&](int64_t begin, int64_t end) {
    std::vector<T> dyBuffer(static_cast<size_t>(L));
    std::vector<T> zeros(static_cast<size_t>(std::max(L, r)), T(0));
    T* __restrict dy = dyBuffer.data();
    const T* __restrict g = p.norm;
    for (int64_t b = begin; b < end; ++b) {
      T* __restrict part = partials.data() + b * L;
      for (int64_t t = b * kBlock; t < std::min(p.tokens, (b + 1) * kBlock); ++t) {
        const int64_t n = t % p.N;
        const T *c = p.cos + n * half, *s = p.sin + n * half;
        T* dqt = dq + t * lddq;
        for (int64_t h = 0; h < H; ++h) {
          const T* g = dquery ? dquery + (t * H + h) * Wq + L : zeros.data();
          turnInterleavedBack(g, dqt + h * (D + r) + D, c, s, half);
        }
        const T* __restrict x = p.kv + t * p.ldkv;
        const T* __restrict gk = dkey ? dkey + t * (L + r) : zeros.data();
        const T st = rstd[t];
        if (dvalue) {
          const T* __restrict gv = dvalue + t * L;
#pragma omp simd
          for (int64_t j = 0; j < L; ++j) dy[j] = gk[j] + gv[j];
        } else {
          std::copy(gk, gk + L, dy);
        }
        T dot = 0;  // ⟨u, c⟩, u = ∂y ⊙ g
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < L; ++j) {
          dot += dy[j] * g[j] * x[j];
          part[j] += dy[j] * x[j] * st;
        }
        const T coef = st * st * st * dot / T(std::max<int64_t>(L, 1));
        T* __restrict d = dkv + t * lddkv;
#pragma omp simd
        for (int64_t j = 0; j < L; ++j) d[j] = st * dy[j] * g[j] - x[j] * coef;
        turnInterleavedBack(dkey ? gk + L : zeros.data(), d + L, c, s, half);
      }
    }
  });
  for (int64_t j = 0; j < L; ++j) {
    double sum = 0;
    for (int64_t b = 0; b < blocks; ++b) sum += double(partials[size_t(b * L + j)]);
    dnorm[j] = T(sum);
  }
}

template void mlaLatentForward<float>(const MlaLatentProblem<float>&, float*, float*, float*, float*, const Parallel&);
template void mlaLatentForward<double>(const MlaLatentProblem<double>&, double*, double*, double*, double*,
                                       const Parallel&);
template void mlaLatentBackward<float>(const MlaLatentProblem<float>&, const float*, const float*, const float*,
                                       const float*, float*, int64_t, float*, int64_t, float*, const Parallel&);
template void mlaLatentBackward<double>(const MlaLatentProblem<double>&, const double*, const double*, const double*,
                                        const double*, double*, int64_t, double*, int64_t, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
