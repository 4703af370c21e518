#pragma once
// Small run configs for training tests (copy task: no data files, tiny and fast).
#include <filesystem>
#include <string>

#include "model_core/run_config.h"
#include "spec/attention_spec.h"
#include "training/checkpoint_store.h"

namespace tensorscope::model_core::testing {

inline RunConfig tinyRun(const std::string& preset = "mhsa", int steps = 8) {
  RunConfig c;
  c.task.name = "copy";
  c.task.seq_len = 24;
  c.task.algorithmic_length = 5;
  c.model.layers = 2;
  c.model.d_model = 16;
  c.model.ffn_multiplier = 2;
  auto s = spec::makeSpecPreset(preset);
  s.sizes.F = 16;
  s.sizes.H = 2;
  s.sizes.D = 8;
  s.sizes.R = s.core ? 16 : 8;
  s.sizes.seq_len = 24;
  s.causal = true;
  if (s.core) s.core = spec::makeCorePreset(s.core->preset, 2, 8);
  c.model.attention = {s};
  c.train.steps = steps;
  c.train.batch = 4;
  c.train.warmup = 2;
  c.train.eval_interval = 4;
  c.train.eval_examples = 8;
  c.train.checkpoint_interval = 4;
  c.train.inspect_interval = 4;
  c.train.threads = 1;
  return c;
}

/// A fresh, empty temporary directory removed at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("ts_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const std::string& leaf = "") const { return (path_ / leaf).string(); }

 private:
  std::filesystem::path path_;
};

/// `name` in a run's current checkpoint (run directories keep each checkpoint in its own directory).
inline std::string checkpointFile(const std::string& runDir, const std::string& name) {
  return model_core::checkpointFilesDir(runDir) + "/" + name;
}

}  // namespace tensorscope::model_core::testing
