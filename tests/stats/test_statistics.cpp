// The statistics of sweep reports against values computed by hand: closed forms of Student's t for
// df = 1, 2 and 4, a worked three-seed comparison, the sign-flip test enumerated by hand, Holm on a
// hand example.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "stats/statistics.h"

namespace ts = tensorscope::stats;

TEST(Statistics, IncompleteBetaClosedForms) {
  // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b; I_{1/2}(a, a) = 1/2 by symmetry.
  EXPECT_NEAR(ts::regularizedIncompleteBeta(1, 1, 0.3), 0.3, 1e-14);
  EXPECT_NEAR(ts::regularizedIncompleteBeta(3, 1, 0.6), 0.216, 1e-14);
  EXPECT_NEAR(ts::regularizedIncompleteBeta(1, 4, 0.2), 1 - std::pow(0.8, 4), 1e-14);
  EXPECT_NEAR(ts::regularizedIncompleteBeta(7.5, 7.5, 0.5), 0.5, 1e-13);
  // I_x(2, 2) = 3x^2 - 2x^3 (the integral of 6t(1-t)); x = 0.9 takes the symmetric branch.
  EXPECT_NEAR(ts::regularizedIncompleteBeta(2, 2, 0.9), 3 * 0.81 - 2 * 0.729, 1e-13);
  EXPECT_EQ(ts::regularizedIncompleteBeta(2, 3, 0), 0);
  EXPECT_EQ(ts::regularizedIncompleteBeta(2, 3, 1), 1);
  EXPECT_THROW(ts::regularizedIncompleteBeta(0, 1, 0.5), std::invalid_argument);
  EXPECT_THROW(ts::regularizedIncompleteBeta(1, 1, 1.5), std::invalid_argument);
}

TEST(Statistics, StudentTCdfClosedForms) {
  // df = 1 is Cauchy: F(t) = 1/2 + atan(t)/pi; df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
  EXPECT_NEAR(ts::studentTCdf(1, 1), 0.75, 1e-13);
  EXPECT_NEAR(ts::studentTCdf(-3, 1), 0.5 + std::atan(-3.0) / M_PI, 1e-13);
  EXPECT_NEAR(ts::studentTCdf(2, 2), 0.5 + 2 / (2 * std::sqrt(6.0)), 1e-13);
  EXPECT_NEAR(ts::studentTCdf(0, 7.3), 0.5, 1e-15);
  // df = 4: F(t) = 1/2 + (3/8) u (1 - t^2 / (12 (1 + t^2/4))) with u = t / sqrt(1 + t^2/4): at t = 1,
  // u = 1/sqrt(1.25), F = 1/2 + 3/8 * 0.894427191 * (1 - 1/(12 * 1.25)) = 0.8130495168.
  EXPECT_NEAR(ts::studentTCdf(1, 4), 0.5 + 3.0 / 8 * (1 / std::sqrt(1.25)) * (1 - 1 / 15.0), 1e-12);
  EXPECT_NEAR(ts::studentTTwoSided(1, 1), 0.5, 1e-13);
  EXPECT_EQ(ts::studentTTwoSided(INFINITY, 3), 0);
}

TEST(Statistics, StudentTQuantilesOfTables) {
  // The 97.5% quantiles of every t table: 12.706 (df 1), 4.303 (2), 2.776 (4), 2.228 (10); closed
  // forms for df 1 (tan(pi (p - 1/2))) and df 2 ((2p - 1) / sqrt(2p(1-p))) to more digits.
  EXPECT_NEAR(ts::studentTQuantile(0.975, 1), std::tan(M_PI * 0.475), 1e-9);
  EXPECT_NEAR(ts::studentTQuantile(0.975, 1), 12.706, 5e-4);
  EXPECT_NEAR(ts::studentTQuantile(0.975, 2), 0.95 / std::sqrt(2 * 0.975 * 0.025), 1e-10);
  EXPECT_NEAR(ts::studentTQuantile(0.975, 4), 2.776445105, 1e-8);
  EXPECT_NEAR(ts::studentTQuantile(0.975, 10), 2.228138852, 1e-8);
  EXPECT_NEAR(ts::studentTQuantile(0.025, 10), -2.228138852, 1e-8);
  EXPECT_NEAR(ts::studentTQuantile(0.995, 30), 2.749995652, 1e-7);
  EXPECT_EQ(ts::studentTQuantile(0.5, 3), 0);
  EXPECT_THROW(ts::studentTQuantile(1, 3), std::invalid_argument);
  EXPECT_THROW(ts::studentTQuantile(0.9, 0), std::invalid_argument);
}

