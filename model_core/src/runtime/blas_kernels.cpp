// OpenBLAS core type: the choice table, the start-up restart and its check (model_core/blas_kernels.h).
#include "model_core/blas_kernels.h"

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tensorscope::model_core {
namespace {

bool sameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

#if defined(__x86_64__) || defined(__i386__)
uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}
#endif

struct Candidate {
  const char* name;
  bool (*runs)(const CpuFeatures&);
};
// Best first (see chooseBlasCoretype).
const Candidate kCandidates[] = {
    {"Cooperlake", [](const CpuFeatures& c) { return c.avx512() && c.avx512bf16; }},
    {"SapphireRapids", [](const CpuFeatures& c) { return c.avx512() && c.avx512bf16 && c.amx; }},
    {"SkylakeX", [](const CpuFeatures& c) { return c.avx512(); }},
    {"Zen", [](const CpuFeatures& c) { return c.vendor == "AuthenticAMD" && c.avx2 && c.fma; }},
    {"Haswell", [](const CpuFeatures& c) { return c.avx2 && c.fma; }},
};

using NameFn = char* (*)();

NameFn openBlasFunction(const char* name) { return reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, name)); }

/// The candidate core names the loaded OpenBLAS was built with: DYNAMIC_ARCH exports one parameter
/// table per core type, gotoblas_<NAME> (Debian's 0.3.21: up to COOPERLAKE, no SAPPHIRERAPIDS).
std::vector<std::string> knownCoreNames() {
  std::vector<std::string> known;
  for (const auto& c : kCandidates) {
    std::string symbol = "gotoblas_";
    for (const char* p = c.name; *p; ++p) symbol += char(std::toupper(static_cast<unsigned char>(*p)));
    if (dlsym(RTLD_DEFAULT, symbol.c_str())) known.emplace_back(c.name);
  }
  return known;
}

std::string openBlasVersion() {
  const NameFn config = openBlasFunction("openblas_get_config");
  if (!config) return "OpenBLAS";
  const std::string s = config();  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  const auto second = s.find(' ', s.find(' ') + 1);
  return s.substr(0, second);
}

/// The marker's parts: {chosen, detected, rejected}.
struct Marker {
  std::string chosen, detected;
  bool rejected = false;
  bool present = false;
};

Marker readMarker() {
  Marker m;
  const char* v = std::getenv(kBlasChoiceVariable);
  if (!v) return m;
  m.present = true;
  std::string s = v;
  if (s.rfind("rejected;", 0) == 0) {
    m.rejected = true;
    s = s.substr(9);
  }
  const auto semi = s.find(';');
  m.chosen = s.substr(0, semi);
  m.detected = semi == std::string::npos ? "" : s.substr(semi + 1);
  return m;
}

/// TENSORSCOPE_BLAS_TEST, for the tests of the restart on any CPU (docs/cpu-kernels.md):
/// "detected=NAME" makes the choice treat NAME as OpenBLAS's own choice, "check-fails" makes the
/// start-up check report a disagreement; comma-separated.
std::string testSetting(std::string_view key) {
  const char* v = std::getenv("TENSORSCOPE_BLAS_TEST");
  if (!v) return "";
  const std::string s = v;
  for (size_t start = 0; start <= s.size();) {
    const auto end = std::min(s.find(',', start), s.size());
    const std::string item = s.substr(start, end - start);
    if (item.rfind(key, 0) == 0) return item.size() == key.size() ? "1" : item.substr(key.size());
    start = end + 1;
  }
  return "";
}

/// OpenBLAS's own choice as the choice sees it: `current`, or what TENSORSCOPE_BLAS_TEST simulates.
std::string detectedForChoice(const std::string& current) {
  const std::string simulated = testSetting("detected=");
  return simulated.empty() ? current : simulated;
}

/// What this process's start-up could not do (a failed restart), for describeBlasKernels.
std::string& startupNote() {
  static std::string note;
  return note;
}

