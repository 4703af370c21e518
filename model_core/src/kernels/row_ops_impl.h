#pragma once
// The body of the row operations (row_ops.h), included once per instruction set by
// row_ops_{sse2,avx2,avx512}.cpp with TS_VEC_BYTES set to that set's register width. GCC's vector
// extensions give one source for every width; the compiler flags of each file pick the instructions.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "kernels/row_ops.h"

#ifndef TS_VEC_BYTES
#error "TS_VEC_BYTES must be defined"
#endif

namespace tensorscope::model_core::kernels {
namespace TS_ROW_OPS_NS {

typedef float vfloat __attribute__((vector_size(TS_VEC_BYTES)));
typedef int32_t vint __attribute__((vector_size(TS_VEC_BYTES)));
constexpr int64_t W = TS_VEC_BYTES / 4;

inline vfloat load(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }
inline vfloat splat(float a) { return vfloat{} + a; }
#if TS_VEC_BYTES == 64
/// The two 256-bit halves of a 512-bit vector, in registers. (Copying them out with memcpy, as this
/// file did before, takes the vector's address: GCC 12 then kept every accumulator that reached a
/// horizontal sum on the stack for its whole loop, a store and a reload each iteration.)
/// (__builtin_shufflevector: GCC 12's 512-bit extract intrinsics read an undefined register and warn.)
inline __m256 lowHalf(vfloat v) { return (__m256)__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7); }
inline __m256 highHalf(vfloat v) { return (__m256)__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15); }
#endif
inline float hsum(vfloat v) {
  float s = 0;
  for (int64_t k = 0; k < W; ++k) s += v[k];
  return s;
}

