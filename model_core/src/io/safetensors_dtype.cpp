// Element types of safetensors files: names, sizes, IEEE half / bfloat16 rounding, and the
// conversions between TensorData and plain vectors. No torch here.
#include "model_core/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace tensorscope::model_core {

// Tensor bytes are little-endian in the file and copied as they are into and out of host values.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

struct DTypeEntry {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeEntry, 10> kDTypes{{
    {DType::Bool, "BOOL", 1},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::I16, "I16", 2},
    {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
}};

const DTypeEntry& entryOf(DType dtype) {
  for (const auto& e : kDTypes) {
    if (e.dtype == dtype) return e;
  }
  throw std::invalid_argument("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

// Rounds |value| to the binary format with `expBits` exponent and `manBits` mantissa bits (IEEE
// layout, bias 2^(expBits-1)-1), to nearest with ties to even, in one step from the double.
uint16_t roundToNarrow(double value, int expBits, int manBits) {
  const uint32_t sign = std::signbit(value) ? 1u << (expBits + manBits) : 0u;
  const uint32_t expAllOnes = (1u << expBits) - 1;
  const uint32_t infinity = sign | (expAllOnes << manBits);
  if (std::isnan(value)) return static_cast<uint16_t>(infinity | (1u << (manBits - 1)));
  const double a = std::fabs(value);
  if (std::isinf(a)) return static_cast<uint16_t>(infinity);
  if (a == 0.0) return static_cast<uint16_t>(sign);
  const int bias = (1 << (expBits - 1)) - 1;
  const int minExp = 1 - bias;
  int frexpExp = 0;
  std::frexp(a, &frexpExp);  // a = m * 2^frexpExp, m in [0.5, 1)
  const int exp = std::max(frexpExp - 1, minExp);  // subnormals share the minimum exponent
  if (exp > bias) return static_cast<uint16_t>(infinity);
  // Exact power-of-two scaling: one unit is one step of the target at this exponent.
  const double scaled = std::ldexp(a, manBits - exp);
  double steps = std::floor(scaled);
  const double frac = scaled - steps;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(steps, 2.0) != 0.0)) steps += 1.0;
  // A carry into the next binade (steps == 2^(manBits+1)) lands on the next exponent by itself.
  const uint64_t magnitude =
      (static_cast<uint64_t>(exp + bias) << manBits) + static_cast<uint64_t>(steps) - (1ull << manBits);
  if (magnitude >= (static_cast<uint64_t>(expAllOnes) << manBits)) return static_cast<uint16_t>(infinity);
  return static_cast<uint16_t>(sign | magnitude);
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

std::size_t checkedCount(const std::vector<int64_t>& shape, std::size_t values) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("makeTensorData: negative dimension in shape");
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      throw std::invalid_argument("makeTensorData: shape has too many elements");
    }
    n *= static_cast<uint64_t>(d);
  }
  if (n != values) {
    throw std::invalid_argument("makeTensorData: shape holds " + std::to_string(n) + " elements but " +
                                std::to_string(values) + " values were given");
  }
  return values;
}

template <class V>
TensorData makeFloating(const std::vector<V>& values, std::vector<int64_t> shape, DType dtype) {
  const std::size_t n = checkedCount(shape, values.size());
  if (!isFloatingPoint(dtype)) {
    throw std::invalid_argument("makeTensorData: floating-point values need a floating dtype, not " +
                                std::string(dtypeName(dtype)));
  }
  TensorData t{dtype, std::move(shape), std::vector<std::byte>(n * dtypeSize(dtype))};
  std::byte* out = t.bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(values[i]);
    switch (dtype) {
      case DType::F16: store(out + 2 * i, floatToHalfBits(v)); break;
      case DType::BF16: store(out + 2 * i, floatToBFloat16Bits(v)); break;
      case DType::F32: store(out + 4 * i, static_cast<float>(values[i])); break;
      default: store(out + 8 * i, v); break;
    }
  }
  return t;
}

template <class T>
void storeChecked(std::byte* p, int64_t v) {
  if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
    throw std::out_of_range("makeTensorData: value " + std::to_string(v) + " does not fit the dtype");
  }
  store(p, static_cast<T>(v));
}

