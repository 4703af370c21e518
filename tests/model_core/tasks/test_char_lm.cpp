// Character language model on a small temporary file (hand-checkable windows and vocabulary)
// and on the King James Bible from bible-kjv (extraction, cache, missing program).

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "model_core/tasks.h"
#include "tasks/data_sources.h"

using namespace tensorscope::model_core;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("ts_charlm_" + std::to_string(::getpid()) + "_" + std::to_string(counter++))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
  static inline int counter = 0;
};

/// Sets an environment variable for the scope of a test and restores it afterwards.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::unique_ptr<Task> charLm(const std::string& corpus, int seq_len) {
  TaskConfig c;
  c.name = "char_lm";
  c.corpus = corpus;
  c.seq_len = seq_len;
  return makeTask(c);
}

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST(CharLm, SmallFileWindowsVocabularyAndSplit) {
  TempDir d;
  // 2000 characters (not bytes): "é" and "λ" are two bytes each in UTF-8.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "abcé λ.xy\n";
  ASSERT_EQ(text.size(), 2400u);
  writeFile(d.file("corpus.txt"), text);
  const auto task = charLm(d.file("corpus.txt"), 16);
  EXPECT_FALSE(task->isQuestionAnswer());
  const Vocabulary& v = task->vocabulary();
  const std::vector<std::string> expected = {"<pad>", "<bos>", "<sep>", "<eos>", "\n", " ", ".", "a", "b",
                                             "c",     "x",     "y",     "é",     "λ"};
  EXPECT_EQ(v.tokens, expected);
  EXPECT_EQ(v.encode("aé\n"), (std::vector<int64_t>{7, 12, 4}));

  // 2000 characters: the last 5% (100) are validation, so it starts at character 1900.
  const TokenBatch val = task->tokenEvalSet(Split::Validation, 5);
  ASSERT_EQ(val.batch, 5);
  const auto row0 = std::vector<int64_t>(val.inputs.begin(), val.inputs.begin() + 16);
  EXPECT_EQ(v.decode(row0), "abcé λ.xy\nabcé λ");
  // The last window ends at the last character.
  const auto last = std::vector<int64_t>(val.targets.end() - 16, val.targets.end());
  EXPECT_EQ(v.decode(last), " λ.xy\nabcé λ.xy\n");

  std::uint64_t state = 4;
  const TokenBatch b = task->tokenBatch(Split::Train, 64, state);
  EXPECT_EQ(b.seq_len, 16);
  EXPECT_EQ(b.loss_mask, std::vector<float>(64 * 16, 1.0f));
  EXPECT_EQ(b.prompt_length, std::vector<int64_t>(64, 0));
  const std::string doubled = text + text;
  for (int64_t r = 0; r < b.batch; ++r) {
    const auto in = b.inputs.begin() + r * 16;
    const auto tg = b.targets.begin() + r * 16;
    for (int t = 0; t + 1 < 16; ++t) EXPECT_EQ(tg[t], in[t + 1]);
    // Every window is a stretch of the text, and train windows never reach the validation part.
    const std::string window = v.decode(std::vector<int64_t>(in, in + 16)) + v.tokens[static_cast<std::size_t>(tg[15])];
    EXPECT_NE(doubled.find(window), std::string::npos) << window;
    for (int t = 0; t < 16; ++t) {
      const std::string& ch = v.tokens[static_cast<std::size_t>(in[t])];
      const TokenRole role = b.roles[static_cast<std::size_t>(r * 16 + t)];
      if (ch == " " || ch == "\n") EXPECT_EQ(role, TokenRole::Space);
      else if (ch == ".") EXPECT_EQ(role, TokenRole::Punctuation);
      else if (ch == "é" || ch == "λ") EXPECT_EQ(role, TokenRole::Other);
      else EXPECT_EQ(role, TokenRole::Letter);
    }
  }
  std::uint64_t again = 4;
  EXPECT_EQ(task->tokenBatch(Split::Train, 64, again).inputs, b.inputs);
  EXPECT_THROW(task->tokenBatch(Split::Interpolation, 1, state), std::invalid_argument);
}

TEST(CharLm, BadCorporaAreRejected) {
  TempDir d;
  writeFile(d.file("bad.txt"), std::string(500, 'a') + "\xff" + std::string(500, 'b'));
  try {
    charLm(d.file("bad.txt"), 8);
    FAIL() << "invalid UTF-8 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is not valid UTF-8: invalid byte 0xFF at offset 500"), std::string::npos)
        << e.what();
  }
  writeFile(d.file("small.txt"), std::string(300, 'a'));
  try {
    charLm(d.file("small.txt"), 64);
    FAIL() << "too small corpus accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has 300 characters"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("so at least 1300 characters"), std::string::npos) << e.what();
  }
  try {
    charLm(d.file("absent.txt"), 8);
    FAIL() << "missing corpus accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open " + d.file("absent.txt")), std::string::npos) << e.what();
  }
}

TEST(CharLm, KingJamesBibleIsExtractedOnceAndCached) {
  if (tasks::findExecutable("bible").empty())
    GTEST_SKIP() << "`bible` is not installed (Debian package bible-kjv); the missing-program error is tested below";
  TempDir d;
  EnvGuard cache("XDG_CACHE_HOME", d.path.string());
  EXPECT_EQ(taskCacheDirectory(), d.path.string() + "/tensorscope");
  const auto task = charLm("", 64);
  const std::string cached = d.file("tensorscope/kjv-bible.txt");
  ASSERT_TRUE(fs::is_regular_file(cached));
  EXPECT_GT(fs::file_size(cached), 4'000'000u);
  std::ifstream in(cached);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "Ge1:1 In the beginning God created the heaven and the earth.");
  // 73 distinct characters in the KJV text of bible-kjv, plus the 4 specials.
  EXPECT_EQ(task->vocabulary().size(), 77);
  const TokenBatch train = task->tokenEvalSet(Split::Train, 2);
  EXPECT_EQ(task->vocabulary().decode(std::vector<int64_t>(train.inputs.begin(), train.inputs.begin() + 30)),
            "Ge1:1 In the beginning God cre");
  const TokenBatch val = task->tokenEvalSet(Split::Validation, 3);
  const auto tail = std::vector<int64_t>(val.targets.end() - 20, val.targets.end());
  EXPECT_EQ(task->vocabulary().decode(tail), "with you all. Amen.\n");
  EXPECT_NE(task->describeSamples(2, 1).find("extracted and cached in " + cached), std::string::npos);

  // The second load reads the cache: it works without the program.
  EnvGuard path("PATH", d.file("no-bin"));
  const auto again = charLm("", 64);
  EXPECT_EQ(again->tokenEvalSet(Split::Validation, 3).inputs, val.inputs);
  EXPECT_NE(again->describeSamples(1, 1).find("cached in " + cached), std::string::npos);
}

TEST(CharLm, MissingBibleNamesTheDebianPackage) {
  TempDir d;
  EnvGuard cache("XDG_CACHE_HOME", d.path.string());
  EnvGuard path("PATH", d.file("no-bin"));
  try {
    charLm("", 64);
    FAIL() << "no error without the bible program";
  } catch (const MissingDataError& e) {
    EXPECT_NE(std::string(e.what()).find("install the Debian package bible-kjv (apt-get install bible-kjv)"),
              std::string::npos)
        << e.what();
  }
}
