#pragma once
// Row-major GEMM for the fused kernels, on a BLAS found at run time: the `sgemm_`/`dgemm_` the
// process already has (Debian's LibTorch links libblas.so.3, OpenBLAS on a set-up machine), else
// the first of libblas.so.3, libopenblas.so.0, libmkl_rt.so that loads; `TENSORSCOPE_BLAS` names a
// library to use instead, or `none`. A LibTorch that bundles its BLAS without exporting it (some
// official builds) and a machine without one then simply have no fused kernels: the modules take
// their ATen formulation, and `--version` says so. Inside an at::parallel_for region the OpenMP
// build of OpenBLAS runs each call on the calling thread, which is how the kernels give one
// (batch, block) to one thread.

#include <cstdint>
#include <string>

namespace tensorscope::model_core::kernels {

using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
using DgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                         const int*, const double*, const int*, const double*, double*, const int*);

struct Blas {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  std::string source;  ///< the library the functions come from, or why there are none
  bool available() const { return sgemm && dgemm; }
};

/// The BLAS of the fused kernels, resolved on first use (thread-safe).
const Blas& blas();

inline void blasGemm(char ta, char tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                     int ldb, float beta, float* c, int ldc) {
  blas().sgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}
inline void blasGemm(char ta, char tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b,
                     int ldb, double beta, double* c, int ldc) {
  blas().dgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

/// The float32 GEMM of the projections (the model's linear maps of every token, forward and backward):
/// oneDNN's `dnnl_sgemm`, where libdnnl.so.2 loads (Debian's LibTorch links it), else none and the
/// projections keep ATen's (the BLAS above). On the reference model's shapes (4096 tokens through 128-
/// to 512-wide maps, their ∂x and their ∂W) it runs 1.15-1.3x OpenBLAS 0.3.21's Cooperlake kernels on
/// an AVX-512 EPYC (bench/README.md, issue 41, ninth part). Row-major, threads from OpenMP as ATen's.
/// `TENSORSCOPE_GEMM=blas` turns it off; `TENSORSCOPE_GEMM=PATH` loads that library instead.
/// Its JIT kernels run with the stack pointer in a heap buffer (oneDNN issue #4845, fixed after 3.11):
/// a signal handler that runs on a thread inside one corrupts the heap. A program on it catches its
/// signals on a thread that computes nothing (app/src/cli/stop_signals.h).
using DnnlSgemmFn = int (*)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

struct ProjectionGemm {
  DnnlSgemmFn sgemm = nullptr;
  std::string source;  ///< the library, or why there is none
  bool available() const { return sgemm != nullptr; }
};

/// The projection GEMM, resolved on first use (thread-safe).
const ProjectionGemm& projectionGemm();

/// Row-major C[m×n] = alpha·op(A)·op(B) + beta·C on the projection GEMM (callers check available());
/// throws std::runtime_error with the library's status when it fails.
void projectionSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

/// Row-major C[m×n] = alpha·op(A)[m×k]·op(B)[k×n] + beta·C, with leading dimensions (row strides).
/// BLAS is column-major: a row-major matrix is its transpose there, so compute Cᵀ = op(B)ᵀ·op(A)ᵀ.
/// k = 0 scales C by beta (BLAS semantics). Callers check blas().available() first.
template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  blasGemm(transB ? 'T' : 'N', transA ? 'T' : 'N', int(n), int(m), int(k), alpha, B, int(ldb), A, int(lda), beta, C,
           int(ldc));
}

}  // namespace tensorscope::model_core::kernels
