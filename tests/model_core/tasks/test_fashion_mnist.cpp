// Fashion-MNIST from the Debian package's IDX files: counts, labels, patch layout (patches are
// mapped back to the raw bytes), training-set standardisation, and corrupt or missing files.

#include <gtest/gtest.h>

#include "error_of.h"
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "model_core/tasks.h"
#include "tasks/data_sources.h"

using namespace tensorscope::model_core;
namespace fs = std::filesystem;

using tensorscope::test::errorOf;

namespace {

const std::string kDir = "/usr/share/datasets/fashion-mnist";

class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kDir + "/train-images-idx3-ubyte.gz")) return;
    TaskConfig c;
    c.name = "fashion_mnist";
    task_ = makeTask(c).release();
    test_images_ = new tasks::IdxImages(tasks::readIdxImages(kDir + "/t10k-images-idx3-ubyte.gz"));
  }
  static void TearDownTestSuite() {
    delete task_;
    delete test_images_;
  }
  void SetUp() override {
    if (!task_) GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  }
  static Task* task_;
  static tasks::IdxImages* test_images_;
};
Task* FashionMnist::task_ = nullptr;
tasks::IdxImages* FashionMnist::test_images_ = nullptr;

/// A temporary directory removed at the end of the test.
struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("ts_tasks_" + std::to_string(::getpid()) + "_" + std::to_string(counter++))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
  static inline int counter = 0;
};

std::string bigEndian(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

void writeGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string imagesFile(std::uint32_t count, std::uint32_t rows = 28, std::uint32_t cols = 28, std::size_t pixels = SIZE_MAX) {
  std::string s = bigEndian(tasks::kIdxImagesMagic) + bigEndian(count) + bigEndian(rows) + bigEndian(cols);
  return s + std::string(pixels == SIZE_MAX ? std::size_t{count} * rows * cols : pixels, '\x7f');
}

std::string labelsFile(std::uint32_t count, char label = 3) {
  return bigEndian(tasks::kIdxLabelsMagic) + bigEndian(count) + std::string(count, label);
}

/// A complete small data directory: 5 training and 2 test images.
void writeSmallDataset(const TempDir& d) {
  writeGz(d.file("train-images-idx3-ubyte.gz"), imagesFile(5));
  writeGz(d.file("train-labels-idx1-ubyte.gz"), labelsFile(5));
  writeGz(d.file("t10k-images-idx3-ubyte.gz"), imagesFile(2));
  writeGz(d.file("t10k-labels-idx1-ubyte.gz"), labelsFile(2));
}

}  // namespace

TEST_F(FashionMnist, RealFilesHaveTheExpectedCountsAndLabels) {
  const tasks::IdxImages train = tasks::readIdxImages(kDir + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(train.count, 60000);
  EXPECT_EQ(train.rows, 28);
  EXPECT_EQ(train.cols, 28);
  EXPECT_EQ(test_images_->count, 10000);
  const auto labels = tasks::readIdxLabels(kDir + "/train-labels-idx1-ubyte.gz", 10);
  ASSERT_EQ(labels.size(), 60000u);
  std::vector<int> perClass(10, 0);
  for (const auto l : labels) ++perClass[l];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(perClass[c], 6000) << c;  // Fashion-MNIST is balanced

  EXPECT_TRUE(task_->isImage());
  EXPECT_FALSE(task_->isQuestionAnswer());
  EXPECT_EQ(task_->numClasses(), 10);
  const ImageBatch all = task_->imageEvalSet(Split::Validation, 1'000'000);  // clamped to the split
  EXPECT_EQ(all.batch, 10000);
  const auto raw = tasks::readIdxLabels(kDir + "/t10k-labels-idx1-ubyte.gz", 10);
  EXPECT_EQ(all.labels, std::vector<int64_t>(raw.begin(), raw.end()));
}

TEST_F(FashionMnist, PatchesMapBackToTheRawPixels) {
  const ImageBatch b = task_->imageEvalSet(Split::Validation, 3);
  ASSERT_EQ(b.batch, 3);
  EXPECT_EQ(b.tokens, 16);
  EXPECT_EQ(b.patch_dim, 49);
  EXPECT_EQ(b.patch, 7);
  ASSERT_EQ(b.patches.size(), 3u * 16 * 49);
  // Published Fashion-MNIST training statistics: mean 0.2860, std 0.3530.
  EXPECT_NEAR(b.pixel_mean, 0.2860, 5e-4);
  EXPECT_NEAR(b.pixel_std, 0.3530, 5e-4);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t t = 0; t < 16; ++t)
      for (int64_t e = 0; e < 49; ++e) {
        const int64_t row = (t / 4) * 7 + e / 7, col = (t % 4) * 7 + e % 7;
        const float raw = test_images_->pixels[static_cast<std::size_t>(n * 784 + row * 28 + col)] / 255.0f;
        const float value = b.patches[static_cast<std::size_t>((n * 16 + t) * 49 + e)];
        ASSERT_NEAR(value * b.pixel_std + b.pixel_mean, raw, 1e-6) << n << " " << t << " " << e;
      }
}

