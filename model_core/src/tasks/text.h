#pragma once
// Character-level text helpers shared by the tasks: strict UTF-8 decoding, a fast code point ->
// id index over a Vocabulary, character classes, and a text builder that records a TokenRole
// for every character it appends.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model_core/tasks.h"

namespace tensorscope::model_core::tasks {

/// Decodes the code point starting at byte `pos`; returns the next position, or std::string::npos
/// when the bytes there are not valid UTF-8 (overlong forms, surrogates and values above
/// U+10FFFF are invalid).
std::size_t decodeNext(std::string_view text, std::size_t pos, char32_t& cp);
/// Throws std::invalid_argument("<what> is not valid UTF-8: invalid byte 0xNN at offset K").
std::vector<char32_t> decodeUtf8(std::string_view text, std::string_view what);
std::string encodeUtf8(char32_t cp);
/// "'a' (U+0061)"; control characters are shown by code point only.
std::string describeCharacter(char32_t cp);
/// The class used outside arithmetic (see TokenRole's documentation).
TokenRole classifyCharacter(char32_t cp);
/// Text with newlines and tabs written as \n and \t, for one-line display.
std::string printable(std::string_view text);

/// Code point -> token id over a character vocabulary (a table for ASCII, a map beyond).
class CharIndex {
 public:
  explicit CharIndex(const Vocabulary& vocabulary);
  /// -1 when the code point is not in the vocabulary.
  int64_t find(char32_t cp) const;
  /// Throws std::invalid_argument naming the first unknown character.
  std::vector<int64_t> encode(std::string_view text) const;

 private:
  std::array<int64_t, 128> ascii_{};
  std::unordered_map<char32_t, int64_t> other_;
};

/// ASCII text with one TokenRole per character.
struct RoleText {
  std::string text;
  std::vector<TokenRole> roles;

  void add(char c, TokenRole role) {
    text += c;
    roles.push_back(role);
  }
  void add(std::string_view s, TokenRole role) {
    for (const char c : s) add(c, role);
  }
  /// Template words: each character gets its classifyCharacter role.
  void addWords(std::string_view s) {
    for (const char c : s) add(c, classifyCharacter(static_cast<unsigned char>(c)));
  }
  void append(const RoleText& other) {
    text += other.text;
    roles.insert(roles.end(), other.roles.begin(), other.roles.end());
  }
};

}  // namespace tensorscope::model_core::tasks
