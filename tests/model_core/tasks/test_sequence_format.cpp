// The trainer's sequence format, checked position by position on arithmetic and algorithmic
// rows: [BOS] question [SEP] answer [EOS] PAD..., targets = inputs shifted by one, loss only on
// the answer and EOS; and the copy / reverse / sort answers.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "model_core/tasks.h"

using namespace tensorscope::model_core;

namespace {

std::unique_ptr<Task> make(const std::string& name, int seq_len = 64, int length = 8, int alphabet = 10) {
  TaskConfig c;
  c.name = name;
  c.seq_len = seq_len;
  c.algorithmic_length = length;
  c.algorithmic_alphabet = alphabet;
  return makeTask(c);
}

/// Every row of a QA batch against the format, rebuilt here from the question and answer text.
void expectFormat(const Task& task, const TokenBatch& b) {
  const Vocabulary& v = task.vocabulary();
  const int64_t L = b.seq_len;
  ASSERT_EQ(b.inputs.size(), static_cast<std::size_t>(b.batch * L));
  ASSERT_EQ(b.targets.size(), b.inputs.size());
  ASSERT_EQ(b.loss_mask.size(), b.inputs.size());
  ASSERT_EQ(b.roles.size(), b.inputs.size());
  ASSERT_EQ(b.prompt_length.size(), static_cast<std::size_t>(b.batch));
  ASSERT_EQ(b.answers.size(), static_cast<std::size_t>(b.batch));
  for (int64_t r = 0; r < b.batch; ++r) {
    SCOPED_TRACE(b.questions[r]);
    std::vector<int64_t> tokens = {Vocabulary::kBos};
    for (const int64_t id : v.encode(b.questions[r])) tokens.push_back(id);
    tokens.push_back(Vocabulary::kSep);
    const auto prompt = static_cast<int64_t>(tokens.size());
    for (const int64_t id : v.encode(b.answers[r])) tokens.push_back(id);
    tokens.push_back(Vocabulary::kEos);
    const auto used = static_cast<int64_t>(tokens.size());
    ASSERT_LE(used, L + 1);
    tokens.resize(static_cast<std::size_t>(L + 1), Vocabulary::kPad);
    EXPECT_EQ(b.prompt_length[r], prompt);
    for (int64_t t = 0; t < L; ++t) {
      const std::size_t i = static_cast<std::size_t>(r * L + t);
      EXPECT_EQ(b.inputs[i], tokens[static_cast<std::size_t>(t)]) << t;
      EXPECT_EQ(b.targets[i], tokens[static_cast<std::size_t>(t + 1)]) << t;
      if (t + 1 < L) {
        EXPECT_EQ(b.targets[i], b.inputs[i + 1]) << t;
      }
      // Loss exactly where the target is an answer character or the EOS.
      const bool answerOrEos = t + 1 >= prompt && t + 1 < used;
      EXPECT_EQ(b.loss_mask[i], answerOrEos ? 1.0f : 0.0f) << t;
      const bool special = t == 0 || t == prompt - 1 || t >= used - 1;
      EXPECT_EQ(b.roles[i] == TokenRole::Special, special) << t;
    }
    // Greedy decoding's prompt and the answer it must reproduce, read back from the row.
    const auto row = b.inputs.begin() + r * L;
    EXPECT_EQ(v.decode(std::vector<int64_t>(row + 1, row + prompt - 1)), b.questions[r]);
    EXPECT_EQ(row[prompt - 1], Vocabulary::kSep);
    const auto ans = b.targets.begin() + r * L + prompt - 1;
    EXPECT_EQ(v.decode(std::vector<int64_t>(ans, ans + static_cast<int64_t>(b.answers[r].size()))), b.answers[r]);
    EXPECT_EQ(ans[static_cast<int64_t>(b.answers[r].size())], Vocabulary::kEos);
  }
}

}  // namespace

TEST(SequenceFormat, ArithmeticRowsFollowTheFormat) {
  for (const int seq_len : {64, 48}) {
    const auto task = make("arithmetic", seq_len);
    std::uint64_t state = 3;
    for (const Split split : {Split::Train, Split::Interpolation, Split::Extrapolation}) {
      const TokenBatch b = task->tokenBatch(split, 40, state);
      EXPECT_EQ(b.batch, 40);
      EXPECT_EQ(b.seq_len, seq_len);
      expectFormat(*task, b);
    }
  }
}

