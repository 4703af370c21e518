#pragma once
// Shared input validation of the analysis tools (plain C++). Every message starts with the
// calling function's name so the UI can show it as is.

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace tensorscope::model_core::analysis_detail {

/// How the two axes of a buffer are named in messages.
enum class Layout {
  Matrix,  ///< "rows", "cols", "values", "entry (r, c)"
  Points,  ///< "n", "dim", "points", "point i, coordinate j"
};

/// Throws unless both extents are >= 1 and size == a * b.
inline void checkShape(const std::string& fn, Layout layout, std::size_t size, long long a,
                       long long b) {
  const bool m = layout == Layout::Matrix;
  const char* aName = m ? "rows" : "n";
  const char* bName = m ? "cols" : "dim";
  const char* buffer = m ? "values" : "points";
  if (a < 1) throw std::invalid_argument(fn + ": " + aName + " must be >= 1; got " + std::to_string(a));
  if (b < 1) throw std::invalid_argument(fn + ": " + bName + " must be >= 1; got " + std::to_string(b));
  if (static_cast<unsigned long long>(size) != static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b))
    throw std::invalid_argument(fn + ": " + buffer + ".size() = " + std::to_string(size) + " but " + aName +
                                " * " + bName + " = " + std::to_string(a) + " * " + std::to_string(b) +
                                " = " + std::to_string(a * b));
}

/// "NaN", "+inf" or "-inf".
inline const char* nonFiniteName(double v) { return std::isnan(v) ? "NaN" : (v > 0 ? "+inf" : "-inf"); }

/// Throws at the first NaN or infinite entry of the row-major a x b buffer, naming its position.
template <typename T>
void checkFinite(const std::string& fn, Layout layout, const T* data, long long a, long long b) {
  for (long long i = 0; i < a; ++i) {
    for (long long j = 0; j < b; ++j) {
      const double v = static_cast<double>(data[i * b + j]);
      if (std::isfinite(v)) continue;
      const std::string where = layout == Layout::Matrix
                                    ? "entry (" + std::to_string(i) + ", " + std::to_string(j) + ")"
                                    : "point " + std::to_string(i) + ", coordinate " + std::to_string(j);
      throw std::invalid_argument(fn + ": " + where + " is " + nonFiniteName(v) + "; every " +
                                  (layout == Layout::Matrix ? "entry" : "coordinate") + " must be finite");
    }
  }
}

}  // namespace tensorscope::model_core::analysis_detail
