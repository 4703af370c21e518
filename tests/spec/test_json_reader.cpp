// Issue 19: every reader refuses what it must. The bounded JSON parser that all readers share,
// and the spec reader through it.
#include <gtest/gtest.h>

#include "error_of.h"

#include <functional>
#include <string>

#include "spec/json_reader.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

using namespace tensorscope::spec;

using tensorscope::test::errorOf;

namespace {

std::string nested(int depth) { return std::string(size_t(depth), '[') + "1" + std::string(size_t(depth), ']'); }

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

// nlohmann's lexer reads a NUL byte as the end of the input: "{…}\0anything" parsed as "{…}".
TEST(JsonReader, ANulByteIsRefusedWithItsPlace) {
  const auto m = errorOf([] { parseUntrustedJson(std::string("{\"a\": 1}\n  \0{\"b\": 2}", 20)); });
  EXPECT_EQ(m, "line 2, column 3: a NUL byte, which JSON text cannot contain");
  const auto spec = toJson(makeSpecPreset("mhsa")) + std::string("\0 trailing", 10);
  const auto specError = errorOf([&] { fromJson(spec); });
  EXPECT_NE(specError.find("a NUL byte"), std::string::npos) << specError;
}

// Item 2: a 171-byte spec with H = 12000 and core preset skip_right took 1.26 GB to say "H must be
// in [1, 1024]"; H = 70,000 threw std::bad_alloc; H = 4,000,000 asked for terabytes; the dense preset
// at H = 1024, R = 16384 expanded 268 M values (2.5 GB) for `spec validate`. Sizes are now checked
// before a preset is expanded, and a core holds at most kMaxCoreValues values.
TEST(SpecReader, PresetsAreCheckedBeforeTheyExpand) {
  const auto spec = [](const std::string& variant, int H, int D, const std::string& preset) {
    return R"({"format": "tensorscope.attention_spec", "version": 1, "variant": ")" + variant +
           R"(", "sizes": {"F": 64, "H": )" + std::to_string(H) + R"(, "D": )" + std::to_string(D) +
           R"(}, "core": {"preset": ")" + preset + R"("}})";
  };
  for (int H : {12000, 70000, 4000000, 2147483647}) {
    const auto m = errorOf([&] { fromJson(spec("thsa", H, 16, "skip_right")); });
    EXPECT_NE(m.find("sizes.H: H (heads) must be in [1, 1024]; got " + std::to_string(H)), std::string::npos) << m;
  }
  auto m = errorOf([&] { fromJson(spec("thsa", 1024, 16, "thsa")); });
  EXPECT_NE(m.find("sizes.R: core preset thsa (dense R x R, R=H*D=16384) holds 268,435,456 values, more than the "
                   "16,777,216 a core may hold"),
            std::string::npos)
      << m;
  m = errorOf([&] { fromJson(spec("thsa", 1024, 16, "low_rank")); });
  EXPECT_NE(m.find("core preset low_rank (U and V, R x H each, R=H*D=16384) holds 33,554,432 values"), std::string::npos) << m;
  m = errorOf([&] { fromJson(spec("thsa", 1024, 1000, "mhsa")); });
  EXPECT_NE(m.find("sizes.D: core preset mhsa has R = H*D, at most 16384; got H*D=1024000"), std::string::npos) << m;
  // The largest legal ones expand and validate: a dense core at R = 4096, Kronecker at R = 16384.
  AttentionSpec dense = fromJson(spec("thsa", 256, 16, "thsa"));
  dense.sizes.R = 4096;
  EXPECT_TRUE(validate(dense).empty()) << formatIssues(validate(dense));
  AttentionSpec wide = fromJson(spec("thsa", 1024, 16, "skip_right"));
  wide.sizes.R = 16384;
  EXPECT_TRUE(validate(wide).empty()) << formatIssues(validate(wide));
  // An explicit dense core beyond the bound is refused by validation, whatever its values.
  dense.sizes.R = 4097;
  m = formatIssues(validate(dense));
  EXPECT_NE(m.find("sizes.R: a dense core (R x R, R=4097) holds 16,785,409 values"), std::string::npos) << m;
}

// Found by fuzz_spec: a rank1 factor read with 16 + 16 values at D = 15 (invalid, reported by
// validation) was written as c2 = 15 and c3 = 17 values, which no longer read back. Every spec that
// reads, valid or not, now writes as the same spec.
TEST(SpecReader, InvalidSpecsRoundTripAsRead) {
  auto text = toJson(makeSpecPreset("core:skip_left"));
  text.replace(text.find("\"D\": 16"), 7, "\"D\": 15");
  const AttentionSpec s = fromJson(text);
  EXPECT_FALSE(validate(s).empty());
  EXPECT_EQ(fromJson(toJson(s)), s);
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

// Found by fuzz_json: a long string whose 48th byte fell inside a UTF-8 character was cut there,
// and dump() threw "invalid UTF-8 byte" out of an error message.
TEST(JsonReader, PreviewsCutOnCharacterBoundaries) {
  const nlohmann::json v(std::string(47, 'x') + "λλλ");  // byte 48 is the second byte of a λ
  std::string p;
  ASSERT_NO_THROW(p = jsonPreview(v));
  EXPECT_EQ(p.rfind("\"" + std::string(47, 'x'), 0), 0u) << p;
  EXPECT_LE(p.size(), 48u + 3u) << p;
}

TEST(JsonReader, EnvelopesNeverThrowOnWrongTypes) {
  EXPECT_TRUE(hasEnvelope(parseUntrustedJson(R"({"format": "x", "version": 1})"), "x", 1));
  EXPECT_FALSE(hasEnvelope(parseUntrustedJson(R"({"format": 1, "version": 1})"), "x", 1));
  EXPECT_FALSE(hasEnvelope(parseUntrustedJson(R"({"format": "x", "version": "1"})"), "x", 1));
  EXPECT_FALSE(hasEnvelope(parseUntrustedJson(R"([1])"), "x", 1));
}

// Item 4: `spec validate /dev/zero` read until memory ran out (the bounded reader itself is
// tested in tests/files).
TEST(SpecFile, ADeviceIsRefusedByName) {
  const auto spec = errorOf([] { readSpecFile("/dev/zero"); });
  EXPECT_NE(spec.find("not a regular file"), std::string::npos) << spec;
}
