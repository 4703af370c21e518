// Finds the BLAS of the fused kernels at run time (see gemm.h).
#include "kernels/gemm.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tensorscope::model_core::kernels {
namespace {

std::string libraryOf(void* fn) {
  Dl_info info{};
  if (dladdr(fn, &info) && info.dli_fname) return info.dli_fname;
  return "the process";
}

Blas fromHandle(void* handle, const std::string& what) {
  Blas b;
  b.sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "sgemm_"));
  b.dgemm = reinterpret_cast<DgemmFn>(dlsym(handle, "dgemm_"));
  if (b.available()) b.source = libraryOf(reinterpret_cast<void*>(b.sgemm));
  else b = Blas{nullptr, nullptr, what + " has no sgemm_/dgemm_"};
  return b;
}

Blas resolve() {
  if (const char* env = std::getenv("TENSORSCOPE_BLAS"); env && *env) {
    if (std::strcmp(env, "none") == 0) return {nullptr, nullptr, "none (TENSORSCOPE_BLAS=none)"};
    void* h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    if (!h) return {nullptr, nullptr, std::string("none: TENSORSCOPE_BLAS=") + env + " does not load (" + dlerror() + ")"};
    return fromHandle(h, env);
  }
  if (Blas b = fromHandle(RTLD_DEFAULT, "the process"); b.available()) return b;
  for (const char* name : {"libblas.so.3", "libopenblas.so.0", "libmkl_rt.so.2", "libmkl_rt.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_GLOBAL))
      if (Blas b = fromHandle(h, name); b.available()) return b;
  return {nullptr, nullptr, "none found (no sgemm_ in the process, libblas.so.3, libopenblas.so.0 or libmkl_rt)"};
}

ProjectionGemm projectionFrom(void* handle, const std::string& what) {
  ProjectionGemm g;
  g.sgemm = handle ? reinterpret_cast<DnnlSgemmFn>(dlsym(handle, "dnnl_sgemm")) : nullptr;
  g.source = g.sgemm ? libraryOf(reinterpret_cast<void*>(g.sgemm)) : "none: " + what + " has no dnnl_sgemm";
  return g;
}

ProjectionGemm resolveProjection() {
  // On unless TENSORSCOPE_GEMM says otherwise. A process that catches signals must take them on a
  // thread that runs no kernels: oneDNN's JIT GEMM points the stack pointer at the heap while it runs,
  // so a handler run inside it corrupts the heap (oneDNN issue #4845; the command line's
  // app/src/cli/stop_signals.h, docs/decisions.md). An interrupted run crashed in 8 of 60 tries
  // before the command line took its signals that way.
  const char* env = std::getenv("TENSORSCOPE_GEMM");
  if (std::strcmp(env && *env ? env : "dnnl", "blas") == 0) return {nullptr, "off (TENSORSCOPE_GEMM=blas)"};
  if (env && *env && std::strcmp(env, "dnnl") != 0) {
    void* h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    if (!h) return {nullptr, std::string("none: TENSORSCOPE_GEMM=") + env + " does not load (" + dlerror() + ")"};
    return projectionFrom(h, env);
  }
  if (ProjectionGemm g = projectionFrom(RTLD_DEFAULT, "the process"); g.available()) return g;
  if (void* h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_GLOBAL)) return projectionFrom(h, "libdnnl.so.2");
  return {nullptr, "none (no dnnl_sgemm in the process or libdnnl.so.2)"};
}

}  // namespace

const ProjectionGemm& projectionGemm() {
  static const ProjectionGemm g = resolveProjection();
  return g;
}

void projectionSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int status = projectionGemm().sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, A, lda, B, ldb,
                                            beta, C, ldc);
  if (status != 0)  // dnnl_success is 0
    throw std::runtime_error("the projection GEMM (" + projectionGemm().source + ") failed with status " +
                             std::to_string(status) + " for " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(k));
}

const Blas& blas() {
  static const Blas b = resolve();
  return b;
}

}  // namespace tensorscope::model_core::kernels
