// Issue 40: the OpenBLAS core type Tensorscope chooses (a pure table of CPU features × the core
// names a build knows × what OpenBLAS detected), the never-override rule, the start-up check and
// the words --version uses. The restart itself is covered by tests/cli/test_blas_kernels.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "model_core/blas_kernels.h"
#include "model_core/runtime.h"

using namespace tensorscope::model_core;

namespace {

CpuFeatures avx2Cpu(const char* vendor) {
  CpuFeatures c;
  c.vendor = vendor;
  c.avx2 = c.fma = true;
  return c;
}
CpuFeatures avx512Cpu(const char* vendor, bool bf16, bool amx = false) {
  CpuFeatures c = avx2Cpu(vendor);
  c.avx512f = c.avx512bw = c.avx512vl = c.avx512dq = c.avx512cd = true;
  c.avx512bf16 = bf16;
  c.amx = amx;
  return c;
}
// Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH): no SapphireRapids kernels.
const std::vector<std::string> kDebian = {"Cooperlake", "SkylakeX", "Zen", "Haswell"};

}  // namespace

TEST(BlasKernelChoice, XeonModel207FallingBackToPrescottGetsCooperlake) {
  const auto xeon = avx512Cpu("GenuineIntel", true, true);  // AVX-512, AVX512-BF16, AMX
  EXPECT_EQ(chooseBlasCoretype(xeon, kDebian, "Prescott", nullptr).coretype, "Cooperlake");
  // A build with SapphireRapids too: its float32 GEMM is Cooperlake's, Cooperlake stays first.
  auto newer = kDebian;
  newer.push_back("SapphireRapids");
  EXPECT_EQ(chooseBlasCoretype(xeon, newer, "Prescott", nullptr).coretype, "Cooperlake");
  EXPECT_EQ(chooseBlasCoretype(xeon, {"SapphireRapids", "Haswell"}, "Prescott", nullptr).coretype, "SapphireRapids");
  // OpenBLAS detecting the top tier itself: nothing to do.
  EXPECT_EQ(chooseBlasCoretype(xeon, newer, "SapphireRapids", nullptr).coretype, "");
}

TEST(BlasKernelChoice, TheBestKernelsTheBuildHasAndTheCpuRuns) {
  // No BF16: SkylakeX; a build without Cooperlake: SkylakeX; no AMX: never SapphireRapids.
  EXPECT_EQ(chooseBlasCoretype(avx512Cpu("GenuineIntel", false), kDebian, "Haswell", nullptr).coretype, "SkylakeX");
  EXPECT_EQ(chooseBlasCoretype(avx512Cpu("GenuineIntel", true), {"SkylakeX", "Haswell"}, "Prescott", nullptr).coretype,
            "SkylakeX");
  EXPECT_EQ(chooseBlasCoretype(avx512Cpu("AuthenticAMD", true), {"SapphireRapids", "Haswell"}, "Prescott", nullptr)
                .coretype,
            "Haswell");
  // AVX2 + FMA only: Zen on AMD, Haswell elsewhere, and only above what OpenBLAS detected.
  EXPECT_EQ(chooseBlasCoretype(avx2Cpu("AuthenticAMD"), kDebian, "Prescott", nullptr).coretype, "Zen");
  EXPECT_EQ(chooseBlasCoretype(avx2Cpu("GenuineIntel"), kDebian, "Nehalem", nullptr).coretype, "Haswell");
  EXPECT_EQ(chooseBlasCoretype(avx2Cpu("GenuineIntel"), kDebian, "Sandybridge", nullptr).coretype, "Haswell");
  EXPECT_EQ(chooseBlasCoretype(avx2Cpu("AuthenticAMD"), kDebian, "Zen", nullptr).coretype, "");
  EXPECT_EQ(chooseBlasCoretype(avx2Cpu("GenuineIntel"), kDebian, "Haswell", nullptr).coretype, "");
  // OpenBLAS's deliberate choice for older AMD parts is kept.
  EXPECT_EQ(chooseBlasCoretype(avx2Cpu("AuthenticAMD"), kDebian, "Excavator", nullptr).coretype, "");
  // No AVX2 (or an OS that does not save the YMM registers): nothing better than SSE kernels.
  EXPECT_EQ(chooseBlasCoretype(CpuFeatures{}, kDebian, "Prescott", nullptr).coretype, "");
  // Zen 4/5 (AVX-512 with BF16) that OpenBLAS takes for Haswell or Zen: Cooperlake.
  const auto zen5 = avx512Cpu("AuthenticAMD", true);
  EXPECT_EQ(chooseBlasCoretype(zen5, kDebian, "Haswell", nullptr).coretype, "Cooperlake");
  EXPECT_EQ(chooseBlasCoretype(zen5, kDebian, "zen", nullptr).coretype, "Cooperlake");
  EXPECT_EQ(chooseBlasCoretype(zen5, kDebian, "SkylakeX", nullptr).coretype, "Cooperlake");
  const auto kept = chooseBlasCoretype(zen5, kDebian, "Cooperlake", nullptr);
  EXPECT_EQ(kept.coretype, "");
  EXPECT_NE(kept.reason.find("best this build has"), std::string::npos) << kept.reason;
  // A build that is not DYNAMIC_ARCH has no per-core tables: it runs what it was built for.
  EXPECT_EQ(chooseBlasCoretype(zen5, {}, "Haswell", nullptr).coretype, "");
}