// ---- the start-up check: the chosen kernels against a plain reference --------------------------

using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
using DgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                         const int*, const double*, const int*, const double*, double*, const int*);

/// Column-major C = alpha·op(A)·op(B) + beta·C by the library and by three loops in double (long
/// double for dgemm); true when every entry agrees within a few rounding errors of its terms.
template <typename T, typename Fn>
bool gemmAgrees(Fn fn, char ta, char tb, int m, int n, int k, std::string& detail) {
  uint32_t state = 12345u + uint32_t(m * 7 + n * 3 + k);
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return T(int32_t(state >> 8) % 2001 - 1000) / T(1000);  // in [-1, 1], exact in float
  };
  const int rowsA = ta == 'N' ? m : k, colsA = ta == 'N' ? k : m;
  const int rowsB = tb == 'N' ? k : n, colsB = tb == 'N' ? n : k;
  std::vector<T> a(size_t(rowsA) * colsA), b(size_t(rowsB) * colsB), c(size_t(m) * n);
  for (auto& x : a) x = next();
  for (auto& x : b) x = next();
  for (auto& x : c) x = next();
  const std::vector<T> c0 = c;
  const T alpha = T(0.75), beta = T(-0.5);
  fn(&ta, &tb, &m, &n, &k, &alpha, a.data(), &rowsA, b.data(), &rowsB, &beta, c.data(), &m);
  using Wide = long double;
  const Wide eps = sizeof(T) == 4 ? Wide(1.2e-7) : Wide(2.3e-16);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      Wide sum = 0, magnitude = 0;
      for (int p = 0; p < k; ++p) {
        const Wide x = ta == 'N' ? a[size_t(p) * rowsA + i] : a[size_t(i) * rowsA + p];
        const Wide y = tb == 'N' ? b[size_t(j) * rowsB + p] : b[size_t(p) * rowsB + j];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const Wide ref = Wide(alpha) * sum + Wide(beta) * c0[size_t(j) * m + i];
      const Wide bound = 4 * eps * (k + 2) * (Wide(alpha) * magnitude + std::fabs(Wide(beta) * c0[size_t(j) * m + i])) + eps;
      const Wide got = c[size_t(j) * m + i];
      if (!(std::fabs(got - ref) <= bound)) {
        detail = std::string(sizeof(T) == 4 ? "sgemm" : "dgemm") + " " + ta + tb + " " + std::to_string(m) + "x" +
                 std::to_string(n) + "x" + std::to_string(k) + " entry (" + std::to_string(i) + "," +
                 std::to_string(j) + ") is " + std::to_string(double(got)) + ", the reference " +
                 std::to_string(double(ref));
        return false;
      }
    }
  return true;
}

}  // namespace

std::string checkBlasGemm() {
  const auto sgemm = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_"));
  const auto dgemm = reinterpret_cast<DgemmFn>(dlsym(RTLD_DEFAULT, "dgemm_"));
  if (!sgemm || !dgemm) return "the process has no sgemm_/dgemm_ to check";
  std::string detail;
  if (!gemmAgrees<float>(sgemm, 'N', 'N', 16, 12, 8, detail)) return detail;
  if (!gemmAgrees<float>(sgemm, 'N', 'N', 67, 45, 72, detail)) return detail;
  if (!gemmAgrees<float>(sgemm, 'T', 'N', 33, 70, 64, detail)) return detail;
  if (!gemmAgrees<float>(sgemm, 'N', 'T', 48, 31, 40, detail)) return detail;
  if (!gemmAgrees<double>(dgemm, 'N', 'N', 41, 37, 64, detail)) return detail;
  if (!gemmAgrees<double>(dgemm, 'T', 'T', 29, 50, 33, detail)) return detail;
  return "";
}

namespace {

void restart(char** argv) {
  ::execv("/proc/self/exe", argv);  // returns only on failure
}

}  // namespace

