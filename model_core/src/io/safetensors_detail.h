#pragma once
// Helpers shared by the safetensors reader and writer (private to model_core_io).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model_core/safetensors.h"

namespace tensorscope::model_core::detail {

inline constexpr std::string_view kMetadataKey = "__metadata__";
inline constexpr uint64_t kPrefixSize = 8;  // the little-endian uint64 header size

/// Throws SafetensorsError(source, reason).
[[noreturn]] void fail(const std::string& source, const std::string& reason);
/// "what: strerror(err)".
std::string sysReason(const std::string& what, int err);
/// `s` as a JSON string literal, for names in messages (invalid UTF-8 replaced).
std::string quote(std::string_view s);
/// "[2, 3]".
std::string shapeText(const std::vector<int64_t>& shape);
/// "[begin, end)".
std::string rangeText(uint64_t begin, uint64_t end);
/// Bytes of a tensor of `shape` and `dtype`; nullopt on a negative dimension or overflow.
std::optional<uint64_t> byteCount(const std::vector<int64_t>& shape, DType dtype);

}  // namespace tensorscope::model_core::detail
