// The statistics of sweep reports; stats/statistics.h documents each function and docs/sweeps.md
// their formulas.
#include "stats/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tensorscope::stats {

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double sampleStd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

namespace {

/// The continued fraction of I_x(a, b) (Numerical Recipes' betacf), by the modified Lentz method:
/// I_x(a,b) = x^a (1-x)^b / (a B(a,b)) * 1/(1+ d_1/(1+ d_2/(1+ ...))) with
/// d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)) and d_{2m} = m(b-m) x / ((a+2m-1)(a+2m)).
double betaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  constexpr int kMaxIterations = 10000;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));  // the even step d_{2m}
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));  // the odd step d_{2m+1}
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1) < kEps) return h;
  }
  throw std::runtime_error("the incomplete beta continued fraction did not converge for a = " + std::to_string(a) +
                           ", b = " + std::to_string(b) + ", x = " + std::to_string(x) + "; a bug: please report it");
}

}  // namespace

double regularizedIncompleteBeta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !std::isfinite(a) || !std::isfinite(b))
    throw std::invalid_argument("the incomplete beta function needs a > 0 and b > 0; got a = " + std::to_string(a) +
                                ", b = " + std::to_string(b));
  if (!(x >= 0 && x <= 1)) throw std::invalid_argument("the incomplete beta function needs x in [0, 1]; got " + std::to_string(x));
  if (x == 0) return 0;
  if (x == 1) return 1;
  // The factor x^a (1-x)^b / B(a, b), through logarithms (B(a,b) = Γ(a)Γ(b)/Γ(a+b)).
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * betaContinuedFraction(a, b, x) / a;
  return 1 - front * betaContinuedFraction(b, a, 1 - x) / b;
}

double studentTTwoSided(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("Student's t needs df > 0; got " + std::to_string(df));
  if (std::isnan(t)) throw std::invalid_argument("Student's t of NaN");
  if (std::isinf(t)) return 0;
  return regularizedIncompleteBeta(df / 2, 0.5, df / (df + t * t));
}

double studentTCdf(double t, double df) {
  const double tail = studentTTwoSided(t, df) / 2;  // P(T >= |t|)
  return t > 0 ? 1 - tail : tail;
}

double studentTQuantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("a quantile needs p in (0, 1); got " + std::to_string(p));
  if (!(df > 0)) throw std::invalid_argument("Student's t needs df > 0; got " + std::to_string(df));
  if (p == 0.5) return 0;
  // Symmetric: solve for the upper tail, bracketing [0, hi] with hi doubled until it holds the quantile.
  const double q = p > 0.5 ? p : 1 - p;
  double lo = 0, hi = 1;
  while (studentTCdf(hi, df) < q) {
    lo = hi, hi *= 2;
    if (hi > 1e300) throw std::runtime_error("the t quantile is beyond every double (p = " + std::to_string(p) + ")");
  }
  for (int i = 0; i < 400 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (studentTCdf(mid, df) < q ? lo : hi) = mid;
  }
  const double t = (lo + hi) / 2;
  return p > 0.5 ? t : -t;
}

namespace {

void checkConfidence(double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("a confidence level is in (0, 1), e.g. 0.95; got " + std::to_string(confidence));
}

/// The test and interval of an estimate with its standard error and df.
TTest fromEstimate(double difference, double se, double df, double confidence) {
  TTest r;
  r.difference = difference, r.standard_error = se, r.df = df;
  if (se == 0) {  // constant samples: nothing varies, the difference is what it is
    r.t = difference == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), difference);
    r.p = difference == 0 ? 1 : 0;
    r.low = r.high = difference;
    return r;
  }
  r.t = difference / se;
  r.p = studentTTwoSided(r.t, df);
  const double half = studentTQuantile((1 + confidence) / 2, df) * se;
  r.low = difference - half, r.high = difference + half;
  return r;
}

}  // namespace

