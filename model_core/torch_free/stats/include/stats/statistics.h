#pragma once
/// The statistics of sweep reports (issue 37): the Student t distribution, Welch's unequal-variance
/// t-test and interval, the paired t interval, the exact paired permutation (sign-flip) test and
/// Holm's step-down correction. Plain C++ (torch-free, no dependencies); docs/sweeps.md describes
/// each statistic and its formula.

#include <cstddef>
#include <optional>
#include <vector>

namespace tensorscope::stats {

/// Arithmetic mean; 0 for no values.
double mean(const std::vector<double>& v);
/// Sample standard deviation (divisor n - 1); 0 below two values.
double sampleStd(const std::vector<double>& v);

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1], by the continued
/// fraction of the incomplete beta integral evaluated with the modified Lentz method (Press et al.,
/// Numerical Recipes, 3rd ed., section 6.4; the fraction converges fast for x < (a + 1) / (a + b + 2),
/// and I_x(a, b) = 1 - I_{1-x}(b, a) is used beyond). Throws std::invalid_argument outside the domain.
double regularizedIncompleteBeta(double a, double b, double x);

/// P(T <= t) for Student's t with `df` > 0 degrees of freedom (df need not be an integer: Welch's
/// df is not): with x = df / (df + t^2), P(|T| >= |t|) = I_x(df / 2, 1 / 2).
double studentTCdf(double t, double df);
/// Two-sided p-value P(|T| >= |t|).
double studentTTwoSided(double t, double df);
/// The p-quantile of Student's t (p in (0, 1)), by bisection on studentTCdf to 1e-12 relative.
double studentTQuantile(double p, double df);

/// A difference of means (a - b) with its t statistic, degrees of freedom, two-sided p and
/// confidence interval.
struct TTest {
  double difference = 0;
  double standard_error = 0;
  double df = 0;
  double t = 0;
  double p = 1;
  double low = 0, high = 0;  ///< the confidence interval of the difference
};

/// Welch's unequal-variance t-test of mean(a) - mean(b): se = sqrt(s_a^2/n_a + s_b^2/n_b), the
/// Welch-Satterthwaite df = se^4 / ((s_a^2/n_a)^2/(n_a-1) + (s_b^2/n_b)^2/(n_b-1)), and the interval
/// difference ± t_{(1+confidence)/2, df} se. Both samples need two values or more (else
/// std::invalid_argument). Where both samples are constant (se = 0) the interval is the difference
/// itself and p is 1 when the means are equal, 0 otherwise (df is then n_a + n_b - 2).
TTest welchTest(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95);

/// The paired t-test and interval of the mean of `differences` (n >= 2): se = s_d / sqrt(n),
/// df = n - 1, mean ± t_{(1+confidence)/2, n-1} se. Constant differences: as welchTest.
TTest pairedTTest(const std::vector<double>& differences, double confidence = 0.95);

/// The exact two-sided paired permutation (sign-flip) test of H0 "each difference is as likely
/// positive as negative": the share of the 2^n sign assignments s whose |sum s_i |d_i|| is at least
/// the observed |sum d_i| (the observed one counts). Exact for n <= kMaxSignFlipPairs by enumerating
/// both halves' 2^(n/2) sums and counting pairs (meet in the middle); sums within 1e-9 of the
/// observed one relative to sum |d_i| count as ties (at least as extreme). n = 0 gives 1. Throws
/// std::invalid_argument above kMaxSignFlipPairs.
inline constexpr std::size_t kMaxSignFlipPairs = 40;
double signFlipPValue(const std::vector<double>& differences);
/// The smallest p-value the sign-flip test can give with n pairs: 2 / 2^n (1 for n = 0).
double smallestSignFlipP(std::size_t n);
/// The fewest pairs with which the sign-flip test can reach `alpha`: the least n with 2 / 2^n <= alpha.
std::size_t signFlipPairsNeeded(double alpha);

/// Holm's step-down adjusted p-values, in the input's order: with p sorted ascending p_(1..m),
/// adj_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)). Rejecting where adj <= alpha is Holm's
/// procedure at family-wise level alpha.
std::vector<double> holmAdjust(const std::vector<double>& p);

}  // namespace tensorscope::stats
