#pragma once
// Portable deterministic randomness for the task generators. std::uniform_int_distribution and
// friends differ between standard libraries, so batches would not be reproducible across
// toolchains; splitmix64 with explicit range reduction is identical everywhere.

#include <cstdint>
#include <string_view>

namespace tensorscope::model_core::tasks {

/// splitmix64 over a caller-owned state, which every draw advances.
class Rng {
 public:
  explicit Rng(std::uint64_t& state) : state_(state) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform integer in [lo, hi] (inclusive), unbiased (rejection of the partial last block).
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
    if (range == 0) return static_cast<std::int64_t>(next());  // the full 64-bit range
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + x % range);
  }

  /// Uniform double in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  bool chance(double p) { return unit() < p; }

 private:
  std::uint64_t& state_;
};

/// Mixes values into a seed (for fixed evaluation sets and per-split streams).
inline std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  Rng rng(s);
  return rng.next();
}

/// FNV-1a, stable across platforms (used to hold problems out of the training stream).
inline std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace tensorscope::model_core::tasks
