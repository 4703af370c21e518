// Safetensors <-> LibTorch: every dtype round-tripped through files, F16/BF16 checked bit for bit
// against LibTorch's own conversions, and files exchanged with PyTorch in Python.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>

#include "io/tensor_convert.h"
#include "io_test_util.h"

namespace tensorscope::model_core {
namespace {

using testing::TempDir;

const std::vector<DType> kAllDTypes{DType::Bool, DType::U8,  DType::I8,   DType::I16, DType::I32,
                                    DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

TEST(TensorConvert, ScalarTypesMapBothWays) {
  for (DType d : kAllDTypes) {
    EXPECT_EQ(fromScalarType(toScalarType(d)), d) << dtypeName(d);
    EXPECT_EQ(c10::elementSize(toScalarType(d)), dtypeSize(d)) << dtypeName(d);
  }
  EXPECT_THROW(fromScalarType(at::kComplexFloat), std::invalid_argument);
  EXPECT_THROW(fromTensor(at::zeros({2}, at::kComplexDouble)), std::invalid_argument);
}

TEST(TensorConvert, RoundTripsEveryDtypeStridesAndGradThroughAFile) {
  at::manual_seed(7);
  const std::map<std::string, at::Tensor> tensors{
      {"f32", at::randn({3, 4})},
      {"f64", at::randn({5}, at::kDouble)},
      {"f16", at::randn({2, 3}).to(at::kHalf)},
      {"bf16", at::randn({4, 2}).to(at::kBFloat16)},
      {"i64", at::randint(-(int64_t{1} << 40), int64_t{1} << 40, {6}, at::kLong)},
      {"i32", at::randint(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), {2, 3}, at::kInt)},
      {"i16", at::randint(-32768, 32767, {7}, at::kShort)},
      {"i8", at::randint(-128, 127, {3, 3}, at::kChar)},
      {"u8", at::randint(0, 255, {4}, at::kByte)},
      {"bool", at::rand({5}) > 0.5},
      {"transposed", at::randn({3, 5}).t()},
      {"strided", at::arange(20, at::kFloat).reshape({4, 5}).slice(1, 1, 5, 2)},
      {"scalar", at::scalar_tensor(2.5, at::kDouble)},
      {"empty", at::zeros({0, 4})},
      {"grad", at::randn({2}).requires_grad_()},
  };
  ASSERT_FALSE(tensors.at("transposed").is_contiguous());
  TempDir dir;
  const std::string path = dir.file("torch.safetensors");
  writeTensors(path, tensors, {{"format", "pt"}});

  std::map<std::string, std::string> metadata;
  const std::map<std::string, at::Tensor> back = readTensorMap(path, &metadata);
  EXPECT_EQ(metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [name, want] : tensors) {
    const at::Tensor& got = back.at(name);
    EXPECT_EQ(got.scalar_type(), want.scalar_type()) << name;
    EXPECT_EQ(got.sizes(), want.sizes()) << name;
    EXPECT_TRUE(got.is_contiguous()) << name;
    EXPECT_FALSE(got.requires_grad()) << name;
    EXPECT_TRUE(at::equal(got, want.detach())) << name << ": " << got << " vs " << want;
  }
  // The torch-free reader sees the same bytes, row-major.
  const SafetensorsFile plain = readSafetensors(path);
  EXPECT_EQ(toFloatVector(plain.tensors.at("strided")), (std::vector<float>{1, 3, 6, 8, 11, 13, 16, 18}));
  EXPECT_EQ(plain.tensors.at("transposed"), fromTensor(tensors.at("transposed").contiguous()));

  const NamedTensors ordered = readTensors(path);
  ASSERT_EQ(ordered.size(), tensors.size());
  EXPECT_TRUE(std::is_sorted(ordered.begin(), ordered.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; }));
}

// Values where rounding decides: every midpoint between neighbouring finite values of the
// target type, the floats either side of it, specials, and random bit patterns.
std::vector<float> roundingProbes(uint16_t maxFinite, float (*decode)(uint16_t)) {
  std::vector<float> v{0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                       std::numeric_limits<float>::quiet_NaN(), 65520.0f, 65519.996f};
  for (uint32_t b = 0; b < maxFinite; ++b) {
    const float mid = (decode(static_cast<uint16_t>(b)) + decode(static_cast<uint16_t>(b + 1))) / 2;  // exact
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  std::mt19937 rng(12345u);
  for (int i = 0; i < 200'000; ++i) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    v.push_back(x);
  }
  return v;
}

void expectSameBits(const TensorData& mine, const TensorData& torchs, const std::vector<float>& inputs) {
  ASSERT_EQ(mine.bytes.size(), torchs.bytes.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    uint16_t a = 0, b = 0;
    std::memcpy(&a, mine.bytes.data() + 2 * i, 2);
    std::memcpy(&b, torchs.bytes.data() + 2 * i, 2);
    // NaN payloads differ by code path (LibTorch's AVX2 kernel makes BF16 NaN 0xFFFF): NaN must
    // stay NaN; every other value must match bit for bit.
    const auto isNaN = [&](uint16_t bits) {
      return std::isnan(mine.dtype == DType::F16 ? halfBitsToFloat(bits) : bfloat16BitsToFloat(bits));
    };
    const bool bothNaN = std::isnan(inputs[i]) && isNaN(a) && isNaN(b);
    if (a != b && !bothNaN) {
      ADD_FAILURE() << dtypeName(mine.dtype) << " of " << inputs[i] << " (bits 0x" << std::hex
                    << std::bit_cast<uint32_t>(inputs[i]) << "): ours 0x" << a << ", LibTorch 0x" << b;
      return;
    }
  }
}

TEST(TensorConvert, F16AndBF16RoundLikeLibTorch) {
  for (DType d : {DType::F16, DType::BF16}) {
    const bool half = d == DType::F16;
    const std::vector<float> values = roundingProbes(half ? 0x7BFF : 0x7F7F, half ? halfBitsToFloat : bfloat16BitsToFloat);
    const auto n = static_cast<int64_t>(values.size());
    const at::Tensor src = at::from_blob(const_cast<float*>(values.data()), {n}, at::kFloat).clone();
    const TensorData mine = makeTensorData(values, {n}, d);
    expectSameBits(mine, fromTensor(src.to(toScalarType(d))), values);
    // And back: our decoding of our bits equals LibTorch's decoding of them.
    const at::Tensor decoded = toTensor(mine).to(at::kFloat);
    const std::vector<float> ours = toFloatVector(mine);
    ASSERT_EQ(decoded.numel(), n);
    EXPECT_EQ(std::memcmp(ours.data(), decoded.data_ptr<float>(), ours.size() * sizeof(float)), 0) << dtypeName(d);
  }
}

TEST(TensorConvert, DecodesEveryF16AndBF16BitPatternLikeLibTorch) {
  std::vector<int16_t> all(65536);
  std::iota(all.begin(), all.end(), int16_t{-32768});
  const at::Tensor bits = at::from_blob(all.data(), {65536}, at::kShort).clone();
  for (DType d : {DType::F16, DType::BF16}) {
    const TensorData data{d, {65536}, fromTensor(bits).bytes};
    const std::vector<float> ours = toFloatVector(data);
    const at::Tensor theirs = bits.view(toScalarType(d)).to(at::kFloat);
    const float* t = theirs.data_ptr<float>();
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const bool same = std::isnan(t[i]) ? std::isnan(ours[i]) : std::bit_cast<uint32_t>(ours[i]) == std::bit_cast<uint32_t>(t[i]);
      if (!same) {
        ADD_FAILURE() << dtypeName(d) << " bits " << all[i] << ": ours " << ours[i] << ", LibTorch " << t[i];
        break;
      }
    }
  }
}

TEST(TensorConvert, ToTensorCopiesAndNormalisesBools) {
  TensorData flags{DType::Bool, {3}, {std::byte{0}, std::byte{7}, std::byte{1}}};
  const at::Tensor t = toTensor(flags);
  flags.bytes[0] = std::byte{1};
  EXPECT_EQ(t.scalar_type(), at::kBool);
  EXPECT_TRUE(at::equal(t, at::tensor(std::vector<int64_t>{0, 1, 1}).to(at::kBool)));
  EXPECT_THROW(toTensor(TensorData{DType::F32, {2}, std::vector<std::byte>(4)}), std::invalid_argument);
  const TensorData scalar = makeTensorData(std::vector<double>{-1.5}, {}, DType::F64);
  EXPECT_EQ(toTensor(scalar).dim(), 0);
  EXPECT_EQ(toTensor(scalar).item<double>(), -1.5);
}

TEST(TensorConvert, WriteRejectsDuplicateNamesAndUnsupportedTypes) {
  TempDir dir;
  const std::string path = dir.file("dup.safetensors");
  const NamedTensors dup{{"a", at::zeros({1})}, {"a", at::ones({1})}};
  try {
    writeTensors(path, dup);
    FAIL() << "duplicate names were written";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": duplicate tensor name \"a\"");
  }
  EXPECT_THROW(writeTensors(path, NamedTensors{{"c", at::zeros({1}, at::kComplexFloat)}}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace tensorscope::model_core
