// The arithmetic generator against an independent evaluator written here from the question
// text alone (its own rational type, parser and template table), plus determinism, held-out
// interpolation and harder extrapolation. Labels: test_arithmetic_labels.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>

#include "model_core/tasks.h"
#include "tasks/arithmetic.h"
#include "tasks/qa_task.h"

using namespace tensorscope::model_core;

namespace {

__extension__ typedef __int128 I128;

I128 gcd(I128 a, I128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    const I128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// Independent exact rational (128-bit, normalised after every operation).
struct Q {
  I128 n = 0, d = 1;
};

Q make(I128 n, I128 d) {
  if (d == 0) throw std::runtime_error("division by zero in a generated question");
  if (d < 0) n = -n, d = -d;
  const I128 g = gcd(n, d);
  return {n / g, d / g};
}
Q operator+(Q a, Q b) { return make(a.n * b.d + b.n * a.d, a.d * b.d); }
Q operator-(Q a, Q b) { return make(a.n * b.d - b.n * a.d, a.d * b.d); }
Q operator*(Q a, Q b) { return make(a.n * b.n, a.d * b.d); }
Q operator/(Q a, Q b) { return make(a.n * b.d, a.d * b.n); }

std::string str(I128 x) {
  if (x == 0) return "0";
  const bool neg = x < 0;
  std::string s;
  for (I128 v = neg ? -x : x; v > 0; v /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return neg ? "-" + s : s;
}
std::string str(Q q) { return q.d == 1 ? str(q.n) : str(q.n) + "/" + str(q.d); }

/// expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*; unary := '-' unary | atom;
/// atom := digits | '(' expr ')'.
class Parser {
 public:
  explicit Parser(std::string s) : s_(std::move(s)) {}
  Q parse() {
    const Q v = expr();
    skip();
    if (pos_ != s_.size()) throw std::runtime_error("trailing text in '" + s_ + "' at " + std::to_string(pos_));
    return v;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool accept(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  Q expr() {
    Q v = term();
    for (;;) {
      if (accept('+')) v = v + term();
      else if (accept('-')) v = v - term();
      else return v;
    }
  }
  Q term() {
    Q v = unary();
    for (;;) {
      if (accept('*')) v = v * unary();
      else if (accept('/')) v = v / unary();
      else return v;
    }
  }
  Q unary() {
    if (accept('-')) return make(0, 1) - unary();
    return atom();
  }
  Q atom() {
    if (accept('(')) {
      const Q v = expr();
      if (!accept(')')) throw std::runtime_error("missing ) in '" + s_ + "'");
      return v;
    }
    skip();
    I128 n = 0;
    const std::size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) n = n * 10 + (s_[pos_++] - '0');
    if (pos_ == start) throw std::runtime_error("expected a number in '" + s_ + "' at " + std::to_string(pos_));
    return make(n, 1);
  }
  std::string s_;
  std::size_t pos_ = 0;
};

Q evalExpression(const std::string& e) { return Parser(e).parse(); }

/// The question templates, read from the Mathematics Dataset's style: worded two-operand forms
/// first (their first operand is $1), then "<verb> <expression>." forms.
Q evaluateQuestion(const std::string& q) {
  static const std::string N = R"((-?\d+(?:/\d+)?))";
  struct Worded {
    std::regex re;
    char op;
    bool swapped;
  };
  static const std::vector<Worded> worded = {
      {std::regex("Add " + N + " and " + N + R"(\.)"), '+', false},
      {std::regex("Sum " + N + " and " + N + R"(\.)"), '+', false},
      {std::regex("Put together " + N + " and " + N + R"(\.)"), '+', false},
      {std::regex("Total of " + N + " and " + N + R"(\.)"), '+', false},
      {std::regex("What is " + N + " plus " + N + R"(\?)"), '+', false},
      {std::regex("What is " + N + " minus " + N + R"(\?)"), '-', false},
      {std::regex("Subtract " + N + " from " + N + R"(\.)"), '-', true},
      {std::regex("What is " + N + " take away " + N + R"(\?)"), '-', false},
      {std::regex("Multiply " + N + " and " + N + R"(\.)"), '*', false},
      {std::regex("What is " + N + " times " + N + R"(\?)"), '*', false},
      {std::regex("What is the product of " + N + " and " + N + R"(\?)"), '*', false},
      {std::regex("Product of " + N + " and " + N + R"(\.)"), '*', false},
      {std::regex("Divide " + N + " by " + N + R"(\.)"), '/', false},
      {std::regex("What is " + N + " divided by " + N + R"(\?)"), '/', false},
      {std::regex("Calculate " + N + " divided by " + N + R"(\.)"), '/', false},
  };
  static const std::vector<std::regex> expressions = {
      std::regex(R"(Calculate ([-0-9+*/() ]+)\.)"), std::regex(R"(What is the value of ([-0-9+*/() ]+)\?)"),
      std::regex(R"(What is ([-0-9+*/() ]+)\?)"),   std::regex(R"(Evaluate ([-0-9+*/() ]+)\.)"),
      std::regex(R"(Work out ([-0-9+*/() ]+)\.)"),  std::regex(R"(Compute ([-0-9+*/() ]+)\.)")};
  std::smatch m;
  for (const Worded& w : worded)
    if (std::regex_match(q, m, w.re)) {
      Q a = evalExpression(m[1]), b = evalExpression(m[2]);
      if (w.swapped) std::swap(a, b);
      switch (w.op) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        default: return a / b;
      }
    }
  for (const std::regex& re : expressions)
    if (std::regex_match(q, m, re)) return evalExpression(m[1]);
  throw std::runtime_error("no template matches '" + q + "'");
}

std::unique_ptr<Task> arithmetic(const std::string& module, std::uint64_t seed = 1, int seq_len = 64) {
  TaskConfig c;
  c.arithmetic_module = module;
  c.seed = seed;
  c.seq_len = seq_len;
  return makeTask(c);
}

/// Operands in a question: each starts an integer-digit or numerator-digit run.
int countOperands(const TokenBatch& b, int64_t row) {
  int n = 0;
  TokenRole prev = TokenRole::Special;
  for (int64_t t = 1; t < b.prompt_length[row] - 1; ++t) {
    const TokenRole r = b.roles[row * b.seq_len + t];
    if ((r == TokenRole::IntegerDigit || r == TokenRole::NumeratorDigit) && r != prev) ++n;
    prev = r;
  }
  return n;
}

/// Largest integer operand of a question (its integer-digit runs).
int64_t maxIntegerOperand(const TokenBatch& b, int64_t row) {
  int64_t best = 0, value = 0;
  for (int64_t t = 1; t < b.prompt_length[row]; ++t) {
    if (b.roles[row * b.seq_len + t] == TokenRole::IntegerDigit) {
      value = value * 10 + (b.questions[row][t - 1] - '0');
    } else {
      best = std::max(best, value);
      value = 0;
    }
  }
  return best;
}

const std::vector<std::string> kModules = {"add_or_sub", "mul_div", "mixed"};
const std::vector<Split> kSplits = {Split::Train, Split::Interpolation, Split::Extrapolation};

}  // namespace

TEST(ArithmeticReference, IndependentEvaluatorOnHandComputedQuestions) {
  EXPECT_EQ(str(evaluateQuestion("Calculate (-2/9)/(4/3)*6.")), "-1");
  EXPECT_EQ(str(evaluateQuestion("What is 2 + 3*4?")), "14");
  EXPECT_EQ(str(evaluateQuestion("Evaluate (2 + 3)*4.")), "20");
  EXPECT_EQ(str(evaluateQuestion("Calculate 2 - (3 - 4).")), "3");
  EXPECT_EQ(str(evaluateQuestion("Work out 8/4/2.")), "1");
  EXPECT_EQ(str(evaluateQuestion("Divide 6 by -2/3.")), "-9");
  EXPECT_EQ(str(evaluateQuestion("Subtract 4 from 7.")), "3");
  EXPECT_EQ(str(evaluateQuestion("Add -3 and 5.")), "2");
  EXPECT_EQ(str(evaluateQuestion("Evaluate -5 + (-1 - -2) + 3.")), "-1");
  EXPECT_EQ(str(evaluateQuestion("What is the value of (-4)/(-10)*5/(-4)?")), "-1/2");
  EXPECT_EQ(str(evaluateQuestion("Compute 1/3 - 1/2.")), "-1/6");
}

TEST(Arithmetic, EveryAnswerMatchesTheIndependentEvaluation) {
  for (const auto& module : kModules) {
    const auto task = arithmetic(module);
    for (const Split split : kSplits) {
      std::uint64_t state = 99;
      for (const TokenBatch& b : {task->tokenEvalSet(split, 300), task->tokenBatch(split, 100, state)}) {
        ASSERT_EQ(b.batch, static_cast<int64_t>(b.questions.size()));
        for (int64_t r = 0; r < b.batch; ++r) {
          SCOPED_TRACE(module + " " + std::string(splitName(split)) + ": " + b.questions[r]);
          Q expected;
          ASSERT_NO_THROW(expected = evaluateQuestion(b.questions[r]));
          EXPECT_EQ(b.answers[r], str(expected));
          EXPECT_TRUE(std::regex_match(b.answers[r], std::regex(R"(-?(0|[1-9]\d*)(/[1-9]\d*)?)")));
        }
      }
    }
  }
}

TEST(Arithmetic, RawDrawsNeverDivideByZero) {
  // drawArithmetic rejects (nullopt) overflowing problems; every problem it returns is well defined.
  std::uint64_t state = 5;
  tasks::Rng rng(state);
  int divisions = 0;
  for (const auto module : {tasks::ArithmeticModule::MulDiv, tasks::ArithmeticModule::Mixed})
    for (const bool extrapolation : {false, true})
      for (int i = 0; i < 3000; ++i) {
        const auto e = tasks::drawArithmetic(module, extrapolation, rng);
        if (!e) continue;
        divisions += e->question.text.find('/') != std::string::npos;
        ASSERT_NO_THROW(evaluateQuestion(e->question.text)) << e->question.text;
      }
  EXPECT_GT(divisions, 3000);
}

TEST(Arithmetic, DeterministicForAStateAndSeed) {
  const auto task = arithmetic("mixed", 1);
  std::uint64_t s1 = 42, s2 = 42, s3 = 43;
  const TokenBatch a = task->tokenBatch(Split::Train, 32, s1);
  const TokenBatch b = task->tokenBatch(Split::Train, 32, s2);
  const TokenBatch c = task->tokenBatch(Split::Train, 32, s3);
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, 42u);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.questions, b.questions);
  EXPECT_NE(a.questions, c.questions);
  const TokenBatch d = task->tokenBatch(Split::Train, 32, s1);  // the state advanced: a new batch
  EXPECT_NE(a.questions, d.questions);

