// Picks the row operations for this CPU and holds the scalar float64 versions.
#include "kernels/row_ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

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

double phiD(double u, double& df) {
  df = std::exp(std::min(u, 0.0));
  return std::max(u, 0.0) + df;
}
void phiRowD(const double* x, int64_t n, double* f) {
  double df;
  for (int64_t i = 0; i < n; ++i) f[i] = phiD(x[i], df);
}
void phiPrimeScaleD(const double* x, int64_t n, double* y) {
  double df;
  for (int64_t i = 0; i < n; ++i) phiD(x[i], df), y[i] *= df;
}
void phiPanelD(const double* ct, int64_t ldc, double* S, int64_t lds, const double* q, const double* z, int64_t R,
               int64_t width, const double* k, const double* v, double* num, double* den) {
  std::fill(num, num + width, 0.0);
  std::fill(den, den + width, 0.0);
  for (int64_t s = 0; s < R; ++s)
    for (int64_t j = 0; j < width; ++j) {
      if (k) S[s * lds + j] += k[s] * v[j];
      double df;
      const double f = phiD(ct[s * ldc + j] * q[s], df);
      num[j] += f * S[s * lds + j];
      den[j] += f * z[s];
    }
}
void phiBackwardBlockD(const PhiBackwardBlock<double>& p) {
  const int64_t R = p.R;
  std::vector<double> S(p.s, p.s + p.rows * R);  // rewound here when causal
  for (int64_t j = p.len - 1; j >= 0; --j) {
    const double* q = p.q + j * p.ldq;
    const double* z = p.z + (p.k ? j * R : 0);
    for (int64_t r = 0; r < p.rows; ++r) {
      const double a = p.a[j * p.ldab + r], b = p.b[j * p.ldab + r], w = p.k ? p.w[j * p.ldw + r] : 0.0;
      double sum = 0;
      for (int64_t i = 0; i < R; ++i) {
        const int64_t o = r * R + i;
        double df;
        const double f = phiD(p.c[o] * q[i], df);
        const double du = (S[size_t(o)] * a + z[i] * b) * df;
        p.dq[j * p.lddq + i] += du * p.c[o];
        p.dc[o] += du * q[i];
        p.ds[o] += f * a;
        p.dz[(p.k ? j * R : 0) + i] += f * b;
        if (p.k) {
          sum += p.ds[o] * p.k[j * R + i];
          p.dk[j * p.lddk + i] += p.ds[o] * w;
          S[size_t(o)] -= p.k[j * R + i] * w;
        }
      }
      if (p.k) p.sums[j * p.ldsums + r] = sum;
    }
  }
}
void dimwiseForwardPanelD(const DimwisePanel<double>& p) {
  constexpr int64_t P = kDimwisePanel;
  const int64_t d = p.d;
  for (int64_t r = 0; r < p.rows; ++r) {
    double mx = -INFINITY;
    for (int64_t m = 0; m < d; ++m) {
      double& s = p.S[m * P + r];
      s += p.q[r] * p.k[m];
      mx = s > mx ? s : mx;
    }
    p.rowMax[r] = mx;
    const double shift = p.t * mx;
    double sum = 0;
    for (int64_t m = 0; m < d; ++m) {
      const double e = std::exp(p.S[m * P + r] * p.t - shift);
      sum += e;
      p.scratch[m] = e * p.v[m];
    }
    const double inverseSum = 1.0 / sum;
    for (int64_t c = 0; c < p.c; ++c) {
      double o = 0;
      for (int64_t m = 0; m < d; ++m) o += p.w[(c * d + m) * P + r] * p.scratch[m];
      p.out[c * p.ldo + r] = o * inverseSum;
    }
    p.lse[r] = shift + std::log(sum);
  }
}
void dimwiseRowRecomputeD(double* S, const double* k, double qj, int64_t d, double t, double lse, double* p,
                          int64_t ldp) {
  for (int64_t i = 0; i < d; ++i) {
    S[i] += qj * k[i];
    p[i / kDimwiseChunk * ldp + i % kDimwiseChunk] = std::exp(S[i] * t - lse);
  }
}
void dimwiseBackwardRunD(const DimwiseBackwardRun<double>& a) {
  constexpr int64_t Q = kDimwiseChunk;
  const int64_t n = a.chunks * Q;  // the padded row: its entries past d are zero
  auto at = [](int64_t i, int64_t ld) { return i / Q * ld + i % Q; };
  for (int64_t l = a.len - 1; l >= 0; --l) {
    auto gc = [&](int64_t c) { return a.g[l * a.ldgi + c * a.ldgc]; };
    double delta = 0;
    for (int64_t c = 0; c < a.c; ++c) delta += gc(c) * a.o[l * a.ldgi + c * a.ldgc];
    const double qj = a.q[l * a.ldq], t = a.t[l];
    double dq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double p = a.p[at(i, a.ldp) + l * Q];
      const double v = a.vk[at(i, a.ldvk) + 2 * l * Q], k = a.vk[at(i, a.ldvk) + (2 * l + 1) * Q];
      double G = 0;
      for (int64_t c = 0; c < a.c; ++c) {
        const int64_t wi = (i / Q * a.c + c) * Q + i % Q;
        G += a.w[wi] * gc(c);
        a.dW[wi] += p * v * (gc(c) / t);
      }
      a.dvk[at(i, a.ldvk) + 2 * l * Q] += p * G;
      a.D[i] += p * (v * G - delta);
      a.dvk[at(i, a.ldvk) + (2 * l + 1) * Q] += qj * a.D[i];
      dq += a.D[i] * k;
    }
    a.dq[l * a.lddq] = dq;
  }
}
void geluRowD(const double* x, int64_t n, double* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * 0.5 * std::erfc(-x[i] * 0.7071067811865476);
}
void geluBackwardRowD(const double* x, const double* g, int64_t n, double* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-x[i] * 0.7071067811865476);
    dx[i] = g[i] * (cdf + x[i] * std::exp(-0.5 * x[i] * x[i]) * 0.3989422804014327);
  }
}
void correlateRowD(const double* w, int64_t taps, const double* x, int64_t n, double* y) {
  for (int64_t m = 0; m < n; ++m)
    for (int64_t j = 0; j < taps; ++j) y[m] += w[j] * x[m + j];
}
void correlateDotsD(const double* a, const double* x, int64_t n, int64_t taps, double* r) {
  for (int64_t j = 0; j < taps; ++j) r[j] += dotD(n, a, x + j);
}
}  // namespace

const RowOps<float>& rowOpsFloat() { return current().ops; }

const RowOps<double>& rowOpsDouble() {
  static const RowOps<double> ops{minMaxD, expSumDotD, expWriteD, softmaxColumnBackwardD, softmaxRowBackwardD,
                                  axpyD,   dotD,       mul3D,     phiRowD,                phiPrimeScaleD,
                                  phiPanelD, phiBackwardBlockD, dimwiseForwardPanelD, dimwiseRowRecomputeD,
                                  dimwiseBackwardRunD, geluRowD, geluBackwardRowD, correlateRowD,
                                  correlateDotsD};
  return ops;
}

const char* rowOpsIsa() { return current().isa; }

bool forceRowOpsIsa(const char* isa) {
  if (!cpuRuns(isa)) return false;
  current() = make(isa);
  return true;
}

}  // namespace tensorscope::model_core::kernels
