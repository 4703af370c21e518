#include "tasks/qa_task.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace tensorscope::model_core::tasks {
namespace {

constexpr std::uint64_t kEvalStream = 0x45564131ULL;    // "EVA1": fixed evaluation sets
constexpr std::uint64_t kProbeStream = 0x50524f42ULL;   // "PROB": seq_len feasibility probe
constexpr std::uint64_t kSampleStream = 0x53414d50ULL;  // "SAMP": describeSamples

}  // namespace

void appendExampleRow(TokenBatch& batch, const QaExample& example, const CharIndex& index) {
  const int64_t L = batch.seq_len;
  std::vector<int64_t> tokens(static_cast<std::size_t>(L + 1), Vocabulary::kPad);
  std::vector<TokenRole> roles(static_cast<std::size_t>(L + 1), TokenRole::Special);
  std::size_t pos = 0;
  tokens[pos++] = Vocabulary::kBos;
  const std::vector<int64_t> q = index.encode(example.question.text);
  for (std::size_t i = 0; i < q.size(); ++i, ++pos) {
    tokens[pos] = q[i];
    roles[pos] = example.question.roles[i];
  }
  tokens[pos++] = Vocabulary::kSep;
  const auto prompt = static_cast<int64_t>(pos);
  const std::vector<int64_t> a = index.encode(example.answer.text);
  for (std::size_t i = 0; i < a.size(); ++i, ++pos) {
    tokens[pos] = a[i];
    roles[pos] = example.answer.roles[i];
  }
  tokens[pos++] = Vocabulary::kEos;
  if (static_cast<int64_t>(pos) > L + 1) throw std::logic_error("example does not fit seq_len");
  // Target t is tokens[t + 1]; the answer and EOS occupy tokens[prompt .. prompt + |a|].
  const int64_t firstLoss = prompt - 1;
  const int64_t lastLoss = prompt - 1 + static_cast<int64_t>(a.size());
  for (int64_t t = 0; t < L; ++t) {
    batch.inputs.push_back(tokens[static_cast<std::size_t>(t)]);
    batch.targets.push_back(tokens[static_cast<std::size_t>(t + 1)]);
    batch.loss_mask.push_back(t >= firstLoss && t <= lastLoss ? 1.0f : 0.0f);
    batch.roles.push_back(roles[static_cast<std::size_t>(t)]);
  }
  batch.prompt_length.push_back(prompt);
  batch.questions.push_back(example.question.text);
  batch.answers.push_back(example.answer.text);
  ++batch.batch;
}

char roleCode(TokenRole role) {
  switch (role) {
    case TokenRole::Special: return 'S';
    case TokenRole::IntegerDigit: return 'I';
    case TokenRole::NumeratorDigit: return 'N';
    case TokenRole::DenominatorDigit: return 'D';
    case TokenRole::Operator: return 'O';
    case TokenRole::Parenthesis: return 'P';
    case TokenRole::Letter: return 'L';
    case TokenRole::Space: return '_';
    case TokenRole::Punctuation: return '.';
    case TokenRole::Other: return 'x';
  }
  return 'x';
}

QuestionAnswerTask::QuestionAnswerTask(TaskConfig config, Vocabulary vocabulary, bool hold_out)
    : config_(std::move(config)), vocabulary_(std::move(vocabulary)), index_(vocabulary_), hold_out_(hold_out) {}

bool QuestionAnswerTask::isHeldOut(std::string_view question) {
  return fnv1a(question) % kHeldOutBuckets == 0;
}

QaExample QuestionAnswerTask::generate(Split split, Rng& rng) const {
  split = canonical(split);
  const int64_t capacity = config_.seq_len + 1;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    std::optional<QaExample> e = draw(split, rng);
    if (!e || exampleTokenCount(*e) > capacity) continue;
    if (hold_out_ && split != Split::Extrapolation && isHeldOut(e->question.text) != (split == Split::Interpolation))
      continue;
    return std::move(*e);
  }
  throw std::runtime_error(name() + ": no " + std::string(splitName(split)) + " problem fits seq_len " +
                           std::to_string(config_.seq_len) + " in " + std::to_string(kMaxAttempts) +
                           " attempts; increase seq_len");
}

