#include "model_core/runtime.h"

#include "model_core/blas_kernels.h"

#include "kernels/gemm.h"
#include "kernels/row_ops.h"

#include "build_config.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <malloc.h>
#include <torch/cuda.h>
#include <torch/version.h>

#if TS_TORCH_HAS_CUDA_BUILD
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace tensorscope::model_core {
namespace {

int hardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

/// The BLAS library that LibTorch actually calls: OpenBLAS reports itself; a LibTorch with its BLAS
/// inside (the official 2.x builds link MKL statically) says so in its build configuration;
/// otherwise name the CPU BLAS shared object mapped into the process (not cuBLAS, a GPU library).
std::string detectBlas(bool& isOpenBlas) {
  using ConfigFn = char* (*)();
  if (auto fn = reinterpret_cast<ConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    isOpenBlas = true;
    return std::string(fn());
  }
  isOpenBlas = false;
  const std::string config = at::show_config();
  if (const auto key = config.find("BLAS_INFO="); key != std::string::npos) {
    const auto end = config.find_first_of(", \n", key);
    const std::string name = config.substr(key + 10, end == std::string::npos ? std::string::npos : end - key - 10);
    if (name == "mkl") return "MKL, linked into LibTorch (BLAS_INFO=mkl)";
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto pos = line.find('/');
    if (pos == std::string::npos) continue;
    const std::string path = line.substr(pos);
    if (path.find("cublas") != std::string::npos) continue;
    if (path.find("blas/libblas.so") != std::string::npos)  // Debian's reference BLAS (no alternative set)
      return "reference BLAS (" + path + "); install libopenblas0-openmp for ~17x faster GEMM";
    if (path.find("blas") != std::string::npos || path.find("mkl") != std::string::npos)
      return "non-OpenBLAS (" + path + ")";
  }
  return "unknown (no BLAS library mapped)";
}

constexpr int kMmapThresholdBytes = 32 << 20;  // glibc's largest allowed value on 64-bit
constexpr int kTrimThresholdBytes = 1 << 30;
constexpr int kTopPadBytes = 64 << 20;

bool& allocatorTuned() {
  static bool tuned = false;
  return tuned;
}

}  // namespace

bool tuneAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    // By default glibc returns every freed block above its (dynamic) mmap threshold to the kernel
    // and trims the heap top, so each training step page-faults and zeroes its activations again
    // (measured: 9% of a reference training step in the kernel). Keep freed memory for reuse.
    allocatorTuned() = mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1 &&
                       mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1 &&
                       mallopt(M_TOP_PAD, kTopPadBytes) == 1;
  });
  return allocatorTuned();
}

namespace {
std::atomic<int> g_threadsOverride{0};
}  // namespace

int threadsOverride() { return g_threadsOverride.load(); }

int setThreadsOverride(int threads) {
  g_threadsOverride.store(threads > 0 ? threads : 0);
  return configureThreads(0);
}

int configureThreads(int requested) {
  tuneAllocator();
  int n = g_threadsOverride.load() > 0 ? g_threadsOverride.load() : requested;
  if (n <= 0) {
    if (const char* env = std::getenv("TENSORSCOPE_THREADS"); env && *env) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (*end != '\0' || v <= 0 || v > 4096)
        throw std::invalid_argument(std::string("TENSORSCOPE_THREADS must be a positive whole number; got '") +
                                    env + "'");
      n = static_cast<int>(v);
    } else {
      n = hardwareThreads();
    }
  }
  at::set_num_threads(n);
  return at::get_num_threads();
}