TEST(SequenceFormat, SpecialIdsAndVocabulary) {
  const auto task = make("arithmetic");
  const Vocabulary& v = task->vocabulary();
  ASSERT_GE(v.size(), 4);
  EXPECT_EQ(v.tokens[0], "<pad>");
  EXPECT_EQ(v.tokens[1], "<bos>");
  EXPECT_EQ(v.tokens[2], "<sep>");
  EXPECT_EQ(v.tokens[3], "<eos>");
  EXPECT_TRUE(std::is_sorted(v.tokens.begin() + 4, v.tokens.end()));
  EXPECT_EQ(v.decode(v.encode("Calculate (-2/9)/(4/3)*6.")), "Calculate (-2/9)/(4/3)*6.");
  EXPECT_EQ(v.decode({1, 2, 3}), "<bos><sep><eos>");
  try {
    v.encode("What is 2^3?");
    FAIL() << "'^' encoded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'^' (U+005E)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(v.decode({v.size()}), std::invalid_argument);
  std::uint64_t state = 1;
  EXPECT_THROW(task->imageBatch(Split::Train, 1, state), std::logic_error);
  EXPECT_THROW(task->tokenBatch(Split::Train, 0, state), std::invalid_argument);
}

TEST(Algorithmic, CopyReverseSortAnswers) {
  for (const std::string name : {"copy", "reverse", "sort"}) {
    SCOPED_TRACE(name);
    const auto task = make(name, 40, 8, 36);
    EXPECT_TRUE(task->isQuestionAnswer());
    EXPECT_EQ(task->name(), name);
    EXPECT_EQ(task->vocabulary().size(), 4 + 36);
    std::uint64_t state = 11;
    std::set<char> seen;
    for (const Split split : {Split::Train, Split::Interpolation, Split::Extrapolation}) {
      const TokenBatch b = task->tokenBatch(split, 200, state);
      expectFormat(*task, b);
      for (int64_t r = 0; r < b.batch; ++r) {
        const std::string& q = b.questions[r];
        EXPECT_EQ(q.size(), split == Split::Extrapolation ? 12u : 8u);
        std::string expected = q;
        if (name == "reverse") std::reverse(expected.begin(), expected.end());
        if (name == "sort") std::sort(expected.begin(), expected.end());
        EXPECT_EQ(b.answers[r], expected);
        seen.insert(q.begin(), q.end());
      }
    }
    EXPECT_EQ(seen.size(), 36u);  // digits and a-z all used, nothing else
    EXPECT_EQ(*seen.begin(), '0');
    EXPECT_EQ(*seen.rbegin(), 'z');
  }
  // Hand-checked: sorting orders by character code.
  const TokenBatch b = make("sort", 64, 6, 62)->tokenEvalSet(Split::Train, 50);
  for (int64_t r = 0; r < b.batch; ++r) EXPECT_TRUE(std::is_sorted(b.answers[r].begin(), b.answers[r].end()));
}

TEST(Algorithmic, SeqLenMustHoldTheExtrapolationLength) {
  // length 8: extrapolation length 12 needs 2*12+3 = 27 tokens <= seq_len + 1.
  EXPECT_NO_THROW(make("copy", 26, 8));
  try {
    make("copy", 25, 8);
    FAIL() << "seq_len 25 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("use seq_len >= 26"), std::string::npos) << e.what();
  }
}

TEST(Algorithmic, DeterministicEvalSetsAndHeldOutInterpolation) {
  const auto task = make("reverse", 64, 8, 10);
  EXPECT_EQ(task->tokenEvalSet(Split::Validation, 30).questions, task->tokenEvalSet(Split::Interpolation, 30).questions);
  std::uint64_t state = 1;
  const TokenBatch train = task->tokenBatch(Split::Train, 3000, state);
  const TokenBatch held = task->tokenEvalSet(Split::Interpolation, 300);
  const std::set<std::string> heldOut(held.questions.begin(), held.questions.end());
  for (const auto& q : train.questions) EXPECT_EQ(heldOut.count(q), 0u) << q;
}
