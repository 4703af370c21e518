#include "cli/stop_signals.h"

#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace tensorscope::app::stopsignals {
namespace {

std::mutex g_mutex;  // trivially destructible in libstdc++: usable while the process exits
bool g_installed = false;

/// The running command's callback, under g_mutex; empty: the default effect. Never destroyed, so a
/// signal that arrives while static objects are destroyed at exit still finds it.
std::function<void(int)>& currentCallback() {
  static auto* callback = new std::function<void(int)>();
  return *callback;
}

sigset_t stopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// The signal's default effect on the process: this thread unblocks it and raises it with SIG_DFL
/// (for SIGINT and SIGTERM the process ends by the signal, as a shell expects of Ctrl-C or kill).
void defaultEffect(int signo) {
  std::signal(signo, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(signo);
  pthread_sigmask(SIG_BLOCK, &one, nullptr);  // reached only where the default effect let us live
}

void waitLoop() {
  pthread_setname_np(pthread_self(), "ts-signals");  // as ps, top and gdb show it
  const sigset_t set = stopSet();
  while (true) {
    int signo = 0;
    if (sigwait(&set, &signo) != 0) continue;
    {
      // Called under the mutex: a Scope's end waits for a call in progress, so the callback never
      // outlives what it stops (e.g. the trainer's control, on the command's stack).
      std::lock_guard lock(g_mutex);
      if (currentCallback()) {
        currentCallback()(signo);
        continue;
      }
    }
    defaultEffect(signo);
  }
}

}  // namespace

void install() {
  std::lock_guard lock(g_mutex);
  if (g_installed) return;
  const sigset_t set = stopSet();
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0)
    throw std::runtime_error(std::string("cannot block SIGINT and SIGTERM: ") + std::strerror(rc));
  std::thread(waitLoop).detach();  // blocks both too (it inherits the mask) and takes them with sigwait
  g_installed = true;
}

Scope::Scope(std::function<void(int)> onSignal) {
  std::lock_guard lock(g_mutex);
  currentCallback() = std::move(onSignal);
}

Scope::~Scope() {
  std::lock_guard lock(g_mutex);
  currentCallback() = nullptr;
}

}  // namespace tensorscope::app::stopsignals
