// The safetensors format as specified: hand-written files read, written files byte-exact,
// every dtype round-tripped, header-only reads and atomic writes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "io_test_util.h"
#include "model_core/safetensors.h"

namespace tensorscope::model_core {
namespace {

using testing::assemble;
using testing::le64;
using testing::readRaw;
using testing::TempDir;
using testing::writeRaw;

std::string bytesOf(const TensorData& t) {
  return std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
}

TEST(SafetensorsDType, NamesAndSizesFollowTheFormat) {
  const std::vector<std::tuple<DType, std::string, std::size_t>> table{
      {DType::Bool, "BOOL", 1}, {DType::U8, "U8", 1},     {DType::I8, "I8", 1},    {DType::I16, "I16", 2},
      {DType::I32, "I32", 4},   {DType::I64, "I64", 8},   {DType::F16, "F16", 2},  {DType::BF16, "BF16", 2},
      {DType::F32, "F32", 4},   {DType::F64, "F64", 8}};
  for (const auto& [dtype, name, size] : table) {
    EXPECT_EQ(dtypeName(dtype), name);
    EXPECT_EQ(dtypeSize(dtype), size) << name;
    EXPECT_EQ(dtypeFromName(name), dtype) << name;
  }
  EXPECT_FALSE(dtypeFromName("f32"));  // names are case-sensitive
  EXPECT_FALSE(dtypeFromName("U16"));  // in the format, not supported by LibTorch 1.13
  EXPECT_FALSE(dtypeFromName("F8_E4M3"));
}

// Written byte by byte from the format description, with tensors in reverse name order in the
// buffer and __metadata__ last, as another writer may do.
TEST(SafetensorsFormat, ReadsHandWrittenFile) {
  const std::string header =
      R"({"b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[1,2],"data_offsets":[8,16]},"__metadata__":{"k":"v"}})";
  ASSERT_EQ(header.size(), 135u);
  const std::string prefix("\x87\0\0\0\0\0\0\0", 8);  // 135, little-endian
  const std::string data("\x01\x00\x00\x00\xFE\xFF\xFF\xFF"   // I32 1, -2
                         "\x00\x00\x80\x3F\x00\x00\x20\xC0",  // F32 1.0, -2.5
                         16);
  TempDir dir;
  const std::string path = dir.file("hand.safetensors");
  writeRaw(path, prefix + header + data);

  const SafetensorsFile file = readSafetensors(path);
  ASSERT_EQ(file.tensors.size(), 2u);
  const TensorData& a = file.tensors.at("a");
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(toFloatVector(a), (std::vector<float>{1.0f, -2.5f}));
  const TensorData& b = file.tensors.at("b");
  EXPECT_EQ(b.dtype, DType::I32);
  EXPECT_EQ(toInt64Vector(b), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ(parseSafetensors(prefix + header + data), file);

  const SafetensorsHeader h = readSafetensorsHeader(path);
  EXPECT_EQ(h.header_size, 135u);
  EXPECT_EQ(h.data_size, 16u);
  EXPECT_EQ(h.tensors.at("a"), (TensorInfo{DType::F32, {1, 2}, 8, 16}));
  EXPECT_EQ(h.tensors.at("b"), (TensorInfo{DType::I32, {2}, 0, 8}));
  EXPECT_EQ(h.namesInFileOrder(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(h.metadata, file.metadata);
}

// The reference writer's layout: metadata first, tensors sorted by name and contiguous, compact
// JSON padded with spaces to a multiple of 8.
TEST(SafetensorsFormat, WritesReferenceLayoutByteForByte) {
  SafetensorsFile file;
  file.tensors["c"] = makeTensorData(std::vector<float>{1.0f}, {1}, DType::BF16);
  file.tensors["a"] = makeTensorData(std::vector<float>{1.0f, -2.0f}, {2});
  file.tensors["b"] = makeTensorData(std::vector<int64_t>{7}, {});
  file.metadata["format"] = "pt";
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},"c":{"dtype":"BF16","shape":[1],"data_offsets":[16,18]}})";
  ASSERT_EQ(json.size(), 194u);
  const std::string expected = std::string("\xC8\0\0\0\0\0\0\0", 8) + json + std::string(6, ' ') +
                               std::string("\x00\x00\x80\x3F\x00\x00\x00\xC0"  // F32 1, -2
                                           "\x07\0\0\0\0\0\0\0"                // I64 7
                                           "\x80\x3F",                         // BF16 1
                                           18);
  EXPECT_EQ(serializeSafetensors(file), expected);

  TempDir dir;
  const std::string path = dir.file("out.safetensors");
  writeSafetensors(path, file);
  EXPECT_EQ(readRaw(path), expected);
  EXPECT_EQ(readSafetensors(path), file);
}

