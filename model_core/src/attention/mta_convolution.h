#pragma once
// Multi-token attention's key-query convolution (contract §8.8, attention/mta.h) as one pass each
// way on the CPU: the masking, the zero padding and the depthwise 2-D cross-correlation of every
// (batch, head) map run on the vectorised rows (kernels/row_ops.h, correlateRow/correlateDots),
// where the ATen formulation (mtaConvolutionAten, its oracle) fills, pads and copies the maps and
// LibTorch 1.13's depthwise convolution backward runs at a few GFLOP/s.

#include <torch/types.h>

namespace tensorscope::model_core {

/// out[b,h,n,m] = Σ_{i<c_q, j<c_k} K[h,i,j]·s[b,h, n − c_q + 1 + i, m − left + j], s = maps with
/// the entries outside the map (and, when causal, the future ones m > n) read as 0. With
/// zeroFuture the output's future entries are 0 too (the masking after the post-softmax
/// convolution). maps [B, H, N, M], kernel [H, c_q, c_k], 0 <= left < c_k; CPU float32/float64
/// (fusedRowsSupport). Differentiable in maps and kernel; a backward that builds a graph (second
/// derivatives) runs the ATen formulation's.
torch::Tensor fusedMtaConvolution(const torch::Tensor& maps, const torch::Tensor& kernel, int64_t left, bool causal,
                                  bool zeroFuture);

/// The same with ATen ops (masked_fill, constant_pad_nd, conv2d with groups = H): the oracle and
/// the path on CUDA and with the fused kernels off.
torch::Tensor mtaConvolutionAten(const torch::Tensor& maps, const torch::Tensor& kernel, int64_t left, bool causal,
                                 bool zeroFuture);

}  // namespace tensorscope::model_core
