#pragma once
// The float rows of causal dimension-wise attention (kernels/dimwise_causal.h, row_ops.h), included
// by row_ops_impl.h once per instruction set, inside that set's namespace.

namespace tensorscope::model_core::kernels {
namespace TS_ROW_OPS_NS {

/// Σ (Max false) or max (Max true) of the lanes by halving: a tree of log2(W) shuffle steps, not
/// W − 1 dependent adds.
template <bool Max>
inline float reduceTree(vfloat v) {
  auto op = [](__m128 a, __m128 b) { return Max ? _mm_max_ps(a, b) : _mm_add_ps(a, b); };
#if TS_VEC_BYTES == 64
  // (halves by memcpy: GCC 12's _mm512_reduce_* read an undefined register and warn)
  __m256 lo, hi;
  std::memcpy(&lo, &v, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
  const __m256 h = Max ? _mm256_max_ps(lo, hi) : _mm256_add_ps(lo, hi);
  __m128 s = op(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
#elif TS_VEC_BYTES == 32
  __m128 s = op(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
#else
  __m128 s = (__m128)v;
#endif
  s = op(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(op(s, _mm_shuffle_ps(s, s, 1)));
}
inline float hsumTree(vfloat v) { return reduceTree<false>(v); }
inline float hmaxTree(vfloat v) { return reduceTree<true>(v); }

/// log x for positive normal x: Cephes' logf (x = m·2^e with m in [√½, √2), a degree-8
/// polynomial in m − 1, ln 2 split in two), the scheme of PyTorch's Vectorized<float>::log.
inline vfloat logPoly(vfloat x) {
  const vint bits = __builtin_bit_cast(vint, x);
  vint e = (bits >> 23) - 126;                                                 // x = m·2^e, m in [½, 1)
  vfloat m = __builtin_bit_cast(vfloat, (bits & 0x007FFFFF) | 0x3F000000);
  const vint small = m < 0.707106781186547524f;                                // −1 where m < √½
  e += small;
  m = (small ? m + m : m) - 1.0f;
  const vfloat fe = __builtin_convertvector(e, vfloat), z = m * m;
  vfloat y = m * 7.0376836292e-2f - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z + fe * -2.12194440e-4f - 0.5f * z;
  return m + y + fe * 0.693359375f;
}

/// One row of dimwiseForwardRowsF: the rank-one update and the row maximum, then one pass taking
/// e = e^(t·S − shift), Σe and, for CF > 0, the CF filter products Σ W_c·e·v (written raw to out);
/// CF = 0 writes e ⊙ v to scratch and takes the c products from it. Returns Σe; *shift is set.
template <int CF>
float dimwiseForwardRow(const DimwiseForwardRows<float>& p, int64_t r, float* shift) {
  // (The fields are copied to locals: the stores, memcpy, could alias the struct and force reloads.)
  const int64_t d = p.d, ldw = p.ldw;
  float* S = p.S + r * d;
  float* scratch = p.scratch;
  const float qj = p.q[r], t = p.t;
  const float *w = p.w + r * d, *k = p.k, *v = p.v;
  int64_t i = 0;
  float mx = -INFINITY;
  if (d >= W) {
    vfloat vm = splat(-INFINITY);
    for (; i + W <= d; i += W) {
      const vfloat s = load(S + i) + load(k + i) * qj;
      store(S + i, s);
      vm = vmax(vm, s);
    }
    mx = hmaxTree(vm);
  }
  for (; i < d; ++i) {
    S[i] += qj * k[i];
    mx = S[i] > mx ? S[i] : mx;
  }
  // In base 2 (as linear THSA's passes): e = 2^(t2·S − t2·max)/ln2 = e^(t·S − shift)/ln2 with
  // t2 = t·log2(e); the 1/ln2 cancels in the normalised products and the log-sum-exp takes ln(ln2).
  const float t2 = t * kLog2e, sh = t2 * mx;  // t > 0
  *shift = sh * kLn2;
  vfloat vs{}, acc[CF > 0 ? CF : 1]{};
  for (i = 0; i + W <= d; i += W) {
    const vfloat e = exp2NonPositiveOverLn2(load(S + i) * t2 - sh), u = e * load(v + i);
    vs += e;
    if constexpr (CF == 0) store(scratch + i, u);
    for (int c = 0; c < CF; ++c) acc[c] += load(w + c * ldw + i) * u;
  }
  float sum = hsumTree(vs), dots[CF > 0 ? CF : 1];
  for (int c = 0; c < CF; ++c) dots[c] = hsumTree(acc[c]);
  for (; i < d; ++i) {
    const float e = exp2NonPositiveOverLn2(S[i] * t2 - sh), u = e * v[i];
    sum += e;
    if constexpr (CF == 0) scratch[i] = u;
    for (int c = 0; c < CF; ++c) dots[c] += w[c * ldw + i] * u;
  }
  if constexpr (CF == 0)
    for (int64_t c = 0; c < p.c; ++c) p.out[c * p.ldo + r] = dotF(d, w + c * ldw, scratch);
  for (int c = 0; c < CF; ++c) p.out[c * p.ldo + r] = dots[c];
  return sum;
}

constexpr float kLnLn2 = -0.366512920581664327f;  // ln(ln 2)

template <int CF>
void dimwiseForwardRowsImpl(const DimwiseForwardRows<float>& p) {
  constexpr int64_t kChunk = 16;  // rows whose log-sum-exps are taken together (a multiple of W)
  alignas(64) float sums[kChunk], shifts[kChunk], lse[kChunk], inverse[kChunk];
  for (int64_t r0 = 0; r0 < p.rows; r0 += kChunk) {
    const int64_t n = std::min(kChunk, p.rows - r0);
    for (int64_t r = 0; r < kChunk; ++r) sums[r] = r < n ? dimwiseForwardRow<CF>(p, r0 + r, shifts + r) : 1.0f;
    for (int64_t r = n; r < kChunk; ++r) shifts[r] = 0.0f;
    for (int64_t r = 0; r < kChunk; r += W) {
      const vfloat s = load(sums + r);
      store(lse + r, load(shifts + r) + (logPoly(s) + kLnLn2));
      store(inverse + r, splat(1.0f) / s);
    }
    for (int64_t r = 0; r < n; ++r) p.lse[r0 + r] = lse[r];
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t r = 0; r < n; ++r) p.out[c * p.ldo + r0 + r] *= inverse[r];
  }
}

void dimwiseForwardRowsF(const DimwiseForwardRows<float>& p) {
  switch (p.c) {
    case 1: dimwiseForwardRowsImpl<1>(p); break;
    case 2: dimwiseForwardRowsImpl<2>(p); break;
    case 3: dimwiseForwardRowsImpl<3>(p); break;
    case 4: dimwiseForwardRowsImpl<4>(p); break;
    default: dimwiseForwardRowsImpl<0>(p); break;
  }
}

void dimwiseRowRecomputeF(float* S, const float* k, float qj, int64_t d, float t, float lse, float* p) {
  // p = e^(t·S − lse) = 2^(t2·S − lse·log2(e)) = 2^(t2·S − off)/ln2 with off = lse·log2(e) − log2(ln 2):
  // the forward's base-2 exp, its argument still <= 0.
  const float t2 = t * kLog2e, off = lse * kLog2e + 0.528766372162151f;
  int64_t i = 0;
  for (; i + W <= d; i += W) {
    const vfloat s = load(S + i) + load(k + i) * qj;
    store(S + i, s);
    store(p + i, exp2NonPositiveOverLn2(s * t2 - off));
  }
  for (; i < d; ++i) {
    S[i] += qj * k[i];
    p[i] = exp2NonPositiveOverLn2(S[i] * t2 - off);
  }
}

/// dimwiseBackwardRunF for L positions and CF filters (1-4; 0: any count, read from a.c). Pass 1
/// takes every position's δ = ⟨p, v ⊙ G⟩ (G = Σ_c g_c·W_c); pass 2 walks the row one vector of
/// columns at a time, the positions from the last to the first inside it, with that vector of D,
/// of the filter rows and of their gradients in registers across the L positions, and the L
/// vectors of ⟨D, k⟩ across the whole row.
template <int L, int CF>
void dimwiseBackwardRunImpl(const DimwiseBackwardRun<float>& a) {
  const int64_t d = a.d, C = CF > 0 ? CF : a.c, ldw = a.ldw, ldp = a.ldp, ldx = a.ldx, lddx = a.lddx;
  const float *p = a.p, *v = a.v, *k = a.k, *w = a.w;
  float *dW = a.dW, *Dr = a.D, *dv = a.dv, *dk = a.dk;
  constexpr int CR = CF > 0 ? CF : 1;
  float g[L][CR], delta[L], t[L], qj[L];
  for (int l = 0; l < L; ++l) {
    t[l] = a.t[l], qj[l] = a.q[l * ldx];
    for (int c = 0; c < CF; ++c) g[l][c] = a.g[l * a.ldgi + c * a.ldgc];
  }
  auto gAt = [&](int l, int64_t c) { return CF > 0 ? g[l][c] : a.g[l * a.ldgi + c * a.ldgc]; };
  for (int l = 0; l < L; ++l) {
    const float *pl = p + l * ldp, *vl = v + l * ldx;
    vfloat vd{};
    int64_t i = 0;
    for (; i + W <= d; i += W) {
      vfloat G{};
      for (int64_t c = 0; c < C; ++c) G += load(w + c * ldw + i) * gAt(l, c);
      vd += load(pl + i) * load(vl + i) * G;
    }
    float sum = hsumTree(vd);
    for (; i < d; ++i) {
      float G = 0;
      for (int64_t c = 0; c < C; ++c) G += w[c * ldw + i] * gAt(l, c);
      sum += pl[i] * vl[i] * G;
    }
    delta[l] = sum;
  }
  vfloat vq[L] = {};
  int64_t i = 0;
  for (; i + W <= d; i += W) {
    vfloat wc[CR], dwc[CR];
    for (int c = 0; c < CF; ++c) wc[c] = load(w + c * ldw + i), dwc[c] = load(dW + c * ldw + i);
    vfloat D = load(Dr + i);
    for (int l = L - 1; l >= 0; --l) {
      const vfloat pl = load(p + l * ldp + i), vl = load(v + l * ldx + i), pv = pl * vl;
      vfloat G{};
      if constexpr (CF > 0) {
        for (int c = 0; c < CF; ++c) G += wc[c] * g[l][c], dwc[c] += pv * g[l][c];
      } else {
        for (int64_t c = 0; c < C; ++c) {
          const float gc = gAt(l, c);
          G += load(w + c * ldw + i) * gc;
          store(dW + c * ldw + i, load(dW + c * ldw + i) + pv * gc);
        }
      }
      float* dvl = dv + l * lddx + i;
      store(dvl, load(dvl) + pl * G);
      D += pl * (vl * G - delta[l]) * t[l];
      float* dkl = dk + l * lddx + i;
      store(dkl, load(dkl) + D * qj[l]);
      vq[l] += D * load(k + l * ldx + i);
    }
    store(Dr + i, D);
    for (int c = 0; c < CF; ++c) store(dW + c * ldw + i, dwc[c]);
  }
  float dq[L];
  for (int l = 0; l < L; ++l) dq[l] = hsumTree(vq[l]);
  for (; i < d; ++i) {
    float D = Dr[i];
    for (int l = L - 1; l >= 0; --l) {
      const float pl = p[l * ldp + i], vl = v[l * ldx + i];
      float G = 0;
      for (int64_t c = 0; c < C; ++c) {
        const float gc = gAt(l, c);
        G += w[c * ldw + i] * gc;
        dW[c * ldw + i] += pl * vl * gc;
      }
      dv[l * lddx + i] += pl * G;
      D += pl * (vl * G - delta[l]) * t[l];
      dk[l * lddx + i] += D * qj[l];
      dq[l] += D * k[l * ldx + i];
    }
    Dr[i] = D;
  }
  for (int l = 0; l < L; ++l) a.dq[l * a.lddq] = dq[l];
}

template <int L>
void dimwiseBackwardRunFilters(const DimwiseBackwardRun<float>& a) {
  switch (a.c) {
    case 1: dimwiseBackwardRunImpl<L, 1>(a); break;
    case 2: dimwiseBackwardRunImpl<L, 2>(a); break;
    case 3: dimwiseBackwardRunImpl<L, 3>(a); break;
    case 4: dimwiseBackwardRunImpl<L, 4>(a); break;
    default: dimwiseBackwardRunImpl<L, 0>(a); break;
  }
}

void dimwiseBackwardRunF(const DimwiseBackwardRun<float>& a) {
  static_assert(kDimwiseRunMax == 4);
  switch (a.len) {
    case 4: dimwiseBackwardRunFilters<4>(a); break;
    case 3: dimwiseBackwardRunFilters<3>(a); break;
    case 2: dimwiseBackwardRunFilters<2>(a); break;
    default: dimwiseBackwardRunFilters<1>(a); break;
  }
}

}  // namespace TS_ROW_OPS_NS
}  // namespace tensorscope::model_core::kernels
