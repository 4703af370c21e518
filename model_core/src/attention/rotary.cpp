#include "attention/rotary.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <stdexcept>
#include <vector>

#include "attention/fused_attention.h"
#include "kernels/rotary_pairs.h"

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

namespace {

void checkBlocks(const torch::Tensor& t, int64_t block) {
  if (t.dim() < 3 || block <= 0 || block % 2 != 0 || t.size(-1) % block != 0)
    throw std::invalid_argument("rotary positions: features " + std::to_string(t.size(-1)) +
                                " must be whole blocks of an even size; the block is " + std::to_string(block));
}

RotaryTurn opposite(RotaryTurn t) { return t == RotaryTurn::Forward ? RotaryTurn::Backward : RotaryTurn::Forward; }

// ---- The fused CPU turn ------------------------------------------------------------------------
// The tensor is read as rows [B·N, P, X]: P parts of X features per token (P = 1 for one tensor;
// P = 3 for the stacked q, k, v), of which the first `turned` parts are turned block by block and
// the others copied. One pass reads every input entry once and writes every output entry once,
// where the ATen formulation makes eight passes (four products, two sums, the split and the
// concatenation) and keeps their results for its backward. The backward is the opposite turn.

struct Layout {
  int64_t B = 0, N = 0, P = 1, X = 0, turned = 1;
  int64_t sb = 0, sn = 0, sp = 0;  ///< the input's strides of batch, token and part (features contiguous)
};

template <typename T>
void turnRows(const T* in, T* out, const Layout& L, int64_t block, RotaryPairs pairs, const T* cosT,
              const T* sinT) {
  const int64_t half = block / 2, blocks = L.X / block;
  at::parallel_for(0, L.B * L.N, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / L.N, n = r % L.N;
      const T* c = cosT + n * half;
      const T* s = sinT + n * half;
      for (int64_t p = 0; p < L.P; ++p) {
        const T* x = in + b * L.sb + n * L.sn + p * L.sp;
        T* y = out + (r * L.P + p) * L.X;
        if (p >= L.turned) {
          std::copy(x, x + L.X, y);
          continue;
        }
        for (int64_t k = 0; k < blocks; ++k) {
          if (pairs == RotaryPairs::Half)
            kernels::turnPairs<kernels::PairLayout::Half>(x + k * block, y + k * block, c, s, half);
          else
            kernels::turnPairs<kernels::PairLayout::Interleaved>(x + k * block, y + k * block, c, s, half);
        }
      }
    }
  });
}

/// The turned copy of `t` [B, N, …] whose P parts of X features per token are the first `turned`
/// turned and the rest copied; contiguous, in t's shape.
torch::Tensor turnFused(const torch::Tensor& t, int64_t parts, int64_t turned, int64_t block, RotaryPairs pairs,
                        double base, RotaryTurn turn) {
  auto out = torch::empty(t.sizes(), t.options());
  if (t.numel() == 0) return out;
  Layout L;
  L.B = t.size(0);
  L.N = t.size(1);
  L.P = parts;
  L.turned = turned;
  L.X = t.numel() / (L.B * L.N * parts);
  // [B, N, P, X] as a view where the features of each part are contiguous (a select() or narrow()
  // of a stacked projection reads in place), else one copy.
  auto x = t.reshape({L.B, L.N, L.P, L.X});
  if (x.stride(3) != 1) x = x.contiguous();
  L.sb = x.stride(0);
  L.sn = x.stride(1);
  L.sp = x.stride(2);
  auto [cosT, sinT] = rotaryTables(L.N, block, base, turn, t.scalar_type(), t.device());
  if (t.scalar_type() == torch::kDouble)
    turnRows<double>(x.data_ptr<double>(), out.data_ptr<double>(), L, block, pairs, cosT.data_ptr<double>(),
                     sinT.data_ptr<double>());
  else
    turnRows<float>(x.data_ptr<float>(), out.data_ptr<float>(), L, block, pairs, cosT.data_ptr<float>(),
                    sinT.data_ptr<float>());
  return out;
}


using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The fused turn as an autograd function: the gradient of a rotation is the opposite rotation,
/// applied by this function again (so second derivatives exist too).
struct RotaryFunction : public torch::autograd::Function<RotaryFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& t, int64_t block, int64_t pairs,
                               double base, int64_t turn, int64_t parts, int64_t turned) {
    ctx->saved_data["base"] = base;
    ctx->saved_data["args"] = std::vector<int64_t>{block, pairs, turn, parts, turned};
    return turnFused(t, parts, turned, block, RotaryPairs(pairs), base, RotaryTurn(turn));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor none;
    if (!grads[0].defined()) return {none, none, none, none, none, none, none};
    const auto a = ctx->saved_data.at("args").toIntVector();  // block, pairs, turn, parts, turned
    const auto back = opposite(RotaryTurn(a[2]));
    return {RotaryFunction::apply(grads[0], a[0], a[1], ctx->saved_data.at("base").toDouble(), int64_t(back), a[3], a[4]),
            none, none, none, none, none, none};
  }
};

}  // namespace

torch::Tensor applyRotaryAten(const torch::Tensor& t, int64_t block, RotaryPairs pairs, double base, RotaryTurn turn) {
  checkBlocks(t, block);
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

torch::Tensor applyRotary(const torch::Tensor& t, int64_t block, RotaryPairs pairs, double base, RotaryTurn turn) {
  checkBlocks(t, block);
  if (!fusedRowsSupport(t)) return applyRotaryAten(t, block, pairs, base, turn);
  return RotaryFunction::apply(t, block, int64_t(pairs), base, int64_t(turn), int64_t(1), int64_t(1));
}

torch::Tensor applyRotary(const torch::Tensor& t, int64_t block, const Rotary& r) {
  return r.on ? applyRotary(t, block, r.pairs, r.base) : t;
}

torch::Tensor applyRotaryQkAten(const torch::Tensor& qkv, int64_t block, const Rotary& r) {
  if (!r.on) return qkv;
  const int64_t B = qkv.size(0), N = qkv.size(1);
  const auto flat = qkv.reshape({B, N, 3, -1});
  const auto q = applyRotaryAten(flat.select(2, 0), block, r.pairs, r.base),
             k = applyRotaryAten(flat.select(2, 1), block, r.pairs, r.base);
  return torch::stack({q, k, flat.select(2, 2)}, 2).view(qkv.sizes());
}

torch::Tensor applyRotaryQk(const torch::Tensor& qkv, int64_t block, const Rotary& r) {
  if (!r.on) return qkv;
  if (!fusedRowsSupport(qkv)) return applyRotaryQkAten(qkv, block, r);
  if (qkv.dim() < 3 || qkv.size(2) != 3)
    throw std::invalid_argument("applyRotaryQk: qkv must be [B, N, 3, ...]");
  const int64_t perPart = qkv.numel() == 0 ? block : qkv.numel() / (qkv.size(0) * qkv.size(1) * 3);
  if (block <= 0 || block % 2 != 0 || perPart % block != 0)
    throw std::invalid_argument("rotary positions: features " + std::to_string(perPart) +
                                " must be whole blocks of an even size; the block is " + std::to_string(block));
  return RotaryFunction::apply(qkv, block, int64_t(r.pairs), r.base, int64_t(RotaryTurn::Forward), int64_t(3),
                               int64_t(2));
}

}  // namespace tensorscope::model_core
