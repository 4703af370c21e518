#include "attention/mta_convolution.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/kernels.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// One call's sizes. A map's source entry (n′, m′) sits at row n′ + c_q − 1 and column m′ + left
/// of a zero-padded copy of (N + c_q − 1) × (M + c_k − 1); output (n, m) then reads rows n … n+c_q−1
/// and columns m … m+c_k−1 of it.
struct Geometry {
  int64_t B, H, N, M, cq, ck, left;
  bool causal, zeroFuture;
  int64_t padRows() const { return N + cq - 1; }
  int64_t padCols() const { return M + ck - 1; }
  /// Source entries of row n that are read (the others are masked).
  int64_t seen(int64_t n) const { return causal ? std::min(M, n + 1) : M; }
  /// Output entries of row n that can be nonzero: with the future masked, a source (n′ ≤ n, m′ ≤ n′)
  /// reaches columns m ≤ n + left only; with zeroFuture, m ≤ n.
  int64_t reach(int64_t n) const {
    if (!causal) return M;
    return std::min(M, zeroFuture ? n + 1 : n + 1 + left);
  }
};

/// The masked map s [N, M] copied into the zero-padded buffer pad.
template <typename T>
void fillPadded(const Geometry& g, const T* s, T* pad) {
  std::fill(pad, pad + g.padRows() * g.padCols(), T(0));
  for (int64_t n = 0; n < g.N; ++n)
    std::copy(s + n * g.M, s + n * g.M + g.seen(n), pad + (n + g.cq - 1) * g.padCols() + g.left);
}

template <typename T>
void forwardMaps(const Geometry& g, const T* in, const T* kernel, T* out) {
  const auto& ops = kernels::rowOps<T>();
  const int64_t NM = g.N * g.M;
  at::parallel_for(0, g.B * g.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> pad(size_t(g.padRows() * g.padCols()));
    for (int64_t p = begin; p < end; ++p) {
      const T* K = kernel + (p % g.H) * g.cq * g.ck;
      fillPadded(g, in + p * NM, pad.data());
      T* o = out + p * NM;
      for (int64_t n = 0; n < g.N; ++n) {
        const int64_t len = g.reach(n);
        std::fill(o + n * g.M, o + (n + 1) * g.M, T(0));  // in cache, just before the row is summed
        for (int64_t i = 0; i < g.cq; ++i)
          ops.correlateRow(K + i * g.ck, g.ck, pad.data() + (n + i) * g.padCols(), len, o + n * g.M);
      }
    }
  });
}

/// dmaps (every entry written) and dkernelPer [B, H, c_q, c_k] (zero-initialised; summed over B by
/// the caller, so the result does not depend on the threads). With Z the output gradient shifted by
/// (c_q − 1, c_k − 1) into a zero frame,
///   ds[n′, m′] = Σ K[c_q−1−i, c_k−1−j]·Z[n′ + c_q − 1 + i, m′ + left + j],
/// the correlation with the flipped kernel.
template <typename T>
void backwardMaps(const Geometry& g, const T* in, const T* kernel, const T* dout, T* dmaps, T* dkernelPer) {
  const auto& ops = kernels::rowOps<T>();
  const int64_t NM = g.N * g.M, taps = g.cq * g.ck;
  const int64_t zRows = g.N + 2 * (g.cq - 1), zCols = g.M + 2 * (g.ck - 1);
  at::parallel_for(0, g.B * g.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> pad(size_t(g.padRows() * g.padCols())), z(size_t(zRows * zCols));
    std::vector<T> flipped(static_cast<size_t>(taps));
    for (int64_t p = begin; p < end; ++p) {
      const T* K = kernel + (p % g.H) * taps;
      std::reverse_copy(K, K + taps, flipped.begin());
      fillPadded(g, in + p * NM, pad.data());
      const T* gout = dout + p * NM;
      T* dk = dkernelPer + p * taps;
      std::fill(z.begin(), z.end(), T(0));
      for (int64_t n = 0; n < g.N; ++n) {
        const int64_t len = g.reach(n);  // output entries beyond it are 0 (or masked) whatever the input
        std::copy(gout + n * g.M, gout + n * g.M + len, z.data() + (n + g.cq - 1) * zCols + g.ck - 1);
        for (int64_t i = 0; i < g.cq; ++i)
          ops.correlateDots(gout + n * g.M, pad.data() + (n + i) * g.padCols(), len, g.ck, dk + i * g.ck);
      }
      T* ds = dmaps + p * NM;
      for (int64_t n = 0; n < g.N; ++n) {
        std::fill(ds + n * g.M, ds + (n + 1) * g.M, T(0));
        for (int64_t i = 0; i < g.cq; ++i)
          ops.correlateRow(flipped.data() + i * g.ck, g.ck, z.data() + (n + g.cq - 1 + i) * zCols + g.left, g.seen(n),
                           ds + n * g.M);
      }
    }
  });
}

