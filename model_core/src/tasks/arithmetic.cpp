#include "tasks/arithmetic.h"

#include <array>
#include <stdexcept>
#include <vector>

#include "tasks/rational.h"
#include "tasks/task_factory.h"

namespace tensorscope::model_core::tasks {
namespace {

/// Expression templates ({e} = the expression) and worded two-operand templates ({1}, {2} = the
/// first and second operand of the root operation), as in the Mathematics Dataset.
constexpr std::array<const char*, 6> kExpressionTemplates = {
    "Calculate {e}.", "What is {e}?", "Evaluate {e}.", "Work out {e}.", "What is the value of {e}?", "Compute {e}."};

struct WordTemplate {
  char op;
  const char* text;
};
constexpr std::array<WordTemplate, 15> kWordTemplates = {{
    {'+', "Add {1} and {2}."}, {'+', "Sum {1} and {2}."}, {'+', "Put together {1} and {2}."},
    {'+', "Total of {1} and {2}."}, {'+', "What is {1} plus {2}?"},
    {'-', "What is {1} minus {2}?"}, {'-', "Subtract {2} from {1}."}, {'-', "What is {1} take away {2}?"},
    {'*', "Multiply {1} and {2}."}, {'*', "What is {1} times {2}?"}, {'*', "What is the product of {1} and {2}?"},
    {'*', "Product of {1} and {2}."},
    {'/', "Divide {1} by {2}."}, {'/', "What is {1} divided by {2}?"}, {'/', "Calculate {1} divided by {2}."},
}};

struct Node {
  char op = 0;  // 0 for an operand
  int left = -1, right = -1;
  Rational value;
  bool fraction = false;  // operand written as a fraction literal a/b
};

int precedence(char op) { return op == '+' || op == '-' ? 1 : 2; }

class Builder {
 public:
  Builder(ArithmeticModule module, const ArithmeticDifficulty& d, Rng& rng) : module_(module), d_(d), rng_(rng) {}

  /// Random binary tree with `leaves` operands; returns the root index.
  int tree(int leaves) {
    if (leaves == 1) {
      nodes.push_back(Node{});
      return static_cast<int>(nodes.size()) - 1;
    }
    const int k = static_cast<int>(rng_.uniform(1, leaves - 1));
    Node n;
    n.op = randomOp();
    n.left = tree(k);
    n.right = tree(leaves - k);
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }

  /// Fills the operands; the `forced`-th operand (if >= 0) gets a large integer.
  void operands(int forced) {
    int index = 0;
    for (Node& n : nodes) {
      if (n.op != 0) continue;
      if (index++ == forced) {
        const std::int64_t m = rng_.uniform(d_.large_integer, d_.max_integer);
        n.value = rng_.chance(0.5) ? -m : m;
      } else if (rng_.chance(d_.fraction_probability)) {
        n.fraction = true;
        do {
          const std::int64_t a = rng_.uniform(1, d_.max_numerator);
          n.value = Rational(rng_.chance(0.5) ? -a : a, rng_.uniform(2, d_.max_denominator));
        } while (n.value.isInteger());
      } else {
        n.value = rng_.uniform(-d_.max_integer, d_.max_integer);
      }
    }
  }

  /// Exact value of every node; throws std::domain_error (zero divisor) or RationalOverflow.
  Rational evaluate(int i) {
    Node& n = nodes[static_cast<std::size_t>(i)];
    if (n.op == 0) return n.value;
    const Rational a = evaluate(n.left);
    const Rational b = evaluate(n.right);
    switch (n.op) {
      case '+': n.value = a + b; break;
      case '-': n.value = a - b; break;
      case '*': n.value = a * b; break;
      default: n.value = a / b; break;
    }
    return n.value;
  }

  bool usesBothFamilies() const {
    bool additive = false, multiplicative = false;
    for (const Node& n : nodes) {
      additive |= n.op == '+' || n.op == '-';
      multiplicative |= n.op == '*' || n.op == '/';
    }
    return additive && multiplicative;
  }

  std::vector<Node> nodes;

