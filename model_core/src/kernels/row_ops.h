#pragma once
// Vectorised row operations of the fused THSA kernels (softmax rows and their gradients, head
// mixing): torch-free, compiled three times (SSE2 baseline, AVX2 + FMA, AVX-512) and chosen once at
// run time from the CPU's features, so one binary runs at full width on every x86-64 machine.
//
// float rows use a branch-free polynomial exp (Cephes' expf reduction and coefficients, also the
// scheme of the exp in PyTorch's Vectorized<float> and llama.cpp's ggml_v_expf): relative error
// below 1.2e-7 on [-87, 88], tested against std::exp in tests/model_core/kernels; linear THSA's two
// hot passes use a base-2 form without range reduction (row_ops_impl.h, phiBase2). double rows use
// std::exp: the float64 path serves the tests' precision, not speed.

#include <cstdint>

namespace tensorscope::model_core::kernels {

/// phiPanel's widths and row paddings are multiples of this (a multiple of every vector width).
constexpr int64_t kPhiPanelAlign = 16;

/// Channels and positions of one PhiBackwardBlock call.
constexpr int64_t kPhiBlockMaxRows = 4, kPhiBlockMaxLen = 64;

/// The backward of linear THSA (docs/attention-variants.md §4) for `rows` (1 to kPhiBlockMaxRows)
/// consecutive channels r over `len` (1 to kPhiBlockMaxLen) consecutive positions j, walked from the
/// last to the first, vectorised across i < R. Each channel's row of C, its state, its ∂S̄ and its
/// ∂C stay in registers over all the positions (one load and one store per call), so a position
/// costs no stores per channel but the causal value-gradient partial sums. With ∂num = a, ∂den = b
/// and u = C[r,i]·q_j[i]:
///   ∂u = (a_j,r·S_j[r,i] + b_j,r·z_j[i])·φ'(u),   dq_j[i] += Σ_r ∂u·C[r,i],   dc[r,i] += Σ_j ∂u·q_j[i],
///   ds[r,i] += a_j,r·φ(u)  (the running suffix ∂S̄ after position j),   dz_j[i] += Σ_r b_j,r·φ(u).
/// Causal (k given): S_j is the prefix state, passed for the last position and rewound in registers,
/// S_{j-1} = S_j − w_j,r·k_j (s itself is not written); z_j, k_j and dz_j are rows of len × R arrays;
/// and from the updated ∂S̄: sums_j,r = Σ_i ∂S̄[r,i]·k_j[i] (written) and dk_j[i] += Σ_r w_j,r·∂S̄[r,i].
/// Full (k null): S and z are the same for every position, and dz (R values) takes the sum over j.
template <typename T>
struct PhiBackwardBlock {
  int64_t rows = 0, len = 0, R = 0;
  const T* c = nullptr;  ///< rows × R: C's rows
  const T* s = nullptr;  ///< rows × R: the state (causal: after the last position)
  const T* q = nullptr;  ///< position j at q + j·ldq
  int64_t ldq = 0;
  const T* z = nullptr;                  ///< causal: len × R; full: R
  const T* a = nullptr;                  ///< a_j,r at a[j·ldab + r]
  const T* b = nullptr;                  ///< b_j,r at b[j·ldab + r]
  int64_t ldab = 0;
  const T* k = nullptr;  ///< causal: len × R key features; null for a full layer
  const T* w = nullptr;  ///< causal: w_j,r = v[position j, channel r] at w[j·ldw + r]
  int64_t ldw = 0;
  T* dq = nullptr;  ///< dq_j at dq + j·lddq (+=)
  int64_t lddq = 0;
  T* dz = nullptr;  ///< causal: len × R (+=); full: R (+=)
  T* dk = nullptr;  ///< causal: dk_j at dk + j·lddk (+=)
  int64_t lddk = 0;
  T* dc = nullptr;  ///< rows × R (+=)
  T* ds = nullptr;  ///< rows × R (+=): ∂S̄, carried from call to call
  T* sums = nullptr;  ///< causal: sums_j,r at sums[j·ldsums + r] (written)
  int64_t ldsums = 0;
};

/// State rows of one DimwisePanel: one per vector lane (16 floats, one AVX-512 vector; two AVX2
/// vectors, four SSE2 ones).
constexpr int64_t kDimwisePanel = 16;

/// Causal dimension-wise attention's forward for a panel of `rows` (1 to kDimwisePanel) consecutive
/// state rows at one position (kernels/dimwise_causal.h), the rows across the vector lanes: the
/// state and the filters are held transposed, a column m of the panel in one place, so the softmax
/// sums, maxima and filter products of all rows accumulate lane by lane with no horizontal sums.
/// Row r: S_r += q[r]·k (stored), p = softmax(t·S_r) and
///   out[c·ldo + r] = Σ_m W_c[r,m]·p[m]·v[m],   lse[r] = log Σ_m e^(t·S_r[m]).
/// Lanes r >= rows are padding: their state and filter entries must be 0 and stay so.
template <typename T>
struct DimwisePanel {
  int64_t rows = 0, d = 0, c = 0;
  T* S = nullptr;        ///< S[m·kDimwisePanel + r] = row r's state at column m (updated)
  const T* q = nullptr;  ///< q[r]: the position's query entry of row r (rows values)
  const T* k = nullptr;  ///< d values
  const T* v = nullptr;  ///< d values
  T t = 0;
  const T* w = nullptr;  ///< w[(c·d + m)·kDimwisePanel + r] = W_c[row r, m]
  T* out = nullptr;      ///< out[c·ldo + r] (written, r < rows)
  int64_t ldo = 0;
  T* lse = nullptr;      ///< rows values (written)
  /// kDimwisePanel values, kept by the caller across positions: row r's maximum of S before this
  /// call (0 for a zero state), set to its maximum after. The float panel bounds the new maximum
  /// with it and takes the exp in the same pass as the update.
  T* rowMax = nullptr;
  T* scratch = nullptr;  ///< d·kDimwisePanel values (more than four filters)
};

/// Positions of one DimwiseBackwardRun call.
constexpr int64_t kDimwiseRunMax = 4;

/// Values per chunk of the backward's tiles: a row of d values is held as ⌈d/16⌉ chunks of 16 (zero
/// past d), and the positions of a segment sit next to one another inside each chunk, so that the
/// positions of a run are a fixed 16 (or 32) values apart and one pointer reaches them all.
constexpr int64_t kDimwiseChunk = 16;

/// The backward of one row j of causal dimension-wise attention (kernels/dimwise_causal.h) over a
/// run of `len` (1 to kDimwiseRunMax) consecutive positions l, walked from the last to the first,
/// on the kernel's tiles (chunks of kDimwiseChunk values, zero past d; no scalar tails). The
/// probabilities come scaled, p̃_l = t_l·p_l (the recompute folds ln t_l into its shift), and the
/// value gradients leave scaled the same way. With G_l = Σ_c g_l,c·W_c, at each position l:
///   ṽ_l += p̃_l ⊙ G_l (= t_l·∂v_l's share),   dW_c += (g_l,c / t_l)·(p̃_l ⊙ v_l),
///   D += p̃_l ⊙ (v_l ⊙ G_l − δ_l) (= t_l·p_l ⊙ (∂p_l − δ_l)),   dk_l += q_l·D (the updated D),
///   dq_l = ⟨D, k_l⟩ (written),
/// where δ_l = ⟨p_l, ∂p_l⟩ = Σ_c g_l,c·Σ_m W_c[m]·p_l[m]·v_l[m] = Σ_c g_l,c·o_l,c is taken from the
/// forward's outputs o (FlashAttention's rowsum(dO ⊙ O)) instead of another pass over p, v and W.
template <typename T>
struct DimwiseBackwardRun {
  int64_t chunks = 0, c = 0, len = 0;  ///< chunks: ⌈d / kDimwiseChunk⌉
  const T* p = nullptr;   ///< p̃_l's chunk i at p + i·ldp + l·kDimwiseChunk
  int64_t ldp = 0;
  const T* vk = nullptr;  ///< chunk i of position l: v_l at vk + i·ldvk + 2l·kDimwiseChunk, k_l right after
  T* dvk = nullptr;       ///< the same layout: ṽ_l (t_l·∂v_l) and ∂k_l (+=)
  int64_t ldvk = 0;
  const T* q = nullptr;  ///< q_l (the row's query entry) at q[l·ldq]
  int64_t ldq = 0;
  const T* t = nullptr;  ///< t_l: len scales
  const T* g = nullptr;  ///< g_l,c at g[l·ldgi + c·ldgc]
  const T* o = nullptr;  ///< the forward's o_l,c = Σ_m W_c[m]·p_l[m]·v_l[m] at o[l·ldgi + c·ldgc]
  int64_t ldgi = 0, ldgc = 0;
  const T* w = nullptr;  ///< chunk i of W_c's row at w + (i·c + c')·kDimwiseChunk
  T* dW = nullptr;       ///< ∂W_c's row in the same layout (+=)
  T* D = nullptr;        ///< the suffix accumulator's row, chunks·kDimwiseChunk values (+=)
  T* dq = nullptr;       ///< dq_l at dq[l·lddq] (written)
  int64_t lddq = 0;
};

template <typename T>
struct RowOps {
  /// Smallest and largest of x[0, n), n >= 1.
  void (*minMax)(const T* x, int64_t n, T* mn, T* mx);
  /// sum = Σ e^(t·x_i − c) and dot = Σ e^(t·x_i − c)·v_i.
  void (*expSumDot)(const T* x, const T* v, int64_t n, T t, T c, T* sum, T* dot);
  /// out_i = e^(t·x_i − c) (out may be x); returns Σ out_i.
  T (*expWrite)(const T* x, int64_t n, T t, T c, T* out);
  /// The backward pass of one softmax row whose output is read against one value column:
  ///   p_i = e^(t·x_i − lse),  dv_i += g·p_i,  dl_i = g·p_i·(v_i − o),
  ///   dx_i = t·dl_i (or dx_i += t·dl_i with accumulate); returns Σ dl_i·x_i (for ∂/∂t).
  /// dx may alias x when accumulate is false.
  T (*softmaxColumnBackward)(const T* x, const T* v, int64_t n, T t, T lse, T g, T o, T* dv, T* dx, bool accumulate);
  /// dx_i = t·p_i·(dp_i − delta): the softmax backward of a row of probabilities p; dx may alias dp.
  void (*softmaxRowBackward)(const T* p, const T* dp, int64_t n, T t, T delta, T* dx);
  /// y_i += a·x_i
  void (*axpy)(int64_t n, T a, const T* x, T* y);
  /// Σ x_i·y_i
  T (*dot)(int64_t n, const T* x, const T* y);
  /// y_i = a·x_i·z_i, or y_i += a·x_i·z_i with accumulate.
  void (*mul3)(int64_t n, T a, const T* x, const T* z, T* y, bool accumulate);
  /// φ(x_i) = elu(x_i) + 1 into f (f may be x): the key features of linear THSA.
  void (*phiRow)(const T* x, int64_t n, T* f);
  /// y_i *= φ'(x_i).
  void (*phiPrimeScale)(const T* x, int64_t n, T* y);
  /// A panel of linear THSA channels j < width at one position (docs/attention-variants.md §4), vectorised
  /// across channels so that no horizontal sum is needed: ct = Cᵀ (row s holds C[j, s]), S the
  /// state (row s holds S[s, j]); width is a multiple of kPhiPanelAlign and the rows are padded to it.
  /// With u = ct[s·ldc + j]·q_s:   num_j = Σ_s φ(u)·S[s·lds + j],   den_j = Σ_s φ(u)·z_s.
  /// With k (causal layers) every state row first takes the position's own update
  /// S[s·lds + j] += k_s·v_j (stored); v is then read for j < width.
  void (*phiPanel)(const T* ct, int64_t ldc, T* S, int64_t lds, const T* q, const T* z, int64_t R, int64_t width,
                   const T* k, const T* v, T* num, T* den);
  /// The backward of linear THSA for a block of channels over a run of positions (PhiBackwardBlock).
  void (*phiBackwardBlock)(const PhiBackwardBlock<T>& p);
  /// Causal dimension-wise attention's forward for a panel of state rows at one position
  /// (DimwisePanel).
  void (*dimwiseForwardPanel)(const DimwisePanel<T>& p);
  /// S += qj·k (stored), then p = e^(t·S − lse): the forward's probabilities, recomputed, written
  /// in chunks of kDimwiseChunk values, chunk i at p + i·ldp (ldp = kDimwiseChunk: contiguous); the
  /// last chunk's values past d are not written.
  void (*dimwiseRowRecompute)(T* S, const T* k, T qj, int64_t d, T t, T lse, T* p, int64_t ldp);
  /// The backward of one row over a run of positions (DimwiseBackwardRun).
  void (*dimwiseBackwardRun)(const DimwiseBackwardRun<T>& a);
  /// y_i = GELU(x_i) = x_i·Φ(x_i), Φ the standard normal CDF (the exact, erf form); y may be x.
  void (*geluRow)(const T* x, int64_t n, T* y);
  /// dx_i = g_i·(Φ(x_i) + x_i·φ(x_i)), φ the standard normal density: GELU's backward.
  void (*geluBackwardRow)(const T* x, const T* g, int64_t n, T* dx);
  /// y_m += Σ_{j<taps} w_j·x_{m+j} for m < n: one row of a 2-D cross-correlation (multi-token
  /// attention's key-query convolution); x holds n + taps − 1 values.
  void (*correlateRow)(const T* w, int64_t taps, const T* x, int64_t n, T* y);
  /// r_j += Σ_{m<n} a_m·x_{m+j} for j < taps: the kernel gradient of correlateRow; x holds
  /// n + taps − 1 values.
  void (*correlateDots)(const T* a, const T* x, int64_t n, int64_t taps, T* r);
};

/// The operations for this CPU (picked on first use; thread-safe).
const RowOps<float>& rowOpsFloat();
const RowOps<double>& rowOpsDouble();
template <typename T>
const RowOps<T>& rowOps();
template <>
inline const RowOps<float>& rowOps<float>() { return rowOpsFloat(); }
template <>
inline const RowOps<double>& rowOps<double>() { return rowOpsDouble(); }

/// Row `row` of `cols` values becomes a softmax over its first `seen` values, in place, on the
/// vectorised exp; the other values are set to 0 (what softmax gives them at −∞). The fused
/// attention kernels' forward rows.
template <typename T>
void softmaxRowInPlace(T* row, int64_t seen, int64_t cols) {
  if (seen > 0) {
    const auto& ops = rowOps<T>();
    T lo, hi;
    ops.minMax(row, seen, &lo, &hi);
    const T inv = T(1) / ops.expWrite(row, seen, T(1), hi, row);
    for (int64_t i = 0; i < seen; ++i) row[i] *= inv;
  }
  for (int64_t i = seen; i < cols; ++i) row[i] = T(0);
}

/// Which build the float operations run: "avx512", "avx2" or "sse2".
const char* rowOpsIsa();

/// Forces one build ("avx512", "avx2", "sse2") for tests that compare them; false when this CPU
/// cannot run it. Not for concurrent use with running kernels.
bool forceRowOpsIsa(const char* isa);

}  // namespace tensorscope::model_core::kernels
