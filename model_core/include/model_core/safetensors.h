#pragma once
/// Safetensors files (https://github.com/huggingface/safetensors), torch-free.
///
/// Layout: an 8-byte little-endian uint64 N, N bytes of UTF-8 JSON header
/// `{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
///  "__metadata__": {"key": "value"}}`, then the data buffer; offsets are relative to its start.
/// The reader validates everything the reference implementation does (and rejects unknown keys
/// and duplicate names too); every failure is a SafetensorsError naming the source and reason.
/// Tensor bytes are kept exactly as stored: contiguous, row-major, little-endian.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::model_core {

/// Element types this implementation reads and writes (every one LibTorch 1.13 has).
enum class DType { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64 };

/// The format's name of a dtype: "BOOL", "U8", ..., "BF16", "F32", "F64".
std::string_view dtypeName(DType dtype);
/// Parses a format dtype name; nullopt for unknown or unsupported names (e.g. "U16", "F8_E4M3").
std::optional<DType> dtypeFromName(std::string_view name);
/// Bytes per element.
std::size_t dtypeSize(DType dtype);
/// True for F16, BF16, F32, F64.
bool isFloatingPoint(DType dtype);

/// Any failure to read, parse, validate or write a safetensors file. what() is
/// "SOURCE: REASON", SOURCE being the file path (or "<memory>" for in-memory buffers).
class SafetensorsError : public std::runtime_error {
 public:
  SafetensorsError(const std::string& source, const std::string& reason);
  const std::string& source() const { return source_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string source_;
  std::string reason_;
};

/// One tensor with its own bytes (contiguous, row-major, little-endian).
struct TensorData {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  ///< empty for a scalar
  std::vector<std::byte> bytes;

  /// Product of the shape (1 for a scalar). Throws std::invalid_argument for a negative
  /// dimension or a product beyond int64.
  int64_t numel() const;
  bool operator==(const TensorData&) const = default;
};

/// A non-owning view of a tensor's bytes, for writing without copying.
struct TensorView {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
};

/// A whole file in memory.
struct SafetensorsFile {
  std::map<std::string, TensorData> tensors;
  std::map<std::string, std::string> metadata;  ///< "__metadata__"; empty when absent
  bool operator==(const SafetensorsFile&) const = default;
};

/// A tensor's header entry: where its bytes lie in the data buffer.
struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  ///< data_offsets[0], relative to the data buffer
  uint64_t end = 0;    ///< data_offsets[1]
  uint64_t byteSize() const { return end - begin; }
  bool operator==(const TensorInfo&) const = default;
};

/// A validated header: every entry consistent and the data buffer exactly covered.
struct SafetensorsHeader {
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t header_size = 0;  ///< N: JSON bytes, padding included
  uint64_t data_size = 0;    ///< bytes in the data buffer

  /// Names in data-buffer order (by data_offsets).
  std::vector<std::string> namesInFileOrder() const;
};

/// Largest header accepted, as in the reference implementation.
inline constexpr uint64_t kMaxSafetensorsHeaderSize = 100'000'000;
/// Most tensors (and metadata keys) in one file. Tensorscope's largest files (a 64-layer model's
/// optimizer state) hold about 2,000; a header naming more is refused while it is parsed, so a
/// hostile header of 200,000 entries costs tens of MB to refuse, not hundreds.
inline constexpr std::size_t kMaxSafetensorsEntries = 16'384;

/// Reads and validates a whole file. Throws SafetensorsError.
SafetensorsFile readSafetensors(const std::string& path);

/// Reads and validates only the prefix and header (names, dtypes, shapes, offsets); the data
/// buffer is not read, only its size is checked against the header. Throws SafetensorsError.
SafetensorsHeader readSafetensorsHeader(const std::string& path);

/// Where to put one tensor's bytes: given its name and entry, returns a buffer of exactly
/// info.byteSize() bytes that stays valid until the read returns.
using TensorDestination = std::function<std::span<std::byte>(const std::string&, const TensorInfo&)>;

/// Reads the header, then each tensor's bytes straight into the buffer `destination` gives
/// (in data-buffer order), so a caller can fill its own storage without an extra copy.
/// Returns the header. Throws SafetensorsError (also when a destination has the wrong size).
SafetensorsHeader readSafetensorsInto(const std::string& path, const TensorDestination& destination);

/// Parses and validates a whole file held in memory; `source` names it in errors.
SafetensorsFile parseSafetensors(std::string_view bytes, const std::string& source = "<memory>");

/// Writes `file` atomically (temporary file, fsync, rename, directory fsync): tensors in sorted
/// name order, contiguous, header padded with spaces to a multiple of 8 bytes, `__metadata__`
/// only when non-empty. Throws SafetensorsError for inconsistent tensors or I/O failures; the
/// target is then untouched.
void writeSafetensors(const std::string& path, const SafetensorsFile& file);

/// The same from views, streamed to disk without assembling the file in memory.
void writeSafetensors(const std::string& path, const std::map<std::string, TensorView>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// The exact bytes writeSafetensors writes.
std::string serializeSafetensors(const SafetensorsFile& file);

/// Values converted to `dtype` (F16/BF16 rounded to nearest, ties to even). `dtype` must be a
/// floating-point type; shape's product must equal values.size(). Throws std::invalid_argument.
TensorData makeTensorData(const std::vector<float>& values, std::vector<int64_t> shape,
                          DType dtype = DType::F32);
/// As above from doubles, rounded once (never through float) to the target type.
TensorData makeTensorData(const std::vector<double>& values, std::vector<int64_t> shape,
                          DType dtype = DType::F64);
/// Integers stored as an integer dtype or BOOL (0/1 only). Throws std::out_of_range for a value
/// the dtype cannot hold, std::invalid_argument for a floating dtype or a shape mismatch.
TensorData makeTensorData(const std::vector<int64_t>& values, std::vector<int64_t> shape,
                          DType dtype = DType::I64);

/// Every element as float (F64 and wide integers rounded to nearest). Throws
/// std::invalid_argument when bytes.size() != numel() * dtypeSize(dtype).
std::vector<float> toFloatVector(const TensorData& tensor);
/// Every element as double (exact for every dtype but I64 beyond 2^53).
std::vector<double> toDoubleVector(const TensorData& tensor);
/// Every element of an integer or BOOL tensor; std::invalid_argument for floating dtypes.
std::vector<int64_t> toInt64Vector(const TensorData& tensor);

/// IEEE binary16 bits of `value`, rounded to nearest, ties to even (overflow gives infinity).
uint16_t floatToHalfBits(double value);
/// bfloat16 bits of `value`, rounded to nearest, ties to even.
uint16_t floatToBFloat16Bits(double value);
/// The exact value of binary16 bits.
float halfBitsToFloat(uint16_t bits);
/// The exact value of bfloat16 bits.
float bfloat16BitsToFloat(uint16_t bits);

}  // namespace tensorscope::model_core
