// Files exchanged with PyTorch: check_safetensors_pytorch.py parses what Tensorscope writes (from
// the format definition, with torch.frombuffer) and writes files that Tensorscope must read. Both
// sides build the same deterministic tensors (expectedTensors / expected_tensors). Skipped, with
// the reason, when no python3 can import torch.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "io/tensor_convert.h"
#include "io_test_util.h"
#include "test_paths.h"

namespace tensorscope::model_core {
namespace {

using testing::TempDir;

// The twin of expected_tensors() in check_safetensors_pytorch.py.
std::map<std::string, at::Tensor> expectedTensors() {
  std::vector<double> f32;
  std::vector<double> f64;
  for (int i = 0; i < 6; ++i) f32.push_back((i - 2.5) * 0.25);
  for (int i = 0; i < 4; ++i) f64.push_back((i + 1) / 3.0);
  const auto reals = [](std::vector<double> v, at::ScalarType t) { return at::tensor(v, at::kDouble).to(t); };
  const auto ints = [](std::vector<int64_t> v, at::ScalarType t) { return at::tensor(v, at::kLong).to(t); };
  return {
      {"f32", reals(f32, at::kFloat).reshape({2, 3})},
      {"f64", reals(f64, at::kDouble)},
      {"f16", reals({1.0, -2.5, 65504.0, std::ldexp(1.0, -14), std::ldexp(1.0, -24)}, at::kHalf)},
      {"bf16", reals({1.5, -256.0, std::ldexp(1.0, -126), 0.0078125}, at::kBFloat16)},
      {"i64", ints({-(int64_t{1} << 62), 0, (int64_t{1} << 62) + 7}, at::kLong)},
      {"i32", ints({std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), -1, 7}, at::kInt)
                  .reshape({2, 2})},
      {"i16", ints({-32768, 32767, 12}, at::kShort)},
      {"i8", ints({-128, 127, 0}, at::kChar)},
      {"u8", ints({0, 255}, at::kByte)},
      {"bool", ints({1, 0, 0, 1}, at::kBool)},
      {"scalar", at::scalar_tensor(3.5, at::kFloat)},
      {"empty", at::zeros({0, 3}, at::kFloat)},
      {"\xC3\xBCn\xC3\xAF" "code", reals({42.0}, at::kFloat)},
  };
}

const std::map<std::string, std::string> kExpectedMetadata{
    {"format", "pt"}, {"producer", "tensorscope"}, {"note", "\xC3\xBC"}};

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command; returns its exit code (-1 if it did not exit) and its output.
std::pair<int, std::string> runCommand(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// TENSORSCOPE_PYTHON, else Debian's /usr/bin/python3 (python3-torch), else python3 on PATH.
const std::optional<std::string>& pythonWithTorch() {
  static const std::optional<std::string> found = []() -> std::optional<std::string> {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("TENSORSCOPE_PYTHON"); env != nullptr && *env != '\0') candidates.push_back(env);
    candidates.push_back("/usr/bin/python3");
    candidates.push_back("python3");
    for (const auto& python : candidates) {
      // find_spec locates torch without the seconds that importing it takes.
      const std::string probe = " -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(\"torch\") is None)'";
      if (runCommand(shellQuote(python) + probe).first == 0) return python;
    }
    return std::nullopt;
  }();
  return found;
}

std::string script() { return ts_test::testDataDir() + "/../model_core/io/check_safetensors_pytorch.py"; }

std::pair<int, std::string> runScript(const std::string& mode, const std::string& path) {
  return runCommand(shellQuote(*pythonWithTorch()) + " " + shellQuote(script()) + " " + mode + " " + shellQuote(path));
}

constexpr const char* kNoPython = "no python3 that imports torch (Debian: python3-torch); set TENSORSCOPE_PYTHON";

TEST(SafetensorsPyTorch, PyTorchReadsTensorscopeFiles) {
  if (!pythonWithTorch()) GTEST_SKIP() << kNoPython;
  TempDir dir;
  const std::string path = dir.file("from_tensorscope.safetensors");
  writeTensors(path, expectedTensors(), kExpectedMetadata);
  const auto [rc, output] = runScript("verify", path);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("ok: 13 tensors and 3 metadata entries verified"), std::string::npos) << output;

  // The checker is not vacuous: one wrong value fails it.
  auto changed = expectedTensors();
  changed["i8"] = changed["i8"].clone();
  changed["i8"][2] = 1;
  writeTensors(path, changed, kExpectedMetadata);
  const auto [rcWrong, outputWrong] = runScript("verify", path);
  EXPECT_EQ(rcWrong, 1) << outputWrong;
  EXPECT_NE(outputWrong.find("FAIL: i8"), std::string::npos) << outputWrong;
}

TEST(SafetensorsPyTorch, TensorscopeReadsPyTorchFiles) {
  if (!pythonWithTorch()) GTEST_SKIP() << kNoPython;
  TempDir dir;
  const std::string path = dir.file("from_pytorch.safetensors");
  const auto [rc, output] = runScript("write", path);
  ASSERT_EQ(rc, 0) << output;

  std::map<std::string, std::string> metadata;
  const std::map<std::string, at::Tensor> got = readTensorMap(path, &metadata);
  EXPECT_EQ(metadata, kExpectedMetadata);
  const auto want = expectedTensors();
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    const at::Tensor& g = got.at(name);
    EXPECT_EQ(g.scalar_type(), w.scalar_type()) << name;
    EXPECT_EQ(g.sizes(), w.sizes()) << name;
    EXPECT_TRUE(at::equal(g, w)) << name << ": " << g << " vs " << w;
  }
  // PyTorch's side laid the buffer out by dtype like the reference writer, not by name: the
  // reader followed the offsets, and Tensorscope's own layout check rejects this order.
  EXPECT_EQ(readSafetensorsHeader(path).namesInFileOrder().front(), "f64");
  const auto [rcVerify, outputVerify] = runScript("verify", path);
  EXPECT_EQ(rcVerify, 1) << outputVerify;
  EXPECT_NE(outputVerify.find("sorted, contiguous layout"), std::string::npos) << outputVerify;
}

}  // namespace
}  // namespace tensorscope::model_core
