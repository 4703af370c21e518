#include "attention/fused_attention.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/gemm.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Query rows per block: 32 for a causal layer (finer blocks skip more of the masked triangle);
/// a full layer takes as many rows as keep a block of scores within 64 Ki values (fewer, larger
/// products; the whole head at N = 128).
int64_t rowBlock(int64_t N, bool causal) {
  return causal ? 32 : std::max<int64_t>(32, (int64_t(1) << 16) / std::max<int64_t>(N, 1));
}

using kernels::gemm;

/// Shapes and strides of a contiguous qkv [B, N, 3, H, D] and of the per-head matrices in it.
struct Layout {
  int64_t B, N, H, D;
  int64_t HD() const { return H * D; }
  int64_t rowStride() const { return 3 * H * D; }  // between positions n and n+1 of one head
  int64_t batchStride() const { return N * rowStride(); }
  /// Offset of q (which = 0), k (1) or v (2) of pair p = b·H + h.
  int64_t offset(int64_t p, int which) const { return (p / H) * batchStride() + which * HD() + (p % H) * D; }
  /// Offset of o / dO [B, N, H, D] of pair p (row stride H·D).
  int64_t outOffset(int64_t p) const { return (p / H) * N * HD() + (p % H) * D; }
};

/// Calls f(i0, rows, cols) for each block of query rows [i0, i0+rows): a causal layer's rows see
/// the first `cols` = i0+rows keys, a full layer's every key. `lastFirst` visits the blocks from
/// the bottom up, so the first block visited spans every key.
template <typename F>
void forEachRowBlock(int64_t N, bool causal, F&& f, bool lastFirst = false) {
  const int64_t step = rowBlock(N, causal);
  const int64_t blocks = (N + step - 1) / step;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i0 = (lastFirst ? blocks - 1 - b : b) * step;
    const int64_t rows = std::min(step, N - i0);
    f(i0, rows, causal ? i0 + rows : N);
  }
}

/// Row r of a causal [N, N] matrix gets `value` at columns r+1 … N-1 for rows [i0, i0+rows).
template <typename T>
void fillFuture(T* m, int64_t N, int64_t i0, int64_t rows, T value) {
  for (int64_t r = i0; r < i0 + rows; ++r) std::fill(m + r * N + r + 1, m + (r + 1) * N, value);
}

void parallelPairs(const Layout& L, const std::function<void(int64_t)>& perPair) {
  at::parallel_for(0, L.B * L.H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) perPair(p);
  });
}

template <typename T>
FusedAttentionOutput forwardImpl(const torch::Tensor& qkv, double scaleD, bool causal) {
  const Layout L{qkv.size(0), qkv.size(1), qkv.size(3), qkv.size(4)};
  const int64_t N = L.N, D = L.D, sN = L.rowStride(), HD = L.HD();
  const T scale = static_cast<T>(scaleD);
  const T* base = qkv.data_ptr<T>();
  auto S = torch::empty({L.B, L.H, N, N}, qkv.options());
  T* s = S.data_ptr<T>();
  parallelPairs(L, [&](int64_t p) {
    const T* q = base + L.offset(p, 0);
    const T* k = base + L.offset(p, 1);
    T* sp = s + p * N * N;
    forEachRowBlock(N, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
      gemm<T>(false, true, rows, cols, D, scale, q + i0 * sN, sN, k, sN, T(0), sp + i0 * N, N);
      if (causal) fillFuture(sp, N, i0, rows, -std::numeric_limits<T>::infinity());
    });
  });
  auto P = torch::softmax(S, -1);
  S.reset();
  auto o = torch::empty({L.B, N, L.H, D}, qkv.options());
  const T* pr = P.data_ptr<T>();
  T* out = o.data_ptr<T>();
  parallelPairs(L, [&](int64_t p) {
    const T* v = base + L.offset(p, 2);
    forEachRowBlock(N, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
      gemm<T>(false, false, rows, D, cols, T(1), pr + p * N * N + i0 * N, N, v, sN, T(0),
              out + L.outOffset(p) + i0 * HD, HD);
    });
  });
  return {o, P};
}

