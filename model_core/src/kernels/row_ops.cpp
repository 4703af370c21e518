// Picks the row operations for this CPU and holds the scalar float64 versions.
#include "kernels/row_ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

namespace tensorscope::model_core::kernels {

RowOps<float> rowOpsFloat_sse2();
RowOps<float> rowOpsFloat_avx2();
RowOps<float> rowOpsFloat_avx512();

namespace {

struct Choice {
  RowOps<float> ops;
  const char* isa;
};

bool cpuRuns(const char* isa) {
  if (std::strcmp(isa, "sse2") == 0) return true;
  __builtin_cpu_init();
  if (std::strcmp(isa, "avx2") == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (std::strcmp(isa, "avx512") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
  return false;
}

Choice make(const char* isa) {
  if (std::strcmp(isa, "avx512") == 0) return {rowOpsFloat_avx512(), "avx512"};
  if (std::strcmp(isa, "avx2") == 0) return {rowOpsFloat_avx2(), "avx2"};
  return {rowOpsFloat_sse2(), "sse2"};
}

Choice& current() {
  static Choice c = make(cpuRuns("avx512") ? "avx512" : cpuRuns("avx2") ? "avx2" : "sse2");
  return c;
}

void minMaxD(const double* x, int64_t n, double* mn, double* mx) {
  const auto [lo, hi] = std::minmax_element(x, x + n);
  *mn = *lo;
  *mx = *hi;
}
void expSumDotD(const double* x, const double* v, int64_t n, double t, double c, double* sum, double* dot) {
  double s = 0, d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = std::exp(t * x[i] - c);
    s += e;
    d += e * v[i];
  }
  *sum = s;
  *dot = d;
}
double expWriteD(const double* x, int64_t n, double t, double c, double* out) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += out[i] = std::exp(t * x[i] - c);
  return s;
}
double softmaxColumnBackwardD(const double* x, const double* v, int64_t n, double t, double lse, double g, double o,
                              double* dv, double* dx, bool accumulate) {
  double a = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double gp = std::exp(t * xi - lse) * g;
    dv[i] += gp;
    const double dl = gp * (v[i] - o);
    a += dl * xi;
    dx[i] = accumulate ? dx[i] + t * dl : t * dl;
  }
  return a;
}
void softmaxRowBackwardD(const double* p, const double* dp, int64_t n, double t, double delta, double* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = t * p[i] * (dp[i] - delta);
}
void axpyD(int64_t n, double a, const double* x, double* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
double dotD(int64_t n, const double* x, const double* y) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}
void mul3D(int64_t n, double a, const double* x, const double* z, double* y, bool accumulate) {
  for (int64_t i = 0; i < n; ++i) y[i] = (accumulate ? y[i] : 0.0) + a * x[i] * z[i];
}

void phiD(double u, double& f, double& df) {
  const double e = std::exp(std::min(u, 0.0));
  f = u > 0 ? u + 1 : e;
  df = u > 0 ? 1.0 : e;
}
void phiDot2D(const double* c, const double* q, const double* s, const double* z, int64_t n, double* num,
              double* den) {
  double a = 0, b = 0;
  for (int64_t i = 0; i < n; ++i) {
    double f, df;
    phiD(c[i] * q[i], f, df);
    a += f * s[i];
    b += f * z[i];
  }
  *num = a;
  *den = b;
}
void phiBackwardD(const double* c, const double* q, const double* s, const double* z, int64_t n, double a, double b,
                  double* dq, double* dc, double* ds, double* dz) {
  for (int64_t i = 0; i < n; ++i) {
    double f, df;
    phiD(c[i] * q[i], f, df);
    const double du = (s[i] * a + z[i] * b) * df;
    dq[i] += du * c[i];
    dc[i] += du * q[i];
    ds[i] += f * a;
    dz[i] += f * b;
  }
}

void advancePhiDot2D(const double* c, const double* q, double* s, const double* k, double w, const double* z,
                     int64_t n, double* num, double* den) {
  for (int64_t i = 0; i < n; ++i) s[i] += w * k[i];
  phiDot2D(c, q, s, z, n, num, den);
}
double phiBackwardCausalD(const double* c, const double* q, const double* s, const double* z, int64_t n, double a,
                          double b, double* dq, double* dc, double* ds, double* dz, const double* k, double w,
                          double* dk) {
  phiBackwardD(c, q, s, z, n, a, b, dq, dc, ds, dz);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += ds[i] * k[i];
    dk[i] += ds[i] * w;
  }
  return sum;
}

}  // namespace

const RowOps<float>& rowOpsFloat() { return current().ops; }

const RowOps<double>& rowOpsDouble() {
  static const RowOps<double> ops{minMaxD, expSumDotD, expWriteD, softmaxColumnBackwardD, softmaxRowBackwardD,
                                  axpyD,   dotD,       mul3D,     phiDot2D,               phiBackwardD,
                                  advancePhiDot2D, phiBackwardCausalD};
  return ops;
}

const char* rowOpsIsa() { return current().isa; }

bool forceRowOpsIsa(const char* isa) {
  if (!cpuRuns(isa)) return false;
  current() = make(isa);
  return true;
}

}  // namespace tensorscope::model_core::kernels
