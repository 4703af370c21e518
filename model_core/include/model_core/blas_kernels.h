#pragma once
/// Which OpenBLAS kernels the process runs, and start-up that gives it the best ones the CPU can
/// execute (issue 40). OpenBLAS built with DYNAMIC_ARCH picks its kernels (a "core type") from the
/// CPU model it recognises, once, when it loads; a model it does not know gets older kernels (an
/// AVX-512 Xeon of model 207 runs Debian 0.3.21's `Prescott` SSE3 kernels, 4-9x slower). It reads
/// OPENBLAS_CORETYPE at load time, so a better choice means starting the program again with that
/// variable set. Torch-free header; docs/cpu-kernels.md explains the behaviour.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tensorscope::model_core {

/// What the CPU can execute, from cpuid, with the register state the operating system enables
/// (XGETBV): an AVX-512 CPU under an OS that does not save ZMM registers reports no AVX-512 here.
struct CpuFeatures {
  std::string vendor;  ///< "GenuineIntel", "AuthenticAMD", ...; empty off x86
  int family = 0;      ///< display family (base + extended)
  int model = 0;       ///< display model
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512cd = false;
  bool avx512bf16 = false;
  bool amx = false;  ///< AMX-TILE and AMX-BF16, tile state enabled by the OS
  bool avx512() const { return avx512f && avx512bw && avx512vl && avx512dq && avx512cd; }
};

/// This CPU's features (cpuid; all false off x86).
CpuFeatures cpuFeatures();

/// How capable the kernels an OpenBLAS core name stands for are: 0 SSE-era (Prescott, Nehalem,
/// ...), 1 AVX (Sandybridge), 2 AVX2/FMA (Haswell, Zen; also Bulldozer..Excavator, OpenBLAS's own
/// deliberate choices for those AMD parts), 3 AVX-512 (SkylakeX), 4 AVX-512 with BF16
/// (Cooperlake, SapphireRapids). -1 for a name this table does not know (never overridden).
/// Case-insensitive, as OpenBLAS compares names.
int openBlasCoreTier(std::string_view name);

/// The decision. `coretype` empty: keep what OpenBLAS chose itself.
struct BlasKernelChoice {
  std::string coretype;
  std::string reason;  ///< why, in words (also why nothing is chosen)
};

/// The choice table, a pure function. `known`: the core names the loaded OpenBLAS was built with
/// (an OPENBLAS_CORETYPE it does not know is ignored by it with "Core not found"); `detected`: its
/// own choice (openblas_get_corename()); `userValue`: OPENBLAS_CORETYPE as the process found it,
/// nullptr when unset. A value set by the user or the system is never overridden, even an empty
/// one. Otherwise the best candidate the CPU can execute and the build knows, in this order:
/// Cooperlake (AVX-512 F/BW/VL/DQ/CD + BF16), SapphireRapids (the same + AMX; its float32 GEMM is
/// Cooperlake's), SkylakeX (AVX-512 F/BW/VL/DQ/CD), Zen (AMD) or Haswell (AVX2 + FMA), and only
/// when its tier is above the detected one.
BlasKernelChoice chooseBlasCoretype(const CpuFeatures& cpu, const std::vector<std::string>& known,
                                    std::string_view detected, const char* userValue);

/// The marker variable Tensorscope sets when it restarts with a core type of its choosing:
/// "CHOSEN;DETECTED" (e.g. "Cooperlake;Haswell"), or "rejected;CHOSEN;DETECTED" after the
/// start-up check rejected CHOSEN. Its presence stops any further choice (no loops).
inline constexpr const char* kBlasChoiceVariable = "TENSORSCOPE_BLAS_CHOICE";

/// First thing in main() of every Tensorscope program (the tensorscope binary, the benchmarks).
/// With OpenBLAS loaded, OPENBLAS_CORETYPE unset and a better core type available, it restarts the
/// program (execv of /proc/self/exe with the same argv and environment, plus OPENBLAS_CORETYPE and
/// the marker). `alsoSet`: further variables the program wants for the same restart (the explorer's
/// OMP_WAIT_POLICY=PASSIVE), each applied only when unset; TENSORSCOPE_NO_REEXEC (set by every
/// restart) stops these. In a process running Tensorscope's choice it checks the choice with a
/// small sgemm/dgemm against a plain reference and, should that ever disagree, warns in one line
/// and restarts without the variable. A restart that fails goes on as it is, with a note in
/// describeBlasKernels(). Returns only when the process keeps running (as itself).
void startWithBestBlasKernels(char** argv, const std::vector<std::pair<std::string, std::string>>& alsoSet = {});

/// The start-up check: small sgemm_/dgemm_ products of the process's BLAS (square and ragged,
/// transposed and not, alpha and beta) against three plain loops in long double. Empty when every
/// entry agrees within a few rounding errors, else what disagreed. About 600 000 multiply-adds.
std::string checkBlasGemm();

/// The kernels in use and why, for the BLAS line of --version and the About box, e.g. "OpenBLAS
/// 0.3.21, Cooperlake kernels, chosen by Tensorscope; OpenBLAS detected Haswell". Empty when the
/// BLAS is not OpenBLAS.
std::string describeBlasKernels();

/// openblas_get_corename() of the loaded OpenBLAS, empty when the BLAS is not OpenBLAS.
std::string blasCoretype();

}  // namespace tensorscope::model_core