 private:
  char randomOp() {
    switch (module_) {
      case ArithmeticModule::AddOrSub: return rng_.chance(0.5) ? '+' : '-';
      case ArithmeticModule::MulDiv: return rng_.chance(0.5) ? '*' : '/';
      case ArithmeticModule::Mixed: break;
    }
    return "+-*/"[rng_.uniform(0, 3)];
  }

  ArithmeticModule module_;
  const ArithmeticDifficulty& d_;
  Rng& rng_;
};

/// A rational with its structural roles: sign and slash are operators; digits are integer
/// digits, or numerator/denominator digits of a fraction.
void renderNumber(const Rational& v, bool fraction, RoleText& out) {
  if (v.isNegative()) out.add('-', TokenRole::Operator);
  const std::string num = std::to_string(v.numerator());
  const std::string digits = v.isNegative() ? num.substr(1) : num;
  if (!fraction) {
    out.add(digits, TokenRole::IntegerDigit);
    return;
  }
  out.add(digits, TokenRole::NumeratorDigit);
  out.add('/', TokenRole::Operator);
  out.add(std::to_string(v.denominator()), TokenRole::DenominatorDigit);
}

/// Dataset style: "+"/"-" with spaces, "*"/"/" without; operands of * and / that are negative or
/// fractions go in parentheses; a child is parenthesized when its operator binds more loosely
/// (left) or not more tightly (right) than its parent's.
void renderExpression(const std::vector<Node>& nodes, int i, char parentOp, RoleText& out) {
  const Node& n = nodes[static_cast<std::size_t>(i)];
  if (n.op == 0) {
    const bool wrap = (parentOp == '*' || parentOp == '/') && (n.fraction || n.value.isNegative());
    if (wrap) out.add('(', TokenRole::Parenthesis);
    renderNumber(n.value, n.fraction, out);
    if (wrap) out.add(')', TokenRole::Parenthesis);
    return;
  }
  const auto child = [&](int c, bool wrap) {
    if (wrap) out.add('(', TokenRole::Parenthesis);
    renderExpression(nodes, c, wrap ? 0 : n.op, out);
    if (wrap) out.add(')', TokenRole::Parenthesis);
  };
  const Node& l = nodes[static_cast<std::size_t>(n.left)];
  const Node& r = nodes[static_cast<std::size_t>(n.right)];
  child(n.left, l.op != 0 && precedence(l.op) < precedence(n.op));
  if (precedence(n.op) == 1) {
    out.add(' ', TokenRole::Space);
    out.add(n.op, TokenRole::Operator);
    out.add(' ', TokenRole::Space);
  } else {
    out.add(n.op, TokenRole::Operator);
  }
  child(n.right, r.op != 0 && precedence(r.op) <= precedence(n.op));
}

/// Writes `text` with {e}/{1}/{2} replaced by the given pieces.
RoleText fillTemplate(std::string_view text, const RoleText& e, const RoleText& first, const RoleText& second) {
  RoleText out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find('{', pos);
    if (open == std::string_view::npos) {
      out.addWords(text.substr(pos));
      break;
    }
    out.addWords(text.substr(pos, open - pos));
    const char key = text[open + 1];
    out.append(key == 'e' ? e : key == '1' ? first : second);
    pos = open + 3;
  }
  return out;
}

}  // namespace

ArithmeticModule parseArithmeticModule(const std::string& name) {
  if (name == "add_or_sub") return ArithmeticModule::AddOrSub;
  if (name == "mul_div") return ArithmeticModule::MulDiv;
  if (name == "mixed") return ArithmeticModule::Mixed;
  throw std::invalid_argument("unknown arithmetic module '" + name + "' (known: add_or_sub, mul_div, mixed)");
}

std::string arithmeticModuleName(ArithmeticModule module) {
  switch (module) {
    case ArithmeticModule::AddOrSub: return "add_or_sub";
    case ArithmeticModule::MulDiv: return "mul_div";
    case ArithmeticModule::Mixed: return "mixed";
  }
  return "mixed";
}