TTest welchTest(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  checkConfidence(confidence);
  if (a.size() < 2 || b.size() < 2)
    throw std::invalid_argument("Welch's t-test needs two values or more in each sample; got " + std::to_string(a.size()) +
                                " and " + std::to_string(b.size()));
  const double na = double(a.size()), nb = double(b.size());
  const double va = sampleStd(a) * sampleStd(a) / na, vb = sampleStd(b) * sampleStd(b) / nb;  // s^2 / n
  const double se = std::sqrt(va + vb);
  const double df = se == 0 ? na + nb - 2 : (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  return fromEstimate(mean(a) - mean(b), se, df, confidence);
}

TTest pairedTTest(const std::vector<double>& differences, double confidence) {
  checkConfidence(confidence);
  if (differences.size() < 2)
    throw std::invalid_argument("the paired t-test needs two pairs or more; got " + std::to_string(differences.size()));
  const double n = double(differences.size());
  return fromEstimate(mean(differences), sampleStd(differences) / std::sqrt(n), n - 1, confidence);
}

namespace {

/// Every signed sum of `v` (2^size of them).
std::vector<double> allSignedSums(const std::vector<double>& v) {
  std::vector<double> sums{0.0};
  sums.reserve(std::size_t(1) << v.size());
  for (double x : v) {
    const std::size_t k = sums.size();
    for (std::size_t i = 0; i < k; ++i) {
      sums.push_back(sums[i] - x);
      sums[i] += x;
    }
  }
  return sums;
}

}  // namespace

double signFlipPValue(const std::vector<double>& differences) {
  const std::size_t n = differences.size();
  if (n > kMaxSignFlipPairs)
    throw std::invalid_argument("the exact sign-flip test enumerates 2^n sign assignments; " + std::to_string(n) +
                                " pairs are more than the " + std::to_string(kMaxSignFlipPairs) + " it takes");
  if (n == 0) return 1;
  std::vector<double> mags;
  double observed = 0, scale = 0;
  for (double d : differences) {
    if (!std::isfinite(d)) throw std::invalid_argument("the sign-flip test needs finite differences");
    mags.push_back(std::abs(d));
    observed += d;
    scale += std::abs(d);
  }
  if (scale == 0) return 1;  // every difference zero: every assignment is as extreme
  const double threshold = std::abs(observed) - 1e-9 * scale;
  // Meet in the middle: every sum is l + r with l from the first half's sums and r from the second's.
  const std::vector<double> left = allSignedSums(std::vector<double>(mags.begin(), mags.begin() + long(n / 2)));
  std::vector<double> right = allSignedSums(std::vector<double>(mags.begin() + long(n / 2), mags.end()));
  std::sort(right.begin(), right.end());
  // |l + r| >= T  <=>  r >= T - l  or  r <= -T - l (the two are disjoint for T > 0).
  long double extreme = 0;
  for (double l : left) {
    extreme += double(right.end() - std::lower_bound(right.begin(), right.end(), threshold - l));
    extreme += double(std::upper_bound(right.begin(), right.end(), -threshold - l) - right.begin());
  }
  if (threshold <= 0) extreme = std::ldexp(1.0L, int(n));  // observed sum 0: every assignment counts
  return double(std::min<long double>(1, extreme / std::ldexp(1.0L, int(n))));
}

double smallestSignFlipP(std::size_t n) { return n == 0 ? 1.0 : std::ldexp(1.0, 1 - int(n)); }

std::size_t signFlipPairsNeeded(double alpha) {
  if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument("alpha is in (0, 1); got " + std::to_string(alpha));
  std::size_t n = 1;
  while (smallestSignFlipP(n) > alpha) ++n;
  return n;
}

std::vector<double> holmAdjust(const std::vector<double>& p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return p[i] < p[j]; });
  std::vector<double> adjusted(m);
  double running = 0;
  for (std::size_t rank = 0; rank < m; ++rank) {
    const double pi = p[order[rank]];
    if (!(pi >= 0 && pi <= 1)) throw std::invalid_argument("a p-value is in [0, 1]; got " + std::to_string(pi));
    running = std::max(running, std::min(1.0, double(m - rank) * pi));
    adjusted[order[rank]] = running;
  }
  return adjusted;
}

}  // namespace tensorscope::stats
