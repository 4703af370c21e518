// The fused CUDA path of the attention modules (issue 39, attention/cuda_attention.h) against the
// ATen formulation it replaces on CUDA, which the float64 reference suites check: every covered
// variant and core in float32, outputs and every gradient (input and parameters), causal and not;
// the head-mixing cores' memory linear in N; and the head-mixing contraction itself against a direct
// einsum in float64. Skipped with the reason without a CUDA device or without LibTorch >= 2.1
// (Debian's 1.13: CI), where the path does not exist; scripts/gpu-check.sh runs them on a GPU.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "attention/cuda_attention.h"
#include "model_core/runtime.h"
#include "reference.h"
#include "test_device.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::test;

namespace {

std::string whyNot() {
  if (std::string why = tensorscope::test::cudaUnavailableReason(); !why.empty()) return why;
  if (!sdpaAttentionBuilt()) return "this LibTorch has no fused scaled-dot-product attention (needs 2.1+)";
  return "";
}

#define SKIP_WITHOUT_FUSED_CUDA()                                       \
  if (const std::string why = whyNot(); !why.empty()) GTEST_SKIP() << "CUDA test skipped: " << why

/// Switches the fused path for the scope, restoring it on exit.
struct FusedCudaAttention {
  explicit FusedCudaAttention(bool on) { setSdpaAttentionEnabled(on); }
  ~FusedCudaAttention() { setSdpaAttentionEnabled(true); }
};

struct Pass {
  torch::Tensor y;
  std::vector<torch::Tensor> grads;  // d/dx, then every trainable parameter's
};

Pass forwardBackward(AttentionModuleImpl& m, const torch::Tensor& x, const torch::Tensor& G, bool fused) {
  FusedCudaAttention mode(fused);
  for (auto& p : m.parameters())
    if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
  const auto xg = x.clone().requires_grad_(true);
  Pass out;
  out.y = m.forward(xg, {}).y;
  (out.y * G).sum().backward();
  out.y = out.y.detach().cpu();
  out.grads.push_back(xg.grad().cpu());
  for (const auto& p : m.parameters())
    if (p.requires_grad()) out.grads.push_back(p.grad().defined() ? p.grad().cpu() : torch::zeros_like(p).cpu());
  return out;
}

}  // namespace

TEST(CudaAttention, TheFusedPathEqualsTheAtenFormulationForEveryVariantAndCore) {
  SKIP_WITHOUT_FUSED_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  int checked = 0;
  std::uint64_t seed = 3900;
  for (bool causal : {false, true})
    for (const Case& c : coveredCases(causal, /*bias=*/true, 39 + causal, /*allKronecker=*/true)) {
      const std::string what = describe(c.spec) + " N=" + std::to_string(c.seq);
      SCOPED_TRACE(what);
      guarded(what, [&] {
        seed += 11;
        auto m = buildDouble(c.spec, seed);
        perturbParameters(*m, seed + 1);
        m->to(cuda, torch::kFloat);
        m->eval();
        const auto x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2).to(cuda, torch::kFloat);
        const auto G = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 3).to(cuda, torch::kFloat);
        const Pass aten = forwardBackward(*m, x, G, false), fused = forwardBackward(*m, x, G, true);
        expectClose(fused.y, aten.y, 2e-5, "y");
        ASSERT_EQ(fused.grads.size(), aten.grads.size());
        for (std::size_t i = 0; i < fused.grads.size(); ++i)
          expectClose(fused.grads[i], aten.grads[i], 5e-5, i == 0 ? "d/dx" : "d/dparameter " + std::to_string(i));
        ++checked;
      });
    }
  EXPECT_GE(checked, 60) << "the covered cases shrank";
}

TEST(CudaAttention, HeadMixingIsTheEinsumOfItsDefinitionInFloat64) {
  SKIP_WITHOUT_FUSED_CUDA();
  const auto opts = torch::TensorOptions().device(torch::kCUDA, 0).dtype(torch::kDouble);
  torch::manual_seed(39);
  for (const int64_t G : {12, 4, 1})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("G=" + std::to_string(G) + (causal ? " causal" : ""));
      const int64_t B = 2, N = 9, R = 12, W = R / G;
      const auto q = torch::randn({B, N, R}, opts), k = torch::randn({B, N, R}, opts), v = torch::randn({B, N, R}, opts);
      const auto rows = torch::randn({G, R}, opts);
      const double scale = 0.37;
      // logits[b, g, n, m] = scale·Σ_s rows[g, s]·q[b, n, s]·k[b, m, s]
      auto logits = at::einsum("gs,bns,bms->bgnm", {rows, q, k}) * scale;
      if (causal) logits = logits.masked_fill(torch::ones({N, N}, opts).triu(1).to(torch::kBool), -INFINITY);
      const auto P = logits.softmax(-1);
      const auto expected = at::einsum("bgnm,bmgw->bngw", {P, v.view({B, N, G, W})}).reshape({B, N, R});
      expectClose(sdpaHeadMixing(q, k, v, rows, scale, causal).cpu(), expected.cpu(), 1e-12, "omega");
    }
}

TEST(CudaAttention, DenseThsaMemoryGrowsLinearlyInN) {
  SKIP_WITHOUT_FUSED_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  // Causal dense THSA, R = 64, B = 1: one float32 [B, R, N, N] tensor is 256 MiB at N = 2048 and
  // 1 GiB at N = 4096; the ATen formulation keeps four to five of them for backward.
  auto s = thsaPresetSpec(spec::Variant::Thsa, "thsa", 64, 8, 8, /*causal=*/true, /*bias=*/false);
  auto peakAt = [&](int64_t N) {
    auto m = makeAttentionModule(s);
    m->to(cuda, torch::kFloat);
    const auto x = torch::randn({1, N, 64}, torch::TensorOptions().device(cuda));
    synchronizeGpu();
    const double before = gpuTensorBytes().current;
    resetGpuPeak();
    m->forward(x, {}).y.sum().backward();
    synchronizeGpu();
    return gpuTensorBytes().peak - before;
  };
  const double at2048 = peakAt(2048), at4096 = peakAt(4096);
  const double naive4096 = 64.0 * 4096 * 4096 * 4;
  EXPECT_LT(at4096, 0.1 * naive4096) << "peak " << at4096 / 1048576 << " MiB at N=4096";
  EXPECT_LT(at4096 / at2048, 2.6) << "peaks " << at2048 / 1048576 << " and " << at4096 / 1048576 << " MiB";
}