// The worked three-seed example of docs/sweeps.md. A design's final losses over seeds 1, 2, 3 are
// (2.0, 2.2, 2.1), the baseline's (2.3, 2.4, 2.5).
//   Paired: differences d = (-0.3, -0.2, -0.4), mean -0.3, deviations (0, 0.1, -0.1), s_d^2 = 0.02/2
//   = 0.01, s_d = 0.1, se = 0.1/sqrt(3) = 0.0577350, t = -0.3/se = -3 sqrt(3) = -5.1961524, df = 2.
//   Two-sided p for df 2 is 1 - |t| / sqrt(2 + t^2) = 1 - 5.1961524/sqrt(29) = 0.0350987.
//   t_{0.975, 2} = 0.95 / sqrt(2 * 0.975 * 0.025) = 4.3026527; half width 4.3026527 * 0.0577350 =
//   0.2484138: the interval [-0.5484138, -0.0515862].
//   Welch: means 2.1 and 2.4, s^2 = 0.01 each, s^2/n = 0.01/3 each, se = sqrt(0.02/3) = 0.0816497,
//   t = -0.3/se = -3.6742346, df = (0.02/3)^2 / (2 (0.01/3)^2 / 2) = 4. F_4(3.6742346) by the df = 4
//   closed form: u = t/sqrt(1 + t^2/4) = 1.7566201, F = 1/2 + 3/8 u (1 - t^2/(12 (1 + t^2/4)))
//   = 0.9893442, p = 2 (1 - F) = 0.0213116. t_{0.975, 4} = 2.7764451; half width 0.2266958.
//   Sign flip: all three differences negative: only "all negative" and "all positive" reach |sum|
//   0.9 among the 8 assignments: p = 2/8 = 0.25.
TEST(Statistics, WorkedThreeSeedExample) {
  const std::vector<double> design{2.0, 2.2, 2.1}, baseline{2.3, 2.4, 2.5};
  const auto paired = ts::pairedTTest({-0.3, -0.2, -0.4});
  EXPECT_NEAR(paired.difference, -0.3, 1e-12);
  EXPECT_NEAR(paired.standard_error, 0.1 / std::sqrt(3.0), 1e-12);
  EXPECT_EQ(paired.df, 2);
  EXPECT_NEAR(paired.t, -3 * std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(paired.p, 1 - 3 * std::sqrt(3.0) / std::sqrt(29.0), 1e-10);
  EXPECT_NEAR(paired.p, 0.0350987, 1e-7);
  EXPECT_NEAR(paired.low, -0.5484138, 1e-7);
  EXPECT_NEAR(paired.high, -0.0515862, 1e-7);

  const auto welch = ts::welchTest(design, baseline);
  EXPECT_NEAR(welch.difference, -0.3, 1e-12);
  EXPECT_NEAR(welch.standard_error, std::sqrt(0.02 / 3), 1e-12);
  EXPECT_NEAR(welch.df, 4, 1e-9);
  EXPECT_NEAR(welch.t, -3.6742346, 1e-7);
  EXPECT_NEAR(welch.p, 0.0213116, 1e-7);
  EXPECT_NEAR(welch.low, -0.3 - 0.2266958, 1e-7);
  EXPECT_NEAR(welch.high, -0.3 + 0.2266958, 1e-7);

  EXPECT_DOUBLE_EQ(ts::signFlipPValue({-0.3, -0.2, -0.4}), 0.25);
}

TEST(Statistics, WelchDegreesOfFreedomOfUnequalSamples) {
  // a = (1, 2, 3, 4): mean 2.5, s^2 = 5/3, s^2/n = 5/12; b = (2, 4): mean 3, s^2 = 2, s^2/n = 1.
  // se^2 = 17/12; df = (17/12)^2 / ((5/12)^2/3 + 1^2/1) = (289/144) / (457/432) = 867/457.
  const auto w = ts::welchTest({1, 2, 3, 4}, {2, 4});
  EXPECT_NEAR(w.difference, -0.5, 1e-14);
  EXPECT_NEAR(w.standard_error, std::sqrt(17.0 / 12), 1e-14);
  EXPECT_NEAR(w.df, 867.0 / 457, 1e-12);
  EXPECT_NEAR(w.t, -0.5 / std::sqrt(17.0 / 12), 1e-13);
  EXPECT_THROW(ts::welchTest({1}, {2, 3}), std::invalid_argument);
}

TEST(Statistics, ConstantSamples) {
  const auto same = ts::welchTest({1, 1}, {1, 1});
  EXPECT_EQ(same.p, 1);
  EXPECT_EQ(same.low, 0);
  const auto apart = ts::welchTest({1, 1}, {2, 2});
  EXPECT_EQ(apart.p, 0);
  EXPECT_EQ(apart.low, -1);
  EXPECT_EQ(apart.high, -1);
  EXPECT_EQ(ts::pairedTTest({0.5, 0.5, 0.5}).p, 0);
}

TEST(Statistics, SignFlipByHand) {
  // Differences all of one sign: only the observed assignment and its mirror reach |sum|: 2/2^n.
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({0.1, 0.2, 0.3}), 2.0 / 8);
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({-1, -2, -3, -4}), 2.0 / 16);
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({1, 2, 3, 4, 5}), 2.0 / 32);
  // d = (3, -1, 2): observed sum 4. The 8 signed sums of (3, 1, 2): 6, 2, 4, 0, 0, -4, -2, -6;
  // four have |sum| >= 4: p = 4/8.
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({3, -1, 2}), 0.5);
  // d = (1, 1, -1, 1): sum 2; the signed sums of four ones are 4 (1 way), 2 (4), 0 (6), -2 (4),
  // -4 (1): |sum| >= 2 in 10 of 16.
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({1, 1, -1, 1}), 10.0 / 16);
  // Sums meeting the observed one exactly in floating point (0.1 + 0.2 vs 0.3) count as ties.
  // d = (0.1, 0.2, -0.3, 0.6): observed 0.6. The 16 signed sums of (0.1, 0.2, 0.3, 0.6) are, in
  // exact arithmetic, +-1.2, +-1.0, +-0.8, +-0.6 twice each sign (0.1+0.2-0.3+0.6, -0.1-0.2+0.3+0.6),
  // +-0.4, +-0.2, 0 twice: |sum| >= 0.6 in 2+2+2+4 = 10 of 16; the ties count although 0.1 + 0.2 is
  // 0.30000000000000004 in doubles.
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({0.1, 0.2, -0.3, 0.6}), 10.0 / 16);
  EXPECT_DOUBLE_EQ(ts::signFlipPValue({0.1, 0.2, -0.3}), 1.0);  // observed sum 0: everything as extreme
  EXPECT_EQ(ts::signFlipPValue({}), 1);
  EXPECT_EQ(ts::signFlipPValue({0, 0}), 1);
  // Twenty positive differences: 2/2^20, enumerated exactly (2^10 x 2^10 sums).
  EXPECT_DOUBLE_EQ(ts::signFlipPValue(std::vector<double>(20, 0.01)), 2.0 / 1048576);
  EXPECT_THROW(ts::signFlipPValue(std::vector<double>(41, 1.0)), std::invalid_argument);
}

