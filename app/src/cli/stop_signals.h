#pragma once
// SIGINT and SIGTERM on the command line: taken by one thread that runs no kernels.
//
// Why not a plain signal handler: oneDNN's JIT f32 GEMM (jit_avx512_common_gemm_f32 and its AVX2
// twin, every oneDNN up to 3.11, Debian 12's 2.6 among them) points the stack pointer at a heap
// workspace while it runs. A handler run on a thread inside that kernel has its signal frame pushed
// onto the heap, which corrupts it (oneDNN issue #4845, fixed upstream by PR #4855). Tensorscope's
// projections run on that GEMM (kernels/gemm.h), and an interrupted `train` crashed at its stop in
// 8 of 60 tries with "corrupted size vs. prev_size" before this (docs/decisions.md). So the command
// line blocks the two signals it catches in its main thread before it starts any other thread (every
// thread made later, OpenMP's among them, inherits the mask), and one waiting thread takes them with
// sigwait: no handler ever runs on a thread that computes.
#include <functional>

namespace tensorscope::app::stopsignals {

/// Blocks SIGINT and SIGTERM in the calling thread and starts the thread that waits for them. Call it
/// first in main, before anything starts a thread; later calls do nothing. A signal that arrives with
/// no Scope alive has its default effect (the process ends by it, as without this).
void install();

/// While a Scope lives, SIGINT and SIGTERM call `onSignal(signo)` on the waiting thread (not in a
/// signal handler: it may lock and allocate) instead of ending the process. Scopes do not nest;
/// the callback must not make or end one. A Scope's end waits for a call in progress.
class Scope {
 public:
  explicit Scope(std::function<void(int)> onSignal);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace tensorscope::app::stopsignals
