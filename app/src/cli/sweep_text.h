#pragma once
/// Text helpers shared by the sweep commands (sweep_commands.cpp, sweep_report_commands.cpp).

#include <cstddef>
#include <sstream>
#include <string>

namespace tensorscope::app::sweep_text {

inline constexpr const char* kUsage =
    "tensorscope sweep plan SWEEP.json --out DIR\n"
    "       tensorscope sweep run DIR [--jobs J] [--retry-failed] [--until-settled [--alpha A] [--max-seeds K]]\n"
    "       tensorscope sweep run-trial DIR INDEX [--device cpu|cuda]\n"
    "       tensorscope sweep submit DIR --slurm [--partition P] [--time T] [--cpus-per-task C] [--gpus G]\n"
    "                                    [--array-limit K] [--retry-failed] [--dry-run]\n"
    "                                    [--until-settled [--alpha A] [--max-seeds K]]\n"
    "       tensorscope sweep status DIR [--json]\n"
    "       tensorscope sweep report DIR [--format md|csv|latex|json] [--out FILE]\n"
    "                                    [--figure FILE.svg|png|pdf] [--x parameters|AXIS]";

/// `v` with `digits` digits after the point.
inline std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

/// `s` padded with spaces to `w` characters (counted as UTF-8 characters: labels may hold "·").
inline std::string pad(std::string s, std::size_t w) {
  std::size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars < w) s += std::string(w - chars, ' ');
  return s;
}

}  // namespace tensorscope::app::sweep_text
