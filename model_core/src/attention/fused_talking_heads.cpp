#include "attention/fused_talking_heads.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention/fused_attention.h"
#include "attention/head_view.h"
#include "attention/kernels.h"
#include "attention/talking_heads.h"
#include "kernels/gemm.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core {
namespace {

using kernels::gemm;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// A [B, H, N, D] operand read in place (head_view.h: positions on axis 2).
template <typename T, typename P = const T>
HeadView<P> viewOf(const torch::Tensor& t) {
  return headView<T, P>(t, 2);
}
torch::Tensor readable(const torch::Tensor& t) { return readableHeads(t, 2); }

struct Dims {
  int64_t B, H, N, M, Dk, Dv;
  int64_t L;  ///< output and value heads: C′'s rows (H without C′)
  bool causal;
  int64_t rows;  ///< query rows per block
  int64_t blocks() const { return rows == 0 ? 0 : (N + rows - 1) / rows; }
  int64_t rowsOf(int64_t block) const { return std::min(rows, N - block * rows); }
  /// Keys a block's rows see: a causal row i sees keys 0 … i (SDPA's is_causal), a full one all.
  int64_t colsOf(int64_t block) const { return causal ? std::min(block * rows + rowsOf(block), M) : M; }
  /// Values of one buffer: every head's block of scores (or of mixed weights, L heads).
  int64_t bufferSize() const { return std::max(H, L) * std::min(rows, N) * M; }
};

/// Query rows per block: 32 for a causal layer (finer blocks skip more of the masked triangle);
/// a full layer as many as keep every head's block of scores (H × rows × M) within 64 Ki values.
int64_t chooseRows(int64_t N, int64_t M, int64_t H, bool causal, int64_t fixed) {
  if (fixed > 0) return fixed;
  if (N == 0) return 1;
  const int64_t rows = causal ? 32 : std::max<int64_t>(8, (int64_t(1) << 16) / std::max<int64_t>(H * M, 1));
  return std::min(rows, N);
}

/// The head mixing of a block by mix [L, H] (to-head rows, from-head columns): C[L, area] =
/// mix·X[H, area], or with `transpose` C[H, area] = mixᵀ·X[L, area].
template <typename T>
void mixBlock(const T* mix, bool transpose, int64_t L, int64_t H, int64_t area, const T* X, T* C) {
  if (transpose)
    gemm<T>(true, false, H, area, L, T(1), mix, H, X, area, T(0), C, area);
  else
    gemm<T>(false, false, L, area, H, T(1), mix, H, X, area, T(0), C, area);
}

/// The rows of every head's block (rows × cols each, `area` apart) become softmax rows in place: row
/// r (query i0 + r) over the keys it sees, the others set to 0.
template <typename T>
void softmaxBlock(T* L, int64_t H, int64_t rows, int64_t cols, int64_t i0, bool causal) {
  for (int64_t h = 0; h < H; ++h)
    for (int64_t r = 0; r < rows; ++r)
      kernels::softmaxRowInPlace(L + (h * rows + r) * cols, causal ? std::min(i0 + r + 1, cols) : cols, cols);
}

/// Every head's scores of one block, scale·q·kᵀ, into S (rows × cols per head).
template <typename T>
void scoresBlock(const Dims& d, HeadView<const T> q, HeadView<const T> k, int64_t b, int64_t i0, int64_t rows,
                 int64_t cols, T scale, T* S) {
  for (int64_t h = 0; h < d.H; ++h)
    gemm<T>(false, true, rows, cols, d.Dk, scale, q.at(b, h) + i0 * q.sn, q.sn, k.at(b, h), k.sn, T(0),
            S + h * rows * cols, cols);
}

/// Forward: per (batch, block of query rows), independent of every other: S = scale·q·kᵀ for every
/// head, L = C·S, W = softmax(mask(L)) (kept in Wk [B, H, N, M], zero beyond the keys seen),
/// U = C′·W (L heads), o = U·v into o [B, N, L, Dv].
template <typename T>
void forwardCore(const Dims& d, HeadView<const T> q, HeadView<const T> k, HeadView<const T> v, const T* pre,
                 const T* post, T scale, T* Wk, T* o) {
  const int64_t H = d.H, L = d.L, N = d.N, M = d.M, LDv = L * d.Dv;
  const int64_t blocks = d.blocks();
  at::parallel_for(0, d.B * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> one(size_t(d.bufferSize())), two(size_t(pre || post ? d.bufferSize() : 0));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, block = item % blocks, i0 = block * d.rows;
      const int64_t rows = d.rowsOf(block), cols = d.colsOf(block), area = rows * cols;
      scoresBlock(d, q, k, b, i0, rows, cols, scale, one.data());
      T* W = one.data();
      if (pre) {
        mixBlock(pre, false, H, H, area, one.data(), two.data());
        W = two.data();
      }
      softmaxBlock(W, H, rows, cols, i0, d.causal);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t r = 0; r < rows; ++r) {
          T* dst = Wk + ((b * H + h) * N + i0 + r) * M;
          std::copy(W + (h * rows + r) * cols, W + (h * rows + r + 1) * cols, dst);
          std::fill(dst + cols, dst + M, T(0));
        }
      const T* U = W;
      if (post) {
        T* dst = W == one.data() ? two.data() : one.data();
        mixBlock(post, false, L, H, area, W, dst);
        U = dst;
      }
      for (int64_t h = 0; h < L; ++h)
        gemm<T>(false, false, rows, d.Dv, cols, T(1), U + h * area, cols, v.at(b, h), v.sn, T(0),
                o + (b * N + i0) * LDv + h * d.Dv, LDv);
    }
  });
}

