#include "attention/talking_heads.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "attention/fused_talking_heads.h"
#include "attention/kernels.h"

namespace tensorscope::model_core {

torch::Tensor talkingHeadsWeights(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& mixPre,
                                  const torch::Tensor& mixPost, double scale, bool causal) {
  // Mixing is linear, so the pre-softmax mixing of the logits q·kᵀ commutes with the scale; the
  // causal mask comes after it, so no future logit reaches the weights.
  auto logits = batchedProduct(q, k, /*transB=*/true);  // [B, H, N, M]
  if (mixPre.defined()) logits = mixHeads(mixPre, logits);
  auto P = scaledMaskedSoftmax(logits, scale, causal);
  if (mixPost.defined()) P = mixHeads(mixPost, P);
  return P;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Gradient checkpointing of the talking-heads core: forward keeps q, k, v and the mixings only;
/// backward runs the ATen formulation again with autograd on and differentiates it.
struct TalkingHeadsFunction : public torch::autograd::Function<TalkingHeadsFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& mixPre, const torch::Tensor& mixPost,
                               double scale, bool causal) {
    ctx->save_for_backward({q, k, v, mixPre, mixPost});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    return batchedProduct(talkingHeadsWeights(q, k, orAbsent(mixPre), orAbsent(mixPost), scale, causal), v, false);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    variable_list inputs, wanted;
    for (const auto& t : saved) {
      inputs.push_back(orAbsent(t).defined() ? t.detach().requires_grad_(true) : torch::Tensor());
      if (inputs.back().defined()) wanted.push_back(inputs.back());
    }
    variable_list found;
    {
      torch::AutoGradMode enable(true);
      const auto o = batchedProduct(talkingHeadsWeights(inputs[0], inputs[1], inputs[3], inputs[4],
                                                        ctx->saved_data["scale"].toDouble(),
                                                        ctx->saved_data["causal"].toBool()),
                                    inputs[2], false);
      found = torch::autograd::grad({o}, wanted, {grads[0]}, /*retain_graph=*/false, /*create_graph=*/false,
                                    /*allow_unused=*/true);
    }
    variable_list out;
    size_t next = 0;
    for (const auto& t : inputs) out.push_back(t.defined() ? found[next++] : torch::Tensor());
    out.push_back(torch::Tensor());  // scale
    out.push_back(torch::Tensor());  // causal
    return out;
  }
};

}  // namespace

torch::Tensor talkingHeadsRecomputed(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& mixPre, const torch::Tensor& mixPost, double scale,
                                     bool causal) {
  const auto sameType = [&](const torch::Tensor& m) { return !m.defined() || m.scalar_type() == q.scalar_type(); };
  if (fusedTalkingHeadsSupports(q, k, v) && sameType(mixPre) && sameType(mixPost))
    return fusedTalkingHeads(q, k, v, mixPre, mixPost, scale, causal);
  const auto absent = torch::empty({0}, q.options());
  return TalkingHeadsFunction::apply(q, k, v, mixPre.defined() ? mixPre : absent, mixPost.defined() ? mixPost : absent,
                                     scale, causal);
}

}  // namespace tensorscope::model_core
