// AdamW and the schedule against the formulas they implement, computed by hand in double.
#include <gtest/gtest.h>

#include <cmath>

#include "training/adamw.h"

using namespace tensorscope::model_core;

TEST(AdamW, MatchesTheUpdateFormulaOverSeveralSteps) {
  auto w = torch::tensor({{0.5, -1.0}, {2.0, 0.25}}, torch::kDouble).requires_grad_(true);
  auto b = torch::tensor({0.1, -0.2}, torch::kDouble).requires_grad_(true);
  AdamW opt({{"w", w}, {"b", b}}, {0.9, 0.98, 1e-8, 0.1});
  double rw[4] = {0.5, -1.0, 2.0, 0.25}, rb[2] = {0.1, -0.2};
  double mw[4] = {}, vw[4] = {}, mb[2] = {}, vb[2] = {};
  const double lr = 0.01;
  for (int t = 1; t <= 3; ++t) {
    opt.zeroGrad();
    ((w * w).sum() * 0.5 + (b * 3.0).sum()).backward();  // dL/dw = w, dL/db = 3
    opt.step(lr);
    const double c1 = 1 - std::pow(0.9, t), c2 = 1 - std::pow(0.98, t);
    for (int i = 0; i < 4; ++i) {
      const double g = rw[i];
      rw[i] *= 1 - lr * 0.1;  // decoupled decay on matrices
      mw[i] = 0.9 * mw[i] + 0.1 * g;
      vw[i] = 0.98 * vw[i] + 0.02 * g * g;
      rw[i] -= lr * (mw[i] / c1) / (std::sqrt(vw[i] / c2) + 1e-8);
    }
    for (int i = 0; i < 2; ++i) {  // no decay on vectors
      mb[i] = 0.9 * mb[i] + 0.1 * 3.0;
      vb[i] = 0.98 * vb[i] + 0.02 * 9.0;
      rb[i] -= lr * (mb[i] / c1) / (std::sqrt(vb[i] / c2) + 1e-8);
    }
  }
  const auto wf = w.detach().flatten();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(wf[i].item<double>(), rw[i], 1e-12);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(b[i].item<double>(), rb[i], 1e-12);
  EXPECT_EQ(opt.stepCount(), 3);
}

TEST(AdamW, StateRoundTripAndMismatchMessage) {
  auto w = torch::ones({2, 2}, torch::kDouble).requires_grad_(true);
  AdamW a({{"w", w}}, {});
  w.sum().backward();
  a.step(0.1);
  std::map<std::string, torch::Tensor> st;
  for (auto& [n, t] : a.state()) st[n] = t.clone();
  auto w2 = torch::ones({2, 2}, torch::kDouble).requires_grad_(true);
  AdamW b({{"w", w2}}, {});
  b.loadState(st, a.stepCount());
  EXPECT_TRUE(torch::equal(b.state()[0].second, a.state()[0].second));
  st.erase("exp_avg.w");
  try {
    b.loadState(st, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("missing 'exp_avg.w'"), std::string::npos);
  }
}

TEST(Schedule, WarmupThenCosineToFloor) {
  EXPECT_DOUBLE_EQ(scheduledLr(5, 100, 10, 1.0, 0.1), 0.5);
  EXPECT_DOUBLE_EQ(scheduledLr(10, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_NEAR(scheduledLr(55, 100, 10, 1.0, 0.1), 0.1 + 0.9 * 0.5, 1e-12);  // half-way: cos(pi/2)
  EXPECT_NEAR(scheduledLr(100, 100, 10, 1.0, 0.1), 0.1, 1e-12);
}

TEST(ClipGradNorm, ScalesToTheLimitAndReportsTheNorm) {
  auto p = torch::zeros({2}, torch::kDouble).requires_grad_(true);
  (p * torch::tensor({3.0, 4.0}, torch::kDouble)).sum().backward();
  EXPECT_NEAR(clipGradNorm({p}, 1.0), 5.0, 1e-12);
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.0, 1e-5);
}
