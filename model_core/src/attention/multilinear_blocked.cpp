#include "attention/multilinear_blocked.h"

#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Positions per GEMM in the causal form: the positions [i0, i1) see the columns j, k < i1 only, so
/// the zero triangle of the masked Wo is skipped up to one chunk's worth.
int64_t positionChunk(int64_t N) { return std::max<int64_t>(16, (N + 7) / 8); }

/// The operands in position-major layout: aT, kT, vT [N, B·R]; Wo as [F, N(j), N(k)]; the masks.
struct Operands {
  int64_t B = 0, N = 0, R = 0, F = 0, BR = 0, Fb = 0;
  torch::Tensor aT, kT, vT, W3;
  torch::Tensor lower, lowerEq;  // [N, N]: [col < row], [col <= row], in the data type
};

Operands operands(const torch::Tensor& a, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& Wo,
                  bool causal, int64_t blockElements) {
  Operands o;
  o.B = a.size(0);
  o.N = a.size(1);
  o.R = a.size(2);
  o.F = Wo.size(0);
  o.BR = o.B * o.R;
  o.Fb = spec::multilinearFeatureBlock(o.F, o.B, o.N, o.R, blockElements);
  auto positionMajor = [&](const torch::Tensor& t) { return t.permute({1, 0, 2}).contiguous().view({o.N, o.BR}); };
  o.aT = positionMajor(a);
  o.kT = positionMajor(k);
  o.vT = positionMajor(v);
  o.W3 = Wo.contiguous().view({o.F, o.N, o.N});
  if (causal) {
    const auto ones = torch::ones({o.N, o.N}, a.options());
    o.lower = ones.tril(-1);
    o.lowerEq = ones.tril();
  }
  return o;
}

/// The masked weights of the features [f0, f0 + Fb), contiguous [N(i), Fb, N]:
/// Wu[i,f,j] = Wo[f,j,i]·[j < i] and Wv[i,f,k] = Wo[f,i,k]·[k <= i].
void maskedWeights(const Operands& o, int64_t f0, int64_t Fb, torch::Tensor& Wu, torch::Tensor& Wv) {
  const auto W = o.W3.narrow(0, f0, Fb);
  Wu = torch::empty({o.N, Fb, o.N}, W.options());
  Wv = torch::empty({o.N, Fb, o.N}, W.options());
  at::mul_out(Wu, W.permute({2, 0, 1}), o.lower.view({o.N, 1, o.N}));
  at::mul_out(Wv, W.permute({1, 0, 2}), o.lowerEq.view({o.N, 1, o.N}));
}

/// out[i] = Σ_j Wm[i,:,j]·rhs[j] for a lower-triangular (in i, j) Wm [N, Fb, N]; rhs [N, B·R];
/// out [N, Fb, B·R]. Chunks of positions skip the columns past their last position.
void triangularProduct(const torch::Tensor& Wm, const torch::Tensor& rhs, torch::Tensor& out) {
  const int64_t N = Wm.size(0), Fb = Wm.size(1), chunk = positionChunk(N);
  for (int64_t i0 = 0; i0 < N; i0 += chunk) {
    const int64_t i1 = std::min(N, i0 + chunk), len = i1 - i0;
    const auto A = Wm.narrow(0, i0, len).narrow(2, 0, i1).reshape({len * Fb, i1});
    auto dst = out.narrow(0, i0, len).view({len * Fb, rhs.size(1)});
    at::mm_out(dst, A, rhs.narrow(0, 0, i1));
  }
}

/// A work tensor [N, Fb, B·R] at the start of `buffer` (allocated once for the largest block and
/// reused by every block: no fresh pages per block).
torch::Tensor workView(const torch::Tensor& buffer, const Operands& o, int64_t Fb) {
  return buffer.narrow(0, 0, o.N * Fb * o.BR).view({o.N, Fb, o.BR});
}

/// t[i] += t[i−1] along the positions (forward) or t[i] += t[i+1] (reverse), one contiguous
/// [Fb, B·R] slab at a time (cumsum over a leading axis walks every line with a stride of a slab).
void prefixSum(torch::Tensor& t, bool reverse) {
  const int64_t N = t.size(0);
  if (!reverse)
    for (int64_t i = 1; i < N; ++i) t[i].add_(t[i - 1]);
  else
    for (int64_t i = N - 2; i >= 0; --i) t[i].add_(t[i + 1]);
}

/// U, V [N, Fb, B·R] of the causal form for the features of Wu, Wv, written into U and V.
void causalStates(const Operands& o, const torch::Tensor& Wu, const torch::Tensor& Wv, torch::Tensor& U,
                  torch::Tensor& V) {
  triangularProduct(Wu, o.kT, U);
  triangularProduct(Wv, o.vT, V);
}