struct MtaConvolutionFunction : public torch::autograd::Function<MtaConvolutionFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& maps, const torch::Tensor& kernel,
                               int64_t left, bool causal, bool zeroFuture) {
    const auto s = maps.contiguous();
    const auto K = kernel.contiguous();
    const Geometry g{s.size(0), s.size(1), s.size(2), s.size(3), K.size(1), K.size(2), left, causal, zeroFuture};
    auto out = torch::empty_like(s);  // every entry is written
    if (s.scalar_type() == torch::kDouble)
      forwardMaps<double>(g, s.data_ptr<double>(), K.data_ptr<double>(), out.data_ptr<double>());
    else
      forwardMaps<float>(g, s.data_ptr<float>(), K.data_ptr<float>(), out.data_ptr<float>());
    // The inputs as given (a layout copy made here would have no graph back to them for a backward
    // that builds one); backward takes contiguous views of them again, free when they were already.
    ctx->save_for_backward({maps, kernel});
    ctx->saved_data["left"] = left;
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["zeroFuture"] = zeroFuture;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &s0 = saved[0], &K0 = saved[1];
    const int64_t left = ctx->saved_data["left"].toInt();
    const bool causal = ctx->saved_data["causal"].toBool(), zeroFuture = ctx->saved_data["zeroFuture"].toBool();
    const torch::Tensor none;
    if (!grads[0].defined()) return {torch::zeros_like(s0), torch::zeros_like(K0), none, none, none};
    if (at::GradMode::is_enabled()) {
      // A backward that builds a graph: the ATen formulation's gradients, taken on the saved inputs
      // themselves so that the graph reaches the layer's inputs.
      const auto o = mtaConvolutionAten(s0, K0, left, causal, zeroFuture);
      variable_list wanted;
      for (const auto& t : {s0, K0})
        if (t.requires_grad()) wanted.push_back(t);
      const auto d = torch::autograd::grad({o}, wanted, {grads[0]}, /*retain_graph=*/true, /*create_graph=*/true,
                                           /*allow_unused=*/true);
      size_t next = 0;
      const auto dS = s0.requires_grad() ? d[next++] : torch::Tensor();
      const auto dK = K0.requires_grad() ? d[next++] : torch::Tensor();
      return {dS, dK, none, none, none};
    }
    const auto s = s0.contiguous(), K = K0.contiguous();
    const auto gout = grads[0].contiguous();
    const Geometry g{s.size(0), s.size(1), s.size(2), s.size(3), K.size(1), K.size(2), left, causal, zeroFuture};
    auto dmaps = torch::empty_like(s);  // every entry is written
    auto dkPer = torch::zeros({g.B, g.H, g.cq, g.ck}, K.options());
    if (s.scalar_type() == torch::kDouble)
      backwardMaps<double>(g, s.data_ptr<double>(), K.data_ptr<double>(), gout.data_ptr<double>(),
                           dmaps.data_ptr<double>(), dkPer.data_ptr<double>());
    else
      backwardMaps<float>(g, s.data_ptr<float>(), K.data_ptr<float>(), gout.data_ptr<float>(), dmaps.data_ptr<float>(),
                          dkPer.data_ptr<float>());
    return {dmaps, dkPer.sum(0), none, none, none};
  }
};

void checkArguments(const torch::Tensor& maps, const torch::Tensor& kernel, int64_t left) {
  if (maps.dim() != 4 || kernel.dim() != 3 || kernel.size(0) != maps.size(1))
    throw std::invalid_argument("mtaConvolution: maps [B, H, N, M] and kernel [H, c_q, c_k] disagree");
  if (kernel.size(1) < 1 || kernel.size(2) < 1 || left < 0 || left >= kernel.size(2))
    throw std::invalid_argument("mtaConvolution: the kernel needs c_q, c_k >= 1 and 0 <= left < c_k (left " +
                                std::to_string(left) + ")");
}

}  // namespace

torch::Tensor mtaConvolutionAten(const torch::Tensor& maps, const torch::Tensor& kernel, int64_t left, bool causal,
                                 bool zeroFuture) {
  // mta_transformer.py _mta_convolution, L464–535: masked scores zeroed (L472), padded by
  // (c_q − 1) earlier queries and the keys as pad_key (L497–512), F.conv2d with groups = n_heads
  // (L513–518; cross-correlation, no kernel flip); after the softmax the output masked again
  // (L364–372).
  checkArguments(maps, kernel, left);
  const int64_t H = maps.size(1), N = maps.size(2), M = maps.size(3), cq = kernel.size(1), ck = kernel.size(2);
  const torch::Tensor future = causal ? futureMask(N, M, maps.device()) : torch::Tensor();
  auto s = causal ? maps.masked_fill(future, 0.0) : maps;
  s = torch::constant_pad_nd(s, {left, ck - 1 - left, cq - 1, 0}, 0.0);
  const std::vector<int64_t> one = {1, 1}, none = {0, 0};
  auto out = torch::conv2d(s, kernel.unsqueeze(1), c10::optional<torch::Tensor>(), one, none, one, /*groups=*/H);
  return causal && zeroFuture ? out.masked_fill(future, 0.0) : out;
}

torch::Tensor fusedMtaConvolution(const torch::Tensor& maps, const torch::Tensor& kernel, int64_t left, bool causal,
                                  bool zeroFuture) {
  checkArguments(maps, kernel, left);
  if (!maps.device().is_cpu() || !kernel.device().is_cpu() || kernel.scalar_type() != maps.scalar_type() ||
      (maps.scalar_type() != torch::kFloat && maps.scalar_type() != torch::kDouble))
    throw std::invalid_argument("fusedMtaConvolution: CPU float32/float64 maps and kernel of one dtype only");
  return MtaConvolutionFunction::apply(maps, kernel, left, causal, zeroFuture);
}

}  // namespace tensorscope::model_core
