#pragma once
/// Crash-safe file writes: write a temporary file beside the target, fsync it, rename it over the
/// target, fsync the directory. A reader sees the old file or the new one, never a torn one.

#include <string>
#include <string_view>

namespace tensorscope::files {

/// Throws std::runtime_error naming the path and the system error on failure; the target is
/// untouched then and the temporary file removed.
void writeFileAtomically(const std::string& path, std::string_view contents);

/// Every file-system step of an atomic write, a checkpoint commit or a metrics append calls this
/// first. With TENSORSCOPE_KILL_AT_FILE_OP=k in the environment the process SIGKILLs itself at the
/// k-th call (counted from 1): the hook that makes the crash-consistency tests reach every point of
/// a write.
void fileOperation(const char* what);

}  // namespace tensorscope::files
