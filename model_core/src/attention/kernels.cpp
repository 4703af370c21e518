#include "attention/kernels.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <type_traits>
#include <stdexcept>
#include <vector>

#include "attention/fused_attention.h"
#include "kernels/gemm.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// A batch of matrices read in place: the offset of each matrix (from the leading axes' strides)
/// and the row stride; the last axis contiguous (else the tensor is copied once).
struct Matrices {
  torch::Tensor t;
  std::vector<int64_t> offsets;
  int64_t rows = 0, cols = 0, ld = 0;
};

Matrices matricesOf(const torch::Tensor& x) {
  Matrices m;
  // BLAS reads rows at a positive stride of at least the row length (an expanded row axis is not).
  const bool inPlace = (x.stride(-1) == 1 || x.size(-1) <= 1) && (x.size(-2) <= 1 || x.stride(-2) >= x.size(-1));
  m.t = inPlace ? x : x.contiguous();
  const int64_t lead = m.t.dim() - 2;
  m.rows = m.t.size(-2);
  m.cols = m.t.size(-1);
  m.ld = m.rows <= 1 ? std::max<int64_t>(m.cols, 1) : std::max<int64_t>(m.t.stride(-2), 1);  // one row: any stride
  int64_t count = 1;
  for (int64_t d = 0; d < lead; ++d) count *= m.t.size(d);
  m.offsets.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = lead - 1; d >= 0; --d) {
      off += (rest % m.t.size(d)) * m.t.stride(d);
      rest /= m.t.size(d);
    }
    m.offsets[size_t(i)] = off;
  }
  return m;
}

/// C_i = op(A_i)·op(B_i) into a new contiguous [lead..., rows, cols] tensor of `shape`.
template <typename T>
void productsInto(const Matrices& A, bool ta, const Matrices& B, bool tb, int64_t m, int64_t n, int64_t k, T* c) {
  const T* a = A.t.data_ptr<T>();
  const T* b = B.t.data_ptr<T>();
  at::parallel_for(0, int64_t(A.offsets.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* ci = c + i * m * n;
      if (k == 0) std::fill(ci, ci + m * n, T(0));
      else kernels::gemm<T>(ta, tb, m, n, k, T(1), a + A.offsets[size_t(i)], A.ld, b + B.offsets[size_t(i)], B.ld, T(0), ci, n);
    }
  });
}

/// op(x)·op(y) for every matrix of the batch, shaped as `lead` + [m, n].
torch::Tensor products(const torch::Tensor& x, bool tx, const torch::Tensor& y, bool ty, std::vector<int64_t> shape) {
  const auto X = matricesOf(x), Y = matricesOf(y);
  const int64_t m = tx ? X.cols : X.rows, k = tx ? X.rows : X.cols, n = ty ? Y.rows : Y.cols;
  shape.push_back(m);
  shape.push_back(n);
  auto out = torch::empty(shape, x.options());
  if (x.scalar_type() == torch::kDouble) productsInto<double>(X, tx, Y, ty, m, n, k, out.data_ptr<double>());
  else productsInto<float>(X, tx, Y, ty, m, n, k, out.data_ptr<float>());
  return out;
}

std::vector<int64_t> leadOf(const torch::Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - 2);
}

torch::Tensor atenProduct(const torch::Tensor& a, const torch::Tensor& b, bool transB) {
  return torch::matmul(a, transB ? b.transpose(-2, -1) : b);
}

struct BatchedProductFunction : public torch::autograd::Function<BatchedProductFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b, bool transB) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["transB"] = transB;
    return products(a, false, b, transB, leadOf(a));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &a = saved[0], &b = saved[1];
    const bool transB = ctx->saved_data["transB"].toBool();
    const auto& g = grads[0];
    if (!g.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    if (at::GradMode::is_enabled()) {  // a graph of the backward: ATen's differentiable formulas
      const auto da = transB ? torch::matmul(g, b) : torch::matmul(g, b.transpose(-2, -1));
      const auto db = transB ? torch::matmul(g.transpose(-2, -1), a) : torch::matmul(a.transpose(-2, -1), g);
      return {da, db, torch::Tensor()};
    }
    // a [n, k]; b [k, m] or [m, k]; g [n, m].  da = g·bᵀ (g·b when transB);
    // db = aᵀ·g [k, m] (gᵀ·a [m, k] when transB).
    const auto da = products(g, false, b, !transB, leadOf(a));
    const auto db = transB ? products(g, true, a, false, leadOf(b)) : products(a, true, g, false, leadOf(b));
    return {da, db, torch::Tensor()};
  }
};