// min/max as single instructions: GCC 12 turns `a < b ? a : b` on vector types into a compare
// and a masked move (two instructions; the same NaN and signed-zero answers as minps/maxps, which
// return the second operand then). The clamps pass the bound first, so a NaN stays NaN.
inline vfloat vmin(vfloat a, vfloat b) {
#if TS_VEC_BYTES == 64
  return (vfloat)_mm512_maskz_min_ps(__mmask16(0xFFFF), (__m512)a, (__m512)b);  // (maskz: see expNonPositive)
#elif TS_VEC_BYTES == 32
  return (vfloat)_mm256_min_ps((__m256)a, (__m256)b);
#else
  return (vfloat)_mm_min_ps((__m128)a, (__m128)b);
#endif
}
inline vfloat vmax(vfloat a, vfloat b) {
#if TS_VEC_BYTES == 64
  return (vfloat)_mm512_maskz_max_ps(__mmask16(0xFFFF), (__m512)a, (__m512)b);
#elif TS_VEC_BYTES == 32
  return (vfloat)_mm256_max_ps((__m256)a, (__m256)b);
#else
  return (vfloat)_mm_max_ps((__m128)a, (__m128)b);
#endif
}
inline vfloat clampLow(vfloat x, float lo) { return vmax(splat(lo), x); }
inline float clampLow(float x, float lo) { return x < lo ? lo : x; }
inline vfloat clampHigh(vfloat x, float hi) { return vmin(splat(hi), x); }
inline float clampHigh(float x, float hi) { return x > hi ? hi : x; }
inline vfloat pow2(vfloat n) {  // 2^n for integral n in [-126, 127], by building the exponent bits
  const vint bits = (__builtin_convertvector(n, vint) + 127) << 23;
  return __builtin_bit_cast(vfloat, bits);
}
inline float pow2(float n) {
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// e^x, branch-free: x = n·ln2 + r with |r| <= ln2/2 (n by the 1.5·2^23 rounding trick, ln2 split in
/// two for an exact reduction), e^r by Cephes' degree-6 polynomial, 2^n from the exponent bits.
/// Inputs below -87 give e^-87 (~1.6e-38); callers pass arguments <= ~0 (shifted by the row max).
/// e^(x − fx·ln2) for the integral fx nearest x/ln2: the reduced exp both exps share.
template <typename V>
inline V expReduced(V x, V fx) {
  V r = x - fx * 0.693359375f;
  r = r - fx * -2.12194440e-4f;
  V y = r * 1.9875691500e-4f + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  return y * r * r + r + 1.0f;
}

/// x rounded to the nearest integer (|x| < 2^22) by the 1.5·2^23 trick, in float arithmetic.
template <typename V>
inline V roundNearest(V x) {
  return (x + 12582912.0f) - 12582912.0f;
}

template <typename V>
inline V expPoly(V x) {
  x = clampHigh(clampLow(x, -87.0f), 88.0f);
  const V fx = roundNearest(x * 1.44269504088896341f);
  return expReduced(x, fx) * pow2(fx);
}

void minMaxF(const float* x, int64_t n, float* mn, float* mx) {
  int64_t i = 0;
  float lo = x[0], hi = x[0];
  if (n >= W) {
    vfloat vl = load(x), vh = vl;
    for (i = W; i + W <= n; i += W) {
      const vfloat v = load(x + i);
      vl = v < vl ? v : vl;
      vh = v > vh ? v : vh;
    }
    for (int64_t k = 0; k < W; ++k) lo = vl[k] < lo ? vl[k] : lo, hi = vh[k] > hi ? vh[k] : hi;
  }
  for (; i < n; ++i) lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
  *mn = lo;
  *mx = hi;
}

void expSumDotF(const float* x, const float* v, int64_t n, float t, float c, float* sum, float* dot) {
  vfloat s{}, d{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vfloat e = expPoly(load(x + i) * t - c);
    s += e;
    d += e * load(v + i);
  }
  float ss = hsum(s), dd = hsum(d);
  for (; i < n; ++i) {
    const float e = expPoly(x[i] * t - c);
    ss += e;
    dd += e * v[i];
  }
  *sum = ss;
  *dot = dd;
}

float expWriteF(const float* x, int64_t n, float t, float c, float* out) {
  vfloat s{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vfloat e = expPoly(load(x + i) * t - c);
    store(out + i, e);
    s += e;
  }
  float ss = hsum(s);
  for (; i < n; ++i) ss += out[i] = expPoly(x[i] * t - c);
  return ss;
}

float softmaxColumnBackwardF(const float* x, const float* v, int64_t n, float t, float lse, float g, float o,
                             float* dv, float* dx, bool accumulate) {
  vfloat acc{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vfloat xi = load(x + i);
    const vfloat gp = expPoly(xi * t - lse) * g;
    store(dv + i, load(dv + i) + gp);
    const vfloat dl = gp * (load(v + i) - o);
    acc += dl * xi;
    store(dx + i, accumulate ? load(dx + i) + dl * t : dl * t);
  }
  float a = hsum(acc);
  for (; i < n; ++i) {
    const float xi = x[i];
    const float gp = expPoly(xi * t - lse) * g;
    dv[i] += gp;
    const float dl = gp * (v[i] - o);
    a += dl * xi;
    dx[i] = accumulate ? dx[i] + dl * t : dl * t;
  }
  return a;
}

void softmaxRowBackwardF(const float* p, const float* dp, int64_t n, float t, float delta, float* dx) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(dx + i, load(p + i) * (load(dp + i) - delta) * t);
  for (; i < n; ++i) dx[i] = p[i] * (dp[i] - delta) * t;
}

void axpyF(int64_t n, float a, const float* x, float* y) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(y + i, load(y + i) + load(x + i) * a);
  for (; i < n; ++i) y[i] += a * x[i];
}


float dotF(int64_t n, const float* x, const float* y) {
  vfloat s{};
  int64_t i = 0;
  for (; i + W <= n; i += W) s += load(x + i) * load(y + i);
  float ss = hsum(s);
  for (; i < n; ++i) ss += x[i] * y[i];
  return ss;
}