/// X[j,f,(b,r)] = Σ_k Wo[f,j,k]·v[b,k,r] of the full form for the features [f0, f0 + Fb); Wx is
/// Wo[f0:f0+Fb] as [N(j), Fb, N(k)] (returned for the backward).
torch::Tensor fullStates(const Operands& o, int64_t f0, int64_t Fb, torch::Tensor& Wx) {
  Wx = torch::empty({o.N, Fb, o.N}, o.W3.options());
  Wx.copy_(o.W3.narrow(0, f0, Fb).permute({1, 0, 2}));
  return torch::mm(Wx.view({o.N * Fb, o.N}), o.vT).view({o.N, Fb, o.BR});
}

torch::Tensor forwardBlocked(const torch::Tensor& a, const Operands& o, bool causal) {
  auto y = torch::empty({o.B, o.N, o.F}, a.options());
  const auto ai = o.aT.view({o.N, 1, o.BR}), ki = o.kT.view({o.N, 1, o.BR}), vi = o.vT.view({o.N, 1, o.BR});
  torch::Tensor bufU, bufV;
  if (causal) {
    bufU = torch::empty({o.N * o.Fb * o.BR}, a.options());
    bufV = torch::empty({o.N * o.Fb * o.BR}, a.options());
  }
  for (int64_t f0 = 0; f0 < o.F; f0 += o.Fb) {
    const int64_t Fb = std::min(o.Fb, o.F - f0);
    if (causal) {
      torch::Tensor Wu, Wv;
      auto U = workView(bufU, o, Fb), V = workView(bufV, o, Fb);
      maskedWeights(o, f0, Fb, Wu, Wv);
      causalStates(o, Wu, Wv, U, V);
      U.mul_(vi).add_(V.mul_(ki));  // the increments D_i = v_i ⊙ U_i + k_i ⊙ V_i
      prefixSum(U, false);          // M_i
      const auto yb = U.mul_(ai).view({o.N, Fb, o.B, o.R}).sum(-1);  // [N, Fb, B]
      y.narrow(2, f0, Fb).copy_(yb.permute({2, 0, 1}));
    } else {
      torch::Tensor Wx;
      auto X = fullStates(o, f0, Fb, Wx);
      const auto M = X.mul_(ki).sum(0).view({Fb, o.B, o.R});  // M[f,b,r]
      y.narrow(2, f0, Fb).copy_(torch::bmm(a, M.permute({1, 2, 0})));
    }
  }
  return y;
}

