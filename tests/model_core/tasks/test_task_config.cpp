// TaskConfig validation and JSON: round trip, every problem reported at once, precise messages;
// makeTask's dispatch; names; sample text for `tensorscope task sample`.

#include <gtest/gtest.h>

#include "model_core/tasks.h"

using namespace tensorscope::model_core;

namespace {

std::string errorOf(const std::string& json) {
  try {
    taskConfigFromJson(json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(TaskConfig, JsonRoundTrip) {
  TaskConfig c;
  c.name = "sort";
  c.seed = 18446744073709551615ULL;
  c.seq_len = 100;
  c.arithmetic_module = "mul_div";
  c.corpus = "/tmp/x.txt";
  c.data_dir = "/data";
  c.patch = 4;
  c.algorithmic_length = 12;
  c.algorithmic_alphabet = 62;
  const TaskConfig back = taskConfigFromJson(taskConfigToJson(c));
  EXPECT_EQ(back.name, c.name);
  EXPECT_EQ(back.seed, c.seed);
  EXPECT_EQ(back.seq_len, c.seq_len);
  EXPECT_EQ(back.arithmetic_module, c.arithmetic_module);
  EXPECT_EQ(back.corpus, c.corpus);
  EXPECT_EQ(back.data_dir, c.data_dir);
  EXPECT_EQ(back.patch, c.patch);
  EXPECT_EQ(back.algorithmic_length, c.algorithmic_length);
  EXPECT_EQ(back.algorithmic_alphabet, c.algorithmic_alphabet);
  EXPECT_EQ(taskConfigToJson(TaskConfig{}, -1),
            R"({"name":"arithmetic","seed":1,"seq_len":64,"arithmetic_module":"mixed","corpus":"",)"
            R"("data_dir":"/usr/share/datasets/fashion-mnist","patch":7,"algorithmic_length":8,"algorithmic_alphabet":10})");
  const TaskConfig partial = taskConfigFromJson(R"({"name": "copy"})");  // missing keys keep defaults
  EXPECT_EQ(partial.name, "copy");
  EXPECT_EQ(partial.seq_len, 64);
}

TEST(TaskConfig, EveryProblemIsReported) {
  const std::string msg =
      errorOf(R"({"name": "arithmetik", "seq_len": "64", "patch": 5, "sede": 3, "algorithmic_alphabet": 63,
                  "seed": -1, "arithmetic_module": "add"})");
  EXPECT_TRUE(contains(msg, "invalid task config (7 problems):")) << msg;
  EXPECT_TRUE(contains(msg, "sede: unknown field \"sede\" (known here: name, seed, seq_len, arithmetic_module")) << msg;
  EXPECT_TRUE(contains(msg, "seq_len: must be a whole number; got a string")) << msg;
  EXPECT_TRUE(contains(msg, "seed: must be in [0, 2^64-1]; got -1")) << msg;
  EXPECT_TRUE(contains(msg, "name: unknown task 'arithmetik' (known: arithmetic, char_lm, fashion_mnist, copy, reverse, sort)"))
      << msg;
  EXPECT_TRUE(contains(msg, "patch: must divide the 28-pixel image side (1, 2, 4, 7, 14 or 28); got 5")) << msg;
  EXPECT_TRUE(contains(msg, "algorithmic_alphabet: must be in [2, 62] (symbols 0-9, a-z, A-Z); got 63")) << msg;
  EXPECT_TRUE(contains(msg, "arithmetic_module: unknown module 'add' (known: add_or_sub, mul_div, mixed)")) << msg;
}

TEST(TaskConfig, MalformedAndMistypedDocuments) {
  EXPECT_TRUE(contains(errorOf("{\"name\": "), "invalid task config (1 problem):\n  malformed JSON: ")) << errorOf("{");
  EXPECT_TRUE(contains(errorOf("[1, 2]"), "a task config must be a JSON object; got an array"));
  EXPECT_TRUE(contains(errorOf(R"({"seq_len": 64.5})"), "seq_len: must be a whole number; got the number 64.5"));
  EXPECT_TRUE(contains(errorOf(R"({"seq_len": 0})"), "seq_len: must be in [1, 65536]; got 0"));
  EXPECT_TRUE(contains(errorOf(R"({"seq_len": 99999999999})"), "seq_len: is out of range: 99999999999"));
  EXPECT_TRUE(contains(errorOf(R"({"corpus": 3})"), "corpus: must be a string; got the number 3"));
  EXPECT_TRUE(contains(errorOf(R"({"data_dir": ""})"), "data_dir: must not be empty"));
}

// Issue 19, item 5: seq_len = 2147483647 on copy/reverse/sort overflowed a signed int while checking
// that extrapolation examples fit (seq_len + 1); UBSan (scripts/sanitize.sh) reports it.
TEST(TaskConfig, HugeSequenceLengthsAreRefusedWithoutOverflow) {
  for (const char* task : {"copy", "reverse", "sort"}) {
    const auto m = errorOf(std::string(R"({"name": ")") + task + R"(", "seq_len": 2147483647})");
    EXPECT_TRUE(contains(m, "seq_len: must be in [1, 65536]; got 2147483647")) << m;
    EXPECT_FALSE(contains(m, "too small")) << m;
  }
}

TEST(TaskConfig, MakeTaskValidatesAndDispatches) {
  TaskConfig bad;
  bad.name = "translation";
  bad.algorithmic_length = 0;
  try {
    makeTask(bad);
    FAIL() << "invalid config accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "invalid task config (2 problems):")) << e.what();
    EXPECT_TRUE(contains(e.what(), "algorithmic_length: must be in [1, 1024]; got 0")) << e.what();
  }
  EXPECT_EQ(taskNames(), (std::vector<std::string>{"arithmetic", "char_lm", "fashion_mnist", "copy", "reverse", "sort"}));
  EXPECT_EQ(arithmeticModules(), (std::vector<std::string>{"add_or_sub", "mul_div", "mixed"}));
  for (const std::string name : {"arithmetic", "copy", "reverse", "sort"}) {
    TaskConfig c;
    c.name = name;
    const auto task = makeTask(c);
    EXPECT_EQ(task->name(), name);
    EXPECT_TRUE(task->isQuestionAnswer());
    EXPECT_FALSE(task->isImage());
  }
  EXPECT_TRUE(validateTaskConfig(TaskConfig{}).empty());
}

TEST(TaskConfig, SampleTextForTheCli) {
  TaskConfig c;
  const auto task = makeTask(c);
  const std::string text = task->describeSamples(5, 1);
  EXPECT_EQ(text, task->describeSamples(5, 1));
  EXPECT_NE(text, task->describeSamples(5, 2));
  EXPECT_TRUE(contains(text, "arithmetic (module mixed): vocabulary ")) << text;
  for (const char* section : {"\ntrain:\n", "\ninterpolation:\n", "\nextrapolation:\n"})
    EXPECT_TRUE(contains(text, section)) << section;
  EXPECT_TRUE(contains(text, "  5. ")) << text;
  EXPECT_FALSE(contains(text, "  6. ")) << text;
  EXPECT_TRUE(contains(text, "  ->  ")) << text;
  EXPECT_EQ(tokenRoleName(TokenRole::NumeratorDigit), "numerator digit");
  EXPECT_EQ(tokenRoleName(TokenRole::Other), "other");
  EXPECT_EQ(splitName(Split::Extrapolation), "extrapolation");
}