template <typename T>
torch::Tensor backwardImpl(const torch::Tensor& qkv, const torch::Tensor& P, const torch::Tensor& o,
                           const torch::Tensor& gradO, double scaleD, bool causal) {
  const Layout L{qkv.size(0), qkv.size(1), qkv.size(3), qkv.size(4)};
  const int64_t N = L.N, D = L.D, sN = L.rowStride(), HD = L.HD();
  const T scale = static_cast<T>(scaleD);
  const T* base = qkv.data_ptr<T>();
  const T* pr = P.data_ptr<T>();
  const T* out = o.data_ptr<T>();
  const T* dO = gradO.data_ptr<T>();
  auto dqkv = torch::empty_like(qkv);  // every entry is written: dq once per row, dk and dv first with beta = 0
  T* dbase = dqkv.data_ptr<T>();
  // One pass per (batch, head), block by block, with one block of scores in a per-thread buffer:
  //   dP = dO·vᵀ,  dv += Pᵀ·dO,  dS = P ⊙ (dP − δ) with δ_n = Σ_m P_nm dP_nm = dO_n·o_n,
  //   dq = scale·dS·k,  dk += scale·dSᵀ·q.
  // Causal blocks stop at the diagonal block; there P is exactly 0 above the diagonal, so dS is too.
  at::parallel_for(0, L.B * L.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> work(size_t(std::min(N, rowBlock(N, causal)) * N));
    for (int64_t p = begin; p < end; ++p) {
      const T* q = base + L.offset(p, 0);
      const T* k = base + L.offset(p, 1);
      const T* v = base + L.offset(p, 2);
      T* dq = dbase + L.offset(p, 0);
      T* dk = dbase + L.offset(p, 1);
      T* dv = dbase + L.offset(p, 2);
      const T* g = dO + L.outOffset(p);
      const T* op = out + L.outOffset(p);
      const T* pp = pr + p * N * N;
      T beta = 0;  // the first block visited covers every key and initialises dk, dv
      forEachRowBlock(N, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
        T* w = work.data();  // [rows, cols]
        gemm<T>(false, true, rows, cols, D, T(1), g + i0 * HD, HD, v, sN, T(0), w, cols);
        gemm<T>(true, false, cols, D, rows, T(1), pp + i0 * N, N, g + i0 * HD, HD, beta, dv, sN);
        for (int64_t r = 0; r < rows; ++r) {
          const T* gr = g + (i0 + r) * HD;
          const T* orow = op + (i0 + r) * HD;
          T delta = 0;
          for (int64_t d = 0; d < D; ++d) delta += gr[d] * orow[d];
          const T* prow = pp + (i0 + r) * N;
          T* wr = w + r * cols;
          for (int64_t j = 0; j < cols; ++j) wr[j] = prow[j] * (wr[j] - delta);
        }
        gemm<T>(false, false, rows, D, cols, scale, w, cols, k, sN, T(0), dq + i0 * sN, sN);
        gemm<T>(true, false, cols, D, rows, scale, w, cols, q + i0 * sN, sN, beta, dk, sN);
        beta = 1;
      }, /*lastFirst=*/true);
    }
  });
  return dqkv;
}

struct FusedAttentionFunction : public torch::autograd::Function<FusedAttentionFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& qkv, double scale, bool causal) {
    const auto x = qkv.contiguous();
    const auto r = x.scalar_type() == torch::kDouble ? forwardImpl<double>(x, scale, causal)
                                                     : forwardImpl<float>(x, scale, causal);
    ctx->save_for_backward({x, r.P, r.o});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    ctx->mark_non_differentiable({r.P});
    ctx->set_materialize_grads(false);  // P has no gradient: do not allocate a [B,H,N,N] of zeros for it
    return {r.o, r.P};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& P = saved[1];
    const auto& o = saved[2];
    if (!grads[0].defined()) return {torch::zeros_like(x), torch::Tensor(), torch::Tensor()};
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    auto d = x.scalar_type() == torch::kDouble ? backwardImpl<double>(x, P, o, g, scale, causal)
                                               : backwardImpl<float>(x, P, o, g, scale, causal);
    return {d, torch::Tensor(), torch::Tensor()};
  }
};

std::atomic<bool> g_fusedEnabled{true};

}  // namespace

void setFusedAttentionEnabled(bool enabled) { g_fusedEnabled.store(enabled); }

bool fusedAttentionSupports(const torch::Tensor& x) {
  return g_fusedEnabled.load() && kernels::blas().available() && x.device().is_cpu() &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
}

FusedAttentionOutput fusedAttention(const torch::Tensor& qkv, double scale, bool causal) {
  if (qkv.dim() != 5 || qkv.size(2) != 3)
    throw std::invalid_argument("fusedAttention: qkv must be [B, N, 3, H, D]");
  if (!qkv.device().is_cpu() || (qkv.scalar_type() != torch::kFloat && qkv.scalar_type() != torch::kDouble))
    throw std::invalid_argument("fusedAttention: CPU float32/float64 tensors only");
  if (!kernels::blas().available())
    throw std::runtime_error("fusedAttention: the fused kernels have no BLAS (" + kernels::blas().source + ")");
  const int64_t limit = std::numeric_limits<int>::max();
  if (qkv.size(1) * qkv.size(1) > limit || qkv.size(1) * qkv.size(3) * qkv.size(4) * 3 > limit)
    throw std::invalid_argument("fusedAttention: sizes exceed the BLAS integer range");
  auto out = FusedAttentionFunction::apply(qkv, scale, causal);
  return {out[0], out[1]};
}

}  // namespace tensorscope::model_core