/// The matrices of a [T, H, cols] tensor, one a head: [T, cols] at offset h·stride(1), row stride
/// stride(0). The last axis contiguous, else the tensor is copied once.
struct HeadRows {
  torch::Tensor t;
  int64_t rows = 0, heads = 0, cols = 0, ld = 0, headStride = 0;
};

HeadRows headRowsOf(const torch::Tensor& x) {
  HeadRows m;
  const bool inPlace = (x.stride(2) == 1 || x.size(2) <= 1) && (x.size(0) <= 1 || x.stride(0) >= x.size(2));
  m.t = inPlace ? x : x.contiguous();
  m.rows = m.t.size(0), m.heads = m.t.size(1), m.cols = m.t.size(2);
  m.ld = m.rows <= 1 ? std::max<int64_t>(m.t.size(1) * m.cols, 1) : std::max<int64_t>(m.t.stride(0), 1);
  m.headStride = m.t.stride(1);
  return m;
}

/// The rows one task takes: at least 8 tasks in all when the heads are fewer, blocks of at least 256
/// rows so that each BLAS call stays efficient. Not a function of the thread count, so every thread
/// count gives the same bits.
int64_t rowBlock(int64_t rows, int64_t heads) {
  const int64_t perHead = std::max<int64_t>(1, (8 + heads - 1) / std::max<int64_t>(heads, 1));
  return std::max<int64_t>(256, (rows + perHead - 1) / perHead);
}

/// out[t, h, :n] = a_h·op(w_h) (out's rows `ldo` apart, head h at h·headOut).
template <typename T>
void headProductsInto(const HeadRows& A, const Matrices& W, bool transW, int64_t n, T* out, int64_t ldo,
                      int64_t headOut) {
  const T* a = A.t.data_ptr<T>();
  const T* w = W.t.data_ptr<T>();
  if constexpr (std::is_same_v<T, float>) {
    // In float32 on the projection GEMM: one multi-threaded call per head over all rows (oneDNN's
    // sgemm at these shapes, [T, k]·[k, n] with k and n 32-80, is ~10% of MLA's absorbed layer faster
    // than row blocks of single-threaded BLAS calls; bench/README.md, issue 41 ninth part).
    if (kernels::projectionGemm().available() && A.cols > 0) {
      for (int64_t h = 0; h < A.heads; ++h)
        kernels::projectionSgemm(false, transW, A.rows, n, A.cols, 1.0f, a + h * A.headStride, A.ld,
                                 w + W.offsets[size_t(h)], W.ld, 0.0f, out + h * headOut, ldo);
      return;
    }
  }
  const int64_t block = rowBlock(A.rows, A.heads), blocks = (A.rows + block - 1) / block;
  at::parallel_for(0, A.heads * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t h = i / blocks, r0 = (i % blocks) * block, r1 = std::min(A.rows, r0 + block);
      T* o = out + r0 * ldo + h * headOut;
      if (A.cols == 0) {
        for (int64_t r = r0; r < r1; ++r) std::fill(o + (r - r0) * ldo, o + (r - r0) * ldo + n, T(0));
        continue;
      }
      kernels::gemm<T>(false, transW, r1 - r0, n, A.cols, T(1), a + r0 * A.ld + h * A.headStride, A.ld,
                       w + W.offsets[size_t(h)], W.ld, T(0), o, ldo);
    }
  });
}

