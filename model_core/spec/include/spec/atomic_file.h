#pragma once
/// Crash-safe file writes: write a temporary file beside the target, fsync it, rename it over the
/// target, fsync the directory. A reader sees the old file or the new one, never a torn one.

#include <string>
#include <string_view>

namespace tensorscope::spec {

/// Throws std::runtime_error naming the path and the system error on failure; the target is
/// untouched then and the temporary file removed.
void writeFileAtomically(const std::string& path, std::string_view contents);

/// Reads a whole file. Throws std::runtime_error ("cannot open PATH: reason") on failure.
std::string readWholeFile(const std::string& path);

}  // namespace tensorscope::spec
