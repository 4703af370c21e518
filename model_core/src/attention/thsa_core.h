#pragma once
// The THSA core matrix C as a module (docs/attention-variants.md §3): dense with a trainable mask,
// s·(A ⊗ B) with each factor identity / ones / fixed / trainable (and B also rank-1 c₂c₃ᵀ), or
// low rank U·Vᵀ. Parameter names follow the contract: `core.A`, `core.B`, `core.c2`, `core.c3`,
// `core.U`, `core.V`; a dense core is saved as `core` itself.

#include <torch/nn/module.h>
#include <torch/types.h>

#include <vector>

#include "attention/attention_module.h"
#include "spec/core_spec.h"

namespace tensorscope::model_core {

class ThsaCoreImpl : public torch::nn::Module {
 public:
  ThsaCoreImpl(const spec::CoreSpec& core, int H, int D, int R);

  /// The effective C [R, R].
  torch::Tensor effective() const;

  const spec::CoreSpec& spec() const { return spec_; }
  bool isDense() const { return spec_.structure == spec::CoreStructure::Dense; }
  bool isLowRank() const { return spec_.structure == spec::CoreStructure::LowRank; }
  /// Low-rank factors U, V [R, rank].
  torch::Tensor u() const { return u_; }
  torch::Tensor v() const { return v_; }
  double scale() const { return spec_.scale; }
  spec::FactorKind kindA() const { return spec_.a.kind; }
  spec::FactorKind kindB() const { return spec_.b.kind; }
  /// Factor A [H, H] (as a tensor for every kind).
  torch::Tensor a() const { return a_; }
  /// Factor B [D, D] for identity / ones / fixed / trainable kinds.
  torch::Tensor b() const { return b_; }
  /// Rank-1 vectors of B = c₂c₃ᵀ, each [D].
  torch::Tensor c2() const { return c2_; }
  torch::Tensor c3() const { return c3_; }

  /// The weight-file entries of this core (all prefixed `core`).
  std::vector<NamedWeight> namedWeights() const;

 private:
  torch::Tensor factor(const char* name, const spec::CoreFactor& f, int n);

  spec::CoreSpec spec_;
  int H_, D_, R_;
  torch::Tensor a_, b_, c2_, c3_;              // Kronecker
  torch::Tensor values_, frozen_, mask_;       // Dense
  torch::Tensor u_, v_;                        // LowRank
};

TORCH_MODULE(ThsaCore);

}  // namespace tensorscope::model_core