ArithmeticDifficulty arithmeticDifficulty(ArithmeticModule module, bool extrapolation) {
  ArithmeticDifficulty d;
  switch (module) {
    case ArithmeticModule::AddOrSub: d.max_integer = 30, d.fraction_probability = 0.15; break;
    case ArithmeticModule::MulDiv: d.max_integer = 12, d.fraction_probability = 0.3; break;
    case ArithmeticModule::Mixed: d.max_integer = 20, d.fraction_probability = 0.25; break;
  }
  if (extrapolation) {  // more terms, larger numbers, no worded templates (they take two operands)
    d.min_terms = 5, d.max_terms = 6;
    d.large_integer = d.max_integer + 1;
    d.max_integer = d.max_integer * (module == ArithmeticModule::AddOrSub ? 10 : 5);
    d.max_numerator = 19, d.max_denominator = 19;
    d.word_probability = 0.0;
  }
  return d;
}

std::string arithmeticCharacters() {
  std::string chars = "0123456789+-*/() ";
  for (const char* t : kExpressionTemplates) chars += t;
  for (const WordTemplate& t : kWordTemplates) chars += t.text;
  std::string out;
  for (const char c : chars)
    if (c != '{' && c != '}' && out.find(c) == std::string::npos) out += c;
  return out;
}

std::optional<QaExample> drawArithmetic(ArithmeticModule module, bool extrapolation, Rng& rng) {
  const ArithmeticDifficulty d = arithmeticDifficulty(module, extrapolation);
  const int terms = static_cast<int>(rng.uniform(d.min_terms, d.max_terms));
  Builder b(module, d, rng);
  const int root = b.tree(terms);
  b.operands(d.large_integer > 0 ? static_cast<int>(rng.uniform(0, terms - 1)) : -1);
  if (module == ArithmeticModule::Mixed && terms >= 3 && !b.usesBothFamilies()) return std::nullopt;
  Rational answer;
  try {
    answer = b.evaluate(root);
  } catch (const std::domain_error&) {  // a divisor evaluated to zero
    return std::nullopt;
  } catch (const RationalOverflow&) {
    return std::nullopt;
  }
  QaExample e;
  const Node& top = b.nodes[static_cast<std::size_t>(root)];
  if (terms == 2 && rng.chance(d.word_probability)) {
    std::vector<const WordTemplate*> fitting;
    for (const WordTemplate& t : kWordTemplates)
      if (t.op == top.op) fitting.push_back(&t);
    const WordTemplate* t = fitting[static_cast<std::size_t>(rng.uniform(0, static_cast<int64_t>(fitting.size()) - 1))];
    RoleText first, second;  // worded operands are written bare: "Divide 6 by -2/3."
    const Node& l = b.nodes[static_cast<std::size_t>(top.left)];
    const Node& r = b.nodes[static_cast<std::size_t>(top.right)];
    renderNumber(l.value, l.fraction, first);
    renderNumber(r.value, r.fraction, second);
    e.question = fillTemplate(t->text, {}, first, second);
  } else {
    RoleText expr;
    renderExpression(b.nodes, root, 0, expr);
    const char* t = kExpressionTemplates[static_cast<std::size_t>(rng.uniform(0, kExpressionTemplates.size() - 1))];
    e.question = fillTemplate(t, expr, {}, {});
  }
  renderNumber(answer, !answer.isInteger(), e.answer);
  return e;
}

ArithmeticTask::ArithmeticTask(const TaskConfig& config)
    : QuestionAnswerTask(config, Vocabulary::fromText(arithmeticCharacters()), /*hold_out=*/true),
      module_(parseArithmeticModule(config.arithmetic_module)) {}

std::optional<QaExample> ArithmeticTask::draw(Split split, Rng& rng) const {
  return drawArithmetic(module_, split == Split::Extrapolation, rng);
}

std::string ArithmeticTask::describeTask() const {
  return "arithmetic (module " + arithmeticModuleName(module_) + ")";
}

}  // namespace tensorscope::model_core::tasks

namespace tensorscope::model_core::tasks {

std::unique_ptr<Task> makeArithmeticTask(const TaskConfig& config) {
  auto task = std::make_unique<ArithmeticTask>(config);
  task->checkSeqLenFits();
  return task;
}

}  // namespace tensorscope::model_core::tasks
