#pragma once
/// What can be done with a run directory the trainer wrote (model_core/trainer.h), while it trains
/// or after: snapshot its checkpoint, read a layer's learned core back as a spec, evaluate it, run
/// inference through files, export it to PyTorch. The small files it holds are read by
/// model_core/run_files.h. Torch-free header.

#include <cstdint>
#include <string>
#include <vector>

#include "model_core/snapshots.h"
#include "spec/core_spec.h"

namespace tensorscope::model_core {

/// What a run directory holds, read without loading its weights: the step of its newest checkpoint
/// that verifies (-1 without one) and every problem found (a config that does not read, a damaged
/// trainer state, checkpoints that do not verify, a trainer state without weights). The explorer
/// uses it to refuse a damaged folder with the reason and to offer resuming a run with history.
struct RunDirectoryState {
  std::int64_t checkpoint_step = -1;
  std::vector<std::string> problems;
};
RunDirectoryState inspectRunDirectory(const std::string& run_dir);

/// Copies a run directory's latest checkpoint (model.safetensors, config.json, trainer_state.json)
/// into `out_dir` (created), each file atomically, after checking that the weights file reads.
/// A running trainer may keep writing `run_dir`: the copy is one consistent checkpoint. Returns its
/// step. Throws std::invalid_argument when `run_dir` holds no readable checkpoint.
std::int64_t snapshotCheckpoint(const std::string& run_dir, const std::string& out_dir);

/// The THSA core of layer `layer` in a run directory's checkpoint, as a spec: the run's own core
/// structure, kinds and trainable mask with the learned values (dense entries, trainable factors,
/// trainable c2/c3). Throws std::invalid_argument when that layer has no core or the weights file
/// does not match the run's config.
spec::CoreSpec learnedCoreSpec(const std::string& run_dir, int layer);

/// Evaluates a run directory's checkpoint on every split of its task.
std::vector<EvalSnapshot> evaluateRun(const std::string& run_dir);

/// The inspection of a run directory's checkpoint with the attention maps of `probe` (see
/// TrainingSession::inspect: typed text, an image number, or empty for the default example).
/// Throws std::invalid_argument with the reason for a probe the model cannot read or a run
/// without readable weights.
InspectionSnapshot probeRun(const std::string& run_dir, const std::string& probe);

/// File protocol of `tensorscope infer`: reads `tokens` (I64 [B, N]) or `patches` (F32 [B, T, P])
/// from `input`, writes `logits` (F32) to `output`.
void inferFiles(const std::string& run_dir, const std::string& input, const std::string& output);

/// Writes a self-contained PyTorch export of a run into `out_dir`: model.py (the architecture,
/// `load(DIR)` returning a torch.nn.Module whose forward(tokens [B, N] int64) gives logits
/// [B, N, V], or class logits for the image classifier), model.safetensors, config.json and, for
/// sequence tasks, vocab.json ({"format": "tensorscope.vocabulary", "version": 1, "tokens": [id ->
/// UTF-8 text], "pad": 0, "bos": 1, "sep": 2, "eos": 3}; the task is built for it, so a char_lm
/// run needs its corpus). Returns the names of the files written, model.py first.
/// Throws std::invalid_argument / std::runtime_error with the reason (e.g. the task's missing data).
std::vector<std::string> exportPyTorch(const std::string& run_dir, const std::string& out_dir);

}  // namespace tensorscope::model_core
