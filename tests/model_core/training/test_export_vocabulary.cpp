// `tensorscope export --format pytorch` writes the run's task vocabulary as vocab.json for sequence
// tasks (so the exported model.py can be fed text), none for image tasks, and fails with the reason
// when the task's data is gone. The Python side is tests/model_core/training/test_export_pytorch.py.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/run_directory.h"
#include "model_core/tasks.h"
#include "model_core/trainer.h"
#include "training_test_util.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using tensorscope::model_core::testing::TempDir;
using tensorscope::model_core::testing::tinyRun;

namespace {

void trainRun(const RunConfig& c, const std::string& dir) {
  TrainerControl control;
  ProgressSink quiet;
  train(c, dir, control, quiet);
}

/// A char_lm run on a small corpus file of `dir`.
RunConfig charLmRun(const TempDir& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning was the word, and the word was with the tensor.\n";
  files::writeFileAtomically(dir.path("corpus.txt"), text);
  auto c = tinyRun("mhsa", 1);
  c.task.name = "char_lm";
  c.task.corpus = dir.path("corpus.txt");
  return c;
}

}  // namespace

TEST(ExportVocabulary, ASequenceRunWritesItsTasksTokensAndTheSpecials) {
  TempDir dir("export_vocab");
  const auto c = tinyRun("mhsa", 1);
  trainRun(c, dir.path("run"));
  const auto written = exportPyTorch(dir.path("run"), dir.path("export"));
  EXPECT_EQ(written, (std::vector<std::string>{"model.py", "model.safetensors", "config.json", "vocab.json"}));
  const auto j = nlohmann::json::parse(files::readWholeFile(dir.path("export/vocab.json")));
  EXPECT_EQ(j.at("format"), "tensorscope.vocabulary");
  EXPECT_EQ(j.at("version"), 1);
  EXPECT_EQ(j.at("tokens").get<std::vector<std::string>>(), makeTask(c.task)->vocabulary().tokens);
  EXPECT_EQ(j.at("pad"), Vocabulary::kPad);
  EXPECT_EQ(j.at("bos"), Vocabulary::kBos);
  EXPECT_EQ(j.at("sep"), Vocabulary::kSep);
  EXPECT_EQ(j.at("eos"), Vocabulary::kEos);
}

TEST(ExportVocabulary, ACharLmRunWritesItsCorpusVocabularyAndNamesAMissingCorpus) {
  TempDir dir("export_vocab_lm");
  const auto c = charLmRun(dir);
  trainRun(c, dir.path("run"));
  exportPyTorch(dir.path("run"), dir.path("export"));
  const auto j = nlohmann::json::parse(files::readWholeFile(dir.path("export/vocab.json")));
  EXPECT_EQ(j.at("tokens").get<std::vector<std::string>>(), makeTask(c.task)->vocabulary().tokens);

  std::filesystem::remove(c.task.corpus);
  try {
    exportPyTorch(dir.path("run"), dir.path("export2"));
    FAIL() << "export without the corpus did not fail";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("vocab.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("char_lm (corpus " + c.task.corpus + ")"), std::string::npos) << msg;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("export2/model.py")));
}

TEST(ExportVocabulary, ACharLmCorpusThatChangedSinceTrainingIsRefused) {
  TempDir dir("export_vocab_changed");
  const auto c = charLmRun(dir);
  trainRun(c, dir.path("run"));
  std::string other;
  for (int i = 0; i < 40; ++i) other += "Attention is all you need; heads are a design choice (Tuformer).\n";
  files::writeFileAtomically(c.task.corpus, other);
  try {
    exportPyTorch(dir.path("run"), dir.path("export"));
    FAIL() << "export with a changed corpus did not fail";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("embed.weight has"), std::string::npos) << e.what();
  }
}

TEST(ExportVocabulary, AnImageRunWritesNone) {
  auto c = tinyRun("mhsa", 1);
  c.task.name = "fashion_mnist";
  c.task.patch = 7;
  c.model.kind = "encoder_classifier";
  c.model.attention[0].causal = false;
  c.model.attention[0].sizes.seq_len = 16;
  if (!std::filesystem::exists(c.task.data_dir)) GTEST_SKIP() << "Fashion-MNIST is not installed in " << c.task.data_dir;
  TempDir dir("export_vocab_image");
  trainRun(c, dir.path("run"));
  std::filesystem::create_directories(dir.path("export"));
  files::writeFileAtomically(dir.path("export/vocab.json"), "{}");  // a previous export's
  const auto written = exportPyTorch(dir.path("run"), dir.path("export"));
  EXPECT_EQ(written, (std::vector<std::string>{"model.py", "model.safetensors", "config.json"}));
  EXPECT_TRUE(std::filesystem::exists(dir.path("export/model.py")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("export/vocab.json")));
}