TEST(SafetensorsFormat, EmptyFileIsPaddedBraces) {
  const std::string bytes = serializeSafetensors(SafetensorsFile{});
  EXPECT_EQ(bytes, le64(8) + "{}      ");
  EXPECT_EQ(parseSafetensors(bytes), SafetensorsFile{});
  // An unpadded "{}" is valid too.
  EXPECT_TRUE(parseSafetensors(assemble("{}", "")).tensors.empty());
}

TEST(SafetensorsFormat, RoundTripsEveryDtypeScalarsEmptyTensorsAndMetadata) {
  SafetensorsFile file;
  const std::vector<double> reals{0.0, -0.0, 1.0, -2.5, 0.1, 1e-3, 3.0e4, -65504.0};
  for (DType d : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    file.tensors[std::string(dtypeName(d))] = makeTensorData(reals, {2, 4}, d);
  }
  file.tensors["BOOL"] = makeTensorData(std::vector<int64_t>{1, 0, 1}, {3}, DType::Bool);
  file.tensors["U8"] = makeTensorData(std::vector<int64_t>{0, 255}, {2}, DType::U8);
  file.tensors["I8"] = makeTensorData(std::vector<int64_t>{-128, 127}, {2}, DType::I8);
  file.tensors["I16"] = makeTensorData(std::vector<int64_t>{-32768, 32767}, {1, 2}, DType::I16);
  file.tensors["I32"] = makeTensorData(std::vector<int64_t>{INT32_MIN, INT32_MAX}, {2, 1}, DType::I32);
  file.tensors["I64"] = makeTensorData(std::vector<int64_t>{INT64_MIN, INT64_MAX, 0}, {3}, DType::I64);
  file.tensors["scalar"] = makeTensorData(std::vector<double>{2.25}, {}, DType::F64);
  file.tensors["empty"] = makeTensorData(std::vector<float>{}, {3, 0, 2}, DType::F32);
  file.tensors["\xC3\xBCn\xC3\xAF code/\"quoted\""] = makeTensorData(std::vector<int64_t>{5}, {1}, DType::I8);
  file.metadata = {{"format", "pt"}, {"note", "line\nbreak \xE2\x9C\x93"}, {"", ""}};

  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  writeSafetensors(path, file);
  const SafetensorsFile back = readSafetensors(path);
  EXPECT_EQ(back, file);
  EXPECT_EQ(toDoubleVector(back.tensors.at("F64")), reals);
  EXPECT_EQ(toInt64Vector(back.tensors.at("I64")), (std::vector<int64_t>{INT64_MIN, INT64_MAX, 0}));
  EXPECT_EQ(toDoubleVector(back.tensors.at("scalar")), std::vector<double>{2.25});
  EXPECT_EQ(back.tensors.at("empty").numel(), 0);
  // F16 holds 0.1 as 0x2E66 = 0.0999755859375 (the nearest binary16 value).
  EXPECT_EQ(toDoubleVector(back.tensors.at("F16"))[4], 0.0999755859375);

  const SafetensorsHeader h = readSafetensorsHeader(path);
  EXPECT_EQ(h.header_size % 8, 0u);
  EXPECT_EQ(std::filesystem::file_size(path), 8 + h.header_size + h.data_size);
  // Sorted name order is the buffer order.
  std::vector<std::string> sorted;
  for (const auto& [name, t] : file.tensors) sorted.push_back(name);
  std::vector<std::string> inFile = h.namesInFileOrder();
  std::erase_if(inFile, [&](const std::string& n) { return n == "empty"; });  // zero bytes: no position
  std::erase_if(sorted, [&](const std::string& n) { return n == "empty"; });
  EXPECT_EQ(inFile, sorted);
}