/// ∂w_h = a_hᵀ·g_h [k, n] (g_hᵀ·a_h [n, k] with transW), one head a task, into `dw` [H, ...] contiguous.
template <typename T>
void headWeightGradients(const HeadRows& A, const HeadRows& G, int64_t n, bool transW, T* dw) {
  const T* a = A.t.data_ptr<T>();
  const T* g = G.t.data_ptr<T>();
  const int64_t k = A.cols;
  if constexpr (std::is_same_v<T, float>) {  // as headProductsInto: one call per head on the projection GEMM
    if (kernels::projectionGemm().available() && A.rows > 0) {
      for (int64_t h = 0; h < A.heads; ++h) {
        if (transW)
          kernels::projectionSgemm(true, false, n, k, A.rows, 1.0f, g + h * G.headStride, G.ld, a + h * A.headStride,
                                   A.ld, 0.0f, dw + h * k * n, k);
        else
          kernels::projectionSgemm(true, false, k, n, A.rows, 1.0f, a + h * A.headStride, A.ld, g + h * G.headStride,
                                   G.ld, 0.0f, dw + h * k * n, n);
      }
      return;
    }
  }
  at::parallel_for(0, A.heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h) {
      T* d = dw + h * k * n;
      const T* ah = a + h * A.headStride;
      const T* gh = g + h * G.headStride;
      if (A.rows == 0) std::fill(d, d + k * n, T(0));
      else if (transW) kernels::gemm<T>(true, false, n, k, A.rows, T(1), gh, G.ld, ah, A.ld, T(0), d, k);
      else kernels::gemm<T>(true, false, k, n, A.rows, T(1), ah, A.ld, gh, G.ld, T(0), d, n);
    }
  });
}

torch::Tensor atenHeadProducts(const torch::Tensor& a, const torch::Tensor& w, bool transW, const torch::Tensor& tail) {
  const auto p = torch::matmul(a.transpose(0, 1), transW ? w.transpose(-2, -1) : w).transpose(0, 1);  // [T, H, n]
  return tail.defined() ? torch::cat({p, tail}, -1) : p.contiguous();
}

struct HeadProductsFunction : public torch::autograd::Function<HeadProductsFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& w, bool transW,
                               const torch::Tensor& tail) {
    const auto A = headRowsOf(a);
    const auto W = matricesOf(w);
    const int64_t n = transW ? W.rows : W.cols, r = tail.numel() == 0 ? 0 : tail.size(2), H = A.heads;
    auto out = torch::empty({A.rows, H, n + r}, a.options());
    if (a.scalar_type() == torch::kDouble)
      headProductsInto<double>(A, W, transW, n, out.data_ptr<double>(), H * (n + r), n + r);
    else
      headProductsInto<float>(A, W, transW, n, out.data_ptr<float>(), H * (n + r), n + r);
    if (r > 0) out.narrow(2, n, r).copy_(tail);
    ctx->save_for_backward({A.t, w});
    ctx->saved_data["transW"] = transW;
    ctx->saved_data["n"] = n;
    ctx->saved_data["tail"] = r > 0;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &a = saved[0], &w = saved[1];
    const bool transW = ctx->saved_data["transW"].toBool(), hasTail = ctx->saved_data["tail"].toBool();
    const int64_t n = ctx->saved_data["n"].toInt();
    const auto& g = grads[0];
    if (!g.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    const auto gp = g.narrow(2, 0, n);  // the products' part
    const auto gTail = hasTail ? g.narrow(2, n, g.size(2) - n) : torch::Tensor();
    if (at::GradMode::is_enabled()) {  // a graph of the backward: ATen's differentiable formulas
      const auto gh = gp.transpose(0, 1), ah = a.transpose(0, 1);  // [H, T, ·]
      const auto da = torch::matmul(gh, transW ? w : w.transpose(-2, -1)).transpose(0, 1);
      const auto dw = transW ? torch::matmul(gh.transpose(-2, -1), ah) : torch::matmul(ah.transpose(-2, -1), gh);
      return {da, dw, torch::Tensor(), gTail};
    }
    const auto A = headRowsOf(a), G = headRowsOf(gp);
    // ∂a_h = g_h·op(w_h)ᵀ: the forward's products with w turned the other way, into [T, H, k].
    auto da = torch::empty({A.rows, A.heads, A.cols}, a.options());
    auto dw = torch::empty({A.heads, transW ? n : A.cols, transW ? A.cols : n}, a.options());
    const auto W = matricesOf(w);
    if (a.scalar_type() == torch::kDouble) {
      headProductsInto<double>(G, W, !transW, A.cols, da.data_ptr<double>(), A.heads * A.cols, A.cols);
      headWeightGradients<double>(A, G, n, transW, dw.data_ptr<double>());
    } else {
      headProductsInto<float>(G, W, !transW, A.cols, da.data_ptr<float>(), A.heads * A.cols, A.cols);
      headWeightGradients<float>(A, G, n, transW, dw.data_ptr<float>());
    }
    return {da, dw.view(w.sizes()), torch::Tensor(), gTail};
  }
};

}  // namespace

