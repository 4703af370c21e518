// The row operations built for avx2 (see row_ops.h; flags set in model_core/CMakeLists.txt).
#define TS_VEC_BYTES 32
#define TS_ROW_OPS_NS avx2
#include "kernels/row_ops_impl.h"

namespace tensorscope::model_core::kernels {

RowOps<float> rowOpsFloat_avx2() {
  using namespace avx2;
  return {minMaxF, expSumDotF, expWriteF, softmaxColumnBackwardF, softmaxRowBackwardF, axpyF, dotF, mul3F, phiRowF, phiPrimeScaleF, phiPanelF, phiBackwardBlockF,
          dimwiseForwardPanelF, dimwiseRowRecomputeF, dimwiseBackwardRunF, geluRowF, geluBackwardRowF,
          correlateRowF, correlateDotsF};
}

}  // namespace tensorscope::model_core::kernels
