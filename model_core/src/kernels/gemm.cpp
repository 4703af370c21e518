// Finds the BLAS of the fused kernels at run time (see gemm.h).
#include "kernels/gemm.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

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

}  // namespace

const Blas& blas() {
  static const Blas b = resolve();
  return b;
}

}  // namespace tensorscope::model_core::kernels
