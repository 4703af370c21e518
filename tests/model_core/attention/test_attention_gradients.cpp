// Gradients of every variant against central finite differences in float64 (dropout 0), and the
// trainable parts of THSA cores: frozen entries of a dense core get zero gradient and keep their
// value; a Kronecker core moves only where a trainable factor reaches C.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "reference.h"
#include "spec/core_spec.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::test;

namespace {

constexpr double kEps = 1e-6;

std::string label(const Case& c) {
  return describe(c.spec) + " B=" + std::to_string(c.batch) + " N=" + std::to_string(c.seq);
}

double weightedLoss(AttentionModuleImpl& m, const torch::Tensor& x, const torch::Tensor& G) {
  torch::NoGradGuard noGrad;
  return (m.forward(x, {}).y * G).sum().item<double>();
}

/// Central difference of the loss in one entry of `storage` (a contiguous tensor the loss reads:
/// the input or a parameter), compared with the autograd value.
void expectFiniteDifference(AttentionModuleImpl& m, const torch::Tensor& x, const torch::Tensor& G,
                            const torch::Tensor& storage, std::int64_t index, double analytic,
                            const std::string& what) {
  torch::Tensor flat;
  double original = 0.0, plus = 0.0, minus = 0.0;
  {
    torch::NoGradGuard noGrad;
    flat = storage.detach().view({-1});
    original = flat[index].item<double>();
    flat[index].fill_(original + kEps);
  }
  plus = weightedLoss(m, x, G);
  {
    torch::NoGradGuard noGrad;
    flat[index].fill_(original - kEps);
  }
  minus = weightedLoss(m, x, G);
  {
    torch::NoGradGuard noGrad;
    flat[index].fill_(original);
  }
  const double numeric = (plus - minus) / (2 * kEps);
  EXPECT_NEAR(analytic, numeric, 1e-6 * (1.0 + std::abs(numeric))) << what << " flat index " << index;
}

std::vector<std::int64_t> someIndices(std::int64_t numel, int count, std::mt19937& rng) {
  std::vector<std::int64_t> out;
  if (numel <= count) {
    for (std::int64_t i = 0; i < numel; ++i) out.push_back(i);
    return out;
  }
  std::uniform_int_distribution<std::int64_t> pick(0, numel - 1);
  for (int i = 0; i < count; ++i) out.push_back(pick(rng));
  return out;
}

void checkGradientsBody(const Case& c, std::uint32_t seed) {
  AttentionModule m = buildDouble(c.spec, seed);
  perturbParameters(*m, seed + 1, 0.2);
  m->train();  // dropout is 0: train mode must compute the same function
  const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed + 2);
  torch::manual_seed(seed + 3);
  const torch::Tensor G = torch::randn({c.batch, c.seq, c.spec.sizes.F}, torch::kDouble);

  const torch::Tensor xg = x.clone().requires_grad_(true);
  m->zero_grad();
  (m->forward(xg, {}).y * G).sum().backward();
  ASSERT_TRUE(xg.grad().defined());

  std::mt19937 rng(seed);
  const torch::Tensor xWork = x.clone();
  const torch::Tensor xGrad = xg.grad().reshape({-1});
  for (std::int64_t i : someIndices(xWork.numel(), 4, rng))
    expectFiniteDifference(*m, xWork, G, xWork, i, xGrad[i].item<double>(), "input x");

  int checkedParameters = 0;
  for (const auto& item : m->named_parameters()) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad()) continue;
    ASSERT_TRUE(p.grad().defined()) << "parameter " << item.key() << " got no gradient";
    const torch::Tensor grad = p.grad().reshape({-1}).clone();
    for (std::int64_t i : someIndices(p.numel(), 3, rng))
      expectFiniteDifference(*m, xWork, G, p, i, grad[i].item<double>(), "parameter " + item.key());
    ++checkedParameters;
  }
  EXPECT_GE(checkedParameters, 4);  // at least wq, wk, wv, wo
}

void checkGradients(const Case& c, std::uint32_t seed) {
  SCOPED_TRACE(label(c));
  guarded(label(c), [&] { checkGradientsBody(c, seed); });
}

void checkVariant(spec::Variant variant) {
  std::uint32_t seed = 300 + 11 * static_cast<std::uint32_t>(variant);
  for (bool causal : {false, true})
    for (bool bias : {false, true})
      for (const Case& c : casesOf(variant, causal, bias, ++seed, false)) checkGradients(c, seed * 5);
}

/// One SGD step on every trainable parameter for a random loss; returns C before and after.
std::pair<torch::Tensor, torch::Tensor> coreBeforeAndAfterStep(AttentionModule& m, const Case& c, std::uint32_t seed) {
  const torch::Tensor before = m->effectiveCore().detach().clone();
  const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, seed);
  m->zero_grad();
  m->forward(x, {}).y.pow(2).sum().backward();
  {
    torch::NoGradGuard noGrad;
    for (torch::Tensor& p : m->parameters())
      if (p.requires_grad() && p.grad().defined()) p.sub_(0.5 * p.grad());
  }
  return {before, m->effectiveCore().detach().clone()};
}