TEST(SafetensorsFormat, ReadIntoFillsCallerBuffersAndChecksTheirSize) {
  TempDir dir;
  const std::string path = dir.file("into.safetensors");
  SafetensorsFile file;
  file.tensors["x"] = makeTensorData(std::vector<float>{1, 2, 3}, {3});
  writeSafetensors(path, file);

  std::vector<std::byte> buffer(12);
  const SafetensorsHeader h = readSafetensorsInto(path, [&](const std::string& name, const TensorInfo& info) {
    EXPECT_EQ(name, "x");
    EXPECT_EQ(info.byteSize(), 12u);
    return std::span<std::byte>(buffer);
  });
  EXPECT_EQ(buffer, file.tensors["x"].bytes);
  EXPECT_EQ(h.tensors.size(), 1u);

  std::vector<std::byte> small(4);
  try {
    readSafetensorsInto(path, [&](const std::string&, const TensorInfo&) { return std::span<std::byte>(small); });
    FAIL() << "a 4-byte destination for a 12-byte tensor was accepted";
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("has 4 bytes; it needs 12"), std::string::npos) << e.what();
  }
}

TEST(SafetensorsWrite, ReplacesTheTargetAtomicallyAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  SafetensorsFile first;
  first.tensors["w"] = makeTensorData(std::vector<float>{1, 2}, {2});
  writeSafetensors(path, first);
  SafetensorsFile second;
  second.tensors["v"] = makeTensorData(std::vector<double>{3}, {1});
  writeSafetensors(path, second);
  EXPECT_EQ(readSafetensors(path), second);

  // A rejected write leaves the old file as it was.
  SafetensorsFile broken;
  broken.tensors["bad"] = TensorData{DType::F32, {3}, std::vector<std::byte>(8)};
  EXPECT_THROW(writeSafetensors(path, broken), SafetensorsError);
  EXPECT_EQ(readSafetensors(path), second);

  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";

  const std::string missing = dir.file("no/such/dir/x.safetensors");
  try {
    writeSafetensors(missing, second);
    FAIL() << "writing into a missing directory succeeded";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.source(), missing);
    EXPECT_NE(std::string(e.what()).find("cannot create temporary file"), std::string::npos) << e.what();
  }
}

TEST(SafetensorsWrite, RejectsInconsistentTensorsWithTheReason) {
  const auto reasonOf = [](const SafetensorsFile& f) {
    try {
      serializeSafetensors(f);
    } catch (const SafetensorsError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  SafetensorsFile f;
  f.tensors["__metadata__"] = makeTensorData(std::vector<float>{1}, {1});
  EXPECT_NE(reasonOf(f).find("cannot be named \"__metadata__\""), std::string::npos) << reasonOf(f);
  f.tensors.clear();
  f.tensors["w"] = TensorData{DType::F16, {3}, std::vector<std::byte>(4)};
  EXPECT_NE(reasonOf(f).find("\"w\" has 4 bytes but dtype F16 with shape [3] needs 6"), std::string::npos)
      << reasonOf(f);
  f.tensors["w"] = TensorData{DType::F32, {-1}, {}};
  EXPECT_NE(reasonOf(f).find("invalid shape [-1]"), std::string::npos) << reasonOf(f);
  f.tensors.clear();
  f.tensors["\xFF"] = makeTensorData(std::vector<float>{1}, {1});
  EXPECT_NE(reasonOf(f).find("valid UTF-8"), std::string::npos) << reasonOf(f);
}

// Bit patterns from IEEE 754 binary16 and bfloat16, worked out by hand.
TEST(SafetensorsValues, HalfAndBFloat16RoundToNearestEven) {
  EXPECT_EQ(floatToHalfBits(1.0), 0x3C00);
  EXPECT_EQ(floatToHalfBits(-2.0), 0xC000);
  EXPECT_EQ(floatToHalfBits(-0.0), 0x8000);
  EXPECT_EQ(floatToHalfBits(65504.0), 0x7BFF);                    // largest finite
  EXPECT_EQ(floatToHalfBits(65519.99), 0x7BFF);                   // below the midpoint to 65536
  EXPECT_EQ(floatToHalfBits(65520.0), 0x7C00);                    // tie, odd 0x7BFF: to infinity
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0, -24)), 0x0001);       // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0, -25)), 0x0000);       // tie: to even zero
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0000001, -25)), 0x0001);  // just above the tie
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0, -25)), 0x0002);       // tie between 1 and 2: to 2
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.5, -24)), 0x0400);    // rounds up into the normals
  EXPECT_EQ(floatToHalfBits(1.0 + std::ldexp(1.0, -11)), 0x3C00);      // tie: to even
  EXPECT_EQ(floatToHalfBits(1.0 + std::ldexp(3.0, -11)), 0x3C02);      // tie: to even
  // One rounding from double: float would first round this to the tie 1 + 2^-11, then to 1.
  EXPECT_EQ(floatToHalfBits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3C01);
  EXPECT_EQ(floatToHalfBits(std::numeric_limits<double>::infinity()), 0x7C00);
  EXPECT_EQ(floatToHalfBits(1e300), 0x7C00);
  const uint16_t nan = floatToHalfBits(std::nan(""));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);

  EXPECT_EQ(floatToBFloat16Bits(1.0), 0x3F80);
  EXPECT_EQ(floatToBFloat16Bits(-1.0), 0xBF80);
  EXPECT_EQ(floatToBFloat16Bits(1.0 + std::ldexp(1.0, -8)), 0x3F80);  // tie: to even
  EXPECT_EQ(floatToBFloat16Bits(1.0 + std::ldexp(3.0, -8)), 0x3F82);  // tie: to even
  EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7F80);  // beyond max + ulp/2
  EXPECT_EQ(floatToBFloat16Bits(std::ldexp(1.0, -133)), 0x0001);       // smallest subnormal
  EXPECT_EQ(floatToBFloat16Bits(std::nan("")), 0x7FC0);

  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfBitsToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7E00)));
  EXPECT_TRUE(std::signbit(halfBitsToFloat(0x8000)));
  EXPECT_EQ(bfloat16BitsToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16BitsToFloat(0x7F7F), std::ldexp(255.0f, 120));  // largest finite
  EXPECT_EQ(bfloat16BitsToFloat(0x0001), std::ldexp(1.0f, -133));
}

