#include "spec/slot_values.h"

#include <stdexcept>

namespace tensorscope::spec {
namespace {

std::vector<double> identity(int H) {
  std::vector<double> v(static_cast<std::size_t>(H) * H, 0.0);
  for (int h = 0; h < H; ++h) v[static_cast<std::size_t>(h) * H + h] = 1.0;
  return v;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

int kernelQ(const Mta& m, bool post) { return post ? m.post_q_kernel : m.q_kernel; }
int kernelK(const Mta& m, bool post) { return post ? m.post_k_kernel : m.k_kernel; }

std::vector<double> identityKernel(const Mta& m, int H, bool post) {
  const int cq = kernelQ(m, post), ck = kernelK(m, post);
  if (cq <= 0 || ck <= 0 || H <= 0) return {};
  std::vector<double> v(static_cast<std::size_t>(H) * cq * ck, 0.0);
  const int self = mtaKeySelf(ck, m.pad);
  for (int h = 0; h < H; ++h) v[(static_cast<std::size_t>(h) * cq + (cq - 1)) * ck + self] = 1.0;
  return v;
}

}  // namespace

std::vector<double> mixingValues(const HeadMixing& m, int H) { return m.values.empty() ? identity(H) : m.values; }

std::vector<unsigned char> mixingMask(const HeadMixing& m, int H) {
  return m.trainable_mask.empty() ? std::vector<unsigned char>(static_cast<std::size_t>(H) * H, 1) : m.trainable_mask;
}

long long mixingTrainableCount(const HeadMixing& m, int H) {
  if (m.trainable_mask.empty()) return static_cast<long long>(H) * H;
  long long n = 0;
  for (unsigned char t : m.trainable_mask) n += t != 0;
  return n;
}

HeadMixing canonicalMixing(std::vector<double> values, std::vector<unsigned char> mask, int H) {
  const std::size_t n = static_cast<std::size_t>(H) * H;
  if (values.size() != n || mask.size() != n)
    throw std::invalid_argument("a head mixing of " + std::to_string(H) + " heads has " + std::to_string(n) +
                                " entries; got " + std::to_string(values.size()) + " values and " +
                                std::to_string(mask.size()) + " mask entries");
  bool allTrained = true;
  for (auto& t : mask) {
    t = t != 0;
    allTrained = allTrained && t;
  }
  if (allTrained && values == identity(H)) return {};
  return {std::move(values), std::move(mask)};
}

const std::vector<std::string>& mixingPresetNames() {
  static const std::vector<std::string> names{"identity", "average", "swap", "identity_frozen", "diagonal_only"};
  return names;
}

HeadMixing makeMixingPreset(std::string_view name, int H) {
  if (H < 1) throw std::invalid_argument("a head mixing needs H >= 1; got " + std::to_string(H));
  const std::size_t n = static_cast<std::size_t>(H) * H;
  std::vector<unsigned char> trained(n, 1), frozen(n, 0);
  if (name == "identity") return {};
  if (name == "average") return canonicalMixing(std::vector<double>(n, 1.0 / H), trained, H);
  if (name == "swap") {
    std::vector<double> v(n, 0.0);
    for (int h = 0; h < H; ++h) v[static_cast<std::size_t>(h) * H + (h + 1) % H] = 1.0;
    return canonicalMixing(std::move(v), trained, H);
  }
  if (name == "identity_frozen") return canonicalMixing(identity(H), frozen, H);
  if (name == "diagonal_only") {
    std::vector<unsigned char> diagonal(n, 0);
    for (int h = 0; h < H; ++h) diagonal[static_cast<std::size_t>(h) * H + h] = 1;
    return canonicalMixing(identity(H), std::move(diagonal), H);
  }
  throw std::invalid_argument("unknown head-mixing preset '" + std::string(name) + "'; one of " +
                              joined(mixingPresetNames()));
}

int mtaKeySelf(int ck, MtaPad pad) {
  switch (pad) {
    case MtaPad::Both: return (ck - 1) / 2;
    case MtaPad::Left: return ck - 1;
    case MtaPad::Right: return 0;
  }
  return 0;
}

std::vector<double> mtaKernelValues(const Mta& m, int H, bool post) {
  const auto& v = post ? m.post_kernel_values : m.kernel_values;
  return v.empty() ? identityKernel(m, H, post) : v;
}

void setMtaKernelValues(Mta& m, int H, bool post, std::vector<double> values) {
  auto& target = post ? m.post_kernel_values : m.kernel_values;
  const auto id = identityKernel(m, H, post);
  if (values.size() != id.size())
    throw std::invalid_argument("the " + std::string(post ? "post" : "pre") + "-softmax kernel of " +
                                std::to_string(H) + " heads has " + std::to_string(id.size()) + " entries; got " +
                                std::to_string(values.size()));
  target = values == id ? std::vector<double>{} : std::move(values);
}

const std::vector<std::string>& mtaKernelPresetNames() {
  static const std::vector<std::string> names{"identity", "average", "key_blur"};
  return names;
}

std::vector<double> makeMtaKernelPreset(std::string_view name, const Mta& m, int H, bool post) {
  const int cq = kernelQ(m, post), ck = kernelK(m, post);
  if (cq <= 0 || ck <= 0)
    throw std::invalid_argument(std::string("the ") + (post ? "post" : "pre") + "-softmax convolution is off");
  if (name == "identity") return identityKernel(m, H, post);
  std::vector<double> v(static_cast<std::size_t>(H) * cq * ck, 0.0);
  if (name == "average") {
    for (auto& x : v) x = 1.0 / (cq * ck);
    return v;
  }
  if (name == "key_blur") {
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < ck; ++j) v[(static_cast<std::size_t>(h) * cq + (cq - 1)) * ck + j] = 1.0 / ck;
    return v;
  }
  throw std::invalid_argument("unknown kernel preset '" + std::string(name) + "'; one of " +
                              joined(mtaKernelPresetNames()));
}

bool drawsSlotWeight(const AttentionSpec& s, std::string_view name) {
  const auto& q = s.slots;
  if (name == "mix_pre") return !q.pre_mixing.isDefault();
  if (name == "mix_post") return !q.post_mixing.isDefault();
  if (name == "mta_kernel") return !q.mta.kernel_values.empty();
  if (name == "mta_kernel_after_sm") return !q.mta.post_kernel_values.empty();
  return false;
}

bool dropStaleSlotValues(AttentionSpec& s) {
  const int H = s.sizes.H;
  const std::size_t hh = H > 0 ? static_cast<std::size_t>(H) * H : 0;
  bool dropped = false;
  auto dropMixing = [&](HeadMixing& m, bool on) {
    if (m.isDefault()) return;
    if (!on || m.values.size() != hh || m.trainable_mask.size() != hh) {
      m = {};
      dropped = true;
    }
  };
  const bool headed = hasSlots(s.variant);
  dropMixing(s.slots.pre_mixing, headed && s.slots.pre_mix);
  dropMixing(s.slots.post_mixing, headed && s.slots.post_mix);
  auto dropKernel = [&](bool post) {
    auto& v = post ? s.slots.mta.post_kernel_values : s.slots.mta.kernel_values;
    if (v.empty()) return;
    const int cq = kernelQ(s.slots.mta, post), ck = kernelK(s.slots.mta, post);
    const std::size_t want = (headed && cq > 0 && ck > 0 && H > 0) ? static_cast<std::size_t>(H) * cq * ck : 0;
    if (v.size() != want) {
      v.clear();
      dropped = true;
    }
  };
  dropKernel(false);
  dropKernel(true);
  return dropped;
}

}  // namespace tensorscope::spec
