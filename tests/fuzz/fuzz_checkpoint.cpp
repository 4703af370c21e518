// Checkpoint manifests and the checkpoint.json pointer: the first byte splits the input into a
// manifest and a pointer; the store verifies or falls back with a reason, and never accepts a
// checkpoint whose files do not match the manifest.
#include <filesystem>

#include "fuzz_util.h"
#include "training/checkpoint_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  namespace fs = std::filesystem;
  if (size < 1) return 0;
  const std::string_view rest = fuzz::text(data + 1, size - 1);
  const size_t cut = std::min<size_t>(rest.size(), size_t(data[0]) * rest.size() / 255);
  const std::string run = fuzz::scratchDir() + "/run";
  fs::remove_all(run);
  fs::create_directories(run + "/checkpoints/step-1.a");
  fuzz::writeScratch("run/checkpoints/step-1.a/manifest.json", rest.substr(0, cut));
  fuzz::writeScratch("run/checkpoints/step-1.a/model.safetensors", "weights");
  fuzz::writeScratch("run/checkpoint.json", rest.substr(cut));
  CheckpointInfo info;
  const std::string why = verifyCheckpoint(run + "/checkpoints/step-1.a", &info);
  if (why.empty()) FUZZ_CHECK(info.step >= 0);
  try {
    const auto latest = CheckpointStore(run).latest();
    if (latest) FUZZ_CHECK(verifyCheckpoint(latest->dir, nullptr).empty());
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