TEST(Statistics, SignFlipAttainableLevels) {
  EXPECT_EQ(ts::smallestSignFlipP(5), 0.0625);
  EXPECT_EQ(ts::signFlipPairsNeeded(0.05), 6u);   // 2/32 = 0.0625 > 0.05, 2/64 = 0.03125
  EXPECT_EQ(ts::signFlipPairsNeeded(0.01), 8u);   // 2/128 = 0.0156 > 0.01, 2/256 = 0.0078
  EXPECT_EQ(ts::signFlipPairsNeeded(0.0625), 5u);
}

TEST(Statistics, HolmByHand) {
  // p = (0.01, 0.04, 0.03), m = 3. Sorted: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised
  // to the running maximum 0.06. In the input's order: (0.03, 0.06, 0.06).
  const auto adj = ts::holmAdjust({0.01, 0.04, 0.03});
  ASSERT_EQ(adj.size(), 3u);
  EXPECT_NEAR(adj[0], 0.03, 1e-15);
  EXPECT_NEAR(adj[1], 0.06, 1e-15);
  EXPECT_NEAR(adj[2], 0.06, 1e-15);
  // Capped at 1; one test is its own adjustment.
  const auto capped = ts::holmAdjust({0.6, 0.5});
  EXPECT_EQ(capped[0], 1);
  EXPECT_EQ(capped[1], 1);
  EXPECT_EQ(ts::holmAdjust({0.02})[0], 0.02);
  EXPECT_TRUE(ts::holmAdjust({}).empty());
  EXPECT_THROW(ts::holmAdjust({1.5}), std::invalid_argument);
}
