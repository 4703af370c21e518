#pragma once
/// Reading whole files (issue 19): bounded reads that refuse directories, devices and oversized
/// files by name before reading, for every file of unknown origin (specs, configs, sessions,
/// checkpoint manifests, corpora), and a plain whole-file read for files the program wrote itself.

#include <cstdint>
#include <string>

namespace tensorscope::files {

/// Size caps per kind of file, checked with stat before reading.
inline constexpr std::uintmax_t kMaxConfigFileBytes = 64ull << 20;  ///< specs, configs, sessions, states
inline constexpr std::uintmax_t kMaxCorpusFileBytes = 1ull << 30;   ///< char_lm corpora

/// Reads the regular file `path` whole. Throws std::runtime_error naming the file when it does not
/// exist, is a directory, a device, a FIFO or a socket, is larger than `maxBytes`, or cannot be read.
std::string readBoundedFile(const std::string& path, std::uintmax_t maxBytes = kMaxConfigFileBytes);

/// Reads a whole file. Throws std::runtime_error ("cannot open PATH: reason") on failure.
std::string readWholeFile(const std::string& path);

}  // namespace tensorscope::files