/// Backward: one batch entry per work item (it owns dk and dv of its keys and sums them over its
/// blocks), per block of rows with W read back from Wk:
///   U = C′·W (L heads),  dU = dO·vᵀ,  dv += Uᵀ·dO,  dC′ += dU·Wᵀ,  dW = C′ᵀ·dU,
///   dL = W ⊙ (dW − δ) with δ_row = Σ W·dW,  S = scale·q·kᵀ (again),  dC += dL·Sᵀ,  dS = Cᵀ·dL,
///   dq = scale·dS·k,  dk += scale·dSᵀ·q.
/// dPre [B, H, H], dPost [B, L, H] (one slice per batch entry, summed by the caller).
template <typename T>
void backwardCore(const Dims& d, HeadView<const T> q, HeadView<const T> k, HeadView<const T> v, const T* pre,
                  const T* post, T scale, const T* Wk, HeadView<const T> dO, HeadView<T> dq, HeadView<T> dk,
                  HeadView<T> dv, T* dPre, T* dPost) {
  const int64_t H = d.H, L = d.L, N = d.N, M = d.M;
  const auto& ops = kernels::rowOps<T>();
  at::parallel_for(0, d.B, 1, [&](int64_t begin, int64_t end) {
    const size_t size = size_t(d.bufferSize());
    std::vector<T> w(size), u(post ? size : 0), du(size), dw(post ? size : 0), s(pre ? size : 0);
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t m = 0; m < M; ++m) std::fill(dk.at(b, h) + m * dk.sn, dk.at(b, h) + m * dk.sn + d.Dk, T(0));
      for (int64_t h = 0; h < L; ++h)
        for (int64_t m = 0; m < M; ++m) std::fill(dv.at(b, h) + m * dv.sn, dv.at(b, h) + m * dv.sn + d.Dv, T(0));
      if (pre) std::fill(dPre + b * H * H, dPre + (b + 1) * H * H, T(0));
      if (post) std::fill(dPost + b * L * H, dPost + (b + 1) * L * H, T(0));
      for (int64_t block = 0; block < d.blocks(); ++block) {
        const int64_t i0 = block * d.rows, rows = d.rowsOf(block), cols = d.colsOf(block), area = rows * cols;
        for (int64_t h = 0; h < H; ++h)
          for (int64_t r = 0; r < rows; ++r) {
            const T* src = Wk + ((b * H + h) * N + i0 + r) * M;
            std::copy(src, src + cols, w.data() + (h * rows + r) * cols);
          }
        const T* U = w.data();
        if (post) {
          mixBlock(post, false, L, H, area, w.data(), u.data());
          U = u.data();
        }
        for (int64_t h = 0; h < L; ++h) {
          const T* g = dO.at(b, h) + i0 * dO.sn;
          gemm<T>(false, true, rows, cols, d.Dv, T(1), g, dO.sn, v.at(b, h), v.sn, T(0), du.data() + h * area, cols);
          gemm<T>(true, false, cols, d.Dv, rows, T(1), U + h * area, cols, g, dO.sn, T(1), dv.at(b, h), dv.sn);
        }
        T* dW = du.data();
        if (post) {
          gemm<T>(false, true, L, H, area, T(1), du.data(), area, w.data(), area, T(1), dPost + b * L * H, H);
          mixBlock(post, true, L, H, area, du.data(), dw.data());
          dW = dw.data();
        }
        for (int64_t r = 0; r < H * rows; ++r) {  // dL = W ⊙ (dW − δ), in place; 0 where W is
          const T* p = w.data() + r * cols;
          T* dp = dW + r * cols;
          ops.softmaxRowBackward(p, dp, cols, T(1), ops.dot(cols, p, dp), dp);
        }
        const T* dS = dW;
        if (pre) {
          scoresBlock(d, q, k, b, i0, rows, cols, scale, s.data());
          gemm<T>(false, true, H, H, area, T(1), dW, area, s.data(), area, T(1), dPre + b * H * H, H);
          mixBlock(pre, true, H, H, area, dW, s.data());
          dS = s.data();
        }
        for (int64_t h = 0; h < H; ++h) {
          gemm<T>(false, false, rows, d.Dk, cols, scale, dS + h * area, cols, k.at(b, h), k.sn, T(0),
                  dq.at(b, h) + i0 * dq.sn, dq.sn);
          gemm<T>(true, false, cols, d.Dk, rows, scale, dS + h * area, cols, q.at(b, h) + i0 * q.sn, q.sn, T(1),
                  dk.at(b, h), dk.sn);
        }
      }
    }
  });
}

