#pragma once
/// Process-wide LibTorch runtime facts and set-up, behind a torch-free header.

#include <string>

namespace tensorscope::model_core {

struct RuntimeInfo {
  std::string torch_version;   ///< e.g. "1.13.0"
  bool cuda_built = false;     ///< LibTorch was built with CUDA
  bool cuda_available = false; ///< and a device is usable now
  int cuda_devices = 0;
  std::string default_device;  ///< "cuda:0" when available, else "cpu"
  int intra_op_threads = 1;
  int hardware_threads = 1;
  std::string blas;            ///< e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"
  bool blas_is_openblas = false;
  std::string blas_coretype;   ///< OpenBLAS's kernels in use, e.g. "Cooperlake"; empty for another BLAS
  std::string blas_kernels;    ///< which kernels run and why (describeBlasKernels); empty for another BLAS
  std::string allocator;       ///< how CPU memory is kept between steps (see tuneAllocator)
  bool fused_kernels = false;  ///< the fused CPU attention kernels have a BLAS (else: ATen formulation)
  std::string fused_kernels_detail;  ///< their BLAS and row-operation build, or why they are off
  std::string projection_gemm;  ///< the float32 GEMM of the model's linear maps (kernels/gemm.h), or why ATen's
};

/// Makes glibc keep freed memory for reuse instead of returning it to the kernel after every
/// tensor (fewer page faults per training step). Idempotent; configureThreads calls it. Returns
/// whether the settings took effect.
bool tuneAllocator();

/// Sets LibTorch's intra-op threads. A command-line override (setThreadsOverride) wins; then
/// `requested` > 0 (e.g. a run config's train.threads); then the TENSORSCOPE_THREADS environment
/// variable; then the number of hardware threads (this LibTorch starts with 1). Also tunes the
/// allocator (tuneAllocator). Returns the number in effect. Throws std::invalid_argument for a
/// malformed TENSORSCOPE_THREADS.
int configureThreads(int requested = 0);

/// The process's `--threads T`: it means what it says for every later configureThreads call, a run
/// config's `threads` included. 0 clears it. Applies it at once and returns the number in effect.
int setThreadsOverride(int threads);
/// The `--threads T` in effect, 0 when none was given.
int threadsOverride();

/// Current runtime facts (cheap; call after configureThreads).
RuntimeInfo runtimeInfo();

/// Memory of CUDA device 0 as the driver sees it (cudaMemGetInfo of the CUDA runtime that LibTorch
/// loaded, found at run time, so this works in every build). All zero without a usable device.
struct GpuMemory {
  double free_bytes = 0;
  double total_bytes = 0;
};
GpuMemory gpuMemory();

/// Tensor bytes the CUDA caching allocator holds for device 0 now and at its peak since the last
/// resetGpuPeak() (c10's allocator statistics). Zero in a build whose LibTorch has no CUDA.
struct GpuTensorBytes {
  double current = 0;
  double peak = 0;
};
GpuTensorBytes gpuTensorBytes();
void resetGpuPeak();

/// Waits for the work queued on CUDA device 0 (for timing); nothing without a device.
void synchronizeGpu();

/// One line per fact, for `tensorscope --version` and the About box.
std::string describeRuntime(const RuntimeInfo& info);

}  // namespace tensorscope::model_core
