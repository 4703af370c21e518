// The command line's SIGINT and SIGTERM (app/src/cli/stop_signals.h): no handler runs on a thread
// that computes (oneDNN's JIT GEMM points its stack pointer at the heap, oneDNN issue #4845), a Scope
// turns them into a callback on the waiting thread, and without one they end the process as before.
// Each case runs in a child process (a death test): install() changes the whole process.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cli/stop_signals.h"

namespace {

using tensorscope::app::stopsignals::install;
using tensorscope::app::stopsignals::Scope;

bool blocksBoth() {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGTERM) == 1;
}

/// Waits up to 10 s for `done`.
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 1000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

class StopSignals : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(StopSignals, WithoutAScopeEachSignalEndsTheProcessByItself) {
  for (const int signo : {SIGINT, SIGTERM}) {
    EXPECT_EXIT(
        {
          install();
          kill(getpid(), signo);
          std::this_thread::sleep_for(std::chrono::seconds(10));
          _exit(3);  // not reached: the signal ended the process
        },
        ::testing::KilledBySignal(signo), "");
  }
}

/// A worker computes while 200 signals arrive: every callback runs on one thread that is neither the
/// main thread nor the worker, and the worker, made after install(), blocks both signals. Exits 0 then.
void signalsBesideAComputingThread() {
  install();
  const auto mainId = std::this_thread::get_id();
  std::atomic<bool> stop{false};
  std::atomic<bool> workerBlocks{false};
  std::thread worker([&] {
    workerBlocks = blocksBoth();
    volatile double x = 0;
    while (!stop) x = x + 1.0;
  });
  const auto workerId = worker.get_id();
  std::atomic<int> calls{0};
  std::atomic<int> strays{0};
  std::thread::id firstCaller;  // written and read by the callback only (under the Scope's lock)
  {
    Scope scope([&](int signo) {
      const auto id = std::this_thread::get_id();
      if (calls == 0) firstCaller = id;
      if (id == mainId || id == workerId || id != firstCaller || (signo != SIGINT && signo != SIGTERM)) ++strays;
      ++calls;
    });
    for (int i = 0; i < 200; ++i) {
      kill(getpid(), i % 2 ? SIGINT : SIGTERM);
      if (i % 20 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Pending signals of one kind merge, so fewer than 200 calls may come; at least one must.
    eventually([&] { return calls > 0; });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  worker.join();
  _exit(calls > 0 && strays == 0 && workerBlocks && blocksBoth() ? 0 : 1);
}

TEST_F(StopSignals, AScopeTakesThemOnTheWaitingThreadNeverOnAComputingOne) {
  EXPECT_EXIT(signalsBesideAComputingThread(), ::testing::ExitedWithCode(0), "");
}

TEST_F(StopSignals, AfterTheScopeEndsASignalEndsTheProcessAgain) {
  EXPECT_EXIT(
      {
        install();
        std::atomic<int> calls{0};
        {
          Scope scope([&](int) { ++calls; });
          kill(getpid(), SIGINT);
          if (!eventually([&] { return calls == 1; })) _exit(4);
        }
        kill(getpid(), SIGINT);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        _exit(3);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

}  // namespace