torch::Tensor maskTensor(const std::vector<unsigned char>& mask, int R) {
  std::vector<std::int64_t> v(mask.begin(), mask.end());
  return torch::tensor(v, torch::kLong).reshape({R, R}).to(torch::kBool);
}

/// The dense core of `c` (partial mask): the [R, R] parameter gets zero gradient on frozen
/// entries and non-zero gradient on trainable ones; an SGD step moves exactly the trainable entries.
void checkDenseCoreTraining(const Case& c) {
  const int R = c.spec.sizes.R;
  const torch::Tensor trainable = maskTensor(c.spec.core->trainable_mask, R);
  AttentionModule m = buildDouble(c.spec, 72);
  const torch::Tensor before = m->effectiveCore().detach().clone();
  const torch::Tensor x = randomInput(c.batch, c.seq, c.spec.sizes.F, 73);
  m->zero_grad();
  m->forward(x, {}).y.pow(2).sum().backward();
  int coreTensorsWithGrad = 0;
  for (const auto& item : m->named_parameters()) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad() || p.sizes().vec() != std::vector<std::int64_t>{R, R} || !p.grad().defined()) continue;
    ++coreTensorsWithGrad;
    const torch::Tensor g = p.grad().detach();
    EXPECT_EQ(g.masked_select(trainable.logical_not()).abs().max().item<double>(), 0.0)
        << item.key() << ": frozen entries got gradient";
    EXPECT_GT(g.masked_select(trainable).abs().min().item<double>(), 0.0)
        << item.key() << ": a trainable entry got no gradient";
  }
  EXPECT_EQ(coreTensorsWithGrad, 1) << "expected exactly one [R, R] core parameter";
  {
    torch::NoGradGuard noGrad;
    for (torch::Tensor& p : m->parameters())
      if (p.requires_grad() && p.grad().defined()) p.sub_(0.5 * p.grad());
  }
  const torch::Tensor after = m->effectiveCore().detach();
  const torch::Tensor changed = (after - before).abs() > 0;
  EXPECT_FALSE(changed.masked_select(trainable.logical_not()).any().item<bool>())
      << "a frozen entry of C moved:\n" << before << "\n" << after;
  EXPECT_TRUE(changed.masked_select(trainable).all().item<bool>()) << "a trainable entry of C did not move";
}

}  // namespace

TEST(AttentionGradients, MhsaFixedHeadAndTpMatchFiniteDifferences) {
  checkVariant(spec::Variant::Mhsa);
  checkVariant(spec::Variant::FixedHead);
  checkVariant(spec::Variant::Tp);
}

TEST(AttentionGradients, ThsaAndThsaLinearMatchFiniteDifferences) {
  checkVariant(spec::Variant::Thsa);
  checkVariant(spec::Variant::ThsaLinear);
}

TEST(AttentionGradients, MultilinearAndDimwiseMatchFiniteDifferences) {
  checkVariant(spec::Variant::Multilinear);
  checkVariant(spec::Variant::Dimwise);
}

TEST(AttentionGradients, DenseCoreFrozenEntriesGetZeroGradientAndKeepTheirValue) {
  for (spec::Variant v : {spec::Variant::Thsa, spec::Variant::ThsaLinear})
    for (bool causal : {false, true}) {
      spec::Sizes z;
      z.F = 6;
      z.H = 1;
      z.R = z.D = 5;
      spec::AttentionSpec s = makeSpec(v, z, causal, true);
      s.core = customDenseCore(z.R, 71 + (causal ? 1 : 0));
      const Case c{s, 2, 4};
      SCOPED_TRACE(label(c));
      guarded(label(c), [&] { checkDenseCoreTraining(c); });
    }
}

TEST(AttentionGradients, KroneckerCoreMovesOnlyWhereTrainableFactorsReach) {
  std::uint32_t seed = 900;
  for (spec::Variant v : {spec::Variant::Thsa, spec::Variant::ThsaLinear})
    for (const Case& c0 : casesOf(v, true, false, ++seed, true)) {
      if (!c0.spec.core || c0.spec.core->structure != spec::CoreStructure::Kronecker) continue;
      Case c = c0;
      c.seq = std::max(c.seq, 3);  // one token: the softmax (or normalisation) is 1 whatever C is
      const spec::CoreSpec core = *c0.spec.core;
      SCOPED_TRACE(label(c));
      guarded(label(c), [&] {
        const int H = c.spec.sizes.H, D = c.spec.sizes.D, R = c.spec.sizes.R;
        AttentionModule m = buildDouble(c.spec, seed);
        const auto [before, after] = coreBeforeAndAfterStep(m, c, seed + 1);
        const torch::Tensor reach = maskTensor(spec::coreTrainableEntries(core, H, D, R), R);
        const torch::Tensor changed = (after - before).abs() > 0;
        EXPECT_FALSE(changed.masked_select(reach.logical_not()).any().item<bool>())
            << "C moved where no trainable factor reaches it";
        if (core.isFrozen()) {
          EXPECT_FALSE(changed.any().item<bool>());
        } else {
          EXPECT_TRUE(changed.any().item<bool>()) << "a trainable core did not move";
        }
      });
    }
}
