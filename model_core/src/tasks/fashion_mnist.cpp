// Fashion-MNIST classification from the Debian package dataset-fashion-mnist: 28x28 grey images
// cut into patch tokens, pixels scaled to [0, 1] and standardised with the training-set mean and
// standard deviation. Train = the 60000 training images, Validation = the 10000 test images.

#include <array>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "tasks/data_sources.h"
#include "tasks/task_factory.h"
#include "tasks/task_random.h"

namespace tensorscope::model_core::tasks {
namespace {

constexpr int kSide = 28;
constexpr int kClasses = 10;
const std::array<const char*, kClasses> kClassNames = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
constexpr std::array<const char*, 4> kFiles = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

struct Part {
  IdxImages images;
  std::vector<std::uint8_t> labels;
};

class FashionMnistTask final : public Task {
 public:
  explicit FashionMnistTask(const TaskConfig& config) : patch_(config.patch) {
    std::array<std::string, 4> paths;
    std::string missing;
    for (std::size_t i = 0; i < kFiles.size(); ++i) {
      paths[i] = locate(config.data_dir, kFiles[i]);
      if (paths[i].empty()) missing += (missing.empty() ? "" : ", ") + std::string(kFiles[i]) + ".gz";
    }
    if (!missing.empty())
      throw MissingDataError("Fashion-MNIST not found in " + config.data_dir + " (missing " + missing +
                                 "): install the Debian package dataset-fashion-mnist "
                                 "(apt-get install dataset-fashion-mnist)");
    train_ = load(paths[0], paths[1]);
    test_ = load(paths[2], paths[3]);
    // Training-set statistics of byte/255, exact via a histogram of the 256 byte values.
    std::array<int64_t, 256> histogram{};
    for (const std::uint8_t p : train_.images.pixels) ++histogram[p];
    double sum = 0, sum_sq = 0;
    for (int b = 0; b < 256; ++b) {
      const double x = b / 255.0;
      sum += histogram[static_cast<std::size_t>(b)] * x;
      sum_sq += histogram[static_cast<std::size_t>(b)] * x * x;
    }
    const auto n = static_cast<double>(train_.images.pixels.size());
    mean_ = sum / n;
    std_ = std::sqrt(std::max(sum_sq / n - mean_ * mean_, 1e-12));
    for (int b = 0; b < 256; ++b)
      lut_[static_cast<std::size_t>(b)] = static_cast<float>((b / 255.0 - mean_) / std_);
  }

  std::string name() const override { return "fashion_mnist"; }
  bool isImage() const override { return true; }
  const Vocabulary& vocabulary() const override { return empty_; }
  int numClasses() const override { return kClasses; }

  ImageBatch imageBatch(Split split, int64_t batch, std::uint64_t& rng_state) const override {
    if (batch < 1) throw std::invalid_argument("fashion_mnist: batch must be >= 1; got " + std::to_string(batch));
    const Part& part = select(split);
    Rng rng(rng_state);
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < batch; ++i) indices.push_back(rng.uniform(0, part.images.count - 1));
    return gather(part, indices);
  }

  ImageBatch imageEvalSet(Split split, int64_t count) const override {
    if (count < 1) throw std::invalid_argument("fashion_mnist: evaluation set size must be >= 1; got " + std::to_string(count));
    const Part& part = select(split);
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < std::min(count, part.images.count); ++i) indices.push_back(i);
    return gather(part, indices);
  }

  std::string describeSamples(int count, std::uint64_t seed) const override {
    std::ostringstream out;
    const int grid = kSide / patch_;
    out << "fashion_mnist: " << train_.images.count << " training and " << test_.images.count
        << " validation (test) images of 28x28, " << grid * grid << " patch tokens of " << patch_ << "x" << patch_
        << " = " << patch_ * patch_ << " values; pixel mean " << mean_ << ", std " << std_ << " (training set)\n";
    std::uint64_t state = mixSeed(seed, 0x464d4e53ULL);
    Rng rng(state);
    static const char* kRamp = " .:-=+*#%@";
    for (int i = 0; i < count; ++i) {
      const int64_t index = rng.uniform(0, train_.images.count - 1);
      const int label = train_.labels[static_cast<std::size_t>(index)];
      out << "\n" << i + 1 << ". training image " << index << ": label " << label << " (" << kClassNames[label] << ")\n";
      const std::uint8_t* px = &train_.images.pixels[static_cast<std::size_t>(index * kSide * kSide)];
      for (int r = 0; r < kSide; r += 2) {  // two pixel rows per text line keeps the aspect ratio
        out << "   ";
        for (int c = 0; c < kSide; ++c) {
          const int v = (px[r * kSide + c] + px[(r + 1) * kSide + c]) / 2;
          out << kRamp[v * 10 / 256];
        }
        out << "\n";
      }
    }
    return out.str();
  }

 private:
  static std::string locate(const std::string& dir, const std::string& base) {
    std::error_code ec;
    for (const std::string& candidate : {dir + "/" + base + ".gz", dir + "/" + base})
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    return "";
  }

  static Part load(const std::string& images_path, const std::string& labels_path) {
    Part p{readIdxImages(images_path), readIdxLabels(labels_path, kClasses)};
    if (p.images.rows != kSide || p.images.cols != kSide)
      throw std::runtime_error(images_path + ": images are " + std::to_string(p.images.rows) + "x" +
                               std::to_string(p.images.cols) + " pixels; Fashion-MNIST images are 28x28");
    if (static_cast<int64_t>(p.labels.size()) != p.images.count)
      throw std::runtime_error(labels_path + " has " + std::to_string(p.labels.size()) + " labels but " + images_path +
                               " has " + std::to_string(p.images.count) + " images");
    return p;
  }

  const Part& select(Split split) const {
    if (split == Split::Train) return train_;
    if (split == Split::Validation) return test_;
    throw std::invalid_argument("fashion_mnist has only train and validation splits; got " + std::string(splitName(split)));
  }

  ImageBatch gather(const Part& part, const std::vector<int64_t>& indices) const {
    ImageBatch b;
    const int grid = kSide / patch_;
    b.batch = static_cast<int64_t>(indices.size());
    b.tokens = grid * grid;
    b.patch_dim = patch_ * patch_;
    b.patch = patch_;
    b.image_height = b.image_width = kSide;
    b.pixel_mean = static_cast<float>(mean_);
    b.pixel_std = static_cast<float>(std_);
    b.patches.reserve(static_cast<std::size_t>(b.batch * b.tokens * b.patch_dim));
    for (const int64_t index : indices) {
      const std::uint8_t* px = &part.images.pixels[static_cast<std::size_t>(index * kSide * kSide)];
      for (int pr = 0; pr < grid; ++pr)
        for (int pc = 0; pc < grid; ++pc)
          for (int r = 0; r < patch_; ++r)
            for (int c = 0; c < patch_; ++c) b.patches.push_back(lut_[px[(pr * patch_ + r) * kSide + pc * patch_ + c]]);
      b.labels.push_back(part.labels[static_cast<std::size_t>(index)]);
    }
    return b;
  }

  int patch_;
  Part train_, test_;
  double mean_ = 0, std_ = 1;
  std::array<float, 256> lut_{};
  Vocabulary empty_;
};

}  // namespace

std::unique_ptr<Task> makeFashionMnistTask(const TaskConfig& config) {
  return std::make_unique<FashionMnistTask>(config);
}

}  // namespace tensorscope::model_core::tasks
