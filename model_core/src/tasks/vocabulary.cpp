// Vocabulary, role and split names, and the Task defaults for the kinds of data a task lacks.

#include <algorithm>
#include <stdexcept>

#include "model_core/tasks.h"
#include "tasks/text.h"

namespace tensorscope::model_core {

std::string_view splitName(Split split) {
  switch (split) {
    case Split::Train: return "train";
    case Split::Interpolation: return "interpolation";
    case Split::Extrapolation: return "extrapolation";
    case Split::Validation: return "validation";
  }
  return "unknown";
}

std::string_view tokenRoleName(TokenRole role) {
  switch (role) {
    case TokenRole::Special: return "special";
    case TokenRole::IntegerDigit: return "integer digit";
    case TokenRole::NumeratorDigit: return "numerator digit";
    case TokenRole::DenominatorDigit: return "denominator digit";
    case TokenRole::Operator: return "operator";
    case TokenRole::Parenthesis: return "parenthesis";
    case TokenRole::Letter: return "letter";
    case TokenRole::Space: return "space";
    case TokenRole::Punctuation: return "punctuation";
    case TokenRole::Other: return "other";
  }
  return "unknown";
}

std::vector<int64_t> Vocabulary::encode(std::string_view text) const {
  return tasks::CharIndex(*this).encode(text);
}

std::string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (const int64_t id : ids) {
    if (id < 0 || id >= size())
      throw std::invalid_argument("cannot decode: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                  std::to_string(size()) + ")");
    out += tokens[static_cast<std::size_t>(id)];
  }
  return out;
}

Vocabulary Vocabulary::fromText(std::string_view text) {
  std::vector<bool> seen(0x110000, false);
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    const std::size_t next = tasks::decodeNext(text, pos, cp);
    if (next == std::string::npos)
      throw std::invalid_argument("text is not valid UTF-8 at byte offset " + std::to_string(pos));
    seen[cp] = true;
    pos = next;
  }
  Vocabulary v;
  v.tokens = {"<pad>", "<bos>", "<sep>", "<eos>"};
  for (char32_t cp = 0; cp < 0x110000; ++cp)
    if (seen[cp]) v.tokens.push_back(tasks::encodeUtf8(cp));
  return v;
}

TokenBatch Task::tokenBatch(Split, int64_t, std::uint64_t&) const {
  throw std::logic_error(name() + " is an image task: use imageBatch, not tokenBatch");
}

ImageBatch Task::imageBatch(Split, int64_t, std::uint64_t&) const {
  throw std::logic_error(name() + " is a sequence task: use tokenBatch, not imageBatch");
}

TokenBatch Task::tokenEvalSet(Split, int64_t) const {
  throw std::logic_error(name() + " is an image task: use imageEvalSet, not tokenEvalSet");
}

ImageBatch Task::imageEvalSet(Split, int64_t) const {
  throw std::logic_error(name() + " is a sequence task: use tokenEvalSet, not imageEvalSet");
}

}  // namespace tensorscope::model_core
