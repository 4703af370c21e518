// Issue 19: every reader refuses what it must. The bounded JSON parser and file reader that all
// readers share, and the spec reader through them.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "spec/atomic_file.h"
#include "spec/json_reader.h"
#include "spec/spec_json.h"

using namespace tensorscope::spec;

namespace {

std::string nested(int depth) { return std::string(size_t(depth), '[') + "1" + std::string(size_t(depth), ']'); }

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// Item 1: a value nested 100,000 deep crashed every reader (recursive dump() in messages).
TEST(JsonReader, DeepNestingIsRefusedWhileParsing) {
  EXPECT_NO_THROW(parseUntrustedJson(nested(kMaxJsonDepth)));
  const auto m = errorOf([] { parseUntrustedJson(nested(kMaxJsonDepth + 1)); });
  EXPECT_NE(m.find("nested deeper than 64 levels"), std::string::npos) << m;
  const std::string deep = "{\"format\": \"tensorscope.attention_spec\", \"sizes\": {\"F\": " + nested(100000) + "}}";
  EXPECT_THROW(parseUntrustedJson(deep), JsonError);
  const auto specError = errorOf([&] { fromJson(deep); });
  EXPECT_NE(specError.find("nested deeper than"), std::string::npos) << specError;
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  EXPECT_THROW(parseUntrustedJson(objects), JsonError);
}

// Item 6: {"causal": true, "causal": false} was accepted, the last value silently winning.
TEST(JsonReader, DuplicateKeysAreRefusedAtAnyDepth) {
  const auto m = errorOf([] { parseUntrustedJson(R"({"causal": true, "causal": false})"); });
  EXPECT_NE(m.find("the key \"causal\" appears twice"), std::string::npos) << m;
  EXPECT_THROW(parseUntrustedJson(R"({"a": [{"x": 1}, {"x": 2, "x": 3}]})"), JsonError);
  EXPECT_NO_THROW(parseUntrustedJson(R"({"a": {"x": 1}, "b": {"x": 1}, "x": [{"x": 1}]})"));
  auto spec = toJson(makeSpecPreset("mhsa"));
  spec.insert(spec.find('{') + 1, "\"causal\": true, ");
  const auto specError = errorOf([&] { fromJson(spec); });
  EXPECT_NE(specError.find("appears twice"), std::string::npos) << specError;
}

// Item 3: library internals instead of messages ("[json.exception.out_of_range.406] …").
TEST(JsonReader, LibraryErrorsBecomeSentences) {
  for (const char* bad : {"1e999", "{\"a\": }", "[1, 2", "\"\\uD800\"", "{\"a\" 1}"}) {
    const auto m = errorOf([&] { parseUntrustedJson(bad); });
    EXPECT_EQ(m.find("json.exception"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m, "(no error)") << bad;
  }
  EXPECT_NE(errorOf([] { parseUntrustedJson("{\n  \"a\": x}"); }).find("line 2"), std::string::npos);
}

TEST(JsonReader, PreviewsAreShort) {
  const nlohmann::json big = std::string(1 << 20, 'x');
  EXPECT_LE(jsonPreview(big).size(), 60u);
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) many.push_back(i);
  EXPECT_EQ(jsonPreview(many), "[0, … 100000 elements]");
  EXPECT_EQ(jsonPreview(nlohmann::json(2.5)), "2.5");
  const nlohmann::json utf8 = std::string(40, 'a') + "ααααααααααααααααα";
  const auto p = jsonPreview(utf8);
  EXPECT_EQ(p.substr(p.size() - 3), "…");  // cut on a character boundary, then the ellipsis
}

TEST(JsonReader, EnvelopesNeverThrowOnWrongTypes) {
  EXPECT_TRUE(hasEnvelope(parseUntrustedJson(R"({"format": "x", "version": 1})"), "x", 1));
  EXPECT_FALSE(hasEnvelope(parseUntrustedJson(R"({"format": 1, "version": 1})"), "x", 1));
  EXPECT_FALSE(hasEnvelope(parseUntrustedJson(R"({"format": "x", "version": "1"})"), "x", 1));
  EXPECT_FALSE(hasEnvelope(parseUntrustedJson(R"([1])"), "x", 1));
}

// Item 4: `spec validate /dev/zero` read until memory ran out; a directory said "is empty".
TEST(BoundedFile, DevicesDirectoriesAndOversizedFilesAreRefusedByName) {
  const auto dev = errorOf([] { readBoundedFile("/dev/zero"); });
  EXPECT_NE(dev.find("/dev/zero is not a regular file"), std::string::npos) << dev;
  const auto dir = errorOf([] { readBoundedFile("/tmp"); });
  EXPECT_NE(dir.find("/tmp is a directory"), std::string::npos) << dir;
  const auto path = (std::filesystem::temp_directory_path() / "ts_bounded_file.json").string();
  writeFileAtomically(path, std::string(1000, ' '));
  EXPECT_EQ(readBoundedFile(path, 1000).size(), 1000u);
  const auto big = errorOf([&] { readBoundedFile(path, 999); });
  EXPECT_NE(big.find("is 1000 bytes; files of this kind may hold at most 999"), std::string::npos) << big;
  std::filesystem::remove(path);
  const auto spec = errorOf([] { readSpecFile("/dev/zero"); });
  EXPECT_NE(spec.find("not a regular file"), std::string::npos) << spec;
}