TEST(BlasKernelChoice, NeverOverridesAValueTheUserOrSystemSet) {
  const auto xeon = avx512Cpu("GenuineIntel", true, true);
  for (const char* user : {"Haswell", "Prescott", "Cooperlake", "NoSuchCore", ""}) {
    const auto c = chooseBlasCoretype(xeon, kDebian, "Prescott", user);
    EXPECT_EQ(c.coretype, "") << "OPENBLAS_CORETYPE='" << user << "'";
    EXPECT_NE(c.reason.find("never overrides"), std::string::npos) << c.reason;
  }
}

TEST(BlasKernelChoice, UnrankedCoreNamesAreKept) {
  // A future OpenBLAS's name for a core Tensorscope does not know: its own choice stands.
  const auto c = chooseBlasCoretype(avx512Cpu("AuthenticAMD", true), kDebian, "Zen5", nullptr);
  EXPECT_EQ(c.coretype, "");
  EXPECT_NE(c.reason.find("does not rank"), std::string::npos) << c.reason;
  EXPECT_EQ(openBlasCoreTier("SKYLAKEX"), 3);  // case-insensitive, as OpenBLAS compares
  EXPECT_EQ(openBlasCoreTier("Prescott"), 0);
  EXPECT_EQ(openBlasCoreTier("Cooperlake"), 4);
  EXPECT_EQ(openBlasCoreTier("Unknown"), -1);
}

// cpuid against the kernel's view of the CPU (Linux lists a feature only when it enables it).
TEST(BlasKernelChoice, CpuFeaturesAgreeWithProcCpuinfo) {
#if !(defined(__x86_64__) || defined(__i386__))
  GTEST_SKIP() << "cpuid exists on x86 only";
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  const auto cpu = cpuFeatures();
  EXPECT_FALSE(cpu.vendor.empty());
  EXPECT_EQ(cpu.avx2, has("avx2"));
  EXPECT_EQ(cpu.fma, has("fma"));
  EXPECT_EQ(cpu.avx512f, has("avx512f"));
  EXPECT_EQ(cpu.avx512bw, has("avx512bw"));
  EXPECT_EQ(cpu.avx512vl, has("avx512vl"));
  EXPECT_EQ(cpu.avx512dq, has("avx512dq"));
  EXPECT_EQ(cpu.avx512cd, has("avx512cd"));
  EXPECT_EQ(cpu.avx512bf16, has("avx512_bf16"));
  EXPECT_EQ(cpu.amx, has("amx_tile") && has("amx_bf16"));
}

TEST(BlasKernels, TheLoadedKernelsPassTheStartUpCheck) {
  if (blasCoretype().empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  EXPECT_EQ(checkBlasGemm(), "") << "OpenBLAS " << blasCoretype() << " kernels";
}

// The words of the BLAS line, from the environment the process started with (the variables are
// set here after OpenBLAS loaded, so only the description changes, not the kernels).
TEST(BlasKernels, DescribesWhichKernelsRunAndWhy) {
  const std::string core = blasCoretype();
  if (core.empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  const char* saved = std::getenv("OPENBLAS_CORETYPE");
  const std::string savedValue = saved ? saved : "";
  const char* savedMarker = std::getenv(kBlasChoiceVariable);
  const std::string savedMarkerValue = savedMarker ? savedMarker : "";

  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  setenv(kBlasChoiceVariable, (core + ";Prescott").c_str(), 1);
  EXPECT_NE(describeBlasKernels().find(core + " kernels, chosen by Tensorscope; OpenBLAS detected Prescott"),
            std::string::npos)
      << describeBlasKernels();
  EXPECT_EQ(describeBlasKernels().rfind("OpenBLAS 0.", 0), 0u) << describeBlasKernels();

  unsetenv(kBlasChoiceVariable);
  EXPECT_NE(describeBlasKernels().find(core + " kernels, set by OPENBLAS_CORETYPE in the environment"),
            std::string::npos)
      << describeBlasKernels();

  unsetenv("OPENBLAS_CORETYPE");
  EXPECT_NE(describeBlasKernels().find(core + " kernels, OpenBLAS's own choice"), std::string::npos)
      << describeBlasKernels();

  setenv(kBlasChoiceVariable, "rejected;Cooperlake;Prescott", 1);
  EXPECT_NE(describeBlasKernels().find("Tensorscope's choice Cooperlake disagreed with a reference GEMM"),
            std::string::npos)
      << describeBlasKernels();

  if (saved) setenv("OPENBLAS_CORETYPE", savedValue.c_str(), 1);
  if (savedMarker) setenv(kBlasChoiceVariable, savedMarkerValue.c_str(), 1);
  else unsetenv(kBlasChoiceVariable);
  const auto info = runtimeInfo();
  EXPECT_EQ(info.blas_coretype, core);
  EXPECT_NE(describeRuntime(info).find("BLAS: " + info.blas_kernels + " (OpenBLAS"), std::string::npos)
      << describeRuntime(info);
}
