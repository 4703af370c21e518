// `tensorscope export --format pytorch`: a run directory as a self-contained PyTorch package
// (model.py, model.safetensors, config.json, and vocab.json for sequence tasks). model.py reads
// the architecture from config.json, so the export copies the run's two files unchanged, writes
// the task's vocabulary and adds the fixed model.py text.
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ops/isfinite.h>
#include <nlohmann/json.hpp>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "io/tensor_convert.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "model_core/safetensors.h"
#include "model_core/tasks.h"
#include "training/checkpoint_store.h"
#include "training/pytorch_template.h"

namespace tensorscope::model_core {
namespace {

namespace fs = std::filesystem;

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A cheap consistency check of the weights against the config, so a broken run fails here and
/// not later in Python: the tensors every model of this kind holds, with the config's width.
/// (model.py's load() checks every name and shape again when it builds the module.)
void checkWeights(const RunConfig& config, const std::string& path) {
  const auto header = readSafetensorsHeader(path);  // throws SafetensorsError for a damaged file
  const auto& t = header.tensors;
  const int64_t F = config.model.d_model;
  std::vector<std::string> problems;
  auto expect = [&](const std::string& name, int dim, int64_t width) {
    auto it = t.find(name);
    if (it == t.end()) {
      problems.push_back("missing tensor '" + name + "'");
      return;
    }
    if (it->second.dtype != DType::F32) problems.push_back("'" + name + "' is not F32");
    const auto& shape = it->second.shape;
    if (static_cast<int>(shape.size()) <= dim || shape[static_cast<size_t>(dim)] != width)
      problems.push_back("'" + name + "' has shape " + shapeText(shape) + ", expected size " + std::to_string(width) +
                         " in dimension " + std::to_string(dim) + " (model.d_model = " + std::to_string(F) + ")");
  };
  const bool classifier = config.model.kind == "encoder_classifier";
  expect(classifier ? "patch_in.weight" : "embed.weight", classifier ? 0 : 1, F);
  if (config.model.positions == "learned") expect("pos.weight", 1, F);
  if (config.model.tp_role_embedding) expect("role_embed.weight", 1, F);
  if (classifier || !config.model.tied_embeddings) expect("head.weight", 1, F);
  expect("ln_f.weight", 0, F);
  for (int i = 0; i < config.model.layers; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    expect(p + "ln1.weight", 0, F);
    // MLA with a query latent (slots.latent.q_rank > 0) reads x through wq_a instead of wq.
    // TPA with factorised queries (slots.tpa.q_rank > 0) reads x through W_B_q, or through W_A_q
    // when the feature factors are constants (§8.7; validation keeps one of the two contextual).
    const auto& tpa = layerSpec(config.model, i).slots.tpa;
    const bool queryLatent = layerSpec(config.model, i).slots.latent.q_rank > 0;
    const std::string queryFactor = tpa.contextual_b ? "attn.W_B_q.weight" : "attn.W_A_q.weight";
    expect(p + (queryLatent ? "attn.wq_a.weight" : tpa.q_rank > 0 ? queryFactor : "attn.wq.weight"), 1, F);
    expect(p + "attn.wo.weight", 0, F);
    const auto variant = layerSpec(config.model, i).variant;
    if (variant == spec::Variant::Thsa || variant == spec::Variant::ThsaLinear)
      expect(p + "attn.core", 0, layerSpec(config.model, i).sizes.R);
  }
  const std::string layerPrefix = "blocks." + std::to_string(config.model.layers) + ".";
  for (const auto& [name, info] : t)
    if (name.rfind(layerPrefix, 0) == 0) {
      problems.push_back("'" + name + "' belongs to a layer the config does not have (model.layers = " +
                         std::to_string(config.model.layers) + ")");
      break;
    }
  if (!problems.empty()) {
    std::string msg = path + " does not fit the run's config.json:";
    for (const auto& p : problems) msg += "\n  " + p;
    throw std::invalid_argument(msg);
  }
}

/// The task of `config` as the export's messages name it: its name, and a char_lm run's corpus.
std::string taskLabel(const TaskConfig& task) {
  if (task.name != "char_lm") return task.name;
  return "char_lm (corpus " +
         (task.corpus.empty() ? std::string("King James Bible, from the Debian package bible-kjv") : task.corpus) + ")";
}

/// vocab.json of a decoder run: its task's vocabulary (token id -> UTF-8 text) and the special
/// ids, so that model.py can encode a question and decode an answer without Tensorscope. Builds
/// the task, which loads its data (char_lm reads its corpus); throws std::invalid_argument naming
/// the task and what is missing, or when the vocabulary does not fit the weights' embedding.
std::string vocabularyJson(const std::string& runDir, const RunConfig& config, const std::string& weightsPath) {
  std::unique_ptr<Task> task;
  try {
    task = makeTask(config.task);
  } catch (const std::exception& e) {  // MissingDataError, unreadable corpus, ...
    throw std::invalid_argument("cannot export " + runDir + ": vocab.json needs the vocabulary of the run's task " +
                                taskLabel(config.task) + ", which could not be built: " + e.what());
  }
  const Vocabulary& vocab = task->vocabulary();
  const auto header = readSafetensorsHeader(weightsPath);
  const int64_t rows = header.tensors.at("embed.weight").shape.at(0);  // checkWeights found it
  if (vocab.size() != rows)
    throw std::invalid_argument("cannot export " + runDir + ": the vocabulary of its task " + taskLabel(config.task) +
                                " has " + std::to_string(vocab.size()) + " tokens, but embed.weight has " +
                                std::to_string(rows) + " rows (did the task's data change since training?)");
  nlohmann::ordered_json j;
  j["format"] = "tensorscope.vocabulary";
  j["version"] = 1;
  j["tokens"] = vocab.tokens;
  j["pad"] = Vocabulary::kPad;
  j["bos"] = Vocabulary::kBos;
  j["sep"] = Vocabulary::kSep;
  j["eos"] = Vocabulary::kEos;
  return j.dump(1) + "\n";
}

}  // namespace

std::vector<std::string> exportPyTorch(const std::string& runDir, const std::string& outDir) {
  if (runDir.empty()) throw std::invalid_argument("export needs a run directory");
  if (outDir.empty()) throw std::invalid_argument("export needs an output directory");
  if (!fs::is_directory(runDir)) throw std::invalid_argument(runDir + " is not a run directory (it does not exist)");
  const std::string configPath = runDir + "/config.json",
                    weightsPath = checkpointFilesDir(runDir) + "/model.safetensors";
  for (const auto& path : {configPath, weightsPath})
    if (!fs::is_regular_file(path))
      throw std::invalid_argument(runDir + " is not a trained run: " + path +
                                  " is missing (train first: tensorscope train --config C --out " + runDir + ")");

  const RunConfig config = readRunConfig(configPath);  // invalid_argument listing every problem
  try {
    checkWeights(config, weightsPath);
  } catch (const SafetensorsError& e) {
    throw std::invalid_argument(std::string("cannot export: ") + e.what());
  }
  for (const auto& [name, tensor] : readTensorMap(weightsPath))
    if (tensor.is_floating_point() && !at::isfinite(tensor).all().item<bool>())
      throw std::invalid_argument("cannot export " + runDir + ": its weight '" + name +
                                  "' holds non-finite values (Inf or NaN); export a checkpoint from before the divergence");
  // Image classifiers have no vocabulary (and their task needs no data to export).
  const bool sequenceTask = config.model.kind != "encoder_classifier";
  const std::string vocabText = sequenceTask ? vocabularyJson(runDir, config, weightsPath) : std::string();
  // Read both files before writing anything, so exporting a run onto itself is safe too.
  const std::string configText = files::readWholeFile(configPath);
  const std::string weights = files::readWholeFile(weightsPath);

  std::error_code ec;
  fs::create_directories(outDir, ec);
  if (ec || !fs::is_directory(outDir))
    throw std::runtime_error("cannot create the export directory " + outDir + (ec ? ": " + ec.message() : ""));
  // model.py last: a directory with model.py holds a complete export.
  files::writeFileAtomically(outDir + "/model.safetensors", weights);
  files::writeFileAtomically(outDir + "/config.json", configText);
  std::vector<std::string> written = {"model.py", "model.safetensors", "config.json"};
  if (sequenceTask) {
    files::writeFileAtomically(outDir + "/vocab.json", vocabText);
    written.push_back("vocab.json");
  } else {
    fs::remove(outDir + "/vocab.json", ec);  // a previous export's, which would not belong to this model
  }
  files::writeFileAtomically(outDir + "/model.py", kPyTorchModelPy);
  return written;
}

}  // namespace tensorscope::model_core