torch::Tensor mixHeads(const torch::Tensor& c, const torch::Tensor& maps) {
  const int64_t B = maps.size(0), H = maps.size(1), L = c.size(0);
  auto shape = maps.sizes().vec();
  shape[1] = L;
  return batchedProduct(c.expand({B, L, H}), maps.reshape({B, H, -1}), false).view(shape);
}

torch::Tensor batchedProduct(const torch::Tensor& a, const torch::Tensor& b, bool transB) {
  if (a.dim() < 3 || a.dim() != b.dim() || !a.sizes().slice(0, a.dim() - 2).equals(b.sizes().slice(0, b.dim() - 2)))
    throw std::invalid_argument("batchedProduct: a and b need the same leading axes");
  if ((transB ? b.size(-1) : b.size(-2)) != a.size(-1))
    throw std::invalid_argument("batchedProduct: the contracted sizes differ");
  const int64_t limit = std::numeric_limits<int>::max();
  const bool fits = a.size(-2) < limit && a.size(-1) < limit && b.size(-2) < limit && b.size(-1) < limit &&
                    a.stride(-2) < limit && b.stride(-2) < limit;
  if (!fits || !fusedAttentionSupports(a) || b.scalar_type() != a.scalar_type() || !b.device().is_cpu())
    return atenProduct(a, b, transB);
  return BatchedProductFunction::apply(a, b, transB);
}

void headProductsWrite(const torch::Tensor& a, const torch::Tensor& w, bool transW, const torch::Tensor& out) {
  const int64_t n = transW ? w.size(1) : w.size(2);
  if (a.dim() != 3 || w.dim() != 3 || out.dim() != 3 || w.size(0) != a.size(1) || out.size(0) != a.size(0) ||
      out.size(1) != a.size(1) || out.size(2) != n || (transW ? w.size(2) : w.size(1)) != a.size(2))
    throw std::invalid_argument("headProductsWrite: a [T, H, k], w [H, k, n] (transW: [H, n, k]) and out [T, H, n]");
  if (out.numel() > 0 && (out.stride(2) != 1 || out.stride(1) < n || out.stride(0) < out.size(1) * out.stride(1)))
    throw std::invalid_argument("headProductsWrite: out needs a contiguous last axis and rows apart");
  if (out.numel() == 0) return;
  const auto A = headRowsOf(a);
  const auto W = matricesOf(w);
  if (a.scalar_type() == torch::kDouble)
    headProductsInto<double>(A, W, transW, n, out.data_ptr<double>(), out.stride(0), out.stride(1));
  else
    headProductsInto<float>(A, W, transW, n, out.data_ptr<float>(), out.stride(0), out.stride(1));
}

torch::Tensor headWeightGradient(const torch::Tensor& a, const torch::Tensor& g, bool transW) {
  const auto A = headRowsOf(a), G = headRowsOf(g);
  auto dw = torch::empty({A.heads, transW ? G.cols : A.cols, transW ? A.cols : G.cols}, a.options());
  if (a.scalar_type() == torch::kDouble) headWeightGradients<double>(A, G, G.cols, transW, dw.data_ptr<double>());
  else headWeightGradients<float>(A, G, G.cols, transW, dw.data_ptr<float>());
  return dw;
}