struct MultilinearBlockedFunction : public torch::autograd::Function<MultilinearBlockedFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& Wo, bool causal, int64_t blockElements) {
    const auto o = operands(a, k, v, Wo, causal, blockElements);
    ctx->save_for_backward({a, k, v, Wo});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["block"] = blockElements;
    return forwardBlocked(a.contiguous(), o, causal);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &a = saved[0], &k = saved[1], &v = saved[2], &Wo = saved[3];
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto o = operands(a, k, v, Wo, causal, ctx->saved_data["block"].toInt());
    const auto gy = grads[0];
    const auto ai = o.aT.view({o.N, 1, o.BR}), ki = o.kT.view({o.N, 1, o.BR}), vi = o.vT.view({o.N, 1, o.BR});
    const auto ac = a.contiguous();
    auto gaT = torch::zeros({o.N, o.BR}, a.options());  // causal: position-major
    auto ga = torch::zeros({o.B, o.N, o.R}, a.options());  // full: batch-major
    auto gkT = torch::zeros({o.N, o.BR}, a.options()), gvT = torch::zeros({o.N, o.BR}, a.options());
    auto gW3 = torch::empty({o.F, o.N, o.N}, a.options());
    const int64_t chunk = positionChunk(o.N);
    torch::Tensor bufU, bufV, bufG, bufS;
    if (causal)
      for (auto* b : {&bufU, &bufV, &bufG, &bufS}) *b = torch::empty({o.N * o.Fb * o.BR}, a.options());
    for (int64_t f0 = 0; f0 < o.F; f0 += o.Fb) {
      const int64_t Fb = std::min(o.Fb, o.F - f0);
      if (causal) {
        torch::Tensor Wu, Wv;
        auto U = workView(bufU, o, Fb), V = workView(bufV, o, Fb), G = workView(bufG, o, Fb),
             S = workView(bufS, o, Fb);
        maskedWeights(o, f0, Fb, Wu, Wv);
        causalStates(o, Wu, Wv, U, V);
        at::mul_out(G, U, vi);  // D, then M in place
        at::mul_out(S, V, ki);
        G.add_(S);
        prefixSum(G, false);
        const auto gyT = gy.narrow(2, f0, Fb).permute({1, 2, 0}).contiguous().view({o.N, Fb, o.B, 1});
        auto S4 = S.view({o.N, Fb, o.B, o.R}), G4 = G.view({o.N, Fb, o.B, o.R});
        at::mul_out(S4, G4, gyT);
        gaT.view({o.N, o.B, o.R}).add_(S4.sum(1));
        // gM[i,f,b,r] = gy[b,i,f]·a[b,i,r] (in G), then gD = Σ_{i' >= i} gM[i'] in place.
        at::mul_out(G4, gyT, o.aT.view({o.N, 1, o.B, o.R}));
        prefixSum(G, true);
        at::mul_out(S, G, U);
        gvT.add_(S.sum(1));
        at::mul_out(S, G, V);
        gkT.add_(S.sum(1));
        at::mul_out(U, G, vi);  // gU
        at::mul_out(V, G, ki);  // gV
        auto gWu = torch::zeros({o.N, Fb, o.N}, a.options()), gWv = torch::zeros({o.N, Fb, o.N}, a.options());
        for (int64_t i0 = 0; i0 < o.N; i0 += chunk) {
          const int64_t i1 = std::min(o.N, i0 + chunk), len = i1 - i0;
          const auto gUc = U.narrow(0, i0, len).view({len * Fb, o.BR});
          const auto gVc = V.narrow(0, i0, len).view({len * Fb, o.BR});
          const auto Wuc = Wu.narrow(0, i0, len).narrow(2, 0, i1).reshape({len * Fb, i1});
          const auto Wvc = Wv.narrow(0, i0, len).narrow(2, 0, i1).reshape({len * Fb, i1});
          gWu.narrow(0, i0, len).narrow(2, 0, i1).copy_(torch::mm(gUc, o.kT.narrow(0, 0, i1).t()).view({len, Fb, i1}));
          gWv.narrow(0, i0, len).narrow(2, 0, i1).copy_(torch::mm(gVc, o.vT.narrow(0, 0, i1).t()).view({len, Fb, i1}));
          gkT.narrow(0, 0, i1).addmm_(Wuc.t(), gUc);
          gvT.narrow(0, 0, i1).addmm_(Wvc.t(), gVc);
        }
        // Wu reads Wo[f,j,k] for j < k and Wv for k <= j: every entry of Wo exactly once.
        auto gWb = gW3.narrow(0, f0, Fb);
        at::mul_out(gWb, gWu.permute({1, 2, 0}), o.lower.t());
        gWb.add_(gWv.permute({1, 0, 2}) * o.lowerEq);
      } else {
        torch::Tensor Wx;
        auto X = fullStates(o, f0, Fb, Wx);
        const auto M = (X * ki).sum(0).view({Fb, o.B, o.R});
        const auto gyb = gy.narrow(2, f0, Fb);                          // [B, N, Fb]
        ga.add_(torch::bmm(gyb, M.permute({1, 0, 2})));                 // Σ_f gy[b,i,f]·M[f,b,r]
        const auto gM = torch::bmm(gyb.transpose(1, 2), ac).permute({1, 0, 2}).contiguous().view({1, Fb, o.BR});
        gkT.add_((X * gM).sum(1));                                      // Σ_f gM[f,b,r]·X[j,f,b,r]
        at::mul_out(X, gM, ki);                                         // gX[j,f,b,r] = gM[f,b,r]·k[b,j,r]
        const auto gXm = X.view({o.N * Fb, o.BR});
        gW3.narrow(0, f0, Fb).copy_(torch::mm(gXm, o.vT.t()).view({o.N, Fb, o.N}).permute({1, 0, 2}));
        gvT.addmm_(Wx.view({o.N * Fb, o.N}).t(), gXm);
      }
    }
    auto batchMajor = [&](const torch::Tensor& t) { return t.view({o.N, o.B, o.R}).permute({1, 0, 2}).contiguous(); };
    return {causal ? batchMajor(gaT) : ga, batchMajor(gkT), batchMajor(gvT), gW3.view({o.F, o.N * o.N}),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor multilinearBlocked(const torch::Tensor& a, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& Wo, bool causal, std::int64_t blockElements) {
  if (a.dim() != 3 || k.sizes() != a.sizes() || v.sizes() != a.sizes())
    throw std::invalid_argument("multilinearBlocked: a, k and v must be [B, N, R] of one shape");
  const int64_t N = a.size(1);
  if (Wo.dim() != 2 || Wo.size(1) != N * N)
    throw std::invalid_argument("multilinearBlocked: Wo must be [F, N²] with N = " + std::to_string(N));
  if (k.scalar_type() != a.scalar_type() || v.scalar_type() != a.scalar_type() || Wo.scalar_type() != a.scalar_type())
    throw std::invalid_argument("multilinearBlocked: a, k, v and Wo must share one data type");
  if (blockElements < 1) throw std::invalid_argument("multilinearBlocked: blockElements must be positive");
  return MultilinearBlockedFunction::apply(a, k, v, Wo, causal, blockElements);
}

std::vector<torch::Tensor> multilinearBlockedSavedTensors(const torch::Tensor& out) {
  const auto node =
      std::dynamic_pointer_cast<torch::autograd::CppNode<MultilinearBlockedFunction>>(out.grad_fn());
  if (!node) throw std::invalid_argument("multilinearBlockedSavedTensors: not an output of multilinearBlocked");
  return node->ctx_.get_saved_variables();
}

}  // namespace tensorscope::model_core
