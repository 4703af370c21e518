#pragma once
/// Activation memory of a block-term (`multilinear`) layer on either of its formulations: the one
/// figure that the cost model, the layer's activation guard (attention/multilinear.cpp) and the
/// diagram's network estimate (estimateNetworkMemory, runtime/memory_guard.cpp) share.

#include <cstdint>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

enum class MultilinearPath {
  /// The CPU formulation (docs/attention-variants.md §6, attention/multilinear_blocked): T is never
  /// formed; Wo is contracted with k and v one block of output features at a time.
  BlockedCpu,
  /// The formulation that forms T (the CUDA path, the CPU oracle, the diagram's tensor network).
  MaterialisedT,
};

/// Bytes of the activations one forward of the multilinear layer `s` (N = s.sizes.seq_len, which
/// its output projection fixes) keeps at `batch` and `bytesPerValue`:
///  * BlockedCpu: the cost model's activation figure (estimateCost(...).activation_bytes: q, k, v,
///    a = q ⊙ ḡ, one block's work tensors and y; linear in N);
///  * MaterialisedT: q, k, v, a [B, N, R], a ⊙ k [B, N, N, R], T [B, N, N, N] and y [B, N, F].
/// `s` must be a valid multilinear spec (std::invalid_argument otherwise).
double multilinearActivationBytes(const AttentionSpec& s, std::int64_t batch, int bytesPerValue, MultilinearPath path);

}  // namespace tensorscope::spec
