#pragma once
// Slow float64 references for the attention layers, written straight from the layer contract
// (docs/attention-variants.md) with explicit loops or einsum over explicit indices. They
// take the input and the module's weights by their contract names (namedWeights()), so they share
// nothing with the modules' fast paths. Also the small helpers the attention tests share.

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention_module.h"
#include "spec/attention_spec.h"

namespace tensorscope::model_core::test {

/// Weights by contract name (`wq.weight`, `core`, `cores`, `conv`, ...), detached float64 copies.
using WeightMap = std::map<std::string, torch::Tensor>;

/// What a reference returns: y [B, N, F], the display maps as the contract defines them, and the
/// tp role vectors [B, H, N, D] (undefined for other variants).
struct Reference {
  torch::Tensor y;
  torch::Tensor maps;
  torch::Tensor roles;
  torch::Tensor map_parts;  ///< differential attention: both softmax maps [B, H, 2, N, M]
};

/// Every entry of module.namedWeights() as a detached float64 tensor, keyed by name.
WeightMap weightsOf(const AttentionModuleImpl& module);

// One reference per contract section. `x` is [B, N, F]; dropout is taken to be 0.
/// Sections 1, 2, 5: mhsa, fixed_head and tp (tp also binds roles and returns them).
/// Maps P [B, H, N, N].
Reference referenceHeaded(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x,
                          const Rotary& rotary = {});
/// Section 3, from the effective `core` C [R, R]:
/// logits[b,r,n,m] = Σ_s C[r,s]·q[b,n,s]·k[b,m,s]/√R. Maps P [B, R, N, N].
Reference referenceThsa(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x,
                        const Rotary& rotary = {});
/// Section 4, through the similarities sim_r(n,m) = φ(C_r⊙q_n)·φ(k_m) (quadratic form).
/// Maps: sim normalised over m [B, R, N, N].
Reference referenceThsaLinear(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x);
/// Section 6: the full T[b,i,j,k] by einsum, masked (j<=i, k<=i) when causal, then Wo·vec (row-major
/// j·N + k). Maps A[b,i,j] = Σ_r ḡ[r]·q[b,i,r]·k[b,j,r] [B, N, N] (unmasked).
Reference referenceMultilinear(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x);
/// Section 7 through the explicit Khatri-Rao tensor KR[b,i,j,m] = f[b,j,m]·v[b,i,m] (N×d×d per
/// batch), contracted with each filter; causal with per-position prefix sums scaled 1/√i (1-based).
/// Maps f(S) [B, d, d] (causal: f(S⁽ᴺ⁾)).
Reference referenceDimwise(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x);
/// Rotary positions (§9) in loops from the equations: t [B, N, X] float64, blocks of `block`.
torch::Tensor turnReference(const torch::Tensor& t, int block, const Rotary& rotary);
/// Dispatches on spec.variant.
/// With `rotary` on (mhsa, fixed_head, tp, their slots and thsa; §9) the queries and keys are turned
/// by turnReference before the logits.
Reference referenceForward(const spec::AttentionSpec& spec, const WeightMap& w, const torch::Tensor& x,
                           const Rotary& rotary = {});

// ---- spec builders --------------------------------------------------------------------------

/// A spec for `variant` with the given sizes (a thsa-family spec needs `core` set separately).
spec::AttentionSpec makeSpec(spec::Variant variant, const spec::Sizes& sizes, bool causal, bool bias);
/// A thsa / thsa_linear spec with core preset `preset` for H heads of size D (R = H·D).
spec::AttentionSpec thsaPresetSpec(spec::Variant variant, const std::string& preset, int F, int H, int D,
                                   bool causal, bool bias);
/// A custom Kronecker core s·(A ⊗ B) with random values (seeded) for the kinds that carry values.
spec::CoreSpec customKroneckerCore(spec::FactorKind a, spec::FactorKind b, int H, int D, double scale,
                                   bool rank1Trainable, std::uint32_t seed);
/// A custom dense core with random values and a random partial trainable mask (at least one entry
/// trainable and one frozen when R·R >= 2).
spec::CoreSpec customDenseCore(int R, std::uint32_t seed);

// ---- the configurations the suite covers -----------------------------------------------------

/// One configuration: a valid spec plus the batch and token count to run it with.
struct Case {
  spec::AttentionSpec spec;
  int batch = 1;
  int seq = 1;
};

/// Every configuration for one (causal, bias) pair, with small sizes drawn from `seed`: mhsa,
/// fixed_head, tp; thsa and thsa_linear with every core preset, custom Kronecker cores and a dense
/// core with a partial trainable mask; multilinear with softmax and raw cores; dimwise. With
/// `allKronecker` every A kind (identity/ones/fixed/trainable) is paired with every B kind
/// (ones/identity/rank-1 trainable/rank-1 fixed/fixed/trainable); otherwise a subset in which every
/// kind still appears.
std::vector<Case> coveredCases(bool causal, bool bias, std::uint32_t seed, bool allKronecker);
/// coveredCases restricted to one variant.
std::vector<Case> casesOf(spec::Variant variant, bool causal, bool bias, std::uint32_t seed, bool allKronecker);

// ---- modules ----------------------------------------------------------------------------------

/// makeAttentionModule under torch::manual_seed(seed), converted to float64, dropout off (eval).
AttentionModule buildDouble(const spec::AttentionSpec& spec, std::uint64_t seed);
/// Moves every parameter away from its initial value (seeded noise), so general values are tested.
void perturbParameters(AttentionModuleImpl& module, std::uint64_t seed, double amplitude = 0.3);
/// namedWeights() as (name, value) pairs, optionally without the derived entries.
std::vector<std::pair<std::string, torch::Tensor>> weightPairs(const AttentionModuleImpl& module,
                                                               bool includeDerived);
/// Random float64 input [B, N, F].
torch::Tensor randomInput(int B, int N, int F, std::uint64_t seed);
/// An mhsa spec of F features, H heads of size D (makeSpec with Variant::Mhsa).
spec::AttentionSpec headed(int F, int H, int D, bool causal, bool bias);
/// Every parameter of `module` by name, detached copies.
std::map<std::string, torch::Tensor> parametersOf(AttentionModuleImpl& module);
/// Sets every weight of `target` named in `weights` (the rest keep their values); a name that is
/// not one of its parameters is a test failure.
void assign(AttentionModuleImpl& target, const std::map<std::string, torch::Tensor>& weights);
/// assign() of only the names `target` has: the weights two layers share (e.g. MHSA's, copied from a
/// layer with more slots), the source's extra weights left out.
void assignShared(AttentionModuleImpl& target, const std::map<std::string, torch::Tensor>& weights);
/// The layer's output y without gradients.
torch::Tensor run(AttentionModuleImpl& module, const torch::Tensor& x);

/// A layer's output, maps and every parameter's gradient of Σ y².
struct LayerRun {
  torch::Tensor y, maps;
  std::map<std::string, torch::Tensor> grads;
};
/// buildDouble(spec, seed) with perturbed parameters (seed + 1) run on x, the fused CPU kernels on
/// (`fused`) or off (the ATen formulation the modules use on CUDA); the switch is restored to on.
LayerRun runWithGradients(const spec::AttentionSpec& spec, const torch::Tensor& x, bool fused, std::uint64_t seed);
/// y, maps and every gradient of `got` within `tolerance` of `want` (the same parameter names).
void expectSameRun(const LayerRun& got, const LayerRun& want, double tolerance, const std::string& what);

// ---- comparisons ------------------------------------------------------------------------------

/// max |a - b| / max(1, max |b|); +inf when the shapes differ or either is undefined.
double relativeError(const torch::Tensor& a, const torch::Tensor& b);
/// The first line of a message (LibTorch appends a stack trace to its errors).
std::string firstLine(const std::string& message);
/// Adds a failure naming `what`, both shapes and the error when relativeError(actual, expected) > tol.
void expectClose(const torch::Tensor& actual, const torch::Tensor& expected, double tol,
                 const std::string& what);

/// (loss(x + h·e_i) − loss(x − h·e_i)) / 2h for entry i of `flat` (a contiguous 1-D view of the
/// tensor the loss reads), the entry set back afterwards; the writes bypass autograd.
double centralDifference(torch::Tensor flat, int64_t i, double h, const std::function<double()>& loss);

/// Runs `body`; an exception becomes a test failure naming `what`, so a loop over cases goes on.
template <typename Body>
void guarded(const std::string& what, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": exception: " << firstLine(e.what());
  }
}

/// Short label of a spec for traces: variant, core preset, causal, bias, sizes.
std::string describe(const spec::AttentionSpec& spec);

}  // namespace tensorscope::model_core::test
