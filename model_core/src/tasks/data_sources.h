#pragma once
// The files behind the data-backed tasks. Text for the character language model: any UTF-8 file,
// or the King James Bible from the Debian package bible-kjv, extracted once with
// `bible -f "Gen1:1-Rev22:21"` and cached. Images for Fashion-MNIST: IDX files (the MNIST
// container), gzip-compressed or plain (zlib's gzread reads both). IDX header: 2 zero bytes, type
// byte 0x08 (unsigned byte), number of dimensions, one big-endian uint32 per dimension, then data.

#include <cstdint>
#include <string>
#include <vector>

namespace tensorscope::model_core::tasks {

struct Corpus {
  std::string text;
  std::string source;  ///< for display: where the text came from
};

/// The first executable `name` on $PATH, or "" when there is none.
std::string findExecutable(const std::string& name);

/// Reads a text file. Throws std::runtime_error when it cannot be read or is empty.
Corpus loadCorpusFile(const std::string& path);

/// The King James text from the cache (taskCacheDirectory()/kjv-bible.txt) or, the first time,
/// from the `bible` program, then cached atomically. Throws MissingDataError naming bible-kjv
/// when `bible` is not installed, std::runtime_error when it fails or prints something else.
/// A cache that cannot be written is not an error (the text is used from memory; source says so).
Corpus loadKingJamesBible();

inline constexpr const char* kBibleCommandArguments = "-f \"Gen1:1-Rev22:21\"";
inline constexpr const char* kBibleCacheFile = "kjv-bible.txt";

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  ///< count * rows * cols, row-major per image
};

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  ///< unsigned bytes, 3 dimensions
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  ///< unsigned bytes, 1 dimension

/// Throws std::runtime_error naming `path` and the problem: unreadable file, bad magic number,
/// implausible dimensions, truncated data, corrupt gzip stream, bytes beyond the declared data.
IdxImages readIdxImages(const std::string& path);
/// Labels; each must be < num_classes.
std::vector<std::uint8_t> readIdxLabels(const std::string& path, int num_classes);

}  // namespace tensorscope::model_core::tasks