CpuFeatures cpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned maxLeaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  const int baseFamily = int((a >> 8) & 0xf);
  f.family = baseFamily + (baseFamily == 0xf ? int((a >> 20) & 0xff) : 0);
  f.model = int((a >> 4) & 0xf) | (baseFamily == 0x6 || baseFamily == 0xf ? int((a >> 16) & 0xf) << 4 : 0);
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6, tiles = (xcr0 & 0x60000) == 0x60000;
  const bool fma = c & (1u << 12);
  if (!ymm || maxLeaf < 7) return f;
  __get_cpuid_count(7, 0, &a, &b, &c, &d);
  f.fma = fma;
  f.avx2 = b & (1u << 5);
  if (zmm) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512cd = b & (1u << 28);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
  }
  f.amx = tiles && (d & (1u << 22)) && (d & (1u << 24));
  const unsigned subleaves = a;
  if (zmm && subleaves >= 1) {
    __get_cpuid_count(7, 1, &a, &b, &c, &d);
    f.avx512bf16 = a & (1u << 5);
  }
#endif
  return f;
}

int openBlasCoreTier(std::string_view name) {
  static const std::pair<const char*, int> kTiers[] = {
      {"Katmai", 0},        {"Coppermine", 0},   {"Northwood", 0},      {"Prescott", 0},  {"Banias", 0},
      {"Atom", 0},          {"Core2", 0},        {"Penryn", 0},         {"Dunnington", 0}, {"Nehalem", 0},
      {"Athlon", 0},        {"Opteron", 0},      {"Opteron_SSE3", 0},   {"Barcelona", 0}, {"Nano", 0},
      {"Bobcat", 0},        {"Sandybridge", 1},  {"Bulldozer", 2},      {"Piledriver", 2}, {"Steamroller", 2},
      {"Excavator", 2},     {"Haswell", 2},      {"Zen", 2},            {"SkylakeX", 3},  {"Cooperlake", 4},
      {"SapphireRapids", 4}};
  for (const auto& [n, tier] : kTiers)
    if (sameName(name, n)) return tier;
  return -1;
}

BlasKernelChoice chooseBlasCoretype(const CpuFeatures& cpu, const std::vector<std::string>& known,
                                    std::string_view detected, const char* userValue) {
  if (userValue)
    return {"", "OPENBLAS_CORETYPE=" + std::string(userValue) + " is set in the environment; Tensorscope never overrides it"};
  const int detectedTier = openBlasCoreTier(detected);
  if (detectedTier < 0)
    return {"", "OpenBLAS chose '" + std::string(detected) + "', a core type Tensorscope does not rank; kept"};
  for (const auto& c : kCandidates) {
    if (!c.runs(cpu)) continue;
    bool built = false;
    for (const auto& k : known) built = built || sameName(k, c.name);
    if (!built) continue;
    if (openBlasCoreTier(c.name) <= detectedTier) break;  // the best available is no better
    return {c.name, std::string("the CPU runs ") + c.name + " kernels and this OpenBLAS has them; it detected " +
                        std::string(detected)};
  }
  return {"", "OpenBLAS's own choice " + std::string(detected) + " is the best this build has for this CPU"};
}

std::string blasCoretype() {
  const NameFn corename = openBlasFunction("openblas_get_corename");
  return corename ? std::string(corename()) : std::string();
}

