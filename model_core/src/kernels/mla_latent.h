#pragma once
// The row work of MLA's absorbed order (docs/attention-variants.md §8.6; deepseek-ai/DeepSeek-V3
// inference/model.py class MLA, `attn_impl == "absorb"`) around its two per-head products, in one
// pass per token: a fused CPU kernel, float32 and float64.
//
// For token t at position n = t mod N, with the query's heads q[t] = [q_nope_h (D), q_pe_h (r)]_h and
// the KV projection kv[t] = [c (L), k_pe (r)], the kernel writes
//     query[t, h, L : L + r] = ρ_n(q_pe_h)                       (the W^UK products fill 0 … L−1),
//     key[t]   = [c·s_t ⊙ g, ρ_n(k_pe)],   value[t] = c·s_t ⊙ g,   s_t = (mean_j c_j² + ε)^−½,
// with g the latent RMSNorm's weight and ρ_n DeepSeek's interleaved rotary turn: pairs (2j, 2j + 1)
// turned by (cos, sin) of the angle n·θ^(−2j/r), ρ(a, b) = (a·c − b·s, a·s + b·c). `rstd` keeps s_t
// for backward. The ATen formulation makes a dozen passes (the split, RMSNorm's power, mean, rsqrt
// and two products, the turn, the concatenation, and their backward, with a zero-filled tensor for
// the value's slice of the key); this makes one forward and one backward.
// Backward, with u = (∂key[t, :L] + ∂value[t]) ⊙ g and ρᵀ the opposite turn:
//     ∂c = s_t·u − c·s_t³·⟨u, c⟩/L,   ∂k_pe = ρ_nᵀ(∂key[t, L:]),   ∂q_pe_h = ρ_nᵀ(∂query[t, h, L:]),
//     ∂g = Σ_t (∂key[t, :L] + ∂value[t]) ⊙ c·s_t,
// ∂g is summed within blocks of 64 tokens (in the dtype) and over the blocks in block order (in
// float64), so that it does not depend on the thread split.

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

template <typename T>
struct MlaLatentProblem {
  int64_t tokens = 0;  ///< B·N; token t sits at position t mod N
  int64_t N = 1;       ///< positions of a sequence (rows of the angle tables)
  int64_t H = 0, D = 0, L = 0, r = 0;  ///< heads, content size, latent rank, rotary size (even, may be 0)
  const T* q = nullptr;   ///< token t's query heads at q + t·ldq, head h at h·(D + r): [q_nope (D), q_pe (r)]
  int64_t ldq = 0;
  const T* kv = nullptr;  ///< token t's [c (L), k_pe (r)] at kv + t·ldkv
  int64_t ldkv = 0;
  const T* norm = nullptr;  ///< g [L]
  double eps = 1e-6;
  const T* cos = nullptr;  ///< [N, r/2]: cos of the angle of pair j at position n
  const T* sin = nullptr;  ///< [N, r/2]: its sine
};

/// The blocks of 64 tokens ∂g is first summed over: the work items of both passes.
int64_t mlaLatentBlocks(int64_t tokens);

/// query [tokens, H, L + r] (its rotary tails only), key [tokens, L + r], value [tokens, L], rstd [tokens].
template <typename T>
void mlaLatentForward(const MlaLatentProblem<T>& p, T* query, T* key, T* value, T* rstd, const Parallel& parallel);

/// From ∂query [tokens, H, L + r] (its tails), ∂key [tokens, L + r] and ∂value [tokens, L] (nullptr: zero):
/// dq's rotary parts (head h's at dq + t·lddq + h·(D + r) + D; the content parts are left as they are),
/// dkv [tokens, L + r] rows at dkv + t·lddkv, and ∂g [L]. `rstd` is the forward's.
template <typename T>
void mlaLatentBackward(const MlaLatentProblem<T>& p, const T* dquery, const T* dkey, const T* dvalue, const T* rstd,
                       T* dq, int64_t lddq, T* dkv, int64_t lddkv, T* dnorm, const Parallel& parallel);

}  // namespace tensorscope::model_core::kernels