/// The data of t, or null when t is undefined.
template <typename T>
T* ptrOr(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

struct FusedTalkingHeadsFunction : public torch::autograd::Function<FusedTalkingHeadsFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q0, const torch::Tensor& k0,
                               const torch::Tensor& v0, const torch::Tensor& pre0, const torch::Tensor& post0,
                               double scale, bool causal, int64_t rowBlock) {
    const auto q = readable(q0), k = readable(k0), v = readable(v0);
    const auto pre = orAbsent(pre0.contiguous()), post = orAbsent(post0.contiguous());
    const int64_t B = q.size(0), H = q.size(1), N = q.size(2), M = k.size(2), Dv = v.size(3), L = v.size(1);
    const Dims d{B, H, N, M, q.size(3), Dv, L, causal, chooseRows(N, M, std::max(H, L), causal, rowBlock)};
    auto Wk = torch::empty({B, H, N, M}, q.options());
    auto o = torch::empty({B, N, L, Dv}, q.options());
    if (q.scalar_type() == torch::kDouble)
      forwardCore<double>(d, viewOf<double>(q), viewOf<double>(k), viewOf<double>(v), ptrOr<double>(pre),
                          ptrOr<double>(post), scale, Wk.data_ptr<double>(), o.data_ptr<double>());
    else
      forwardCore<float>(d, viewOf<float>(q), viewOf<float>(k), viewOf<float>(v), ptrOr<float>(pre),
                         ptrOr<float>(post), float(scale), Wk.data_ptr<float>(), o.data_ptr<float>());
    // The inputs as given (a layout copy made here would have no graph back to them for a backward
    // that builds one); backward takes readable views of them again, free when they were already.
    ctx->save_for_backward({q0, k0, v0, pre0, post0, Wk});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["rows"] = d.rows;
    return o.transpose(1, 2);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const auto &q0 = s[0], &k0 = s[1], &v0 = s[2];
    const auto pre0 = orAbsent(s[3]), post0 = orAbsent(s[4]);
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const torch::Tensor none;
    const auto gradOf = [](const torch::Tensor& t) { return t.defined() ? torch::zeros_like(t) : torch::Tensor(); };
    if (!grads[0].defined())
      return {torch::zeros_like(q0), torch::zeros_like(k0), torch::zeros_like(v0), gradOf(pre0), gradOf(post0), none,
              none, none};
    if (at::GradMode::is_enabled()) {
      // A backward that builds a graph: the ATen formulation's gradients on the saved inputs (its
      // products and mixings have differentiable backward passes).
      const auto o = torch::matmul(talkingHeadsWeights(q0, k0, pre0, post0, scale, causal), v0);
      std::vector<torch::Tensor> wanted;
      for (const auto* t : {&q0, &k0, &v0, &pre0, &post0})
        if (t->defined() && t->requires_grad()) wanted.push_back(*t);
      const auto found = torch::autograd::grad({o}, wanted, {grads[0]}, true, true, true);
      variable_list out;
      size_t next = 0;
      for (const auto* t : {&q0, &k0, &v0, &pre0, &post0})
        out.push_back(t->defined() && t->requires_grad() ? found[next++] : torch::Tensor());
      out.insert(out.end(), {none, none, none});
      return out;
    }
    const auto q = readable(q0), k = readable(k0), v = readable(v0);
    const auto pre = pre0.defined() ? pre0.contiguous() : pre0, post = post0.defined() ? post0.contiguous() : post0;
    const auto dO = readable(grads[0]);
    const int64_t B = q.size(0), H = q.size(1), N = q.size(2), M = k.size(2), Dk = q.size(3), Dv = v.size(3),
                  L = v.size(1);
    const Dims d{B, H, N, M, Dk, Dv, L, causal, ctx->saved_data["rows"].toInt()};
    // Every entry of dq, dk and dv is written; [B, N|M, H, D] underneath, like the projections.
    auto dq = torch::empty({B, N, H, Dk}, q.options()).transpose(1, 2);
    auto dk = torch::empty({B, M, H, Dk}, k.options()).transpose(1, 2);
    auto dv = torch::empty({B, M, L, Dv}, v.options()).transpose(1, 2);
    auto dPre = pre.defined() ? torch::empty({B, H, H}, pre.options()) : torch::Tensor();
    auto dPost = post.defined() ? torch::empty({B, L, H}, post.options()) : torch::Tensor();
    if (q.scalar_type() == torch::kDouble)
      backwardCore<double>(d, viewOf<double>(q), viewOf<double>(k), viewOf<double>(v), ptrOr<double>(pre),
                           ptrOr<double>(post), scale, s[5].data_ptr<double>(), viewOf<double>(dO),
                           viewOf<double, double>(dq), viewOf<double, double>(dk), viewOf<double, double>(dv),
                           ptrOr<double>(dPre), ptrOr<double>(dPost));
    else
      backwardCore<float>(d, viewOf<float>(q), viewOf<float>(k), viewOf<float>(v), ptrOr<float>(pre),
                          ptrOr<float>(post), float(scale), s[5].data_ptr<float>(), viewOf<float>(dO),
                          viewOf<float, float>(dq), viewOf<float, float>(dk), viewOf<float, float>(dv),
                          ptrOr<float>(dPre), ptrOr<float>(dPost));
    return {dq, dk, dv, dPre.defined() ? dPre.sum(0) : none, dPost.defined() ? dPost.sum(0) : none, none, none, none};
  }
};

}  // namespace

