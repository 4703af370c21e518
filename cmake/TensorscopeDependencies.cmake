# Every dependency comes from Debian 12 packages (scripts/setup.sh installs them).
#
# TENSORSCOPE_DEPS_DIR (optional): a folder with what a machine without those packages lacks, for
# the headless build on a GPU machine with no network (scripts/gpu-check.sh, scripts/gpu-deps.sh
# makes it): googletest/ (GoogleTest's sources), nlohmann/ (nlohmann-json's headers as
# nlohmann/include/nlohmann/json.hpp) and zlib/ (zlib.h, zconf.h, for a machine with the zlib
# library but not its headers). Each is used only where the system has none.
set(TENSORSCOPE_DEPS_DIR "" CACHE PATH "Folder with googletest/, nlohmann/ and zlib/ for machines without those packages")

if(TENSORSCOPE_BUILD_GUI)
  find_package(Qt6 6.4 REQUIRED COMPONENTS Core Gui Widgets Svg PrintSupport Concurrent Test)
  find_package(QCustomPlotQt6 REQUIRED)
endif()
if(TENSORSCOPE_DEPS_DIR AND EXISTS "${TENSORSCOPE_DEPS_DIR}/nlohmann/include/nlohmann/json.hpp")
  find_package(nlohmann_json 3.10 QUIET)
  if(NOT nlohmann_json_FOUND)
    add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
    target_include_directories(nlohmann_json::nlohmann_json INTERFACE "${TENSORSCOPE_DEPS_DIR}/nlohmann/include")
    message(STATUS "nlohmann-json: headers from ${TENSORSCOPE_DEPS_DIR}/nlohmann")
  endif()
else()
  find_package(nlohmann_json 3.10 REQUIRED)
endif()
if(TENSORSCOPE_DEPS_DIR AND EXISTS "${TENSORSCOPE_DEPS_DIR}/zlib/zlib.h")
  find_package(ZLIB QUIET)
  if(NOT ZLIB_FOUND)
    # The library itself is on every Linux machine (as libz.so.1, often without the dev symlink).
    find_library(TS_ZLIB_LIBRARY NAMES z libz.so.1 REQUIRED)
    add_library(ZLIB::ZLIB UNKNOWN IMPORTED)
    set_target_properties(ZLIB::ZLIB PROPERTIES IMPORTED_LOCATION "${TS_ZLIB_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TENSORSCOPE_DEPS_DIR}/zlib")
    message(STATUS "zlib: ${TS_ZLIB_LIBRARY} with headers from ${TENSORSCOPE_DEPS_DIR}/zlib")
  endif()
else()
  find_package(ZLIB REQUIRED)
endif()
find_package(Threads REQUIRED)
# LibTorch's intra-op parallelism is OpenMP (Debian's build, and PyTorch's official ones on Linux).
find_package(OpenMP REQUIRED COMPONENTS CXX)
if(TENSORSCOPE_BUILD_GUI)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(GRAPHVIZ REQUIRED IMPORTED_TARGET libgvc libcgraph)
endif()

# LibTorch: Debian's libtorch-dev, or another build via -DTorch_DIR=/path/to/share/cmake/Torch.
find_package(Torch REQUIRED)
# PyTorch 2.x's libtorch.so (2.11's wheel) exports 64 std::filesystem functions of its own. A linker
# that finds libtorch.so before libstdc++ binds std::filesystem calls there, and its remove_all
# jumped to a null pointer (scripts/gpu-check.sh on PyTorch 2.11: every test that removed a
# directory crashed; LD_DEBUG=bindings showed the binding). So libstdc++.so.6 itself comes first
# among every program's needed libraries: references bind to it at link time and at run time. A
# plain -lstdc++ is not enough where the toolchain resolves it to a static archive.
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                OUTPUT_VARIABLE TS_LIBSTDCXX OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${TS_LIBSTDCXX}" OR NOT EXISTS "${TS_LIBSTDCXX}")
  find_file(TS_LIBSTDCXX_FOUND libstdc++.so.6 PATHS /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib64 /lib64
            /usr/lib/aarch64-linux-gnu NO_DEFAULT_PATH)
  set(TS_LIBSTDCXX "${TS_LIBSTDCXX_FOUND}")
endif()
if(TS_LIBSTDCXX)
  add_link_options("LINKER:--push-state,--no-as-needed" "${TS_LIBSTDCXX}" "LINKER:--pop-state")
else()
  add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
endif()

# The fused CPU kernels find their BLAS (sgemm_/dgemm_) at run time: model_core/src/kernels/gemm.h.

# CUDA is optional: reported, never required.
find_package(CUDAToolkit QUIET)
set(TS_TORCH_HAS_CUDA OFF)
if(TORCH_LIBRARIES MATCHES "cuda|c10_cuda" OR CAFFE2_USE_CUDA)
  set(TS_TORCH_HAS_CUDA ON)
endif()

if(TENSORSCOPE_BUILD_TESTS)
  if(TENSORSCOPE_DEPS_DIR AND EXISTS "${TENSORSCOPE_DEPS_DIR}/googletest/CMakeLists.txt")
    find_package(GTest QUIET)
    if(NOT GTest_FOUND)
      set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
      set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
      add_subdirectory("${TENSORSCOPE_DEPS_DIR}/googletest" "${CMAKE_BINARY_DIR}/_deps/googletest" EXCLUDE_FROM_ALL)
      message(STATUS "GoogleTest: built from ${TENSORSCOPE_DEPS_DIR}/googletest")
    endif()
  else()
    find_package(GTest REQUIRED)
  endif()
endif()
