// Forking a run: snapshots of a (possibly still training) run's checkpoint and the learned THSA core
// of a layer as an editable spec.

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "io/tensor_convert.h"
#include "model_core/learned_lambda.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "model_core/run_files.h"
#include "spec/json_reader.h"
#include "training/checkpoint_store.h"

namespace tensorscope::model_core {
namespace fs = std::filesystem;

namespace {

std::vector<double> valuesOf(const at::Tensor& t) {
  const auto c = t.to(at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

std::int64_t snapshotCheckpoint(const std::string& runDir, const std::string& outDir) {
  // A checkpoint directory never changes once committed, but the trainer removes the one before
  // the previous: a copy racing two commits fails to read and is taken again; the steps are
  // compared as well (runs written before checkpoint directories replace the files one by one).
  constexpr int kAttempts = 5;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::string checkpointDir, state, weights;
    try {
      checkpointDir = checkpointFilesDir(runDir);
      if (!fs::exists(checkpointDir + "/model.safetensors")) {
        if (checkpointDir != runDir) throw std::runtime_error(checkpointDir + " was removed while it was read");
        throw std::invalid_argument(runDir + " holds no checkpoint (model.safetensors) yet");
      }
      state = files::readWholeFile(checkpointDir + "/trainer_state.json");
      weights = files::readWholeFile(checkpointDir + "/model.safetensors");
    } catch (const std::invalid_argument&) {
      if (checkpointDir == runDir || attempt + 1 == kAttempts) throw;
      continue;
    } catch (const std::runtime_error&) {
      if (attempt + 1 == kAttempts) throw;
      continue;
    }
    fs::create_directories(outDir);
    files::writeFileAtomically(outDir + "/model.safetensors", weights);
    files::writeFileAtomically(outDir + "/config.json", files::readWholeFile(runDir + "/config.json"));
    std::map<std::string, std::string> meta;
    readTensors(outDir + "/model.safetensors", &meta);  // rejects a damaged file with the reason
    const std::int64_t step = parseTrainerState(state, checkpointDir + "/trainer_state.json").step;
    const auto m = meta.find("step");
    if (m == meta.end() || m->second == std::to_string(step)) {
      files::writeFileAtomically(outDir + "/trainer_state.json", state);
      return step;
    }
  }
  throw std::runtime_error("could not take a consistent snapshot of " + runDir +
                           ": its checkpoint kept changing while it was copied");
}

std::vector<std::optional<double>> learnedDiffLambdas(const std::string& runDir) {
  const RunConfig config = readRunConfig(runDir + "/config.json");
  const auto tensors = readTensorMap(checkpointFilesDir(runDir) + "/model.safetensors");
  std::vector<std::optional<double>> out;
  for (int layer = 0; layer < config.model.layers; ++layer) {
    const spec::AttentionSpec s = layerSpec(config.model, layer);
    if (!s.slots.differential) {
      out.emplace_back();
      continue;
    }
    const std::string prefix = "blocks." + std::to_string(layer) + ".attn.";
    auto get = [&](const char* name) {
      const auto it = tensors.find(prefix + name);
      if (it == tensors.end() || it->second.numel() != s.sizes.D)
        throw std::invalid_argument(runDir + "/model.safetensors lacks " + prefix + name + " of " +
                                    std::to_string(s.sizes.D) + " values that its config implies");
      return valuesOf(it->second);
    };
    const auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
      double sum = 0;
      for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
      return sum;
    };
    out.emplace_back(std::exp(dot(get("lambda_q1"), get("lambda_k1"))) - std::exp(dot(get("lambda_q2"), get("lambda_k2"))) +
                     spec::diffLambdaInit(layer));
  }
  return out;
}

std::vector<LearnedWeight> learnedAttentionWeights(const std::string& runDir, int layer,
                                                   const std::vector<std::string>& names) {
  const RunConfig config = readRunConfig(runDir + "/config.json");
  if (layer < 0 || layer >= config.model.layers)
    throw std::invalid_argument("layer " + std::to_string(layer) + " does not exist; the run has " +
                                std::to_string(config.model.layers) + " layers");
  const auto tensors = readTensorMap(checkpointFilesDir(runDir) + "/model.safetensors");
  const std::string prefix = "blocks." + std::to_string(layer) + ".attn.";
  std::vector<LearnedWeight> out;
  for (const auto& name : names) {
    const auto it = tensors.find(prefix + name);
    if (it == tensors.end()) continue;
    LearnedWeight w;
    w.name = name;
    w.shape.assign(it->second.sizes().begin(), it->second.sizes().end());
    w.values = valuesOf(it->second);
    out.push_back(std::move(w));
  }
  return out;
}

spec::CoreSpec learnedCoreSpec(const std::string& runDir, int layer) {
  const RunConfig config = readRunConfig(runDir + "/config.json");
  if (layer < 0 || layer >= config.model.layers)
    throw std::invalid_argument("layer " + std::to_string(layer) + " does not exist; the run has " +
                                std::to_string(config.model.layers) + " layers");
  const spec::AttentionSpec s = layerSpec(config.model, layer);
  if (!s.core) throw std::invalid_argument("layer " + std::to_string(layer) + " of " + runDir + " has no THSA core");
  const auto tensors = readTensorMap(checkpointFilesDir(runDir) + "/model.safetensors");
  const std::string prefix = "blocks." + std::to_string(layer) + ".attn.";
  auto get = [&](const std::string& name, std::int64_t numel) {
    const auto it = tensors.find(prefix + name);
    if (it == tensors.end())
      throw std::invalid_argument(runDir + "/model.safetensors lacks " + prefix + name + " that its config implies");
    if (it->second.numel() != numel)
      throw std::invalid_argument(runDir + "/model.safetensors: " + prefix + name + " has " +
                                  std::to_string(it->second.numel()) + " values, the config implies " +
                                  std::to_string(numel));
    return valuesOf(it->second);
  };
  spec::CoreSpec core = *s.core;
  const int H = s.sizes.H, D = s.sizes.D, R = s.sizes.R;
  using spec::FactorKind;
  if (core.structure == spec::CoreStructure::Dense) {
    core.dense_values = get("core", std::int64_t(R) * R);
  } else if (core.structure == spec::CoreStructure::LowRank) {
    if (core.factors_trainable) {
      core.u_values = get("core.U", std::int64_t(R) * core.rank);
      core.v_values = get("core.V", std::int64_t(R) * core.rank);
    }
  } else {
    if (core.a.kind == FactorKind::Trainable) core.a.values = get("core.A", std::int64_t(H) * H);
    if (core.b.kind == FactorKind::Trainable) core.b.values = get("core.B", std::int64_t(D) * D);
    if (core.b.kind == FactorKind::Rank1 && core.b.trainable_rank1) {
      auto c2 = get("core.c2", D), c3 = get("core.c3", D);
      core.b.values = c2;
      core.b.values.insert(core.b.values.end(), c3.begin(), c3.end());
    }
  }
  if (!(core == *s.core)) core.preset = "custom";  // learned values are no longer the preset's
  return core;
}

}  // namespace tensorscope::model_core
