// copy, reverse, sort: the question is a random string of symbols, the answer its copy, its
// reversal, or its characters sorted by code (digits < upper case < lower case).

#include <algorithm>
#include <cmath>

#include "tasks/qa_task.h"
#include "tasks/task_factory.h"

namespace tensorscope::model_core::tasks {
namespace {

class AlgorithmicTask final : public QuestionAnswerTask {
 public:
  explicit AlgorithmicTask(const TaskConfig& config)
      : QuestionAnswerTask(config, Vocabulary::fromText(kAlgorithmicSymbols.substr(0, static_cast<std::size_t>(config.algorithmic_alphabet))),
                           holdOutPossible(config)),
        name_(config.name),
        symbols_(kAlgorithmicSymbols.substr(0, static_cast<std::size_t>(config.algorithmic_alphabet))),
        length_(config.algorithmic_length) {}

  std::string name() const override { return name_; }

 protected:
  std::optional<QaExample> draw(Split split, Rng& rng) const override {
    const int n = split == Split::Extrapolation ? algorithmicExtrapolationLength(length_) : length_;
    std::string q;
    for (int i = 0; i < n; ++i)
      q += symbols_[static_cast<std::size_t>(rng.uniform(0, static_cast<int64_t>(symbols_.size()) - 1))];
    std::string a = q;
    if (name_ == "reverse") std::reverse(a.begin(), a.end());
    if (name_ == "sort") std::sort(a.begin(), a.end());
    QaExample e;
    e.question.addWords(q);
    e.answer.addWords(a);
    return e;
  }

  std::string describeTask() const override {
    return name_ + " (length " + std::to_string(length_) + ", extrapolation length " +
           std::to_string(algorithmicExtrapolationLength(length_)) + ", alphabet " + symbols_ + ")";
  }

 private:
  /// Holding problems out of training needs a space large enough that every hash bucket is
  /// populated: at least 2^16 distinct sequences.
  static bool holdOutPossible(const TaskConfig& c) {
    return c.algorithmic_length * std::log2(static_cast<double>(c.algorithmic_alphabet)) >= 16.0;
  }

  std::string name_;
  std::string symbols_;
  int length_;
};

}  // namespace

std::unique_ptr<Task> makeAlgorithmicTask(const TaskConfig& config) {
  return std::make_unique<AlgorithmicTask>(config);
}

}  // namespace tensorscope::model_core::tasks
