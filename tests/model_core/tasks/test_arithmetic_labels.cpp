// Structural labels of arithmetic questions and answers: golden rows checked by hand, and the
// agreement of every label with its character; seq_len checks of the generator.

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "model_core/tasks.h"
#include "tasks/qa_task.h"

using namespace tensorscope::model_core;

namespace {

std::unique_ptr<Task> arithmetic(const std::string& module, int seq_len = 64) {
  TaskConfig c;
  c.arithmetic_module = module;
  c.seq_len = seq_len;
  return makeTask(c);
}

std::string roleCodes(const std::vector<TokenRole>& roles, std::size_t begin, std::size_t n) {
  std::string s;
  for (std::size_t i = begin; i < begin + n; ++i) s += tasks::roleCode(roles[i]);
  return s;
}

const std::vector<std::string> kModules = {"add_or_sub", "mul_div", "mixed"};
const std::vector<Split> kSplits = {Split::Train, Split::Interpolation, Split::Extrapolation};

}  // namespace

TEST(Arithmetic, StructuralLabelsOfHandCheckedQuestions) {
  // Golden rows of the fixed evaluation sets (splitmix64 streams are identical on every
  // platform), answers and labels checked by hand. Codes: S special, I integer digit,
  // N numerator digit, D denominator digit, O operator (signs too), P parenthesis, L letter,
  // _ space, . punctuation.
  struct Golden {
    std::string module;
    int row;
    std::string question, answer, roles;  // roles of [BOS] question [SEP] answer [EOS]
  };
  const std::vector<Golden> golden = {
      // (-11)/(-3/4) = 44/3; 44/3*(-12) = -176; 11 - (-176) = 187.
      {"mixed", 1, "What is the value of 11 - (-11)/(-3/4)*(-12)?", "187",
       "SLLLL_LL_LLL_LLLLL_LL_II_O_POIIPOPONODPOPOIIP.SIIIS"},
      // 3 + 1/2 = 7/2; -14 - 7/2 = -35/2; (-1/2)*(-35/2) = 35/4.
      {"mixed", 3, "Work out (-1/2)*(-14 - (3 + 1/2)).", "35/4", "SLLLL_LLL_PONODPOPOII_O_PI_O_NODPP.SNNODS"},
      // -2 - 6 = -8; -8 + 7/4 = -25/4; -25/4 + 1/7 = (-175 + 4)/28.
      {"add_or_sub", 3, "Evaluate -2 - 6 - -7/4 - -1/7.", "-171/28", "SLLLLLLLL_OI_O_I_O_ONOD_O_ONOD.SONNNODDS"},
      // 9/(-3/4) = -12; -12/11; 10/(-12/11) = -110/12 = -55/6.
      {"mul_div", 2, "What is the value of 10/(9/(-3/4)/11)?", "-55/6",
       "SLLLL_LL_LLL_LLLLL_LL_IIOPIOPONODPOIIP.SONNODS"},
  };
  for (const Golden& g : golden) {
    SCOPED_TRACE(g.question);
    const TokenBatch b = arithmetic(g.module)->tokenEvalSet(Split::Train, g.row + 1);
    ASSERT_EQ(b.questions[g.row], g.question);
    EXPECT_EQ(b.answers[g.row], g.answer);
    const std::size_t used = g.roles.size();
    EXPECT_EQ(roleCodes(b.roles, g.row * b.seq_len, used), g.roles);
    EXPECT_EQ(roleCodes(b.roles, g.row * b.seq_len + used, b.seq_len - used), std::string(b.seq_len - used, 'S'));
  }
  EXPECT_EQ(tasks::roleCode(TokenRole::DenominatorDigit), 'D');
}

TEST(Arithmetic, LabelsAgreeWithTheCharactersOfEveryQuestion) {
  for (const auto& module : kModules) {
    const auto task = arithmetic(module);
    for (const Split split : kSplits) {
      const TokenBatch b = task->tokenEvalSet(split, 200);
      for (int64_t r = 0; r < b.batch; ++r) {
        const std::string& q = b.questions[r];
        SCOPED_TRACE(q);
        const std::string codes = roleCodes(b.roles, r * b.seq_len + 1, q.size());
        for (std::size_t i = 0; i < q.size(); ++i) {
          const char c = q[i], k = codes[i];
          if (std::isalpha(static_cast<unsigned char>(c))) EXPECT_EQ(k, 'L');
          else if (c == ' ') EXPECT_EQ(k, '_');
          else if (c == '(' || c == ')') EXPECT_EQ(k, 'P');
          else if (c == '+' || c == '-' || c == '*' || c == '/') EXPECT_EQ(k, 'O');
          else if (c == '.' || c == '?') EXPECT_TRUE(k == '.' && i + 1 == q.size());
          else ASSERT_TRUE(std::isdigit(static_cast<unsigned char>(c)) && (k == 'I' || k == 'N' || k == 'D')) << i;
        }
        // Digit runs have one role; a numerator run is followed by '/' and a denominator run.
        const std::regex run(R"(([IND])\1*)");
        for (auto it = std::sregex_iterator(codes.begin(), codes.end(), run); it != std::sregex_iterator(); ++it) {
          const auto end = static_cast<std::size_t>(it->position() + it->length());
          if ((*it)[1] == "N") {
            EXPECT_TRUE(q[end] == '/' && codes[end + 1] == 'D') << it->position();
          }
          if ((*it)[1] == "D") {
            EXPECT_TRUE(q[it->position() - 1] == '/' && codes[it->position() - 2] == 'N') << it->position();
          }
        }
        // Answer labels follow from the answer text alone.
        const std::string& a = b.answers[r];
        std::string expected;
        const bool fraction = a.find('/') != std::string::npos;
        bool afterSlash = false;
        for (const char c : a) {
          if (c == '-' || c == '/') expected += 'O';
          else expected += !fraction ? 'I' : afterSlash ? 'D' : 'N';
          afterSlash |= c == '/';
        }
        EXPECT_EQ(roleCodes(b.roles, r * b.seq_len + 2 + q.size(), a.size()), expected);
      }
    }
  }
}

TEST(Arithmetic, SeqLenTooSmallIsReportedWithTheNeededLength) {
  try {
    arithmetic("mixed", 12);
    FAIL() << "seq_len 12 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("seq_len: arithmetic needs seq_len >= 16"), std::string::npos) << e.what();
  }
  try {
    arithmetic("mixed", 32);  // train problems fit, extrapolation problems (5-6 terms) do not
    FAIL() << "seq_len 32 accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("seq_len: 32 is too small for arithmetic (module mixed) extrapolation problems"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("90% fit with seq_len >= "), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(arithmetic("mixed", 48));
}
