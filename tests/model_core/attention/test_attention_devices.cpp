// Every attention variant on each device (issue 16), the CUDA instances skipped with the reason
// where no CUDA device is usable (tests/common/test_device.h):
//  - float32 on the device against the slow float64 references computed on the CPU (outputs,
//    display maps, tp roles), for every case the CPU reference suite covers;
//  - float64 gradients on the device: equal to the CPU's autograd gradients (which
//    test_attention_gradients checks entry by entry against finite differences) and, for the
//    input, to a central finite difference along a random direction taken on the device itself;
//  - causal layers do not leak the future: outputs up to position t ignore later inputs, and their
//    gradients with respect to later inputs are zero.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "reference.h"
#include "test_device.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::test;
using tensorscope::test::DeviceTest;

namespace {

// float32 against float64: relative to the largest magnitude (relativeError), over sums of at most
// a few hundred products of O(1) values.
constexpr double kFloat32Tol = 2e-5;

std::string label(const Case& c) {
  return describe(c.spec) + " B=" + std::to_string(c.batch) + " N=" + std::to_string(c.seq);
}

/// Every covered case of the four (causal, bias) combinations.
std::vector<Case> allCases(std::uint32_t seed) {
  std::vector<Case> out;
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (Case& c : coveredCases(causal, bias, seed++, /*allKronecker=*/false)) out.push_back(std::move(c));
  return out;
}

/// The float64 module of `c` (seeded, perturbed) and a copy of it in `dtype` on `device`.
struct ModulePair {
  AttentionModule cpu64;
  AttentionModule onDevice;
};
ModulePair modulePair(const Case& c, std::uint64_t seed, const torch::Device& device, torch::ScalarType dtype) {
  ModulePair p{buildDouble(c.spec, seed), buildDouble(c.spec, seed)};
  perturbParameters(*p.cpu64, seed + 1);
  perturbParameters(*p.onDevice, seed + 1);
  p.onDevice->to(device, dtype);
  return p;
}

class AttentionOnDevice : public DeviceTest {};

}  // namespace

TEST_P(AttentionOnDevice, EveryVariantInFloat32MatchesTheFloat64Reference) {
  int checked = 0;
  std::uint64_t seed = 7100;
  for (const Case& c : allCases(71)) {
    const std::string what = label(c);
    SCOPED_TRACE(what);
    guarded(what, [&] {
      seed += 13;
      auto p = modulePair(c, seed, device(), torch::kFloat);
      const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2);
      const Reference ref = referenceForward(c.spec, weightsOf(*p.cpu64), x);
      torch::NoGradGuard noGrad;
      ForwardOptions all;
      all.with_maps = true;
      all.with_roles = true;
      const AttentionOutput out = p.onDevice->forward(x.to(device(), torch::kFloat), all);
      ASSERT_EQ(out.y.device(), device());
      EXPECT_EQ(out.y.scalar_type(), torch::kFloat);
      expectClose(out.y.cpu(), ref.y, kFloat32Tol, "y");
      if (c.spec.variant == spec::Variant::Multilinear && c.spec.causal)
        expectClose(at::tril(out.maps.cpu().to(torch::kDouble)), at::tril(ref.maps), kFloat32Tol, "maps (j <= i)");
      else
        expectClose(out.maps.cpu(), ref.maps, kFloat32Tol, "maps");
      if (c.spec.variant == spec::Variant::Tp) expectClose(out.roles.cpu(), ref.roles, kFloat32Tol, "roles");
      ++checked;
    });
  }
  EXPECT_GE(checked, 40) << "the covered cases shrank";
}

TEST_P(AttentionOnDevice, Float64GradientsMatchTheCpuAndFiniteDifferences) {
  int checked = 0;
  std::uint64_t seed = 8300;
  for (const Case& c : allCases(83)) {
    const std::string what = label(c);
    SCOPED_TRACE(what);
    guarded(what, [&] {
      seed += 17;
      auto p = modulePair(c, seed, device(), torch::kDouble);
      const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2);
      const torch::Tensor G = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 3);
      auto gradients = [&](AttentionModuleImpl& m, const torch::Device& d) {
        const auto xd = x.to(d).clone().requires_grad_(true);  // a leaf of its own on every device
        (m.forward(xd, {}).y * G.to(d)).sum().backward();
        std::vector<torch::Tensor> g{xd.grad().cpu()};
        for (const auto& param : m.parameters())
          if (param.requires_grad()) g.push_back(param.grad().defined() ? param.grad().cpu() : torch::zeros_like(param).cpu());
        return g;
      };
      const auto expected = gradients(*p.cpu64, torch::kCPU);
      const auto actual = gradients(*p.onDevice, device());
      ASSERT_EQ(actual.size(), expected.size());
      for (std::size_t i = 0; i < actual.size(); ++i)
        expectClose(actual[i], expected[i], 1e-9, i == 0 ? "d/dx" : "d/dparameter " + std::to_string(i));

      // The input gradient against a central difference along a random direction, on the device.
      torch::NoGradGuard noGrad;
      const auto direction = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 4).to(device());
      const auto xd = x.to(device());
      const auto Gd = G.to(device());
      constexpr double eps = 1e-6;
      auto loss = [&](const torch::Tensor& input) { return (p.onDevice->forward(input, {}).y * Gd).sum().item<double>(); };
      const double numeric = (loss(xd + eps * direction) - loss(xd - eps * direction)) / (2 * eps);
      const double analytic = (actual[0] * direction.cpu()).sum().item<double>();
      EXPECT_NEAR(analytic, numeric, 1e-6 * (1.0 + std::abs(numeric)));
      ++checked;
    });
  }
  EXPECT_GE(checked, 40) << "the covered cases shrank";
}

TEST_P(AttentionOnDevice, CausalLayersDoNotLeakTheFuture) {
  int checked = 0;
  std::uint64_t seed = 9100;
  for (bool bias : {false, true})
    for (const Case& c : coveredCases(/*causal=*/true, bias, 91 + bias, false)) {
      if (c.seq < 3) continue;
      const std::string what = label(c);
      SCOPED_TRACE(what);
      guarded(what, [&] {
        seed += 19;
        auto p = modulePair(c, seed, device(), torch::kFloat);
        const int64_t t = c.seq / 2;  // positions 0..t are the past and present
        const auto x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2).to(device(), torch::kFloat);
        auto changed = x.clone();
        {
          torch::NoGradGuard noGrad;
          changed.narrow(1, t + 1, c.seq - t - 1).normal_();
        }
        torch::Tensor y, y2;
        {
          torch::NoGradGuard noGrad;
          y = p.onDevice->forward(x, {}).y;
          y2 = p.onDevice->forward(changed, {}).y;
        }
        EXPECT_LE((y - y2).narrow(1, 0, t + 1).abs().max().item<double>(), 1e-6) << "outputs up to t moved";
        EXPECT_GT((y - y2).narrow(1, t + 1, c.seq - t - 1).abs().max().item<double>(), 0.0)
            << "later outputs ignored later inputs (the check would be vacuous)";
        const auto xg = x.detach().requires_grad_(true);
        p.onDevice->forward(xg, {}).y.narrow(1, 0, t + 1).sum().backward();
        EXPECT_EQ(xg.grad().narrow(1, t + 1, c.seq - t - 1).abs().max().item<double>(), 0.0)
            << "gradient reaches the future";
        ++checked;
      });
    }
  EXPECT_GE(checked, 10) << "the covered causal cases shrank";
}

TS_ALL_DEVICES(AttentionOnDevice);