bool fusedTalkingHeadsSupports(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  if (!fusedAttentionSupports(q) || q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  if (k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type() || !k.device().is_cpu() ||
      !v.device().is_cpu())
    return false;
  const int64_t limit = std::numeric_limits<int>::max();
  const int64_t heads = std::max(q.size(1), v.size(1));
  return heads * q.size(2) * k.size(2) <= limit && heads * std::max(q.size(3), v.size(3)) <= limit;
}

torch::Tensor fusedTalkingHeads(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& mixPre, const torch::Tensor& mixPost, double scale, bool causal,
                                int64_t rowBlock) {
  const int64_t L = mixPost.defined() && mixPost.dim() == 2 ? mixPost.size(0) : q.dim() == 4 ? q.size(1) : 0;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || k.size(0) != q.size(0) || v.size(0) != q.size(0) ||
      k.size(1) != q.size(1) || v.size(1) != L || k.size(3) != q.size(3) || v.size(2) != k.size(2))
    throw std::invalid_argument("fusedTalkingHeads: q [B, H, N, Dk], k [B, H, M, Dk], v [B, L, M, Dv] (L = H, or "
                                "C′'s rows) disagree");
  if (!fusedTalkingHeadsSupports(q, k, v))
    throw std::invalid_argument("fusedTalkingHeads: CPU float32/float64 operands of one dtype, a BLAS and sizes "
                                "within its integer range only");
  const int64_t H = q.size(1);
  for (const auto* m : {&mixPre, &mixPost})
    if (m->defined() && (m->dim() != 2 || m->size(0) != (m == &mixPre ? H : L) || m->size(1) != H ||
                         m->scalar_type() != q.scalar_type() || !m->device().is_cpu()))
      throw std::invalid_argument("fusedTalkingHeads: C must be [H, H] and C′ [L, H] of the operands' dtype");
  const auto absent = torch::empty({0}, q.options());
  return FusedTalkingHeadsFunction::apply(q, k, v, mixPre.defined() ? mixPre : absent,
                                          mixPost.defined() ? mixPost : absent, scale, causal, rowBlock);
}

}  // namespace tensorscope::model_core
