// Interventions on a fork's starting weights: a row of a talking-heads mixing set to zero
// (model_core/intervention.h).
#include "model_core/intervention.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "model_core/safetensors.h"
#include "training/checkpoint_store.h"

namespace tensorscope::model_core {
namespace fs = std::filesystem;

namespace {

std::string tensorName(int layer, const std::string& parameter) {
  return "blocks." + std::to_string(layer) + ".attn." + parameter;
}

/// Whether row `row` of an H x H tensor is all zeros (±0 for floating point).
bool rowIsZero(const TensorData& t, std::int64_t row) {
  const std::int64_t H = t.shape[1];
  const std::size_t size = dtypeSize(t.dtype);
  const std::byte* first = t.bytes.data() + static_cast<std::size_t>(row * H) * size;
  if (t.dtype == DType::F32) {
    for (std::int64_t i = 0; i < H; ++i) {
      float v = 0;
      std::memcpy(&v, first + static_cast<std::size_t>(i) * size, sizeof v);
      if (v != 0.0f) return false;
    }
    return true;
  }
  if (t.dtype == DType::F64) {
    for (std::int64_t i = 0; i < H; ++i) {
      double v = 0;
      std::memcpy(&v, first + static_cast<std::size_t>(i) * size, sizeof v);
      if (v != 0.0) return false;
    }
    return true;
  }
  for (std::size_t b = 0; b < static_cast<std::size_t>(H) * size; ++b)
    if (first[b] != std::byte{0}) return false;
  return true;
}

bool squareMixing(const TensorData& t) { return t.shape.size() == 2 && t.shape[0] == t.shape[1] && t.shape[0] > 0; }

}  // namespace

void zeroMixingRow(const std::string& snapshotDir, int layer, const std::string& parameter, int row) {
  if (parameter != "mix_pre" && parameter != "mix_post")
    throw std::invalid_argument("zeroMixingRow: the parameter must be mix_pre or mix_post; got \"" + parameter + "\"");
  if (layer < 0) throw std::invalid_argument("zeroMixingRow: the layer must be ≥ 0; got " + std::to_string(layer));
  for (const char* own : {"checkpoint.json", "metrics.jsonl"})
    if (fs::exists(fs::path(snapshotDir) / own))
      throw std::invalid_argument(snapshotDir + " is a run's own folder (it has " + own +
                                  "): an intervention edits a fork's starting snapshot, never a run's history");
  const std::string path = snapshotDir + "/model.safetensors";
  if (!fs::exists(path)) throw std::invalid_argument(snapshotDir + " holds no weights (model.safetensors)");
  SafetensorsFile file = readSafetensors(path);
  const std::string name = tensorName(layer, parameter);
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end())
    throw std::invalid_argument(path + " has no " + name + ": layer " + std::to_string(layer) + " has no " + parameter +
                                " (talking heads' " + (parameter == "mix_pre" ? "pre" : "post") + "-softmax mixing)");
  TensorData& t = it->second;
  if (!squareMixing(t) || !isFloatingPoint(t.dtype))
    throw std::invalid_argument(path + ": " + name + " is not an H x H floating-point matrix");
  const std::int64_t H = t.shape[0];
  if (row < 0 || row >= H)
    throw std::invalid_argument("row " + std::to_string(row) + " of " + name + " does not exist; rows 0.." +
                                std::to_string(H - 1) + " (one per head)");
  const std::size_t size = dtypeSize(t.dtype);
  std::memset(t.bytes.data() + static_cast<std::size_t>(row * H) * size, 0, static_cast<std::size_t>(H) * size);
  writeSafetensors(path, file);
}

std::vector<std::string> zeroMixingRows(const std::string& dir, int layer) {
  std::vector<std::string> out;
  std::string weights;
  try {
    weights = checkpointFilesDir(dir) + "/model.safetensors";
  } catch (const std::invalid_argument&) {
    return out;
  }
  if (!fs::exists(weights)) return out;
  const SafetensorsFile file = readSafetensors(weights);
  for (const char* parameter : {"mix_pre", "mix_post"}) {
    const auto it = file.tensors.find(tensorName(layer, parameter));
    if (it == file.tensors.end() || !squareMixing(it->second) || !isFloatingPoint(it->second.dtype)) continue;
    for (std::int64_t r = 0; r < it->second.shape[0]; ++r)
      if (rowIsZero(it->second, r)) out.push_back(std::string(parameter) + "[" + std::to_string(r) + "]");
  }
  return out;
}

}  // namespace tensorscope::model_core