// Every element converted to Out; the dtype is dispatched once, not per element.
template <class Out>
std::vector<Out> convertAll(const TensorData& t) {
  const auto n = static_cast<uint64_t>(t.numel());
  if (t.bytes.size() / dtypeSize(t.dtype) != n || t.bytes.size() % dtypeSize(t.dtype) != 0) {
    throw std::invalid_argument("TensorData holds " + std::to_string(t.bytes.size()) +
                                " bytes, inconsistent with its dtype and shape");
  }
  std::vector<Out> out(static_cast<std::size_t>(n));
  const std::byte* p = t.bytes.data();
  auto each = [&]<class T>(std::type_identity<T>, auto convert) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(convert(load<T>(p + i * sizeof(T))));
  };
  auto same = [](auto v) { return v; };
  switch (t.dtype) {
    case DType::Bool: each(std::type_identity<uint8_t>{}, [](uint8_t v) { return v != 0 ? 1 : 0; }); break;
    case DType::U8: each(std::type_identity<uint8_t>{}, same); break;
    case DType::I8: each(std::type_identity<int8_t>{}, same); break;
    case DType::I16: each(std::type_identity<int16_t>{}, same); break;
    case DType::I32: each(std::type_identity<int32_t>{}, same); break;
    case DType::I64: each(std::type_identity<int64_t>{}, same); break;
    case DType::F16: each(std::type_identity<uint16_t>{}, halfBitsToFloat); break;
    case DType::BF16: each(std::type_identity<uint16_t>{}, bfloat16BitsToFloat); break;
    case DType::F32: each(std::type_identity<float>{}, same); break;
    case DType::F64: each(std::type_identity<double>{}, same); break;
  }
  return out;
}

}  // namespace

std::string_view dtypeName(DType dtype) { return entryOf(dtype).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto& e : kDTypes) {
    if (e.name == name) return e.dtype;
  }
  return std::nullopt;
}

std::size_t dtypeSize(DType dtype) { return entryOf(dtype).size; }

bool isFloatingPoint(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 || dtype == DType::F64;
}

int64_t TensorData::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && n > std::numeric_limits<int64_t>::max() / d)) {
      throw std::invalid_argument("TensorData: shape has a negative dimension or too many elements");
    }
    n *= d;
  }
  return n;
}

uint16_t floatToHalfBits(double value) { return roundToNarrow(value, 5, 10); }

uint16_t floatToBFloat16Bits(double value) { return roundToNarrow(value, 8, 7); }

float halfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  const uint32_t man = bits & 0x3FFu;
  if (exp == 0x1Fu) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));  // inf, NaN payload kept
  // Subnormal: man * 2^-24; normal: (1024 + man) * 2^(exp - 25). Both exact in float.
  const float magnitude = exp == 0 ? std::ldexp(static_cast<float>(man), -24)
                                   : std::ldexp(static_cast<float>(1024u + man), static_cast<int>(exp) - 25);
  return sign != 0 ? -magnitude : magnitude;
}

float bfloat16BitsToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

TensorData makeTensorData(const std::vector<float>& values, std::vector<int64_t> shape, DType dtype) {
  return makeFloating(values, std::move(shape), dtype);
}

TensorData makeTensorData(const std::vector<double>& values, std::vector<int64_t> shape, DType dtype) {
  return makeFloating(values, std::move(shape), dtype);
}

TensorData makeTensorData(const std::vector<int64_t>& values, std::vector<int64_t> shape, DType dtype) {
  const std::size_t n = checkedCount(shape, values.size());
  if (isFloatingPoint(dtype)) {
    throw std::invalid_argument("makeTensorData: integer values need an integer or BOOL dtype, not " +
                                std::string(dtypeName(dtype)));
  }
  TensorData t{dtype, std::move(shape), std::vector<std::byte>(n * dtypeSize(dtype))};
  std::byte* out = t.bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t v = values[i];
    switch (dtype) {
      case DType::Bool:
        if (v != 0 && v != 1) throw std::out_of_range("makeTensorData: BOOL value " + std::to_string(v) + " is not 0 or 1");
        store(out + i, static_cast<uint8_t>(v));
        break;
      case DType::U8: storeChecked<uint8_t>(out + i, v); break;
      case DType::I8: storeChecked<int8_t>(out + i, v); break;
      case DType::I16: storeChecked<int16_t>(out + 2 * i, v); break;
      case DType::I32: storeChecked<int32_t>(out + 4 * i, v); break;
      default: store(out + 8 * i, v); break;
    }
  }
  return t;
}

std::vector<float> toFloatVector(const TensorData& tensor) { return convertAll<float>(tensor); }

std::vector<double> toDoubleVector(const TensorData& tensor) { return convertAll<double>(tensor); }

std::vector<int64_t> toInt64Vector(const TensorData& tensor) {
  if (isFloatingPoint(tensor.dtype)) {
    throw std::invalid_argument("toInt64Vector: " + std::string(dtypeName(tensor.dtype)) +
                                " is not an integer dtype");
  }
  return convertAll<int64_t>(tensor);
}

}  // namespace tensorscope::model_core
