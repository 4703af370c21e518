#include "tasks/text.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tensorscope::model_core::tasks {

std::size_t decodeNext(std::string_view text, std::size_t pos, char32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    cp = b0;
    return pos + 1;
  }
  int extra = 0;
  char32_t value = 0;
  char32_t minimum = 0;
  if ((b0 & 0xE0) == 0xC0) {
    extra = 1, value = b0 & 0x1F, minimum = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    extra = 2, value = b0 & 0x0F, minimum = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    extra = 3, value = b0 & 0x07, minimum = 0x10000;
  } else {
    return std::string::npos;
  }
  if (pos + extra >= text.size()) return std::string::npos;  // truncated sequence
  for (int k = 1; k <= extra; ++k) {
    const unsigned char b = byte(pos + k);
    if ((b & 0xC0) != 0x80) return std::string::npos;
    value = (value << 6) | (b & 0x3F);
  }
  if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return std::string::npos;
  cp = value;
  return pos + extra + 1;
}

std::vector<char32_t> decodeUtf8(std::string_view text, std::string_view what) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    const std::size_t next = decodeNext(text, pos, cp);
    if (next == std::string::npos) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned char>(text[pos]));
      throw std::invalid_argument(std::string(what) + " is not valid UTF-8: invalid byte " + buf +
                                  " at offset " + std::to_string(pos));
    }
    out.push_back(cp);
    pos = next;
  }
  return out;
}

std::string encodeUtf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string describeCharacter(char32_t cp) {
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
  if (cp < 0x20 || cp == 0x7F) return code;
  std::string s(1, '\'');
  s += encodeUtf8(cp);
  s += "' (";
  s += code;
  s += ')';
  return s;
}

TokenRole classifyCharacter(char32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return TokenRole::Letter;
  if (cp >= '0' && cp <= '9') return TokenRole::IntegerDigit;
  if (cp == ' ' || cp == '\n' || cp == '\t' || cp == '\r' || cp == '\f' || cp == '\v') return TokenRole::Space;
  if (cp == '(' || cp == ')' || cp == '[' || cp == ']' || cp == '{' || cp == '}') return TokenRole::Parenthesis;
  if (cp > 0x20 && cp < 0x7F) return TokenRole::Punctuation;
  return TokenRole::Other;
}

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

CharIndex::CharIndex(const Vocabulary& vocabulary) {
  ascii_.fill(-1);
  for (int64_t id = Vocabulary::kFirstCharacter; id < vocabulary.size(); ++id) {
    const std::string& tok = vocabulary.tokens[static_cast<std::size_t>(id)];
    char32_t cp = 0;
    if (tok.empty() || decodeNext(tok, 0, cp) != tok.size())
      throw std::invalid_argument("vocabulary token " + std::to_string(id) + " is not one UTF-8 character");
    if (cp < 128) ascii_[cp] = id;
    else other_[cp] = id;
  }
}

int64_t CharIndex::find(char32_t cp) const {
  if (cp < 128) return ascii_[cp];
  const auto it = other_.find(cp);
  return it == other_.end() ? -1 : it->second;
}

std::vector<int64_t> CharIndex::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    const std::size_t next = decodeNext(text, pos, cp);
    if (next == std::string::npos)
      throw std::invalid_argument("cannot encode: invalid UTF-8 at byte offset " + std::to_string(pos));
    const int64_t id = find(cp);
    if (id < 0)
      throw std::invalid_argument("cannot encode: character " + describeCharacter(cp) +
                                  " at byte offset " + std::to_string(pos) + " is not in the vocabulary");
    ids.push_back(id);
    pos = next;
  }
  return ids;
}

}  // namespace tensorscope::model_core::tasks
