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
  /// The backward of `rows` (1 to 4) consecutive channels at one position, vectorised across
  /// i < n; the row arrays c, s, dc and ds have stride n. With ∂num_r = a_r, ∂den_r = b_r and
  /// u = c_r,i·q_i:  ∂u = (a_r·s_r,i + b_r·z_i)·φ'(u),  dq_i += Σ_r ∂u·c_r,i,  dc_r,i += ∂u·q_i,
  /// ds_r,i += a_r·φ(u),  dz_i += Σ_r b_r·φ(u). With k (causal layers), from the updated ds:
  /// sums_r = Σ_i ds_r,i·k_i and dk_i += Σ_r w_r·ds_r,i (the value and key-feature gradients), and
  /// the state rows are rewound to the state before this position once used: s_r,i −= w_r·k_i.
  void (*phiBackwardRows)(int64_t rows, const T* c, const T* q, T* s, const T* z, int64_t n, const T* a,
                          const T* b, T* dq, T* dc, T* ds, T* dz, const T* k, const T* w, T* dk, T* sums);
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

/// Which build the float operations run: "avx512", "avx2" or "sse2".
const char* rowOpsIsa();

/// Forces one build ("avx512", "avx2", "sse2") for tests that compare them; false when this CPU
/// cannot run it. Not for concurrent use with running kernels.
bool forceRowOpsIsa(const char* isa);

}  // namespace tensorscope::model_core::kernels
