// IDX images and labels (Fashion-MNIST), plain or gzip: data or std::runtime_error naming the file.
// The first byte picks the reader (images, or labels with 1-255 classes); the rest is the file.
#include "fuzz_util.h"
#include "tasks/data_sources.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core::tasks;
  if (size < 1) return 0;
  const std::string path = fuzz::writeScratch("input.idx", fuzz::text(data + 1, size - 1));
  try {
    if (data[0] & 1) {
      const IdxImages images = readIdxImages(path);
      FUZZ_CHECK(images.count >= 0 && images.rows > 0 && images.cols > 0);
      FUZZ_CHECK(images.pixels.size() == size_t(images.count * images.rows * images.cols));
    } else {
      const int classes = 1 + data[0] / 2;
      for (auto label : readIdxLabels(path, classes)) FUZZ_CHECK(label < classes);
    }
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  return 0;
}