void mul3F(int64_t n, float a, const float* x, const float* z, float* y, bool accumulate) {
  int64_t i = 0;
  if (accumulate) {
    for (; i + W <= n; i += W) store(y + i, load(y + i) + load(x + i) * load(z + i) * a);
    for (; i < n; ++i) y[i] += a * x[i] * z[i];
  } else {
    for (; i + W <= n; i += W) store(y + i, load(x + i) * load(z + i) * a);
    for (; i < n; ++i) y[i] = a * x[i] * z[i];
  }
}

/// e^x for x <= 0 (linear THSA's φ): as expPoly, without the upper clamp. With AVX-512 the
/// reduction rounds with vrndscaleps and vscalefps applies 2^n (the scheme of llama.cpp's
/// ggml_v_expf for AVX-512): two instructions where the exponent-bit build takes four.
inline vfloat expNonPositive(vfloat x) {
#if TS_VEC_BYTES == 64
  x = clampLow(x, -87.0f);
  // (the maskz forms: GCC 12's unmasked intrinsics read an undefined register and warn)
  const __m512 fx = _mm512_maskz_roundscale_ps(__mmask16(0xFFFF), (__m512)(x * 1.44269504088896341f),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const vfloat y = expReduced(x, (vfloat)fx);
  return (vfloat)_mm512_maskz_scalef_ps(__mmask16(0xFFFF), (__m512)y, fx);
#else
  return expPoly(x);
#endif
}
inline float expNonPositive(float x) { return expPoly(x); }

inline float vmin(float a, float b) { return a < b ? a : b; }
inline float vmax(float a, float b) { return a > b ? a : b; }

/// φ(u) = elu(u) + 1 = max(u, 0) + e^min(u, 0), and φ'(u) = e^min(u, 0) (1 above zero: e^0 is exactly 1).
template <typename V>
inline V phi(V u, V& df) {
  df = expNonPositive(vmin(V{} + 0.0f, u));  // (zero first: a NaN u stays NaN)
  return vmax(V{} + 0.0f, u) + df;
}

/// The hot passes of linear THSA (phiPanel, phiBackwardBlock) work in base 2 and divided by ln 2:
/// with t = u·log2(e) (log2(e) folded into q, one product per element as before),
///   φ(u)/ln2 = max(t, 0) + 2^min(t,0)/ln2   and   φ'(u)/ln2 = 2^min(t,0)/ln2,
/// and callers multiply ln 2 back into the per-channel scalars (a, b) or the per-channel sums, so
/// the per-element work has no range reduction by ln 2 (two FMAs in Cephes' exp), no r² term, and
/// φ's sum is an add instead of an FMA. f = t − round(t) ∈ [−½, ½] and 2^f/ln2 is a degree-6
/// minimax polynomial fitted here (Remez exchange on the relative error): 9.3e-8 relative in
/// float32 Horner; the argument itself carries the rounding of u·log2(e), relative error about
/// 2·|u|·2^-24 in e^u — the conditioning exp already has on a rounded u (tests/model_core/kernels).
constexpr float kLog2e = 1.44269504088896341f, kLn2 = 0.693147180559945309f;

/// Degree 5 (the causal dimension-wise passes): the same kind of fit (Lawson's iteration on the
/// relative error, float64), 7.5e-8 relative in exact arithmetic and 1.6e-7 in float32 Horner (about
/// 1.3 ulp, against 1.1e-7 for degree 6 measured the same way on 200 001 points): one FMA fewer of
/// the dozen those passes spend per entry, on probabilities that are normalised sums of d terms.
template <int Degree = 6, typename V>
inline V exp2FracOverLn2(V f) {
  static_assert(Degree == 5 || Degree == 6);
  if constexpr (Degree == 5) {
    V p = f * 1.9153900211676955e-3f + 1.3958855532109737e-2f;
    p = p * f + 8.007986843585968e-2f;
    p = p * f + 3.4656593203544617e-1f;
    p = p * f + 0.9999997019767761f;
    return p * f + 1.442695140838623f;
  } else {
    V p = f * 2.2139327484183013e-4f + 1.9332014489918947e-3f;
    p = p * f + 1.3876546174287796e-2f;
    p = p * f + 8.007431775331497e-2f;
    p = p * f + 3.4657353162765503e-1f;
    p = p * f + 1.0f;
    return p * f + 1.4426950216293335f;
  }
}

/// 2^t/ln2 for t <= 0 (the polynomial of exp2FracOverLn2<Degree>).
template <int Degree = 6>
inline vfloat exp2NonPositiveOverLn2(vfloat t) {
#if TS_VEC_BYTES == 64
  // vreduceps gives f = t − round(t) in one instruction (0 for ±∞ and huge t, so no clamp is
  // needed: vscalefps then scales by 2^-∞ = 0); round(t) = t − f is exact.
  const vfloat f = (vfloat)_mm512_maskz_reduce_ps(__mmask16(0xFFFF), (__m512)t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return (vfloat)_mm512_maskz_scalef_ps(__mmask16(0xFFFF), (__m512)exp2FracOverLn2<Degree>(f), (__m512)(t - f));
#else
  t = clampLow(t, -126.0f);
  const vfloat fx = roundNearest(t);
  return exp2FracOverLn2<Degree>(t - fx) * pow2(fx);
#endif
}
template <int Degree = 6>
inline float exp2NonPositiveOverLn2(float t) {
  t = clampLow(t, -126.0f);
  const float fx = roundNearest(t);
  return exp2FracOverLn2<Degree>(t - fx) * pow2(fx);
}

/// φ(u)/ln2 from t = u·log2(e), and e = φ'(u)/ln2.
template <typename V>
inline V phiBase2(V t, V& e) {
  e = exp2NonPositiveOverLn2(vmin(V{} + 0.0f, t));  // (zero first: a NaN t stays NaN)
  return vmax(V{} + 0.0f, t) + e;
}

inline float hsumFast(vfloat v) {  // halves added first: 8 dependent adds instead of 16 with AVX-512
#if TS_VEC_BYTES == 64
  typedef float vhalf __attribute__((vector_size(32)));
  const vhalf lo = (vhalf)_mm256_add_ps(lowHalf(v), highHalf(v));
  float s = 0;
  for (int k = 0; k < 8; ++k) s += lo[k];
  return s;
#else
  return hsum(v);
#endif
}

void phiRowF(const float* x, int64_t n, float* f) {
  int64_t i = 0;
  vfloat d;
  float ds;
  for (; i + W <= n; i += W) store(f + i, phi(load(x + i), d));
  for (; i < n; ++i) f[i] = phi(x[i], ds);
}

void phiPrimeScaleF(const float* x, int64_t n, float* y) {
  int64_t i = 0;
  vfloat d;
  float ds;
  for (; i + W <= n; i += W) phi(load(x + i), d), store(y + i, load(y + i) * d);
  for (; i < n; ++i) phi(x[i], ds), y[i] *= ds;
}

/// NV vectors of channels; the broadcasts of q_s and z_s serve all of them.
template <int NV, bool Causal>
void phiPanelBlock(const float* ct, int64_t ldc, float* S, int64_t lds, const float* q, const float* z, int64_t R,
                   const float* k, const float* v, float* num, float* den) {
  vfloat an[NV], ad[NV], vv[NV];
  for (int j = 0; j < NV; ++j) {
    an[j] = ad[j] = splat(0.0f);
    if constexpr (Causal) vv[j] = load(v + j * W);
  }
  for (int64_t s = 0; s < R; ++s) {
    const vfloat qs = splat(q[s] * kLog2e), zs = splat(z[s]);
    const float* cr = ct + s * ldc;
    float* sr = S + s * lds;
    for (int j = 0; j < NV; ++j) {
      vfloat sv = load(sr + j * W);
      if constexpr (Causal) {
        sv += vv[j] * k[s];
        store(sr + j * W, sv);
      }
      vfloat e;
      const vfloat f = phiBase2(load(cr + j * W) * qs, e);  // φ/ln2
      an[j] += f * sv;
      ad[j] += f * zs;
    }
  }
  for (int j = 0; j < NV; ++j) store(num + j * W, an[j] * kLn2), store(den + j * W, ad[j] * kLn2);
}

template <bool Causal>
void phiPanelAll(const float* ct, int64_t ldc, float* S, int64_t lds, const float* q, const float* z, int64_t R,
                 int64_t width, const float* k, const float* v, float* num, float* den) {
  constexpr int64_t kMax = 4;  // 4 vectors: 8 accumulators and their temporaries fit every register file
  for (int64_t j = 0; j < width; j += kMax * W) {
    const int64_t nv = std::min<int64_t>(kMax, (width - j) / W);
    const float* vj = Causal ? v + j : nullptr;
    switch (nv) {
      case 4: phiPanelBlock<4, Causal>(ct + j, ldc, S + j, lds, q, z, R, k, vj, num + j, den + j); break;
      case 3: phiPanelBlock<3, Causal>(ct + j, ldc, S + j, lds, q, z, R, k, vj, num + j, den + j); break;
      case 2: phiPanelBlock<2, Causal>(ct + j, ldc, S + j, lds, q, z, R, k, vj, num + j, den + j); break;
      default: phiPanelBlock<1, Causal>(ct + j, ldc, S + j, lds, q, z, R, k, vj, num + j, den + j); break;
    }
  }
}

void phiPanelF(const float* ct, int64_t ldc, float* S, int64_t lds, const float* q, const float* z, int64_t R,
               int64_t width, const float* k, const float* v, float* num, float* den) {
  if (k) phiPanelAll<true>(ct, ldc, S, lds, q, z, R, width, k, v, num, den);
  else phiPanelAll<false>(ct, ldc, S, lds, q, z, R, width, k, v, num, den);
}

inline vfloat loadAs(const float* p, vfloat) { return load(p); }
inline float loadAs(const float* p, float) { return *p; }
inline void storeAs(float* p, vfloat v) { store(p, v); }
inline void storeAs(float* p, float v) { *p = v; }

/// The lanes [i, i + lanes of V) of a PhiBackwardBlock (V = vfloat, or float for the tail): C's
/// rows, the states, ∂S̄ and ∂C of the ROWS channels live in registers across the positions; acc
/// holds the causal value-gradient partial sums per (position, channel), lanes of V each.
template <int ROWS, bool Causal, typename V>
inline void phiBackwardLanes(const PhiBackwardBlock<float>& p, int64_t i, float* acc) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const int64_t R = p.R;
  V c[ROWS], S[ROWS], dS[ROWS], dC[ROWS];
  for (int r = 0; r < ROWS; ++r) {
    c[r] = loadAs(p.c + r * R + i, V{});
    S[r] = loadAs(p.s + r * R + i, V{});
    dS[r] = loadAs(p.ds + r * R + i, V{});
    dC[r] = loadAs(p.dc + r * R + i, V{});
  }
  V dzAll{};
  for (int64_t j = p.len - 1; j >= 0; --j) {
    const V qj = loadAs(p.q + j * p.ldq + i, V{}), qt = qj * kLog2e;
    const V zj = loadAs(p.z + (Causal ? j * R : 0) + i, V{});
    V kj{}, dkj{};
    if constexpr (Causal) kj = loadAs(p.k + j * R + i, V{});
    V dqj{}, dzj{};
    for (int r = 0; r < ROWS; ++r) {
      // ln 2 goes into a and b: φ and φ' come divided by it (phiBase2).
      const float ar = p.a[j * p.ldab + r] * kLn2, br = p.b[j * p.ldab + r] * kLn2;
      V e;
      const V f = phiBase2(c[r] * qt, e);
      const V du = (S[r] * ar + zj * br) * e;
      dqj += du * c[r];
      dC[r] += du * qj;
      dS[r] += f * ar;
      dzj += f * br;
      if constexpr (Causal) {
        const float wr = p.w[j * p.ldw + r];
        float* at = acc + (j * ROWS + r) * L;
        storeAs(at, loadAs(at, V{}) + dS[r] * kj);
        dkj += dS[r] * wr;
        S[r] -= kj * wr;  // the state before position j
      }
    }
    float* dq = p.dq + j * p.lddq + i;
    storeAs(dq, loadAs(dq, V{}) + dqj);
    if constexpr (Causal) {
      float* dz = p.dz + j * R + i;
      storeAs(dz, loadAs(dz, V{}) + dzj);
      float* dk = p.dk + j * p.lddk + i;
      storeAs(dk, loadAs(dk, V{}) + dkj);
    } else {
      dzAll += dzj;
    }
  }
  for (int r = 0; r < ROWS; ++r) {
    storeAs(p.ds + r * R + i, dS[r]);
    storeAs(p.dc + r * R + i, dC[r]);
  }
  if constexpr (!Causal) storeAs(p.dz + i, loadAs(p.dz + i, V{}) + dzAll);
}

template <int ROWS, bool Causal>
void phiBackwardBlockImpl(const PhiBackwardBlock<float>& p) {
  // Causal partial sums: W lanes per (position, channel) for the vectors, one for the tail.
  float accVec[Causal ? kPhiBlockMaxLen * ROWS * W : 1], accTail[Causal ? kPhiBlockMaxLen * ROWS : 1];
  if constexpr (Causal) {
    std::fill(accVec, accVec + p.len * ROWS * W, 0.0f);
    std::fill(accTail, accTail + p.len * ROWS, 0.0f);
  }
  int64_t i = 0;
  for (; i + W <= p.R; i += W) phiBackwardLanes<ROWS, Causal, vfloat>(p, i, accVec);
  for (; i < p.R; ++i) phiBackwardLanes<ROWS, Causal, float>(p, i, accTail);
  if constexpr (Causal)
    for (int64_t j = 0; j < p.len; ++j)
      for (int r = 0; r < ROWS; ++r)
        p.sums[j * p.ldsums + r] = hsumFast(load(accVec + (j * ROWS + r) * W)) + accTail[j * ROWS + r];
}

template <bool Causal>
void phiBackwardBlockRows(const PhiBackwardBlock<float>& p) {
  static_assert(kPhiBlockMaxRows == 4);
  switch (p.rows) {
    case 4: phiBackwardBlockImpl<4, Causal>(p); break;
    case 3: phiBackwardBlockImpl<3, Causal>(p); break;
    case 2: phiBackwardBlockImpl<2, Causal>(p); break;
    default: phiBackwardBlockImpl<1, Causal>(p); break;
  }
}

void phiBackwardBlockF(const PhiBackwardBlock<float>& p) {
  if (p.k) phiBackwardBlockRows<true>(p);
  else phiBackwardBlockRows<false>(p);
}

// ---- GELU of the transformer's feed-forward layer: x·Φ(x) with the exact (erf) Φ ---------------
// Φ(x) = 1 − ½·erfc(x/√2) for x ≥ 0 and ½·erfc(|x|/√2) below, erfc(z) = τ·e^(−z² + P(τ)) with
// τ = 1/(1 + z/2) and P Numerical Recipes' degree-9 Chebyshev fit (erfcc, §6.2: fractional error
// below 1.2e-7 for every z ≥ 0). One exp a value; the backward adds e^(−x²/2) for φ(x).

template <typename V>
inline V absV(V x) {
  return vmax(x, -x);
}

/// ½·erfc(|x|/√2) = Φ(−|x|), and z² = x²/2 for the caller's density.
template <typename V>
inline V halfErfc(V x, V& z2) {
  const V z = absV(x) * 0.7071067811865476f;
  z2 = z * z;
  const V t = 1.0f / (z * 0.5f + 1.0f);
  V p = t * 0.17087277f - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return 0.5f * t * expPoly(p - z2);
}

template <typename V>
inline V normalCdf(V x, V& z2) {
  const V h = halfErfc(x, z2);
  return x >= 0.0f ? 1.0f - h : h;
}

void geluRowF(const float* x, int64_t n, float* y) {
  int64_t i = 0;
  vfloat z2;
  float zs;
  for (; i + W <= n; i += W) {
    const vfloat v = load(x + i);
    store(y + i, v * normalCdf(v, z2));
  }
  for (; i < n; ++i) y[i] = x[i] * normalCdf(x[i], zs);
}

void geluBackwardRowF(const float* x, const float* g, int64_t n, float* dx) {
  constexpr float kInvSqrt2Pi = 0.3989422804014327f;
  int64_t i = 0;
  vfloat z2;
  float zs;
  for (; i + W <= n; i += W) {
    const vfloat v = load(x + i);
    const vfloat cdf = normalCdf(v, z2);
    store(dx + i, load(g + i) * (cdf + v * (expPoly(-z2) * kInvSqrt2Pi)));
  }
  for (; i < n; ++i) {
    const float cdf = normalCdf(x[i], zs);
    dx[i] = g[i] * (cdf + x[i] * (expPoly(-zs) * kInvSqrt2Pi));
  }
}

// One row of a 2-D cross-correlation (multi-token attention's key-query convolution): four vectors
// of outputs at a time keep four independent chains of multiply-adds over the taps.
void correlateRowF(const float* w, int64_t taps, const float* x, int64_t n, float* y) {
  int64_t m = 0;
  for (; m + 4 * W <= n; m += 4 * W) {
    vfloat a0 = load(y + m), a1 = load(y + m + W), a2 = load(y + m + 2 * W), a3 = load(y + m + 3 * W);
    for (int64_t j = 0; j < taps; ++j) {
      const float wj = w[j];
      const float* xj = x + m + j;
      a0 += load(xj) * wj;
      a1 += load(xj + W) * wj;
      a2 += load(xj + 2 * W) * wj;
      a3 += load(xj + 3 * W) * wj;
    }
    store(y + m, a0);
    store(y + m + W, a1);
    store(y + m + 2 * W, a2);
    store(y + m + 3 * W, a3);
  }
  for (; m + W <= n; m += W) {
    vfloat a = load(y + m);
    for (int64_t j = 0; j < taps; ++j) a += load(x + m + j) * w[j];
    store(y + m, a);
  }
  for (; m < n; ++m) {
    float s = y[m];
    for (int64_t j = 0; j < taps; ++j) s += w[j] * x[m + j];
    y[m] = s;
  }
}

// The kernel gradient of correlateRow: up to eight taps at a time, each its own vector accumulator.
template <int J>
void correlateDotsChunk(const float* a, const float* x, int64_t n, float* r) {
  vfloat acc[J] = {};
  int64_t m = 0;
  for (; m + W <= n; m += W) {
    const vfloat av = load(a + m);
    for (int j = 0; j < J; ++j) acc[j] += av * load(x + m + j);
  }
  for (int j = 0; j < J; ++j) {
    float s = hsum(acc[j]);
    for (int64_t t = m; t < n; ++t) s += a[t] * x[t + j];
    r[j] += s;
  }
}

void correlateDotsF(const float* a, const float* x, int64_t n, int64_t taps, float* r) {
  for (int64_t j0 = 0; j0 < taps; j0 += 8) {
    switch (std::min<int64_t>(8, taps - j0)) {
      case 8: correlateDotsChunk<8>(a, x + j0, n, r + j0); break;
      case 7: correlateDotsChunk<7>(a, x + j0, n, r + j0); break;
      case 6: correlateDotsChunk<6>(a, x + j0, n, r + j0); break;
      case 5: correlateDotsChunk<5>(a, x + j0, n, r + j0); break;
      case 4: correlateDotsChunk<4>(a, x + j0, n, r + j0); break;
      case 3: correlateDotsChunk<3>(a, x + j0, n, r + j0); break;
      case 2: correlateDotsChunk<2>(a, x + j0, n, r + j0); break;
      default: correlateDotsChunk<1>(a, x + j0, n, r + j0); break;
    }
  }
}

// The causal dimension-wise attention rows: kernels/row_ops_dimwise_impl.h (included below).

}  // namespace TS_ROW_OPS_NS
}  // namespace tensorscope::model_core::kernels

#include "kernels/row_ops_dimwise_impl.h"
