#pragma once
// The one place where the LibTorch versions Tensorscope builds against differ in API: Debian 12's
// 1.13 (CI) and the 2.x a user brings (the official archive, or the one inside a PyTorch
// installation; scripts/gpu-check.sh builds against PyTorch 2.11). Code that meets such a
// difference uses a macro from here, never its own version test.

#include <torch/version.h>

#define TS_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// c10::Allocator: PyTorch 2.3 made allocate() non-const and added the pure virtual copy_data().
#if TS_TORCH_AT_LEAST(2, 3)
#define TS_ALLOCATOR_ALLOCATE_CONST
#define TS_ALLOCATOR_HAS_COPY_DATA 1
#else
#define TS_ALLOCATOR_ALLOCATE_CONST const
#define TS_ALLOCATOR_HAS_COPY_DATA 0
#endif