  const TokenBatch e1 = task->tokenEvalSet(Split::Interpolation, 50);
  const TokenBatch e2 = task->tokenEvalSet(Split::Interpolation, 50);
  const TokenBatch e3 = task->tokenEvalSet(Split::Validation, 20);  // alias, and a prefix
  EXPECT_EQ(e1.inputs, e2.inputs);
  EXPECT_EQ(std::vector<std::string>(e1.questions.begin(), e1.questions.begin() + 20), e3.questions);
  EXPECT_NE(arithmetic("mixed", 2)->tokenEvalSet(Split::Interpolation, 50).questions, e1.questions);
  EXPECT_EQ(arithmetic("mixed", 1)->tokenEvalSet(Split::Interpolation, 50).questions, e1.questions);
}

TEST(Arithmetic, ExtrapolationHasMoreTermsAndLargerNumbers) {
  for (const auto& module : kModules) {
    SCOPED_TRACE(module);
    const auto task = arithmetic(module);
    const auto trainBound = tasks::arithmeticDifficulty(tasks::parseArithmeticModule(module), false).max_integer;
    const TokenBatch train = task->tokenEvalSet(Split::Train, 300);
    const TokenBatch extra = task->tokenEvalSet(Split::Extrapolation, 300);
    int trainMaxTerms = 0, extraMinTerms = 100;
    int64_t trainMaxInt = 0, extraMaxInt = 0;
    for (int64_t r = 0; r < 300; ++r) {
      trainMaxTerms = std::max(trainMaxTerms, countOperands(train, r));
      extraMinTerms = std::min(extraMinTerms, countOperands(extra, r));
      trainMaxInt = std::max(trainMaxInt, maxIntegerOperand(train, r));
      extraMaxInt = std::max(extraMaxInt, maxIntegerOperand(extra, r));
      EXPECT_GT(maxIntegerOperand(extra, r), trainBound) << extra.questions[r];
    }
    EXPECT_EQ(trainMaxTerms, 4);
    EXPECT_EQ(extraMinTerms, 5);
    EXPECT_LE(trainMaxInt, trainBound);
    EXPECT_GT(extraMaxInt, 3 * trainBound);
  }
}

TEST(Arithmetic, InterpolationQuestionsAreHeldOutOfTraining) {
  const auto task = arithmetic("add_or_sub");
  const TokenBatch held = task->tokenEvalSet(Split::Interpolation, 400);
  std::uint64_t state = 7;
  const TokenBatch train = task->tokenBatch(Split::Train, 4000, state);
  const std::set<std::string> heldOut(held.questions.begin(), held.questions.end());
  for (const auto& q : train.questions) {
    EXPECT_EQ(heldOut.count(q), 0u) << q;
    EXPECT_FALSE(tasks::QuestionAnswerTask::isHeldOut(q));
  }
  for (const auto& q : held.questions) EXPECT_TRUE(tasks::QuestionAnswerTask::isHeldOut(q));
}