torch::Tensor headProducts(const torch::Tensor& a, const torch::Tensor& w, bool transW, const torch::Tensor& tail) {
  if (a.dim() != 3 || w.dim() != 3 || w.size(0) != a.size(1))
    throw std::invalid_argument("headProducts: a must be [T, H, k] and w [H, ·, ·] with the same H");
  if ((transW ? w.size(2) : w.size(1)) != a.size(2))
    throw std::invalid_argument("headProducts: the contracted sizes differ");
  if (tail.defined() && (tail.dim() != 3 || tail.size(0) != a.size(0) || tail.size(1) != a.size(1)))
    throw std::invalid_argument("headProducts: the tail must be [T, H, r] with a's T and H");
  const int64_t limit = std::numeric_limits<int>::max();
  const bool fits = a.size(0) < limit && a.size(1) * a.size(2) < limit && w.size(1) < limit && w.size(2) < limit &&
                    a.stride(0) < limit && a.size(1) * (w.size(1) + w.size(2) + (tail.defined() ? tail.size(2) : 0)) < limit;
  const bool tailFits = !tail.defined() || (tail.scalar_type() == a.scalar_type() && tail.device().is_cpu());
  if (!fits || !tailFits || !fusedAttentionSupports(a) || w.scalar_type() != a.scalar_type() || !w.device().is_cpu())
    return atenHeadProducts(a, w, transW, tail);
  return HeadProductsFunction::apply(a, w, transW, tail.defined() ? tail : torch::empty({0}, a.options()));
}

torch::Tensor futureMask(int64_t n, int64_t m, const torch::Device& device) {
  return torch::ones({n, m}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(1);
}

torch::Tensor scaledMaskedSoftmax(const torch::Tensor& logits, double scale, bool causal) {
  if (!causal) return torch::softmax(scale == 1.0 ? logits : logits * scale, -1);
  const auto n = logits.size(-2), m = logits.size(-1);
  const auto mask = torch::zeros({n, m}, logits.options().requires_grad(false))
                        .masked_fill_(futureMask(n, m, logits.device()), -std::numeric_limits<double>::infinity());
  return torch::softmax(torch::add(mask, logits, scale), -1);  // mask + scale·logits
}

torch::nn::Linear makeProjection(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

namespace {
/// x through the projections `parts` as one linear map, their weights (and biases, zeros for a part
/// without one when another has one) stacked: [..., Σ out_i].
torch::Tensor stackedLinear(const torch::Tensor& x, const std::vector<torch::nn::Linear>& parts) {
  std::vector<torch::Tensor> weights, biases;
  bool anyBias = false;
  for (const auto& p : parts) weights.push_back(p->weight), anyBias = anyBias || p->bias.defined();
  if (anyBias)
    for (const auto& p : parts)
      biases.push_back(p->bias.defined() ? p->bias : torch::zeros({p->weight.size(0)}, p->weight.options()));
  return linearMap(x, torch::cat(weights), anyBias ? torch::cat(biases) : torch::Tensor());
}
}  // namespace

torch::Tensor projectQkv(const torch::Tensor& x, const torch::nn::Linear& wq, const torch::nn::Linear& wk,
                         const torch::nn::Linear& wv, int64_t heads) {
  const auto y = stackedLinear(x, {wq, wk, wv});  // [B, N, 3·H·D]
  return y.view({x.size(0), x.size(1), 3, heads, y.size(-1) / (3 * heads)});
}

std::vector<torch::Tensor> projectStacked(const torch::Tensor& x, const std::vector<torch::nn::Linear>& parts) {
  std::vector<int64_t> sizes;
  for (const auto& p : parts) sizes.push_back(p->weight.size(0));
  return stackedLinear(x, parts).split_with_sizes(sizes, -1);
}

torch::Tensor projectJoined(const torch::Tensor& x, const std::vector<torch::nn::Linear>& parts) {
  return stackedLinear(x, parts);
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  const auto n = x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight.defined() ? n * weight : n;
}

torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads) {
  const auto B = x.size(0), N = x.size(1);
  return x.view({B, N, heads, x.size(2) / heads}).transpose(1, 2);
}

torch::Tensor mergeHeads(const torch::Tensor& x) {
  const auto B = x.size(0), H = x.size(1), N = x.size(2), D = x.size(3);
  return x.transpose(1, 2).reshape({B, N, H * D});
}

}  // namespace tensorscope::model_core
