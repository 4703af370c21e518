# Every dependency comes from Debian 12 packages (scripts/setup.sh installs them).

if(TENSORSCOPE_BUILD_GUI)
  find_package(Qt6 6.4 REQUIRED COMPONENTS Core Gui Widgets Svg PrintSupport Concurrent Test)
  find_package(QCustomPlotQt6 REQUIRED)
endif()
find_package(nlohmann_json 3.10 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)
# LibTorch's intra-op parallelism is OpenMP (Debian's build, and PyTorch's official ones on Linux).
find_package(OpenMP REQUIRED COMPONENTS CXX)
if(TENSORSCOPE_BUILD_GUI)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(GRAPHVIZ REQUIRED IMPORTED_TARGET libgvc libcgraph)
endif()

# LibTorch: Debian's libtorch-dev, or another build via -DTorch_DIR=/path/to/share/cmake/Torch.
find_package(Torch REQUIRED)

# The fused CPU kernels find their BLAS (sgemm_/dgemm_) at run time: model_core/src/kernels/gemm.h.

# CUDA is optional: reported, never required.
find_package(CUDAToolkit QUIET)
set(TS_TORCH_HAS_CUDA OFF)
if(TORCH_LIBRARIES MATCHES "cuda|c10_cuda" OR CAFFE2_USE_CUDA)
  set(TS_TORCH_HAS_CUDA ON)
endif()

if(TENSORSCOPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
