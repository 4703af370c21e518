#pragma once
// Row-major GEMM on the BLAS that LibTorch itself calls (libblas.so.3: OpenBLAS on a set-up
// machine). Inside an at::parallel_for region the OpenMP build of OpenBLAS runs each call on the
// calling thread, which is how the fused kernels give one (batch, block) to one thread.

#include <cstdint>

extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc);
}

namespace tensorscope::model_core::kernels {

inline void blasGemm(char ta, char tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                     int ldb, float beta, float* c, int ldc) {
  sgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}
inline void blasGemm(char ta, char tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b,
                     int ldb, double beta, double* c, int ldc) {
  dgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

/// Row-major C[m×n] = alpha·op(A)[m×k]·op(B)[k×n] + beta·C, with leading dimensions (row strides).
/// BLAS is column-major: a row-major matrix is its transpose there, so compute Cᵀ = op(B)ᵀ·op(A)ᵀ.
/// k = 0 scales C by beta (BLAS semantics).
template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  blasGemm(transB ? 'T' : 'N', transA ? 'T' : 'N', int(n), int(m), int(k), alpha, B, int(ldb), A, int(lda), beta, C,
           int(ldc));
}

}  // namespace tensorscope::model_core::kernels
