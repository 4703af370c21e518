#pragma once
// The float rows of causal dimension-wise attention (kernels/dimwise_causal.h, row_ops.h), included
// by row_ops_impl.h once per instruction set, inside that set's namespace.

namespace tensorscope::model_core::kernels {
namespace TS_ROW_OPS_NS {

/// Σ of the lanes by halving: a tree of log2(W) shuffle steps, not W − 1 dependent adds (the
/// backward run's ⟨D, k⟩).
inline float hsumTree(vfloat v) {
#if TS_VEC_BYTES == 64
  // (halves by lowHalf/highHalf, vector shuffles: GCC 12's _mm512_reduce_* read an undefined
  // register and warn, and copying the halves out by memcpy kept the accumulators on the stack)
  const __m256 h = _mm256_add_ps(lowHalf(v), highHalf(v));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
#elif TS_VEC_BYTES == 32
  __m128 s = _mm_add_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
#else
  __m128 s = (__m128)v;
#endif
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ps(s, _mm_shuffle_ps(s, s, 1)));
}

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
    const vfloat e = exp2NonPositiveOverLn2<5>(s * t2 - sh), u = e * v[m];
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

void dimwiseRowRecomputeF(float* S, const float* k, float qj, int64_t d, float t, float lse, float* p, int64_t ldp) {
  // p = e^(t·S − lse) = 2^(t2·S − lse·log2(e)) = 2^(t2·S − off)/ln2 with off = lse·log2(e) − log2(ln 2):
  // the forward's base-2 exp, its argument still <= 0 (lse is at least the row's largest t·S, less
  // ln t when the caller folds the scale t in, t <= 1). W divides kDimwiseChunk: a vector stays
  // inside one chunk.
  static_assert(kDimwiseChunk % W == 0);
  const float t2 = t * kLog2e, off = lse * kLog2e + 0.528766372162151f;
  int64_t i = 0;
  for (; i + W <= d; i += W) {
    const vfloat s = load(S + i) + load(k + i) * qj;
    store(S + i, s);
    store(p + i / kDimwiseChunk * ldp + i % kDimwiseChunk, exp2NonPositiveOverLn2<5>(s * t2 - off));
  }
  for (; i < d; ++i) {
    S[i] += qj * k[i];
    p[i / kDimwiseChunk * ldp + i % kDimwiseChunk] = exp2NonPositiveOverLn2<5>(S[i] * t2 - off);
  }
}

/// dimwiseBackwardRunF for L positions and CF filters (1-4; 0: any count, read from a.c). δ_l comes
/// from the forward's outputs (Σ_c g·o, row_ops.h); the one pass walks the row one chunk at a time
/// (one vector, or 16/W of them, each with its own registers), the positions from the last to the
/// first inside it, with that vector of D, of the filter rows and of their gradients in registers
/// across the L positions, and the L vectors of ⟨D, k⟩ across the whole row. The tiles put the L
/// positions of every array at fixed offsets from one pointer per array: six pointers in all.
template <int L, int CF>
void dimwiseBackwardRunImpl(const DimwiseBackwardRun<float>& a) {
  constexpr int64_t Q = kDimwiseChunk, NS = Q / W;
  constexpr int CR = CF > 0 ? CF : 1;
  const int64_t C = CF > 0 ? CF : a.c, n = a.chunks, ldp = a.ldp, ldvk = a.ldvk;
  // The run's scalars, per position: g_c, g_c/t, δ, q, 1/t. Read in the loop through a laundered
  // pointer, so that the compiler broadcasts each from memory where it is used (a load slot, 4 bytes)
  // instead of keeping the L·(2c + 2) vectors on the stack and reloading them whole (64 bytes each:
  // the loop was bound by load bandwidth).
  constexpr int NK = 2 * CR + 3, kG = 0, kGs = CR, kDelta = 2 * CR, kQ = 2 * CR + 1, kIt = 2 * CR + 2;
  alignas(64) float scalars[L][NK];
  for (int l = 0; l < L; ++l) {
    float* sc = scalars[l];
    sc[kQ] = a.q[l * a.ldq], sc[kIt] = 1.0f / a.t[l];
    for (int c = 0; c < CF; ++c) sc[kG + c] = a.g[l * a.ldgi + c * a.ldgc], sc[kGs + c] = sc[kG + c] * sc[kIt];
    float sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += a.g[l * a.ldgi + c * a.ldgc] * a.o[l * a.ldgi + c * a.ldgc];
    sc[kDelta] = sum;
  }
  const float* sk = &scalars[0][0];
  asm("" : "+r"(sk) : : "memory");
  auto K = [sk](int l, int j) { return sk[l * NK + j]; };
  vfloat vq[L] = {};
  const float *p = a.p, *vk = a.vk, *w = a.w;
  float *dvk = a.dvk, *dW = a.dW, *Dr = a.D;
  for (int64_t i = 0; i < n; ++i, p += ldp, vk += ldvk, dvk += ldvk, w += C * Q, dW += C * Q, Dr += Q) {
    for (int64_t s = 0; s < NS * W; s += W) {
      vfloat wc[CR], dwc[CR];
      for (int c = 0; c < CF; ++c) wc[c] = load(w + c * Q + s), dwc[c] = load(dW + c * Q + s);
      vfloat D = load(Dr + s);
      for (int l = L - 1; l >= 0; --l) {
        const vfloat pl = load(p + l * Q + s), vl = load(vk + 2 * l * Q + s), pv = pl * vl;
        vfloat G{};
        if constexpr (CF > 0) {
          for (int c = 0; c < CF; ++c) G += wc[c] * K(l, kG + c), dwc[c] += pv * K(l, kGs + c);
        } else {
          for (int64_t c = 0; c < C; ++c) {
            const float gc = a.g[l * a.ldgi + c * a.ldgc];
            G += load(w + c * Q + s) * gc;
            store(dW + c * Q + s, load(dW + c * Q + s) + pv * (gc * K(l, kIt)));
          }
        }
        float* dvl = dvk + 2 * l * Q + s;
        store(dvl, load(dvl) + pl * G);
        D += pl * (vl * G - K(l, kDelta));
        store(dvl + Q, load(dvl + Q) + D * K(l, kQ));
        vq[l] += D * load(vk + (2 * l + 1) * Q + s);
      }
      store(Dr + s, D);
      for (int c = 0; c < CF; ++c) store(dW + c * Q + s, dwc[c]);
    }
  }
  for (int l = 0; l < L; ++l) a.dq[l * a.lddq] = hsumTree(vq[l]);
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
