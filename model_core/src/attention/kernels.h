#pragma once
// Shared kernels of the attention variants: one masked softmax, one projection helper.

#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <vector>

namespace tensorscope::model_core {

/// softmax(scale·logits) over the last axis of `logits` [..., N, M]. With `causal`, entries with
/// m > n get -inf before the softmax (position n sees only m <= n). The scale and the mask are one
/// pass (scale·logits + a 0/−∞ [N, M] mask), with a gradient that is one multiplication.
torch::Tensor scaledMaskedSoftmax(const torch::Tensor& logits, double scale, bool causal);

/// t, or an undefined tensor when t is empty: an absent input (a talking-heads mixing, say) travels
/// through a custom autograd function as an empty tensor, since those take no undefined inputs.
inline torch::Tensor orAbsent(const torch::Tensor& t) { return t.numel() == 0 ? torch::Tensor() : t; }

/// [N, M] boolean mask, true where m > n (the entries a causal layer must not see).
torch::Tensor futureMask(int64_t n, int64_t m, const torch::Device& device);

/// An nn.Linear in -> out (y = x·Wᵀ + b) with PyTorch's default initialisation.
torch::nn::Linear makeProjection(int64_t in, int64_t out, bool bias);

/// y = x·Wᵀ + b for x [..., in], weight [out, in], bias [out] (undefined: none): torch::linear's
/// function. In float32 on the CPU, with the fused kernels on and the projection GEMM available
/// (kernels/gemm.h: oneDNN's sgemm), the product and both of its gradients (∂x = ∂y·W, ∂W = ∂yᵀ·x) run
/// on it: 1.15-1.3x the BLAS ATen calls on these shapes, and the projections, the feed-forward maps
/// and the head are most of a training step. Elsewhere torch::linear, its oracle. Differentiable (a
/// backward taken with create_graph runs ATen's formulas).
torch::Tensor linearMap(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

/// The projection p applied to x: linearMap with p's weight and bias (what p(x) computes).
inline torch::Tensor project(const torch::nn::Linear& p, const torch::Tensor& x) {
  return linearMap(x, p->weight, p->bias);
}

/// Whether linearMap runs x through the projection GEMM (else torch::linear).
bool projectionGemmSupports(const torch::Tensor& x);

/// q, k and v of x [B, N, F] from one GEMM with the three projections stacked: [B, N, 3, H, D]
/// (q, k, v on axis 2). The parameters stay the three modules' own (their names do not change).
torch::Tensor projectQkv(const torch::Tensor& x, const torch::nn::Linear& wq, const torch::nn::Linear& wk,
                         const torch::nn::Linear& wv, int64_t heads);

/// x [B, N, F] through several projections of it from one GEMM with their weights stacked: the
/// outputs [B, N, out_i] in the order given, split from one tensor (split's backward writes their
/// gradients into one tensor, so backward is one GEMM for ∂x and one for the stacked ∂W). A
/// projection without a bias adds zeros when another has one. The parameters stay the modules' own.
/// Narrow projections gain most (bench/README.md, issue 41, eighth part).
std::vector<torch::Tensor> projectStacked(const torch::Tensor& x, const std::vector<torch::nn::Linear>& parts);
/// projectStacked's one tensor before the split, [B, N, Σ out_i]: for a fused function that reads
/// every part in place and writes the gradient of the whole (no concatenation in backward).
torch::Tensor projectJoined(const torch::Tensor& x, const std::vector<torch::nn::Linear>& parts);

/// x·rsqrt(mean(x²) + ε) over the last axis, times `weight` (a tensor broadcast over it, or undefined
/// for none): the RMSNorm of DeepSeek's MLA (ε 1e-6), of differential attention's, MTA's and T6's head
/// norms (subln, ε 1e-5).
torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

/// a [..., n, k] times b [..., k, m] (or, with `transB`, times bᵀ for b [..., m, k]) for every index
/// of the leading axes (equal in a and b, no broadcasting): [..., n, m]. On the CPU in float32 and
/// float64 each product is one single-threaded BLAS call on its own thread, reading a and b in place
/// through their strides (a head view of a projection needs no copy), and so is each product of the
/// backward; LibTorch 1.13's bmm runs such small products one after another on all threads, with a
/// select() each. Elsewhere, or with the fused kernels off, torch::matmul, its oracle.
/// Differentiable (a backward taken with create_graph runs the ATen formulas).
torch::Tensor batchedProduct(const torch::Tensor& a, const torch::Tensor& b, bool transB);

/// Per-head products with the heads interleaved, as a projection lays them out: for a [T, H, k] and
/// w [H, k, n] (or, with `transW`, w [H, n, k] used transposed),
///   out[t, h, :] = [a[t, h, :]·op(w[h]), tail[t, h, :]]        [T, H, n + r],
/// `tail` [T, H, r] an optional block appended to every head (undefined: r = 0). MLA's absorbed order
/// turns each head's q_nope into the latent (W^UK, with q_pe as the tail) and each head's mixture of
/// latents back (W^UV) with it. On the CPU the products read a in place (its last axis contiguous)
/// and write straight into the interleaved output: no transposed copy after, no cat for the tail. In
/// float32 on the projection GEMM (kernels/gemm.h) each head is one multi-threaded call; in float64,
/// or without it, single-threaded BLAS calls on row blocks of one head each, one a thread.
/// Elsewhere, or with the fused kernels off, matmul and cat, its oracle. Differentiable (a backward
/// taken with create_graph runs the ATen formulas).
torch::Tensor headProducts(const torch::Tensor& a, const torch::Tensor& w, bool transW, const torch::Tensor& tail);

/// headProducts' products without autograd, written into `out`: out[t, h, :] = a[t, h, :]·op(w[h])
/// for a [T, H, k], w [H, k, n] (transW: [H, n, k]) and out [T, H, n] any view whose last axis is
/// contiguous (a narrow() of a wider buffer: the rows and heads where a fused kernel wants them).
/// CPU float32/float64, the dtypes alike. For fused autograd functions that write their own layouts.
void headProductsWrite(const torch::Tensor& a, const torch::Tensor& w, bool transW, const torch::Tensor& out);
/// The weight gradient of those products, given a [T, H, k] and g = ∂out [T, H, n]: Σ_t a[t, h]ᵀ·g[t, h]
/// [H, k, n] (transW: its transpose, [H, n, k]); one product a head. CPU float32/float64, no autograd.
torch::Tensor headWeightGradient(const torch::Tensor& a, const torch::Tensor& g, bool transW);

/// Head mixing of maps [B, H, ...] (e.g. [B, H, N, M]) by c [L, H]: out[b, l] = Σ_h c[l, h]·maps[b, h],
/// [B, L, ...].
/// batchedProduct of c (expanded over the batch, not copied) with the maps flattened to [B, H, N·M]:
/// rows of N·M contiguous values, no permuted copies, one product per batch entry and thread in
/// forward and backward. LibTorch 1.13's CPU einsum("lh,bhnm->blnm") permutes and copies the maps,
/// and a broadcasting matmul of [L, H] with [B, H, N·M] is slower still (bench/README.md, issue 41,
/// sixth part: the talking-heads step). Differentiable.
torch::Tensor mixHeads(const torch::Tensor& c, const torch::Tensor& maps);

/// [B, N, H*D] -> [B, H, N, D]
torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads);
/// [B, H, N, D] -> [B, N, H*D]
torch::Tensor mergeHeads(const torch::Tensor& x);

}  // namespace tensorscope::model_core
