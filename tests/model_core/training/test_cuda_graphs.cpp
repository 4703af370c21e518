// The training step captured as CUDA graphs (issue 39, training/cuda_graph_step.h) against the eager
// CUDA step, step for step: the same losses, gradient norms and weights (bit for bit with the ATen
// attention formulation, whose kernels are deterministic; to float32 rounding with the fused
// attention kernels, whose backward adds in a varying order), for MHSA and head-mixing cores; the
// captured session says so, and a model with dropout steps eagerly and says why. Skipped with the
// reason where no CUDA device is usable (CI); scripts/gpu-check.sh runs them on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>

#include "attention/cuda_attention.h"
#include "test_device.h"
#include "training/cuda_graph_step.h"
#include "training/training_session.h"
#include "training_test_util.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::testing::tinyRun;

namespace {

#define SKIP_WITHOUT_CUDA()                                                                   \
  if (const std::string why = tensorscope::test::cudaUnavailableReason(); !why.empty()) \
  GTEST_SKIP() << "CUDA test skipped: " << why

/// The first step of `s` with graphs switched on or off (read when a session's first step builds its
/// graph step), the switch restored after.
std::pair<double, double> firstStep(TrainingSession& s, bool graphs, double lr) {
  setCudaGraphsEnabled(graphs);
  const auto r = s.trainStep(lr);
  setCudaGraphsEnabled(true);
  return r;
}

double maxParameterDifference(TrainingSession& a, TrainingSession& b) {
  const auto pa = a.model()->parameters(true), pb = b.model()->parameters(true);
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST(CudaGraphs, ACapturedStepEqualsTheEagerStepStepForStep) {
  SKIP_WITHOUT_CUDA();
  for (const bool fused : {false, true})
    for (const char* preset : {"mhsa", "thsa", "skip_right"}) {
      SCOPED_TRACE(std::string(preset) + (fused ? " (fused attention)" : " (ATen attention)"));
      setSdpaAttentionEnabled(fused);
      auto c = tinyRun(preset, 10);
      c.train.device = "cuda";
      c.train.grad_clip = 0.5;  // small enough that some steps clip
      TrainingSession eager(c), captured(c);
      const double lr = 3e-3;
      // The same kernels on the same numbers: equal to float32 rounding (the fused attention's
      // backward adds in a varying order, so there the runs are not bit-identical).
      const double tolerance = fused ? 1e-5 : 1e-6;
      double worst = 0;
      const auto firstWeights = eager.model()->parameters(true).front().clone();
      for (int step = 0; step < 10; ++step) {
        SCOPED_TRACE("step " + std::to_string(step + 1));
        const auto a = step == 0 ? firstStep(eager, false, lr) : eager.trainStep(lr);
        const auto b = step == 0 ? firstStep(captured, true, lr) : captured.trainStep(lr);
        ASSERT_TRUE(std::isfinite(a.first) && std::isfinite(b.first));
        EXPECT_LE(std::abs(a.first - b.first), tolerance * std::abs(a.first)) << "loss";
        EXPECT_LE(std::abs(a.second - b.second), tolerance * std::abs(a.second)) << "gradient norm";
        worst = std::max({worst, std::abs(a.first - b.first) / std::abs(a.first), std::abs(a.second - b.second) / std::abs(a.second)});
      }
      std::cout << preset << (fused ? " fused" : " aten") << ": largest relative difference of loss and norm "
                << worst << ", of weights " << maxParameterDifference(eager, captured) << "\n";
      // The steps updated the weights (a graph that skipped the update would pass the checks above
      // only if the eager step skipped it too).
      EXPECT_GT((eager.model()->parameters(true).front() - firstWeights).abs().max().item<double>(), 1e-4);
      EXPECT_EQ(captured.stepMode(), "captured");
      EXPECT_EQ(eager.stepMode(), "eager: CUDA graphs are switched off");
      EXPECT_EQ(captured.step(), 10);
      EXPECT_EQ(captured.optimizer().stepCount(), 10);
      EXPECT_LE(maxParameterDifference(eager, captured), fused ? 1e-5 : 1e-6);
    }
  setSdpaAttentionEnabled(true);
}

TEST(CudaGraphs, AModelWithDropoutStepsEagerlyAndSaysWhy) {
  SKIP_WITHOUT_CUDA();
  auto c = tinyRun("mhsa", 3);
  c.train.device = "cuda";
  c.model.residual_dropout = 0.1;
  TrainingSession s(c);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isfinite(s.trainStep(1e-3).first));
  EXPECT_EQ(s.stepMode(), "eager: the model has dropout");
  EXPECT_EQ(s.step(), 3);
}

TEST(CudaGraphs, ANonFiniteLossSkipsTheUpdateAsTheEagerStepDoes) {
  SKIP_WITHOUT_CUDA();
  auto c = tinyRun("thsa", 4);
  c.train.device = "cuda";
  TrainingSession s(c);
  s.trainStep(1e-3);
  s.trainStep(1e-3);
  ASSERT_EQ(s.stepMode(), "captured");
  ASSERT_EQ(s.step(), 2);
  // A NaN in one weight (written in place, as the graph reads it) makes the replayed loss NaN: the
  // update graph must not run, so every other weight and the step counts stay as they were.
  auto params = s.model()->parameters(true);
  {
    torch::NoGradGuard noGrad;
    params.front().view(-1)[0].fill_(std::nan(""));
  }
  std::vector<torch::Tensor> before;
  for (std::size_t i = 1; i < params.size(); ++i) before.push_back(params[i].clone());
  const auto r = s.trainStep(1e-3);
  EXPECT_FALSE(std::isfinite(r.first));
  EXPECT_EQ(s.step(), 2);
  EXPECT_EQ(s.optimizer().stepCount(), 2);
  for (std::size_t i = 1; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], before[i - 1])) << "parameter " << i;
  EXPECT_EQ(s.stepMode(), "captured");
}
