#include "kernels/tpa_factors.h"

#include <algorithm>
#include <vector>

#include "kernels/rotary_pairs.h"

namespace tensorscope::model_core::kernels {

int64_t tpaProjectionWidth(int64_t H, int64_t D, const int64_t ranks[3]) {
  int64_t w = 0;
  for (int i = 0; i < 3; ++i) w += ranks[i] == 0 ? H * D : ranks[i] * (H + D);
  return w;
}

namespace {

/// T6's half-split pairs (j, j + D/2).
template <typename T>
inline void turn(const T* in, T* out, const T* c, const T* s, int64_t half) {
  turnPairs<PairLayout::Half>(in, out, c, s, half);
}
template <typename T>
inline void turnBack(const T* in, T* out, const T* c, const T* s, int64_t half) {
  turnPairsBack<PairLayout::Half>(in, out, c, s, half);
}

template <typename T>
int64_t maxRankTimesD(const TpaFactorProblem<T>& p) {
  return std::max<int64_t>({p.ranks[0], p.ranks[1], p.ranks[2], 1}) * p.D;
}

/// The part's feature factors of one token, turned when asked: tb [R, D].
template <typename T>
inline void turnedFactors(const T* Bf, T* tb, int64_t R, int64_t D, bool on, const T* c, const T* s) {
  if (on) {
    for (int64_t r = 0; r < R; ++r) turn(Bf + r * D, tb + r * D, c, s, D / 2);
  } else {
    std::copy(Bf, Bf + R * D, tb);
  }
}

}  // namespace

template <typename T>
void tpaFactorsForward(const TpaFactorProblem<T>& p, T* qkv, const Parallel& parallel) {
  const int64_t H = p.H, D = p.D, half = D / 2, W = tpaProjectionWidth(H, D, p.ranks);
  parallel.run(p.tokens, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(static_cast<size_t>(maxRankTimesD(p)));
    T* tb = buffer.data();
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t % p.N;
      const T *c = p.cos + n * half, *s = p.sin + n * half;
      const T* in = p.proj + t * W;
      T* out = qkv + t * 3 * H * D;
      for (int i = 0; i < 3; ++i, out += H * D) {
        const int64_t R = p.ranks[i];
        if (R == 0) {  // the heads as they are (T6_kvonly's queries), turned when asked
          for (int64_t h = 0; h < H; ++h) {
            if (p.turn[i]) turn(in + h * D, out + h * D, c, s, half);
            else std::copy(in + h * D, in + (h + 1) * D, out + h * D);
          }
          in += H * D;
          continue;
        }
        const T* A = in;
        turnedFactors(in + H * R, tb, R, D, p.turn[i], c, s);
        in += R * (H + D);
        const T inv = T(1) / T(R);
        for (int64_t h = 0; h < H; ++h) {
          T* __restrict o = out + h * D;
          std::fill(o, o + D, T(0));
          for (int64_t r = 0; r < R; ++r) {
            const T a = A[h * R + r] * inv;
            const T* __restrict b = tb + r * D;
            for (int64_t d = 0; d < D; ++d) o[d] += a * b[d];
          }
        }
      }
    }
  });
}

template <typename T>
void tpaFactorsBackward(const TpaFactorProblem<T>& p, const T* g, T* dproj, const Parallel& parallel) {
  const int64_t H = p.H, D = p.D, half = D / 2, W = tpaProjectionWidth(H, D, p.ranks);
  parallel.run(p.tokens, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(static_cast<size_t>(2 * maxRankTimesD(p)));
    T* tb = buffer.data();
    T* gt = tb + maxRankTimesD(p);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t % p.N;
      const T *c = p.cos + n * half, *s = p.sin + n * half;
      const T* in = p.proj + t * W;
      T* din = dproj + t * W;
      const T* gi = g + t * 3 * H * D;
      for (int i = 0; i < 3; ++i, gi += H * D) {
        const int64_t R = p.ranks[i];
        if (R == 0) {
          for (int64_t h = 0; h < H; ++h) {
            if (p.turn[i]) turnBack(gi + h * D, din + h * D, c, s, half);
            else std::copy(gi + h * D, gi + (h + 1) * D, din + h * D);
          }
          in += H * D;
          din += H * D;
          continue;
        }
        const T* A = in;
        T* dA = din;
        T* dB = din + H * R;
        turnedFactors(in + H * R, tb, R, D, p.turn[i], c, s);
        const T inv = T(1) / T(R);
        std::fill(gt, gt + R * D, T(0));
        for (int64_t h = 0; h < H; ++h) {
          const T* __restrict gh = gi + h * D;
          for (int64_t r = 0; r < R; ++r) {
            const T* __restrict b = tb + r * D;
            T dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += gh[d] * b[d];
            dA[h * R + r] = dot * inv;
            const T a = A[h * R + r] * inv;
            T* __restrict acc = gt + r * D;
            for (int64_t d = 0; d < D; ++d) acc[d] += a * gh[d];
          }
        }
        if (p.turn[i]) {
          for (int64_t r = 0; r < R; ++r) turnBack(gt + r * D, dB + r * D, c, s, half);
        } else {
          std::copy(gt, gt + R * D, dB);
        }
        in += R * (H + D);
        din += R * (H + D);
      }
    }
  });
}

template void tpaFactorsForward<float>(const TpaFactorProblem<float>&, float*, const Parallel&);
template void tpaFactorsForward<double>(const TpaFactorProblem<double>&, double*, const Parallel&);
template void tpaFactorsBackward<float>(const TpaFactorProblem<float>&, const float*, float*, const Parallel&);
template void tpaFactorsBackward<double>(const TpaFactorProblem<double>&, const double*, double*, const Parallel&);

}  // namespace tensorscope::model_core::kernels
