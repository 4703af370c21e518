#pragma once
// Shared machinery of the question/answer tasks (arithmetic, copy, reverse, sort): rejection of
// problems that do not fit seq_len, the held-out partition of the interpolation split, packing
// into the fixed sequence format, fixed evaluation sets and sample text.

#include <optional>
#include <string>

#include "model_core/tasks.h"
#include "tasks/task_random.h"
#include "tasks/text.h"

namespace tensorscope::model_core::tasks {

/// One problem: question and answer characters, each with its structural role.
struct QaExample {
  RoleText question;
  RoleText answer;
};

/// Tokens of an example in the sequence format: BOS, question, SEP, answer, EOS.
inline int64_t exampleTokenCount(const QaExample& e) {
  return 3 + static_cast<int64_t>(e.question.text.size() + e.answer.text.size());
}

/// Appends one example as a row of `batch` (whose seq_len is set). The example must fit.
void appendExampleRow(TokenBatch& batch, const QaExample& example, const CharIndex& index);

/// One-letter code of a role for the sample text (S I N D O P L _ . x).
char roleCode(TokenRole role);

class QuestionAnswerTask : public Task {
 public:
  bool isQuestionAnswer() const override { return true; }
  const Vocabulary& vocabulary() const override { return vocabulary_; }
  TokenBatch tokenBatch(Split split, int64_t batch, std::uint64_t& rng_state) const override;
  TokenBatch tokenEvalSet(Split split, int64_t count) const override;
  std::string describeSamples(int count, std::uint64_t seed) const override;

  /// A problem of `split` that fits seq_len + 1 tokens and, when problems are held out, lies in
  /// the held-out part exactly for Interpolation/Validation. Throws std::runtime_error when none
  /// is found in kMaxAttempts draws.
  QaExample generate(Split split, Rng& rng) const;
  /// Whether `question` belongs to the held-out (interpolation) part.
  static bool isHeldOut(std::string_view question);
  /// Throws std::invalid_argument when seq_len lets too few problems of some split fit.
  void checkSeqLenFits() const;

  static constexpr int kMaxAttempts = 200000;
  static constexpr std::uint64_t kHeldOutBuckets = 16;

 protected:
  QuestionAnswerTask(TaskConfig config, Vocabulary vocabulary, bool hold_out);
  /// One raw problem of Train, Interpolation or Extrapolation (never Validation), or nullopt
  /// to reject it (overflow, division by zero, ...). Length and holdout are checked by the caller.
  virtual std::optional<QaExample> draw(Split split, Rng& rng) const = 0;
  /// First line of describeSamples, e.g. "arithmetic (module mixed)".
  virtual std::string describeTask() const = 0;
  const TaskConfig& config() const { return config_; }

 private:
  /// Validation is the interpolation split here; throws for nothing (all splits exist).
  static Split canonical(Split split) { return split == Split::Validation ? Split::Interpolation : split; }

  TaskConfig config_;
  Vocabulary vocabulary_;
  CharIndex index_;
  bool hold_out_;
};

}  // namespace tensorscope::model_core::tasks