void QuestionAnswerTask::checkSeqLenFits() const {
  constexpr int kProbes = 400;
  constexpr int kMinFits = 8;  // at least 2% of problems must fit, or generation crawls
  const int64_t capacity = config_.seq_len + 1;
  for (const Split split : {Split::Train, Split::Extrapolation}) {
    std::uint64_t state = mixSeed(kProbeStream, static_cast<std::uint64_t>(split));
    Rng rng(state);
    std::vector<int64_t> lengths;
    for (int i = 0; i < kProbes; ++i)
      if (auto e = draw(split, rng)) lengths.push_back(exampleTokenCount(*e));
    const auto fits = std::count_if(lengths.begin(), lengths.end(), [&](int64_t n) { return n <= capacity; });
    if (fits >= kMinFits || lengths.empty()) continue;
    std::sort(lengths.begin(), lengths.end());
    const int64_t p90 = lengths[lengths.size() * 9 / 10];
    throw std::invalid_argument(
        "invalid task config (1 problem):\n  seq_len: " + std::to_string(config_.seq_len) + " is too small for " +
        describeTask() + " " + std::string(splitName(split)) + " problems: only " + std::to_string(fits) + " of " +
        std::to_string(lengths.size()) + " sampled problems fit in seq_len+1 = " + std::to_string(capacity) +
        " tokens (they need " + std::to_string(lengths.front()) + ".." + std::to_string(lengths.back()) +
        " tokens; 90% fit with seq_len >= " + std::to_string(p90 - 1) + ")");
  }
}

TokenBatch QuestionAnswerTask::tokenBatch(Split split, int64_t batch, std::uint64_t& rng_state) const {
  if (batch < 1) throw std::invalid_argument(name() + ": batch must be >= 1; got " + std::to_string(batch));
  TokenBatch out;
  out.seq_len = config_.seq_len;
  Rng rng(rng_state);
  for (int64_t i = 0; i < batch; ++i) appendExampleRow(out, generate(split, rng), index_);
  return out;
}

TokenBatch QuestionAnswerTask::tokenEvalSet(Split split, int64_t count) const {
  if (count < 1) throw std::invalid_argument(name() + ": evaluation set size must be >= 1; got " + std::to_string(count));
  std::uint64_t state = mixSeed(mixSeed(config_.seed, kEvalStream), static_cast<std::uint64_t>(canonical(split)));
  return tokenBatch(split, count, state);
}

std::string QuestionAnswerTask::describeSamples(int count, std::uint64_t seed) const {
  std::ostringstream out;
  out << describeTask() << ": vocabulary " << vocabulary_.size() << " tokens, seq_len " << config_.seq_len
      << "\nsequence: <bos> question <sep> answer <eos>; roles: S special, I integer digit, N numerator digit,"
         " D denominator digit, O operator, P parenthesis, L letter, _ space, . punctuation, x other\n";
  for (const Split split : {Split::Train, Split::Interpolation, Split::Extrapolation}) {
    out << "\n" << splitName(split) << ":\n";
    std::uint64_t state = mixSeed(mixSeed(seed, kSampleStream), static_cast<std::uint64_t>(split));
    Rng rng(state);
    for (int i = 0; i < count; ++i) {
      const QaExample e = generate(split, rng);
      const std::string number = std::to_string(i + 1) + ". ";
      std::string codes;
      for (const TokenRole r : e.question.roles) codes += roleCode(r);
      out << "  " << number << e.question.text << "  ->  " << e.answer.text << "\n"
          << std::string(2 + number.size(), ' ') << codes << "\n";
    }
  }
  return out.str();
}

}  // namespace tensorscope::model_core::tasks
