// safetensors (weights, inputs, checkpoints): a file or SafetensorsError; a file re-serialises to
// bytes that parse to the same tensors and metadata; the path reader agrees with the memory reader.
#include "fuzz_util.h"
#include "model_core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  const std::string_view bytes = fuzz::text(data, size);
  SafetensorsFile file;
  bool parsed = true;
  try {
    file = parseSafetensors(bytes, "fuzz");
  } catch (const SafetensorsError&) {
    parsed = false;
  }
  const std::string path = fuzz::writeScratch("input.safetensors", bytes);
  try {
    const auto header = readSafetensorsHeader(path);
    FUZZ_CHECK(parsed && header.tensors.size() == file.tensors.size());
  } catch (const SafetensorsError&) {
    FUZZ_CHECK(!parsed);
  }
  if (!parsed) return 0;
  const SafetensorsFile back = parseSafetensors(serializeSafetensors(file), "again");
  FUZZ_CHECK(back.metadata == file.metadata);
  FUZZ_CHECK(back.tensors.size() == file.tensors.size());
  for (const auto& [name, t] : file.tensors) {
    const auto it = back.tensors.find(name);
    FUZZ_CHECK(it != back.tensors.end());
    FUZZ_CHECK(it->second.dtype == t.dtype && it->second.shape == t.shape && it->second.bytes == t.bytes);
  }
  return 0;
}