RuntimeInfo runtimeInfo() {
  RuntimeInfo info;
  info.torch_version = TORCH_VERSION;
  info.cuda_built = TS_TORCH_HAS_CUDA_BUILD;
  info.cuda_available = torch::cuda::is_available();
  info.cuda_devices = info.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
  info.default_device = info.cuda_available ? "cuda:0" : "cpu";
  info.intra_op_threads = at::get_num_threads();
  info.hardware_threads = hardwareThreads();
  info.blas = detectBlas(info.blas_is_openblas);
  info.blas_coretype = blasCoretype();
  info.blas_kernels = describeBlasKernels();
  info.allocator = allocatorTuned() ? "glibc malloc keeping freed memory (blocks < 32 MiB reused, trim above 1 GiB)"
                                    : "glibc malloc defaults";
  const auto& blas = kernels::blas();
  info.fused_kernels = blas.available();
  info.fused_kernels_detail = blas.available()
                                  ? "on (sgemm_ from " + blas.source + ", row operations " + kernels::rowOpsIsa() + ")"
                                  : "off, ATen formulation instead: BLAS " + blas.source;
  const auto& projection = kernels::projectionGemm();
  info.projection_gemm = projection.available() ? "dnnl_sgemm from " + projection.source
                                                : "ATen's (the BLAS above); oneDNN's sgemm " + projection.source;
  return info;
}

GpuMemory gpuMemory() {
  GpuMemory m;
  if (!torch::cuda::is_available()) return m;
  // The CUDA runtime is already in the process (LibTorch's CUDA libraries need it); its entry point
  // is looked up rather than linked so that CPU-only builds compile the same source.
  using MemGetInfo = int (*)(std::size_t*, std::size_t*);
  auto fn = reinterpret_cast<MemGetInfo>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}) {
    if (fn) break;
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) fn = reinterpret_cast<MemGetInfo>(dlsym(h, "cudaMemGetInfo"));
  }
  std::size_t freeBytes = 0, totalBytes = 0;
  if (fn && fn(&freeBytes, &totalBytes) == 0) {
    m.free_bytes = double(freeBytes);
    m.total_bytes = double(totalBytes);
  }
  return m;
}

GpuTensorBytes gpuTensorBytes() {
  GpuTensorBytes b;
#if TS_TORCH_HAS_CUDA_BUILD
  if (!torch::cuda::is_available()) return b;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  const auto& all = stats.allocated_bytes[0];  // StatType::AGGREGATE (0 in every version; the enum moved in 2.5)
  b.current = double(all.current);
  b.peak = double(all.peak);
#endif
  return b;
}

void resetGpuPeak() {
#if TS_TORCH_HAS_CUDA_BUILD
  if (torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::resetPeakStats(0);
#endif
}

void synchronizeGpu() {
  if (torch::cuda::is_available()) torch::cuda::synchronize();
}

std::string describeRuntime(const RuntimeInfo& i) {
  std::string s;
  s += "LibTorch " + i.torch_version + (i.cuda_built ? " (CUDA build)" : " (CPU build)") + "\n";
  s += "device: " + i.default_device;
  if (i.cuda_available) {
    s += " (" + std::to_string(i.cuda_devices) + " CUDA device(s)";
    if (const GpuMemory m = gpuMemory(); m.total_bytes > 0) {
      char b[64];
      std::snprintf(b, sizeof b, "; device 0: %.1f of %.1f GiB free", m.free_bytes / 1073741824.0,
                    m.total_bytes / 1073741824.0);
      s += b;
    }
    s += ")";
  }
  else s += " (no CUDA device available)";
  s += "\nthreads: " + std::to_string(i.intra_op_threads) + " intra-op (" +
       std::to_string(i.hardware_threads) + " hardware)\n";
  // OpenBLAS: which kernels run and why (model_core/blas_kernels.h), then its build configuration.
  s += "BLAS: " + (i.blas_kernels.empty() ? i.blas : i.blas_kernels + " (" + i.blas + ")") + "\n";
  s += "fused CPU kernels: " + i.fused_kernels_detail + "\n";
  s += "projections (float32 GEMM): " + i.projection_gemm + "\n";
  s += "allocator: " + i.allocator;
  return s;
}

}  // namespace tensorscope::model_core
