// Does a signal handler that interrupts oneDNN's dnnl_sgemm corrupt the heap? (oneDNN issue #4845: its
// JIT f32 GEMM kernels point the stack pointer at a heap workspace while they run, so the kernel pushes
// an interrupting handler's frame onto the heap; fixed upstream by PR #4855, after oneDNN 3.11.)
// scripts/onednn-signal-probe.sh builds and runs this on the libdnnl.so.2 of the machine.
//
//   onednn-signal-probe M N K TRANS REPS    (TRANS: NN, NT or TN, as dnnl_sgemm's row-major operands)
//
// Runs the GEMM REPS times on the main thread while a second thread sends it SIGUSR1 every 0.2 ms; the
// handler counts whether its own frame lies on the thread's stack. Prints one line and exits 0 when the
// process survived; a corrupted heap ends it by glibc's abort or a segmentation fault instead.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
uintptr_t g_stackLow = 0, g_stackHigh = 0;
std::atomic<long> g_onStack{0}, g_offStack{0};

extern "C" void onSignal(int) {
  volatile char local = 0;
  const auto where = reinterpret_cast<uintptr_t>(&local);
  if (where >= g_stackLow && where < g_stackHigh) ++g_onStack;
  else ++g_offStack;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s M N K NN|NT|TN REPS\n", argv[0]);
    return 2;
  }
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW);
  const auto sgemm = lib ? reinterpret_cast<DnnlSgemm>(dlsym(lib, "dnnl_sgemm")) : nullptr;
  if (!sgemm) {
    std::printf("no dnnl_sgemm in libdnnl.so.2 here\n");
    return 77;
  }
  const int64_t m = std::atol(argv[1]), n = std::atol(argv[2]), k = std::atol(argv[3]);
  const char ta = argv[4][0], tb = argv[4][1];
  const int reps = std::atoi(argv[5]);
  pthread_attr_t attr;
  pthread_getattr_np(pthread_self(), &attr);
  void* stack = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &stack, &size);
  g_stackLow = reinterpret_cast<uintptr_t>(stack);
  g_stackHigh = g_stackLow + size;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigaction(SIGUSR1, &action, nullptr);
  std::vector<float> a(m * k, 1.0f), b(k * n, 0.5f), c(m * n);
  std::atomic<bool> done{false};
  const pthread_t computing = pthread_self();
  std::thread sender([&] {
    while (!done) {
      pthread_kill(computing, SIGUSR1);
      usleep(200);
    }
  });
  for (int i = 0; i < reps; ++i)
    sgemm(ta, tb, m, n, k, 1.0f, a.data(), ta == 'N' ? k : m, b.data(), tb == 'N' ? n : k, 0.0f, c.data(), n);
  done = true;
  sender.join();
  std::vector<float> after(1 << 16, 1.0f);  // the heap still works
  std::printf("survived: %ld handler frames on the thread's stack, %ld elsewhere\n", g_onStack.load(),
              g_offStack.load());
  return 0;
}
