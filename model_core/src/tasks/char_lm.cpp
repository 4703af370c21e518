// Character language model: random windows of seq_len + 1 characters of a UTF-8 text, with a
// character-level vocabulary built from that text. The last 5% of the characters (by position)
// are the validation split.

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "tasks/data_sources.h"
#include "tasks/task_factory.h"
#include "tasks/task_random.h"
#include "tasks/text.h"

namespace tensorscope::model_core::tasks {
namespace {

constexpr std::uint64_t kEvalStream = 0x4c4d4556ULL;  // "LMEV"

class CharLmTask final : public Task {
 public:
  CharLmTask(const TaskConfig& config, Corpus corpus) : config_(config), source_(std::move(corpus.source)) {
    const std::string what = "char_lm corpus " + (config.corpus.empty() ? std::string("(King James Bible)") : config.corpus);
    try {
      vocabulary_ = Vocabulary::fromText(corpus.text);
    } catch (const std::invalid_argument&) {
      decodeUtf8(corpus.text, what);  // throws with the offending byte and offset
      throw;
    }
    const CharIndex index(vocabulary_);
    ids_.reserve(corpus.text.size());
    for (const int64_t id : index.encode(corpus.text)) ids_.push_back(static_cast<std::int32_t>(id));
    roles_.assign(static_cast<std::size_t>(vocabulary_.size()), TokenRole::Special);
    for (int64_t id = Vocabulary::kFirstCharacter; id < vocabulary_.size(); ++id) {
      char32_t cp = 0;
      decodeNext(vocabulary_.tokens[static_cast<std::size_t>(id)], 0, cp);
      roles_[static_cast<std::size_t>(id)] = classifyCharacter(cp);
    }
    const auto n = static_cast<int64_t>(ids_.size());
    train_end_ = n - n / 20;
    const int64_t need = config.seq_len + 1;
    if (train_end_ < need || n - train_end_ < need)
      throw std::invalid_argument("invalid task config (1 problem):\n  corpus: " + what + " has " + std::to_string(n) +
                                  " characters: train (95%) and validation (last 5%) parts need at least seq_len+1 = " +
                                  std::to_string(need) + " each, so at least " + std::to_string(need * 20) +
                                  " characters");
  }

  std::string name() const override { return "char_lm"; }
  const Vocabulary& vocabulary() const override { return vocabulary_; }

  TokenBatch tokenBatch(Split split, int64_t batch, std::uint64_t& rng_state) const override {
    if (batch < 1) throw std::invalid_argument("char_lm: batch must be >= 1; got " + std::to_string(batch));
    const auto [begin, end] = range(split);
    Rng rng(rng_state);
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < batch; ++i) starts.push_back(rng.uniform(begin, end - config_.seq_len - 1));
    return windows(starts);
  }

  /// Evenly spaced windows over the split, the first at its start.
  TokenBatch tokenEvalSet(Split split, int64_t count) const override {
    if (count < 1) throw std::invalid_argument("char_lm: evaluation set size must be >= 1; got " + std::to_string(count));
    const auto [begin, end] = range(split);
    const int64_t last = end - config_.seq_len - 1;  // last valid start
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < count; ++i) starts.push_back(begin + (last - begin) * i / std::max<int64_t>(1, count - 1));
    if (count == 1) starts[0] = begin;
    return windows(starts);
  }

  std::string describeSamples(int count, std::uint64_t seed) const override {
    std::ostringstream out;
    const auto n = static_cast<int64_t>(ids_.size());
    out << "char_lm: " << source_ << "\n"
        << n << " characters (train " << train_end_ << ", validation " << n - train_end_ << " = the last 5%), "
        << "character-level vocabulary " << vocabulary_.size() << " tokens (4 special + " << vocabulary_.size() - 4
        << " characters), seq_len " << config_.seq_len << "\ncharacters: ";
    for (int64_t id = Vocabulary::kFirstCharacter; id < vocabulary_.size(); ++id)
      out << printable(vocabulary_.tokens[static_cast<std::size_t>(id)]);
    if (count < 1) return out.str();
    out << "\n\nrandom training windows (\\n is a newline):\n";
    std::uint64_t state = mixSeed(seed, kEvalStream);
    const TokenBatch b = tokenBatch(Split::Train, count, state);
    for (int64_t r = 0; r < b.batch; ++r) {
      const auto row = b.inputs.begin() + r * b.seq_len;
      out << "  " << r + 1 << ". " << printable(vocabulary_.decode(std::vector<int64_t>(row, row + b.seq_len))) << "\n";
    }
    return out.str();
  }

 private:
  std::pair<int64_t, int64_t> range(Split split) const {
    if (split == Split::Train) return {0, train_end_};
    if (split == Split::Validation) return {train_end_, static_cast<int64_t>(ids_.size())};
    throw std::invalid_argument("char_lm has only train and validation splits; got " + std::string(splitName(split)));
  }

  TokenBatch windows(const std::vector<int64_t>& starts) const {
    TokenBatch b;
    b.batch = static_cast<int64_t>(starts.size());
    b.seq_len = config_.seq_len;
    const auto total = static_cast<std::size_t>(b.batch * b.seq_len);
    b.inputs.reserve(total);
    b.targets.reserve(total);
    b.roles.reserve(total);
    for (const int64_t s : starts)
      for (int64_t t = 0; t < b.seq_len; ++t) {
        const std::int32_t in = ids_[static_cast<std::size_t>(s + t)];
        b.inputs.push_back(in);
        b.targets.push_back(ids_[static_cast<std::size_t>(s + t + 1)]);
        b.roles.push_back(roles_[static_cast<std::size_t>(in)]);
      }
    b.loss_mask.assign(total, 1.0f);
    b.prompt_length.assign(starts.size(), 0);
    return b;
  }

  TaskConfig config_;
  std::string source_;
  Vocabulary vocabulary_;
  std::vector<TokenRole> roles_;  // per token id
  std::vector<std::int32_t> ids_;
  int64_t train_end_ = 0;
};

}  // namespace

std::unique_ptr<Task> makeCharLmTask(const TaskConfig& config) {
  Corpus corpus = config.corpus.empty() ? loadKingJamesBible() : loadCorpusFile(config.corpus);
  return std::make_unique<CharLmTask>(config, std::move(corpus));
}

}  // namespace tensorscope::model_core::tasks
