#pragma once
// mhsa, fixed_head and tp (docs/attention-variants.md §§1, 2, 5).

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"

namespace tensorscope::model_core {

/// Multi-head self-attention: q = x·Wqᵀ split into H heads of size D, P = softmax(q·kᵀ/√D),
/// o = P·v, y = concat(o)·Woᵀ. `fixed_head` is the same module with D = d_p chosen freely
/// (Low-Rank Bottleneck paper, scale 1/√d_p). `tp` adds roles r = x·Wrᵀ and binds each head's
/// filler by the Hadamard product o_h ⊙ r_h before Wo (TP-Transformer).
/// Maps: P [B, H, N, N]; roles: r [B, H, N, D].
class MhsaImpl : public AttentionModuleImpl {
 public:
  explicit MhsaImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr}, wr_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace tensorscope::model_core
