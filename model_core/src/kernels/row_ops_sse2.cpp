// The row operations built for sse2 (see row_ops.h; flags set in model_core/CMakeLists.txt).
#define TS_VEC_BYTES 16
#define TS_ROW_OPS_NS sse2
#include "kernels/row_ops_impl.h"

namespace tensorscope::model_core::kernels {

RowOps<float> rowOpsFloat_sse2() {
  using namespace sse2;
  return {minMaxF, expSumDotF, expWriteF, softmaxColumnBackwardF, softmaxRowBackwardF, axpyF, dotF, mul3F, phiRowF, phiPrimeScaleF, phiPanelF, phiBackwardBlockF,
          dimwiseForwardPanelF, dimwiseRowRecomputeF, dimwiseBackwardRunF, geluRowF, geluBackwardRowF,
          correlateRowF, correlateDotsF};
}

}  // namespace tensorscope::model_core::kernels
