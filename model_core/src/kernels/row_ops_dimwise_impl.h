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
  // (halves by lowHalf/highHalf, vector shuffles: GCC 12's _mm512_reduce_* read an undefined
  // register and warn, and copying the halves out by memcpy kept the accumulators on the stack)
  const __m256 lo = lowHalf(v), hi = highHalf(v);
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

/// Base-2 orders by which the shift of dimwiseForwardPanelF may exceed a row's maximum before the
/// exp pass is taken again with the maximum. Below it the largest term is still ≥ 2^-32/ln2, so what
/// leaves float32's range is what lies 94 orders below the maximum: nothing a sum of ≤ 2^31 terms
/// would keep.
constexpr float kDimwiseShiftSlack = 32.0f;

constexpr float kLnLn2 = -0.366512920581664327f;  // ln(ln 2)

/// The exp pass of lanes [g·W, g·W + W) of a panel (row_ops.h, DimwisePanel), one column m per
/// iteration and one state row per lane, so that nothing is summed across lanes: with the state
/// column already updated (Update false) or updating it on the way (Update true: S += q·k[m], stored,
/// and the lanes' new maxima into *mx), e = 2^(t2·S − sh)/ln2, *sum = Σ_m e and, for CF > 0, the CF
/// filter products acc[c] = Σ_m W_c·e·v[m]; CF = 0 writes e·v[m] to the scratch columns instead.
template <int CF, bool Update>
inline void dimwisePanelPass(const DimwisePanel<float>& p, int64_t g, vfloat q, float t2, vfloat sh, vfloat* sum,
                             vfloat* acc, vfloat* mx) {
  // (The fields are copied to locals: the stores, memcpy, could alias the struct and force reloads.)
  constexpr int64_t P = kDimwisePanel;
  const int64_t d = p.d;
  float* S = p.S + g * W;
  float* scratch = p.scratch + g * W;
  const float *w = p.w + g * W, *k = p.k, *v = p.v;
  vfloat vs{}, vm = splat(-INFINITY), a[CF > 0 ? CF : 1]{};
  for (int64_t m = 0; m < d; ++m) {
    vfloat s = load(S + m * P);
    if constexpr (Update) {
      s += q * k[m];
      store(S + m * P, s);
      vm = vmax(vm, s);
    }
    const vfloat e = exp2NonPositiveOverLn2(s * t2 - sh), u = e * v[m];
    vs += e;
    if constexpr (CF == 0) store(scratch + m * P, u);
    for (int c = 0; c < CF; ++c) a[c] += load(w + (c * d + m) * P) * u;
  }
  *sum = vs;
  for (int c = 0; c < CF; ++c) acc[c] = a[c];
  if constexpr (Update) *mx = vm;
}

/// dimwiseForwardPanelF with CF filters (1-4; 0: any count, through the scratch columns). Each group
/// of W lanes takes its shift before its pass from a bound on the new row maxima:
///   max_m S'[r,m] ≤ max_m S[r,m] + max_m q_r·k[m] = rowMax[r] + (q_r ≥ 0 ? q_r·max k : q_r·min k),
/// rowMax[r] the exact maximum the previous position left (then updated); so the update, the maximum
/// and the exp are one pass. The bound exceeds the maximum by at most |q_r|·(max k − min k); where it
/// does by more than kDimwiseShiftSlack (scaled by t, in base 2; or is not a number) the group's exp
/// pass is taken again, those lanes shifted by their exact maximum (the others by the same shift as
/// before: the same values). In base 2 as linear THSA's passes: e = 2^(t2·S − t2·shift)/ln2 =
/// e^(t·S − t·shift)/ln2 with t2 = t·log2(e); the 1/ln2 cancels in the normalised products and the
/// log-sum-exp takes ln(ln2).
template <int CF>
void dimwiseForwardPanelImpl(const DimwisePanel<float>& p) {
  constexpr int64_t P = kDimwisePanel;
  static_assert(P % W == 0);
  alignas(64) float q[P] = {}, lanes[P];
  for (int64_t r = 0; r < p.rows; ++r) q[r] = p.q[r];
  float kmin, kmax;
  minMaxF(p.k, p.d, &kmin, &kmax);
  const float t2 = p.t * kLog2e;
  for (int64_t g = 0; g * W < p.rows; ++g) {
    const vfloat qv = load(q + g * W);
    const vfloat bound = load(p.rowMax + g * W) + (qv >= 0.0f ? qv * kmax : qv * kmin);
    vfloat sh = bound * t2, sum, acc[CF > 0 ? CF : 1], mx;
    dimwisePanelPass<CF, true>(p, g, qv, t2, sh, &sum, acc, &mx);
    store(p.rowMax + g * W, mx);
    const vint near = (bound - mx) * t2 <= kDimwiseShiftSlack;  // −1 where the bound's shift is kept
    bool redo = false;
    for (int64_t r = 0; r < W && g * W + r < p.rows; ++r) redo = redo || near[r] == 0;
    if (redo) {
      sh = near != 0 ? sh : mx * t2;
      dimwisePanelPass<CF, false>(p, g, qv, t2, sh, &sum, acc, nullptr);
    }
    const int64_t n = std::min<int64_t>(W, p.rows - g * W);  // the group's real rows
    auto put = [&](float* dst, vfloat x) {
      if (n == W) store(dst, x);
      else {
        store(lanes, x);
        std::copy(lanes, lanes + n, dst);
      }
    };
    put(p.lse + g * W, sh * kLn2 + (logPoly(sum) + kLnLn2));
    const vfloat inverse = splat(1.0f) / sum;
    for (int c = 0; c < CF; ++c) put(p.out + c * p.ldo + g * W, acc[c] * inverse);
    if constexpr (CF == 0) {
      const float* u = p.scratch + g * W;
      for (int64_t c = 0; c < p.c; ++c) {
        const float* w = p.w + c * p.d * P + g * W;
        vfloat o{};
        for (int64_t m = 0; m < p.d; ++m) o += load(w + m * P) * load(u + m * P);
        put(p.out + c * p.ldo + g * W, o * inverse);
      }
    }
  }
}

void dimwiseForwardPanelF(const DimwisePanel<float>& p) {
  switch (p.c) {
    case 1: dimwiseForwardPanelImpl<1>(p); break;
    case 2: dimwiseForwardPanelImpl<2>(p); break;
    case 3: dimwiseForwardPanelImpl<3>(p); break;
    case 4: dimwiseForwardPanelImpl<4>(p); break;
    default: dimwiseForwardPanelImpl<0>(p); break;
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

/// dimwiseBackwardRunF for L positions and CF filters (1-4; 0: any count, read from a.c). δ_l comes
/// from the forward's outputs (Σ_c g·o, row_ops.h); the one pass walks the row one vector of columns
/// at a time, the positions from the last to the first inside it, with that vector of D, of the
/// filter rows and of their gradients in registers across the L positions, and the L vectors of
/// ⟨D, k⟩ across the whole row.
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
    float sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += gAt(l, c) * a.o[l * a.ldgi + c * a.ldgc];
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
