#pragma once
/// Plain data handed to the viz widgets. The app converts model_core snapshots into these, so viz
/// never sees LibTorch or model_core headers.

#include <vector>

namespace tensorscope::viz {

/// A dense matrix, row-major: values[r * cols + c].
struct MatrixData {
  int rows = 0, cols = 0;
  std::vector<float> values;

  float at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
  bool valid() const {
    return rows > 0 && cols > 0 && values.size() == static_cast<std::size_t>(rows) * cols;
  }
};

/// The singular spectrum of one layer's core C.
struct CoreSpectrum {
  int layer = 0;                       ///< model layer index
  std::vector<double> singular_values; ///< any order; shown descending
  double stable_rank = 0;              ///< ‖C‖_F² / ‖C‖_2²
};

}  // namespace tensorscope::viz
