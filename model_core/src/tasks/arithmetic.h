#pragma once
// Procedural arithmetic in the spirit of the Mathematics Dataset (arithmetic__add_or_sub,
// arithmetic__mul_div, arithmetic__mixed): random expression trees over integers and fraction
// literals, rendered in the dataset's style with nested parentheses, answered exactly.

#include <optional>
#include <string>

#include "tasks/qa_task.h"

namespace tensorscope::model_core::tasks {

enum class ArithmeticModule { AddOrSub, MulDiv, Mixed };

/// Throws std::invalid_argument for an unknown module name.
ArithmeticModule parseArithmeticModule(const std::string& name);
std::string arithmeticModuleName(ArithmeticModule module);

/// Sampling ranges of one module and split.
struct ArithmeticDifficulty {
  int min_terms = 2, max_terms = 4;
  std::int64_t max_integer = 20;   ///< integer operands in [-max_integer, max_integer]
  std::int64_t large_integer = 0;  ///< > 0: one operand has magnitude in [large_integer, max_integer]
  std::int64_t max_numerator = 9;  ///< fraction literals a/b: 1 <= |a| <= max_numerator
  std::int64_t max_denominator = 9;  ///< 2 <= b <= max_denominator, reduced, never an integer
  double fraction_probability = 0.25;  ///< per operand
  double word_probability = 0.5;   ///< two-operand problems: worded template ("Add -3 and 5.")
};

ArithmeticDifficulty arithmeticDifficulty(ArithmeticModule module, bool extrapolation);

/// Every character any arithmetic question or answer can contain.
std::string arithmeticCharacters();

/// One raw problem: question text with roles and its exact answer, or nullopt when the drawn
/// expression divides by zero or overflows int64 (the caller draws again).
std::optional<QaExample> drawArithmetic(ArithmeticModule module, bool extrapolation, Rng& rng);

class ArithmeticTask final : public QuestionAnswerTask {
 public:
  explicit ArithmeticTask(const TaskConfig& config);
  std::string name() const override { return "arithmetic"; }

 protected:
  std::optional<QaExample> draw(Split split, Rng& rng) const override;
  std::string describeTask() const override;

 private:
  ArithmeticModule module_;
};

}  // namespace tensorscope::model_core::tasks
