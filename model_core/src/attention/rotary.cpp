#include "attention/rotary.h"

#include <stdexcept>
#include <vector>

namespace tensorscope::model_core {

Rotary rotaryFromPositions(const std::string& positions) {
  Rotary r;
  r.on = positions == "rotary" || positions == "rotary_interleaved";
  r.pairs = positions == "rotary_interleaved" ? RotaryPairs::Interleaved : RotaryPairs::Half;
  r.base = kRotaryBase;
  return r;
}

std::pair<torch::Tensor, torch::Tensor> rotaryTables(int64_t N, int64_t block, double base, RotaryTurn turn,
                                                     torch::ScalarType dtype, const torch::Device& device) {
  const auto opts = torch::TensorOptions().dtype(torch::kDouble).device(device);
  // angle[n, j] = n·θ^(−2j/block), in float64, then in the dtype.
  const auto freqs = torch::pow(base, -torch::arange(0, block, 2, opts) / double(block));  // [half]
  const auto angle = torch::outer(torch::arange(N, opts), freqs);
  // sin(−a) = −sin(a) exactly, so the backward turn negates the sine table.
  const auto sin = turn == RotaryTurn::Forward ? torch::sin(angle) : -torch::sin(angle);
  return {torch::cos(angle).to(dtype).contiguous(), sin.to(dtype).contiguous()};
}

torch::Tensor applyRotary(const torch::Tensor& t, int64_t block, RotaryPairs pairs, double base, RotaryTurn turn) {
  if (t.dim() < 3 || block <= 0 || block % 2 != 0 || t.size(-1) % block != 0)
    throw std::invalid_argument("rotary positions: features " + std::to_string(t.size(-1)) +
                                " must be whole blocks of an even size; the block is " + std::to_string(block));
  const int64_t B = t.size(0), N = t.size(1), half = block / 2;
  const int64_t blocks = t.numel() / (B * N * block);
  auto [cosTable, sinTable] = rotaryTables(N, block, base, turn, t.scalar_type(), t.device());
  const auto cos = cosTable.view({1, N, 1, half}), sin = sinTable.view({1, N, 1, half});
  const auto flat = t.reshape({B, N, blocks, block});
  torch::Tensor a, b;  // the two members of every pair, [B, N, blocks, half]
  if (pairs == RotaryPairs::Half) {
    a = flat.narrow(-1, 0, half);
    b = flat.narrow(-1, half, half);
  } else {
    const auto p = flat.view({B, N, blocks, half, 2});
    a = p.select(-1, 0);
    b = p.select(-1, 1);
  }
  const auto ra = a * cos - b * sin, rb = a * sin + b * cos;
  const auto turned = pairs == RotaryPairs::Half ? torch::cat({ra, rb}, -1) : torch::stack({ra, rb}, -1);
  return turned.reshape(t.sizes());
}

torch::Tensor applyRotary(const torch::Tensor& t, int64_t block, const Rotary& r) {
  return r.on ? applyRotary(t, block, r.pairs, r.base) : t;
}

torch::Tensor applyRotaryQk(const torch::Tensor& qkv, int64_t block, const Rotary& r) {
  if (!r.on) return qkv;
  const int64_t B = qkv.size(0), N = qkv.size(1);
  const auto flat = qkv.reshape({B, N, 3, -1});
  const auto q = applyRotary(flat.select(2, 0), block, r), k = applyRotary(flat.select(2, 1), block, r);
  return torch::stack({q, k, flat.select(2, 2)}, 2).view(qkv.sizes());
}

}  // namespace tensorscope::model_core