TEST(SafetensorsValues, MakeTensorDataChecksDtypesRangesAndShapes) {
  const TensorData h = makeTensorData(std::vector<float>{1.0f, -2.0f}, {2}, DType::F16);
  EXPECT_EQ(bytesOf(h), std::string("\x00\x3C\x00\xC0", 4));
  EXPECT_EQ(toFloatVector(h), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(bytesOf(makeTensorData(std::vector<int64_t>{-2}, {1}, DType::I16)), std::string("\xFE\xFF", 2));

  EXPECT_THROW(makeTensorData(std::vector<int64_t>{256}, {1}, DType::U8), std::out_of_range);
  EXPECT_THROW(makeTensorData(std::vector<int64_t>{-1}, {1}, DType::U8), std::out_of_range);
  EXPECT_THROW(makeTensorData(std::vector<int64_t>{-129}, {1}, DType::I8), std::out_of_range);
  EXPECT_THROW(makeTensorData(std::vector<int64_t>{int64_t{1} << 31}, {1}, DType::I32), std::out_of_range);
  EXPECT_THROW(makeTensorData(std::vector<int64_t>{2}, {1}, DType::Bool), std::out_of_range);
  EXPECT_NO_THROW(makeTensorData(std::vector<int64_t>{-128, 127}, {2}, DType::I8));
  EXPECT_THROW(makeTensorData(std::vector<int64_t>{1}, {1}, DType::F32), std::invalid_argument);
  EXPECT_THROW(makeTensorData(std::vector<float>{1}, {1}, DType::I32), std::invalid_argument);
  EXPECT_THROW(makeTensorData(std::vector<float>{1, 2}, {3}), std::invalid_argument);
  EXPECT_THROW(makeTensorData(std::vector<float>{}, {-1}), std::invalid_argument);
  EXPECT_THROW(toInt64Vector(makeTensorData(std::vector<float>{1}, {1})), std::invalid_argument);
  EXPECT_THROW(toFloatVector(TensorData{DType::F32, {2}, std::vector<std::byte>(7)}), std::invalid_argument);
  EXPECT_EQ(toInt64Vector(TensorData{DType::Bool, {2}, {std::byte{0}, std::byte{7}}}), (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace tensorscope::model_core
