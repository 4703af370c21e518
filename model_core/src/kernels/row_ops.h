#pragma once
// Vectorised row operations of the fused THSA kernels (softmax rows and their gradients, head
// mixing): torch-free, compiled three times (SSE2 baseline, AVX2 + FMA, AVX-512) and chosen once at
// run time from the CPU's features, so one binary runs at full width on every x86-64 machine.
//
// float rows use a branch-free polynomial exp (Cephes' expf reduction and coefficients, also the
// scheme of the exp in PyTorch's Vectorized<float> and llama.cpp's ggml_v_expf): relative error
// below 1.2e-7 on [-87, 88], tested against std::exp in tests/model_core/kernels. double rows use
// std::exp: the float64 path serves the tests' precision, not speed.

#include <cstdint>

namespace tensorscope::model_core::kernels {

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
  /// One channel of linear THSA at one position (contract section 4), φ(u) = elu(u) + 1:
  ///   u_i = c_i·q_i,  num = Σ φ(u_i)·s_i,  den = Σ φ(u_i)·z_i.
  void (*phiDot2)(const T* c, const T* q, const T* s, const T* z, int64_t n, T* num, T* den);
  /// Its backward with ∂num = a, ∂den = b: ∂φ_i = a·s_i + b·z_i, ∂u_i = ∂φ_i·φ'(u_i), then
  ///   dq_i += ∂u_i·c_i,  dc_i += ∂u_i·q_i,  ds_i += a·φ(u_i),  dz_i += b·φ(u_i).
  void (*phiBackward)(const T* c, const T* q, const T* s, const T* z, int64_t n, T a, T b, T* dq, T* dc, T* ds,
                      T* dz);
  /// phiDot2 after a causal state update of the same row: s_i += w·k_i (stored), then as phiDot2.
  void (*advancePhiDot2)(const T* c, const T* q, T* s, const T* k, T w, const T* z, int64_t n, T* num, T* den);
  /// phiBackward, then with the updated suffix row ds (causal layers): returns Σ ds_i·k_i and adds
  /// w·ds_i to dk_i (the gradients of the value and the key features at this position).
  T (*phiBackwardCausal)(const T* c, const T* q, const T* s, const T* z, int64_t n, T a, T b, T* dq, T* dc, T* ds,
                         T* dz, const T* k, T w, T* dk);
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
