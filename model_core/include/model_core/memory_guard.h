#pragma once
/// Refusing work that cannot fit in memory, before allocating it, with the reason and what to
/// change (docs/reliability.md, "memory refusal"). Torch-free.

#include <cstdint>
#include <string>

#include "spec/attention_spec.h"

namespace tensorscope::model_core {

/// Bytes this process may still allocate: the kernel's MemAvailable, lowered by a cgroup v2 memory
/// limit when one applies. TENSORSCOPE_MEMORY_LIMIT (bytes, or with a K, M or G suffix) replaces
/// both, e.g. to rehearse a smaller machine. 0 when unknown (no refusal then). Throws
/// std::invalid_argument for a malformed TENSORSCOPE_MEMORY_LIMIT.
double availableMemoryBytes();

/// Throws std::invalid_argument when `needBytes` exceeds 80% of availableMemoryBytes():
/// "<what> needs an estimated X of memory; this machine has Y available. <advice>"
void requireMemory(double needBytes, const std::string& what, const std::string& advice);

/// Bytes free on CUDA device 0 (cudaMemGetInfo of the CUDA runtime LibTorch loaded).
/// TENSORSCOPE_GPU_MEMORY_LIMIT (bytes, or with a K, M or G suffix) replaces it, e.g. to rehearse a
/// smaller GPU, also on a machine without one. 0 when unknown (no refusal then). Throws
/// std::invalid_argument for a malformed TENSORSCOPE_GPU_MEMORY_LIMIT.
double availableGpuMemoryBytes();

/// As requireMemory, against availableGpuMemoryBytes(): "<what> needs an estimated X of GPU memory;
/// the GPU has Y free. <advice>"
void requireGpuMemory(double needBytes, const std::string& what, const std::string& advice);

/// Estimated peak bytes of one attention layer on an input [batch, seq, F] with values of
/// `bytesPerValue` (4: float32, 8: float64): its parameters, input and output, and the
/// intermediates of the cost model (spec/cost_model.h); `withBackward` adds gradients and the
/// activations kept for the backward pass. Multilinear layers use seq = sizes.seq_len.
double estimateLayerMemory(const spec::AttentionSpec& spec, std::int64_t batch, std::int64_t seq, int bytesPerValue,
                           bool withBackward);

/// Estimated peak bytes of evaluating the layer's tensor network (diagram values, `diagram --check`)
/// on [batch, seq, F]: estimateLayerMemory without backward, plus, for multilinear, the core tensor
/// T [B, N, N, N] and a⊙k [B, N, N, R] that the network forms (the layer's CPU path does not).
double estimateNetworkMemory(const spec::AttentionSpec& spec, std::int64_t batch, std::int64_t seq, int bytesPerValue);

}  // namespace tensorscope::model_core
