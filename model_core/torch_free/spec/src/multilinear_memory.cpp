#include "spec/multilinear_memory.h"

#include <stdexcept>

#include "spec/cost_model.h"

namespace tensorscope::spec {

double multilinearActivationBytes(const AttentionSpec& s, std::int64_t batch, int bytesPerValue, MultilinearPath path) {
  if (s.variant != Variant::Multilinear)
    throw std::invalid_argument("multilinearActivationBytes: the spec is not a multilinear layer");
  if (path == MultilinearPath::BlockedCpu) return estimateCost(s, batch, s.sizes.seq_len, bytesPerValue).activation_bytes;
  const double B = double(batch), N = double(s.sizes.seq_len), R = double(s.sizes.R), F = double(s.sizes.F);
  return (4.0 * B * N * R + B * N * N * R + B * N * N * N + B * N * F) * bytesPerValue;
}

}  // namespace tensorscope::spec