void startWithBestBlasKernels(char** argv, const std::vector<std::pair<std::string, std::string>>& alsoSet) {
  const std::string current = blasCoretype();
  const char* userValue = std::getenv("OPENBLAS_CORETYPE");
  const Marker marker = readMarker();

  // A process running Tensorscope's choice (restarted here, or a child that inherited it): check it.
  if (!current.empty() && marker.present && !marker.rejected && userValue && sameName(userValue, marker.chosen)) {
    std::string wrong = checkBlasGemm();
    if (wrong.empty() && !testSetting("check-fails").empty()) wrong = "TENSORSCOPE_BLAS_TEST=check-fails";
    if (!wrong.empty()) {
      std::cerr << "tensorscope: OpenBLAS's " << current << " kernels failed the start-up check (" << wrong
                << "); restarting with OpenBLAS's own choice " << marker.detected << "\n";
      ::unsetenv("OPENBLAS_CORETYPE");
      ::setenv(kBlasChoiceVariable, ("rejected;" + marker.chosen + ";" + marker.detected).c_str(), 1);
      restart(argv);
      startupNote() = "the restart without them failed (" + std::string(std::strerror(errno)) +
                      "): these kernels disagreed with a reference GEMM at start-up";
      ::setenv("OPENBLAS_CORETYPE", marker.chosen.c_str(), 1);  // what actually runs, for children
      ::setenv(kBlasChoiceVariable, (marker.chosen + ";" + marker.detected).c_str(), 1);
    }
  }

  if (std::getenv("TENSORSCOPE_NO_REEXEC")) return;
  std::vector<std::pair<std::string, std::string>> changes;
  std::string chosen;
  if (!current.empty() && !marker.present) {
    const std::string detected = detectedForChoice(current);
    const auto choice = chooseBlasCoretype(cpuFeatures(), knownCoreNames(), detected, userValue);
    if (!choice.coretype.empty()) {
      chosen = choice.coretype;
      changes.emplace_back("OPENBLAS_CORETYPE", chosen);
      changes.emplace_back(kBlasChoiceVariable, chosen + ";" + detected);
    }
  }
  for (const auto& [name, value] : alsoSet)
    if (!std::getenv(name.c_str())) changes.emplace_back(name, value);
  if (changes.empty()) return;
  for (const auto& [name, value] : changes) ::setenv(name.c_str(), value.c_str(), 1);
  ::setenv("TENSORSCOPE_NO_REEXEC", "1", 1);  // never loop, even if a variable is unset again
  restart(argv);
  // Still here: the restart failed. Go on as the process is, with its environment as it was.
  const int error = errno;
  for (const auto& [name, value] : changes) ::unsetenv(name.c_str());
  ::unsetenv("TENSORSCOPE_NO_REEXEC");
  if (!chosen.empty())
    startupNote() = "restarting with " + chosen + " kernels failed (" + std::string(std::strerror(error)) + ")";
}

std::string describeBlasKernels() {
  const std::string current = blasCoretype();
  if (current.empty()) return "";
  std::string why;
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const Marker marker = readMarker();
  if (env && marker.present && !marker.rejected && sameName(env, marker.chosen)) {
    why = "chosen by Tensorscope; OpenBLAS detected " + marker.detected;
  } else if (env) {
    why = "set by OPENBLAS_CORETYPE in the environment";
    if (!sameName(env, current))
      why += " (OpenBLAS does not know '" + std::string(env) + "' and chose itself)";
    else if (const auto better = chooseBlasCoretype(cpuFeatures(), knownCoreNames(), current, nullptr);
             !better.coretype.empty())
      why += "; this CPU could run " + better.coretype + " kernels";
  } else if (marker.present && marker.rejected) {
    why = "OpenBLAS's own choice: Tensorscope's choice " + marker.chosen + " disagreed with a reference GEMM at start-up";
  } else {
    why = "OpenBLAS's own choice";
    const auto better = chooseBlasCoretype(cpuFeatures(), knownCoreNames(), detectedForChoice(current), nullptr);
    if (better.coretype.empty()) why += ", the best this build has for this CPU";
    else if (!startupNote().empty()) why += "; " + startupNote();
    else
      why += "; " + better.coretype + " would be faster (" +
             (std::getenv("TENSORSCOPE_NO_REEXEC") ? "TENSORSCOPE_NO_REEXEC is set, so no restart"
                                                    : "this program does not restart itself") + ")";
    return openBlasVersion() + ", " + current + " kernels, " + why;
  }
  if (!startupNote().empty()) why += "; " + startupNote();
  return openBlasVersion() + ", " + current + " kernels, " + why;
}

}  // namespace tensorscope::model_core
