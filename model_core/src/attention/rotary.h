#pragma once
// Rotary position embedding (RoPE; Su et al. 2021, RoFormer) as a model option for the token-wise
// softmax designs (docs/attention-variants.md §9): `model.positions` "rotary" or
// "rotary_interleaved". The model then adds no position table to its input; every layer turns its
// queries and keys by their token's position instead, so q_n·k_m depends on n − m only.

#include <torch/types.h>

#include <string>
#include <utility>

namespace tensorscope::model_core {

/// Which features form the pairs that one angle turns, within a block (a head) of size D:
/// `Half` pairs feature j with j + D/2 (GPT-NeoX, Hugging Face Llama/Qwen `rotate_half`);
/// `Interleaved` pairs 2j with 2j + 1 (RoFormer, Meta's Llama `view_as_complex`, DeepSeek's MLA).
enum class RotaryPairs { Half, Interleaved };

/// Which way the angles turn: `Forward` turns pair j of token n by +n·θ_j (RoFormer, Llama, Qwen,
/// DeepSeek); `Backward` by −n·θ_j (tensorgi/TPA's T6, whose apply_rotary_emb writes
/// (x1·cos + x2·sin, −x1·sin + x2·cos)). Scores q_n·k_m depend on n − m either way.
enum class RotaryTurn { Forward, Backward };

/// The rotary option of a layer; `on` false is no rotation.
struct Rotary {
  bool on = false;
  RotaryPairs pairs = RotaryPairs::Half;
  double base = 10000.0;  ///< θ: pair j turns by n·θ^(−2j/D)
};

/// The base every rotary model option uses (Llama, Qwen3 and RoFormer's 10 000).
inline constexpr double kRotaryBase = 10000.0;

/// The Rotary a `model.positions` value asks for: "rotary" (Half) and "rotary_interleaved"
/// (Interleaved) give on = true; anything else gives on = false.
Rotary rotaryFromPositions(const std::string& positions);

/// t [B, N, …, X] with the token on axis 1 and X a multiple of the even `block`: each block of X
/// (a head) turned pair by pair, pair j of token n by the angle ±n·base^(−2j/block) (+ for
/// `Forward`, − for `Backward`). The angles are computed in float64 and cast to t's dtype.
/// Differentiable to any order. On the CPU (float32, float64) one fused pass writes the turned
/// tensor (its backward is the opposite turn, one pass again); elsewhere applyRotaryAten.
torch::Tensor applyRotary(const torch::Tensor& t, int64_t block, RotaryPairs pairs, double base,
                          RotaryTurn turn = RotaryTurn::Forward);

/// The angle tables applyRotary turns with, for positions 0 … N−1 and a block of the even size
/// `block`: cos(n·base^(−2j/block)) [N, block/2] and the signed sine (−sin for `Backward`), computed
/// in float64 and cast to `dtype` on `device`. Fused kernels that turn inside their own loops read
/// these, so that every turn in the project uses one set of angles.
std::pair<torch::Tensor, torch::Tensor> rotaryTables(int64_t N, int64_t block, double base, RotaryTurn turn,
                                                     torch::ScalarType dtype, const torch::Device& device);

/// applyRotary written with ATen ops (views, products, a concatenation): the formulation the fused
/// CPU turn is tested against, and the path on CUDA, for other dtypes, and with the fused kernels
/// switched off (setFusedAttentionEnabled(false)).
torch::Tensor applyRotaryAten(const torch::Tensor& t, int64_t block, RotaryPairs pairs, double base,
                              RotaryTurn turn = RotaryTurn::Forward);

/// applyRotary when `r.on`, else t itself.
torch::Tensor applyRotary(const torch::Tensor& t, int64_t block, const Rotary& r);

/// qkv [B, N, 3, …] (q, k, v on axis 2, any head layout whose last axes flatten to X features):
/// q and k turned as applyRotary(·, block, r), v unchanged, in qkv's shape. On the CPU one fused
/// pass over the stacked projection (v copied in the same pass); elsewhere applyRotaryQkAten.
torch::Tensor applyRotaryQk(const torch::Tensor& qkv, int64_t block, const Rotary& r);
/// applyRotaryQk with ATen ops (its test oracle).
torch::Tensor applyRotaryQkAten(const torch::Tensor& qkv, int64_t block, const Rotary& r);

}  // namespace tensorscope::model_core
