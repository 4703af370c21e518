#pragma once
// The body of the row operations (row_ops.h), included once per instruction set by
// row_ops_{sse2,avx2,avx512}.cpp with TS_VEC_BYTES set to that set's register width. GCC's vector
// extensions give one source for every width; the compiler flags of each file pick the instructions.

#include <cmath>
#include <cstring>

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
inline float hsum(vfloat v) {
  float s = 0;
  for (int64_t k = 0; k < W; ++k) s += v[k];
  return s;
}

inline vfloat clampLow(vfloat x, float lo) { return x < lo ? splat(lo) : x; }
inline float clampLow(float x, float lo) { return x < lo ? lo : x; }
inline vfloat clampHigh(vfloat x, float hi) { return x > hi ? splat(hi) : x; }
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
template <typename V>
inline V expPoly(V x) {
  x = clampHigh(clampLow(x, -87.0f), 88.0f);
  const V fx = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  V r = x - fx * 0.693359375f;
  r = r - fx * -2.12194440e-4f;
  V y = r * 1.9875691500e-4f + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  return y * pow2(fx);
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

/// φ(u) = elu(u) + 1 and φ'(u): u + 1 and 1 above zero, e^u for both below.
inline void phi(vfloat u, vfloat& f, vfloat& df) {
  const vfloat e = expPoly(u < 0.0f ? u : splat(0.0f));
  f = u > 0.0f ? u + 1.0f : e;
  df = u > 0.0f ? splat(1.0f) : e;
}
inline void phi(float u, float& f, float& df) {
  const float e = expPoly(u < 0.0f ? u : 0.0f);
  f = u > 0.0f ? u + 1.0f : e;
  df = u > 0.0f ? 1.0f : e;
}

void phiDot2F(const float* c, const float* q, const float* s, const float* z, int64_t n, float* num, float* den) {
  vfloat a{}, b{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    vfloat f, df;
    phi(load(c + i) * load(q + i), f, df);
    a += f * load(s + i);
    b += f * load(z + i);
  }
  float sa = hsum(a), sb = hsum(b);
  for (; i < n; ++i) {
    float f, df;
    phi(c[i] * q[i], f, df);
    sa += f * s[i];
    sb += f * z[i];
  }
  *num = sa;
  *den = sb;
}

void advancePhiDot2F(const float* c, const float* q, float* s, const float* k, float w, const float* z, int64_t n,
                     float* num, float* den) {
  vfloat a{}, b{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vfloat si = load(s + i) + load(k + i) * w;
    store(s + i, si);
    vfloat f, df;
    phi(load(c + i) * load(q + i), f, df);
    a += f * si;
    b += f * load(z + i);
  }
  float sa = hsum(a), sb = hsum(b);
  for (; i < n; ++i) {
    s[i] += w * k[i];
    float f, df;
    phi(c[i] * q[i], f, df);
    sa += f * s[i];
    sb += f * z[i];
  }
  *num = sa;
  *den = sb;
}

/// phiBackward; with Causal also the value/key-feature terms of the updated suffix row (see row_ops.h).
template <bool Causal>
float phiBackwardImpl(const float* c, const float* q, const float* s, const float* z, int64_t n, float a, float b,
                      float* dq, float* dc, float* ds, float* dz, const float* k, float w, float* dk) {
  vfloat acc{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vfloat ci = load(c + i), qi = load(q + i);
    vfloat f, df;
    phi(ci * qi, f, df);
    const vfloat du = (load(s + i) * a + load(z + i) * b) * df;
    store(dq + i, load(dq + i) + du * ci);
    store(dc + i, load(dc + i) + du * qi);
    const vfloat dsi = load(ds + i) + f * a;
    store(ds + i, dsi);
    store(dz + i, load(dz + i) + f * b);
    if constexpr (Causal) {
      acc += dsi * load(k + i);
      store(dk + i, load(dk + i) + dsi * w);
    }
  }
  float sum = hsum(acc);
  for (; i < n; ++i) {
    float f, df;
    phi(c[i] * q[i], f, df);
    const float du = (s[i] * a + z[i] * b) * df;
    dq[i] += du * c[i];
    dc[i] += du * q[i];
    ds[i] += f * a;
    dz[i] += f * b;
    if constexpr (Causal) {
      sum += ds[i] * k[i];
      dk[i] += ds[i] * w;
    }
  }
  return sum;
}

void phiBackwardF(const float* c, const float* q, const float* s, const float* z, int64_t n, float a, float b,
                  float* dq, float* dc, float* ds, float* dz) {
  phiBackwardImpl<false>(c, q, s, z, n, a, b, dq, dc, ds, dz, nullptr, 0.0f, nullptr);
}

float phiBackwardCausalF(const float* c, const float* q, const float* s, const float* z, int64_t n, float a, float b,
                         float* dq, float* dc, float* ds, float* dz, const float* k, float w, float* dk) {
  return phiBackwardImpl<true>(c, q, s, z, n, a, b, dq, dc, ds, dz, k, w, dk);
}

}  // namespace TS_ROW_OPS_NS
}  // namespace tensorscope::model_core::kernels