TEST_F(FashionMnist, TrainingPatchesAreStandardised) {
  std::uint64_t state = 9;
  const ImageBatch b = task_->imageBatch(Split::Train, 2000, state);
  double sum = 0, sq = 0;
  for (const float v : b.patches) sum += v, sq += double{v} * v;
  const double n = static_cast<double>(b.patches.size());
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(std::sqrt(sq / n - (sum / n) * (sum / n)), 1.0, 0.03);
  for (const int64_t l : b.labels) EXPECT_TRUE(l >= 0 && l <= 9);
}

TEST_F(FashionMnist, BatchesAreDeterministicAndSplitsChecked) {
  std::uint64_t s1 = 5, s2 = 5;
  const ImageBatch a = task_->imageBatch(Split::Train, 16, s1);
  const ImageBatch b = task_->imageBatch(Split::Train, 16, s2);
  EXPECT_EQ(a.patches, b.patches);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(task_->imageBatch(Split::Train, 16, s1).labels, a.labels);
  EXPECT_THROW(task_->imageBatch(Split::Extrapolation, 4, s1), std::invalid_argument);
  EXPECT_THROW(task_->tokenBatch(Split::Train, 4, s1), std::logic_error);
  EXPECT_EQ(task_->vocabulary().size(), 0);
}

TEST(FashionMnistFiles, OtherPatchSizes) {
  TempDir d;
  writeSmallDataset(d);
  TaskConfig c;
  c.name = "fashion_mnist";
  c.data_dir = d.path.string();
  c.patch = 14;
  const ImageBatch b = makeTask(c)->imageEvalSet(Split::Train, 10);
  EXPECT_EQ(b.batch, 5);
  EXPECT_EQ(b.tokens, 4);
  EXPECT_EQ(b.patch_dim, 196);
  EXPECT_EQ(b.labels, std::vector<int64_t>(5, 3));
  c.patch = 5;
  EXPECT_NE(errorOf([&] { makeTask(c); }).find("patch: must divide the 28-pixel image side"), std::string::npos);
}

TEST(FashionMnistFiles, CorruptFilesGiveClearErrors) {
  TempDir d;
  const std::string path = d.file("x.gz");
  writeGz(path, labelsFile(4));
  EXPECT_NE(errorOf([&] { tasks::readIdxImages(path); })
                .find("not an IDX image (unsigned byte, 3 dimensions) file: magic number 0x00000801, expected 0x00000803"),
            std::string::npos);
  writeGz(path, imagesFile(100, 28, 28, 50 * 784));
  EXPECT_NE(errorOf([&] { tasks::readIdxImages(path); })
                .find("truncated: expected 78400 bytes of pixel data for 100 images, got 39200"),
            std::string::npos);
  writeGz(path, imagesFile(2, 28, 28, 3 * 784));
  EXPECT_NE(errorOf([&] { tasks::readIdxImages(path); }).find("unexpected data after the 2 images"), std::string::npos);
  writeGz(path, imagesFile(2).substr(0, 10));
  EXPECT_NE(errorOf([&] { tasks::readIdxImages(path); }).find("truncated: expected 4 bytes of IDX header, got 2"),
            std::string::npos);
  writeGz(path, labelsFile(3, 12));
  EXPECT_NE(errorOf([&] { tasks::readIdxLabels(path, 10); }).find("label 12 at index 0 is out of range 0..9"),
            std::string::npos);
  // A real gzip stream cut short.
  std::ifstream real(kDir + "/t10k-labels-idx1-ubyte.gz", std::ios::binary);
  if (real) {
    std::string bytes((std::istreambuf_iterator<char>(real)), std::istreambuf_iterator<char>());
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    const std::string msg = errorOf([&] { tasks::readIdxLabels(path, 10); });
    EXPECT_NE(msg.find(path + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
  // Through makeTask: wrong image size and a label count that disagrees.
  writeSmallDataset(d);
  writeGz(d.file("t10k-images-idx3-ubyte.gz"), imagesFile(2, 32, 32));
  TaskConfig c;
  c.name = "fashion_mnist";
  c.data_dir = d.path.string();
  EXPECT_NE(errorOf([&] { makeTask(c); }).find("images are 32x32 pixels; Fashion-MNIST images are 28x28"), std::string::npos);
  writeGz(d.file("t10k-images-idx3-ubyte.gz"), imagesFile(2));
  writeGz(d.file("t10k-labels-idx1-ubyte.gz"), labelsFile(3));
  EXPECT_NE(errorOf([&] { makeTask(c); }).find("has 3 labels but"), std::string::npos);
}

TEST(FashionMnistFiles, MissingDataNamesTheDebianPackage) {
  TempDir d;
  TaskConfig c;
  c.name = "fashion_mnist";
  c.data_dir = d.file("absent");
  try {
    makeTask(c);
    FAIL() << "no error for a missing data directory";
  } catch (const MissingDataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Fashion-MNIST not found in " + c.data_dir), std::string::npos) << msg;
    EXPECT_NE(msg.find("install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)"),
              std::string::npos)
        << msg;
  }
  writeSmallDataset(d);
  fs::remove(d.file("t10k-labels-idx1-ubyte.gz"));
  c.data_dir = d.path.string();
  EXPECT_NE(errorOf([&] { makeTask(c); }).find("(missing t10k-labels-idx1-ubyte.gz)"), std::string::npos);
}
