#include "cli/sweep_commands.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/cli.h"
#include "cli/diagram_command.h"
#include "cli/progress_sinks.h"
#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/run_directory.h"
#include "model_core/runtime.h"
#include "model_core/sweep.h"
#include "model_core/trainer.h"
#include "spec/json_reader.h"
#if TENSORSCOPE_WITH_GUI
#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgRenderer>
#endif

namespace tensorscope::app {
namespace {

namespace fs = std::filesystem;
using model_core::SweepPlan;
using model_core::Trial;
using model_core::TrialState;

const char* kUsage =
    "tensorscope sweep plan SWEEP.json --out DIR\n"
    "       tensorscope sweep run DIR [--jobs J] [--retry-failed]\n"
    "       tensorscope sweep run-trial DIR INDEX [--device cpu|cuda]\n"
    "       tensorscope sweep submit DIR --slurm [--partition P] [--time T] [--cpus-per-task C] [--gpus G]\n"
    "                                    [--array-limit K] [--retry-failed] [--dry-run]\n"
    "       tensorscope sweep status DIR [--json]\n"
    "       tensorscope sweep report DIR [--format md|csv|latex|json] [--out FILE]\n"
    "                                    [--figure FILE.svg|png|pdf] [--x parameters|AXIS]";

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string pad(std::string s, std::size_t w) {
  // Pads by characters, not bytes (labels may hold "·").
  std::size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars < w) s += std::string(w - chars, ' ');
  return s;
}

// ---- plan ---------------------------------------------------------------------------------------

int planCommand(Args& args, std::ostream& out) {
  const auto dir = args.takeOption("--out");
  const auto pos = args.positionals(1, 1, kUsage);
  if (!dir) throw UsageError(std::string("sweep plan needs --out DIR\nusage: ") + kUsage);
  const auto sweep = model_core::readSweepFile(pos[0]);
  const auto trials = model_core::expandSweep(sweep);
  model_core::writeSweepDirectory(*dir, sweep, trials);
  out << "sweep '" << sweep.name << "': " << trials.size() << " trials in " << *dir << "\n";
  std::size_t w = 8;
  for (const auto& t : trials) w = std::max(w, t.name.size() + 2);
  out << pad("trial", w) << pad("attention params", 18) << pad("matched", 9) << pad("steps", 8)
      << pad("attn GFLOP/step", 17) << "memory estimate\n";
  double total = 0;
  for (const auto& t : trials) {
    const double memory = model_core::estimateTrainingMemory(t.config);
    total += t.attention_gflop_per_step * double(t.config.train.steps);
    out << pad(t.name, w) << pad(std::to_string(t.attention_parameters), 18) << pad(t.matched.empty() ? "-" : t.matched, 9)
        << pad(std::to_string(t.config.train.steps), 8)
        << pad(fixed(t.attention_gflop_per_step, t.attention_gflop_per_step < 1 ? 4 : 2), 17)
        << fixed(memory / 1e6, 0) << " MB\n";
  }
  out << "attention layers, forward and backward, all trials: " << fixed(total / 1000, total < 100 ? 4 : 1) << " TFLOP";
  if (sweep.seconds > 0) out << "; each trial stops after " << sweep.seconds << " s of training";
  out << "\nrun it: tensorscope sweep run " << *dir << " [--jobs J]\n";
  return kExitOk;
}

// ---- run-trial ----------------------------------------------------------------------------------

model_core::TrainerControl* g_trialControl = nullptr;
volatile std::sig_atomic_t g_trialSignalled = 0;
extern "C" void onTrialSignal(int) {
  g_trialSignalled = 1;
  if (g_trialControl) g_trialControl->requestStop();
}

std::string whereTrained() {
  const char* job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (job && task) return std::string("slurm job ") + job + "_" + task;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string("local (") + host + ")";
}

/// Trains one trial to its budget (or resumes it) and writes its result.json.
int runTrial(const SweepPlan& plan, const Trial& t, const std::string& device, std::ostream& out, std::ostream& err) {
  const std::string dir = plan.trialDir(t), runDir = plan.runDir(t);
  fs::create_directories(dir);
  const std::string lockPath = dir + "/lock";
  const int lock = ::open(lockPath.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0) throw std::runtime_error("cannot open " + lockPath + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{lock};
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    err << "tensorscope: trial " << t.name << " is being trained by another process (" << lockPath << " is locked)\n";
    return kExitRunElsewhere;
  }
  if (fs::exists(dir + "/result.json")) {
    const auto st = model_core::trialStatus(plan, t);
    out << "trial " << t.name << " has ended already (" << model_core::trialStateName(st.state) << ")\n";
    if (!st.damaged.empty()) err << "tensorscope: trial " << t.name << ": " << st.damaged << "\n";
    return kExitTrialEndedBefore;
  }
  // Resume only a run with a committed checkpoint. One stopped before its first commit (killed, out
  // of memory, a full disk) holds only files train() writes before it (config.json, metrics, its
  // lock, temporaries): it starts again in place, from step 0.
  const bool resume = fs::exists(runDir + "/checkpoint.json") || fs::exists(runDir + "/model.safetensors");
  if (!resume && fs::exists(runDir + "/config.json"))
    out << "{\"event\": \"restart\", \"trial\": \"" << t.name
        << "\", \"reason\": \"its run stopped before its first checkpoint; it starts again from step 0\"}" << std::endl;
  const std::string firstSplit = model_core::evaluationSplitNames(t.config).front();
  double remaining = 0;
  if (plan.sweep.seconds > 0) {
    const auto before = model_core::summariseTrialRun(runDir, plan.sweep.metric, firstSplit);
    remaining = plan.sweep.seconds - (resume ? before.wall_seconds : 0);
  }
  model_core::TrainerControl control;
  // The wall-clock budget: a timer asks the trainer to stop (it checkpoints within a step).
  std::mutex m;
  std::condition_variable cv;
  bool done = false, deadlineHit = false;
  std::thread timer;
  if (plan.sweep.seconds > 0 && remaining > 0) {
    timer = std::thread([&] {
      std::unique_lock<std::mutex> l(m);
      if (!cv.wait_for(l, std::chrono::duration<double>(std::max(remaining, 0.0)), [&] { return done; })) {
        deadlineHit = true;
        control.requestStop();
      }
    });
  }
  const auto stopTimer = [&] {
    if (!timer.joinable()) return;
    {
      std::lock_guard<std::mutex> l(m);
      done = true;
    }
    cv.notify_all();
    timer.join();
  };
  g_trialControl = &control;
  g_trialSignalled = 0;
  std::signal(SIGINT, onTrialSignal);
  std::signal(SIGTERM, onTrialSignal);
  JsonLinesSink sink(out, 50);
  model_core::TrialResult r;
  r.where = whereTrained();
  int status = kExitOk;
  try {
    if (plan.sweep.seconds > 0 && remaining <= 0) {
      deadlineHit = true;  // its time was spent in earlier sessions; only the result is missing
    } else {
      auto config = t.config;
      if (!device.empty()) config.train.device = device;  // e.g. cuda on a GPU node (sweep submit --gpus)
      const auto result = model_core::train(config, runDir, control, sink, resume);
      r.message = result.message;
      r.status = result.diverged ? "diverged" : "finished";
      stopTimer();  // a deadline counts only where it stopped the run, not after its last step
      if (!result.stopped_early) deadlineHit = false;
    }
    if (r.status.empty()) r.status = "finished";
  } catch (const std::exception& e) {
    r.status = "failed";
    r.message = e.what();
    status = kExitFailure;
  }
  stopTimer();
  g_trialControl = nullptr;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (g_trialSignalled && !deadlineHit && r.status != "failed") {
    out << "{\"event\": \"interrupted\", \"trial\": \"" << t.name << "\"}" << std::endl;
    err << "tensorscope: trial " << t.name << " interrupted; it resumes from its checkpoint\n";
    return kExitTrialInterrupted;
  }
  const auto summary = model_core::summariseTrialRun(runDir, plan.sweep.metric, firstSplit);
  r.steps = summary.steps;
  r.wall_seconds = summary.wall_seconds;
  r.tokens_per_second = summary.tokens_per_second;
  r.final_metric = summary.final_metric;
  r.best_metric = summary.best_metric;
  r.best_step = summary.best_step;
  r.final_eval = summary.final_eval;
  if (deadlineHit && r.status == "finished") {
    // A trial stopped by its time budget is evaluated where it stopped, so every trial's final
    // number is measured at its last step.
    std::ostringstream budget;
    budget << plan.sweep.seconds;
    r.message = "stopped by the budget of " + budget.str() + " s at step " + std::to_string(r.steps);
    const std::string split = plan.sweep.metric.split.empty() ? firstSplit : plan.sweep.metric.split;
    nlohmann::json evals = nlohmann::json::object();
    for (const auto& e : model_core::evaluateRun(runDir)) {
      nlohmann::json v = {{"loss", e.loss}, {"accuracy", e.accuracy}};
      if (e.exact_match >= 0) v["exact_match"] = e.exact_match;
      evals[e.split] = v;
      if (e.split == split && v.contains(plan.sweep.metric.name)) {
        const double x = v[plan.sweep.metric.name].get<double>();
        r.final_metric = x;
        if (!r.best_metric || (plan.sweep.metric.higherIsBetter() ? x > *r.best_metric : x < *r.best_metric))
          r.best_metric = x, r.best_step = r.steps;
      }
    }
    r.final_eval = evals;
  }
  files::writeFileAtomically(dir + "/result.json", model_core::trialResultToJson(r));
  out << "{\"event\": \"trial_end\", \"trial\": \"" << t.name << "\", \"status\": \"" << r.status << "\"}" << std::endl;
  if (r.status == "failed") err << "tensorscope: trial " << t.name << " failed: " << model_core::displayText(r.message) << "\n";
  return status;
}

const Trial& trialAt(const SweepPlan& plan, const std::string& index) {
  std::size_t used = 0;
  long long i = -1;
  try {
    i = std::stoll(index, &used);
  } catch (const std::exception&) {
  }
  if (used != index.size() || i < 0 || i >= static_cast<long long>(plan.trials.size()))
    throw UsageError("trial index '" + index + "' is not in [0, " + std::to_string(plan.trials.size() - 1) + "]");
  return plan.trials[static_cast<std::size_t>(i)];
}

// ---- Slurm ----------------------------------------------------------------------------------------
// The cluster's own scheduler runs the trials: a job array, one trial per array index, each task
// running `tensorscope sweep run-trial DIR INDEX`. Each trial's outcome stays in its directory
// (result.json), so reports never need Slurm's accounting; squeue tells what is queued or running.

/// Runs a program (no shell) and returns its exit status and what it printed (stdout and stderr).
int capture(const std::vector<std::string>& words, std::string& output) {
  int pipeFd[2];
  if (::pipe(pipeFd) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> copy = words;
  std::vector<char*> argv;
  for (auto& w : copy) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(pipeFd[1], 1);
    ::dup2(pipeFd[1], 2);
    ::close(pipeFd[0]);
    ::close(pipeFd[1]);
    ::execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(pipeFd[1]);
  output.clear();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipeFd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) output.append(buf, static_cast<std::size_t>(n));
  ::close(pipeFd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// What squeue says of the sweep's array tasks: trial index -> "PENDING (job 12_3)". `note` says
/// why nothing could be asked (no squeue, no controller).
std::map<std::int64_t, std::string> slurmStates(const std::vector<model_core::SlurmJob>& jobs, std::string& note) {
  std::map<std::int64_t, std::string> states;
  if (jobs.empty()) return states;
  std::string ids;
  for (const auto& j : jobs) ids += (ids.empty() ? "" : ",") + j.id;
  std::string text;
  int rc = 127;
  try {
    rc = capture({"squeue", "--noheader", "--array", "--jobs=" + ids, "--format=%i|%T"}, text);
  } catch (const std::exception& e) {
    text = e.what();
  }
  if (rc != 0) {
    // squeue refuses ids it no longer knows (all ended and forgotten): that is not an error.
    if (text.find("Invalid job id") == std::string::npos)
      note = rc == 127 ? "squeue is not available here" : "squeue failed: " + text.substr(0, 200);
    return states;
  }
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto bar = line.find('|'), under = line.find('_');
    if (bar == std::string::npos || under == std::string::npos || under > bar) continue;
    try {
      states[std::stoll(line.substr(under + 1, bar - under - 1))] = line.substr(bar + 1) + " (job " + line.substr(0, bar) + ")";
    } catch (const std::exception&) {
    }
  }
  return states;
}

std::string arraySpec(const std::vector<std::int64_t>& indices) {
  std::string spec;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    spec += (spec.empty() ? "" : ",") + std::to_string(indices[i]) + (j > i ? "-" + std::to_string(indices[j]) : "");
    i = j + 1;
  }
  return spec;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// ---- run ----------------------------------------------------------------------------------------

volatile std::sig_atomic_t g_runSignalled = 0;
extern "C" void onRunSignal(int) { g_runSignalled = 1; }

std::string selfExecutable() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find this program's path (/proc/self/exe): " + ec.message());
  return p.string();
}

pid_t spawnTrial(const std::string& exe, int threads, const SweepPlan& plan, const Trial& t) {
  const std::string log = plan.trialDir(t) + "/log.txt";
  std::vector<std::string> words = {exe, "--threads", std::to_string(threads), "sweep", "run-trial", plan.dir,
                                    std::to_string(t.index)};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a trial process: ") + std::strerror(errno));
  if (pid == 0) {
    // A trial outlives no `sweep run`: when it dies (even by kill -9) the trial gets SIGTERM, which it
    // turns into a checkpoint and a stop. A parent gone before prctl took effect is seen here.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(kExitTrialInterrupted);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
    std::signal(SIGINT, SIG_DFL);
    ::execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int runCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto jobs = args.takeInt("--jobs", 1, 256);
  const bool retry = args.takeFlag("--retry-failed");
  const bool jsonLines = args.takeFlag("--json") || !isatty(fileno(stdout));
  const auto pos = args.positionals(1, 1, kUsage);
  const auto plan = model_core::readSweepPlan(pos[0]);
  const int J = static_cast<int>(jobs.value_or(1));
  // J trials share the cores: each gets cores / J LibTorch threads (at least one) unless the
  // command line's --threads says otherwise.
  const int cores = model_core::runtimeInfo().hardware_threads;
  int threads = std::max(1, cores / J);
  if (model_core::threadsOverride() > 0) threads = model_core::threadsOverride();
  else if (std::getenv("TENSORSCOPE_THREADS")) threads = std::max(1, model_core::runtimeInfo().intra_op_threads);
  std::vector<const Trial*> queue;
  int ended = 0, skipped = 0;
  std::string note;
  const auto queued = slurmStates(model_core::readSlurmJobs(plan.dir), note);  // trials handed to Slurm are its to run
  if (!note.empty())  // a submitted trial may then also start here; its lock keeps the two from training at once
    err << "tensorscope: " << note << "; trials submitted to Slurm cannot be told apart from pending ones\n";
  for (const auto& t : plan.trials) {
    const auto st = model_core::trialStatus(plan, t);
    if (!st.damaged.empty() && !retry) err << "tensorscope: trial " << t.name << ": " << st.damaged << "\n";
    if (st.state != TrialState::Finished && queued.count(t.index)) {
      ++skipped;
      err << "tensorscope: trial " << t.name << " is in Slurm's queue (" << queued.at(t.index) << "); not starting it\n";
    } else if (st.state == TrialState::Finished) {
      ++ended;
    } else if (st.state == TrialState::Running) {
      ++skipped;
      err << "tensorscope: trial " << t.name << " is being trained by another process; not starting it\n";
    } else if (st.state == TrialState::Failed || st.state == TrialState::Diverged) {
      if (retry) {
        model_core::clearTrialResult(plan, t, st);
        queue.push_back(&t);
      } else {
        ++ended;
      }
    } else {
      queue.push_back(&t);
    }
  }
  const std::size_t total = plan.trials.size();
  const auto elsewhereNote = [&](int n) {
    err << "tensorscope: the sweep has not ended: " << n << " trial" << (n > 1 ? "s are" : " is")
        << " being trained elsewhere; when they end, run it again: tensorscope sweep run " << model_core::displayText(plan.dir)
        << " (or follow them: tensorscope sweep status " << model_core::displayText(plan.dir) << ")\n";
    return kExitRunElsewhere;
  };
  if (queue.empty()) {
    out << "sweep '" << plan.sweep.name << "': nothing to run (" << ended << " of " << total << " trials have ended"
        << (skipped ? ", " + std::to_string(skipped) + " run elsewhere" : std::string()) << ")\n";
    return skipped ? elsewhereNote(skipped) : kExitOk;
  }
  const std::string exe = selfExecutable();
  g_runSignalled = 0;
  std::signal(SIGINT, onRunSignal);
  std::signal(SIGTERM, onRunSignal);
  std::map<pid_t, const Trial*> running;
  std::size_t next = 0;
  int finished = 0, failed = 0, interrupted = 0, endedElsewhere = 0;
  bool forwarded = false;
  const auto event = [&](const std::string& what, const Trial& t, const std::string& extra = "") {
    if (jsonLines)
      out << "{\"event\": \"" << what << "\", \"trial\": \"" << t.name << "\", \"index\": " << t.index << extra << "}"
          << std::endl;
  };
  if (!jsonLines)
    out << "sweep '" << plan.sweep.name << "': " << queue.size() << " trials to run, " << J << " at a time, " << threads
        << " thread" << (threads > 1 ? "s" : "") << " each (logs: trials/NAME/log.txt; Ctrl-C stops and keeps checkpoints)\n";
  auto lastDraw = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  while (true) {
    if (g_runSignalled && !forwarded) {
      forwarded = true;  // children in our process group got a terminal's Ctrl-C too; a kill reached only us
      for (const auto& [pid, t] : running) ::kill(pid, SIGINT);
    }
    while (!g_runSignalled && running.size() < static_cast<std::size_t>(J) && next < queue.size()) {
      const Trial* t = queue[next++];
      running[spawnTrial(exe, threads, plan, *t)] = t;
      event("trial_start", *t);
    }
    if (running.empty()) break;
    int wstatus = 0;
    const pid_t pid = ::waitpid(-1, &wstatus, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      const Trial* t = running[pid];
      running.erase(pid);
      const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
      const auto st = model_core::trialStatus(plan, *t);
      // "Finished now" counts only trials this process trained: another `sweep run` on the same
      // folder may have trained (kExitTrialEndedBefore) or be training (kExitRunElsewhere) this one.
      if (code == kExitRunElsewhere) ++skipped;
      else if (code == kExitTrialEndedBefore) ++endedElsewhere;
      else if (code == kExitTrialInterrupted || (g_runSignalled && !st.result)) ++interrupted;
      else if (st.state == TrialState::Finished && code == kExitOk) ++finished;
      else ++failed;
      std::string extra = ", \"state\": \"" + std::string(model_core::trialStateName(st.state)) + "\"";
      if (st.result && st.result->final_metric)
        extra += ", \"" + plan.sweep.metric.name + "\": " + std::to_string(*st.result->final_metric);
      event("trial_end", *t, extra);
      if (!jsonLines) {
        out << "\r\033[K" << pad(t->name, 28) << model_core::trialStateName(st.state);
        if (st.result && st.result->final_metric) out << "  " << plan.sweep.metric.name << " " << fixed(*st.result->final_metric, 4);
        if (st.result) out << "  " << fixed(st.result->wall_seconds, 0) << " s";
        if (code == kExitRunElsewhere) out << "  (being trained by another process)";
        else if (code == kExitTrialEndedBefore) out << "  (trained by another process)";
        else if (!st.result && code != kExitTrialInterrupted) out << "  (exit " << code << "; see " << plan.trialDir(*t) << "/log.txt)";
        out << "\n";
      }
      continue;
    }
    if (!jsonLines && std::chrono::steady_clock::now() - lastDraw > std::chrono::milliseconds(500)) {
      lastDraw = std::chrono::steady_clock::now();
      std::string line = "[" + std::to_string(ended + finished + failed + endedElsewhere) + "/" + std::to_string(total) + " ended, " +
                         std::to_string(running.size()) + " running]";
      for (const auto& [p, t] : running)
        line += "  " + t->name.substr(0, 24) + " " + std::to_string(model_core::trialStatus(plan, *t).step) + "/" +
                std::to_string(t->config.train.steps);
      out << "\r\033[K" << line.substr(0, 160) << std::flush;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!jsonLines) out << "\r\033[K";
  out << (jsonLines ? "{\"event\": \"end\", \"finished\": " + std::to_string(finished) + ", \"failed\": " +
                          std::to_string(failed) + ", \"interrupted\": " + std::to_string(interrupted) +
                          ", \"run_elsewhere\": " + std::to_string(skipped) + "}\n"
                    : "sweep '" + plan.sweep.name + "': " + std::to_string(finished) + " trials finished now, " +
                          std::to_string(failed) + " failed or diverged, " + std::to_string(interrupted) + " interrupted" +
                          (skipped ? ", " + std::to_string(skipped) + " run elsewhere" : std::string()) + "; " +
                          std::to_string(ended + finished + failed + endedElsewhere) + " of " + std::to_string(total) +
                          " have ended\n");
  if (g_runSignalled || interrupted) {
    err << "tensorscope: stopped; interrupted trials resume from their checkpoints: tensorscope sweep run " << plan.dir << "\n";
    return 130;
  }
  if (failed) return kExitFailure;
  return skipped ? elsewhereNote(skipped) : kExitOk;
}

int submitCommand(Args& args, std::ostream& out, std::ostream& err) {
  const bool slurm = args.takeFlag("--slurm");
  const auto partition = args.takeOption("--partition");
  const auto time = args.takeOption("--time");
  const auto cpus = args.takeInt("--cpus-per-task", 1, 1024);
  const auto gpus = args.takeInt("--gpus", 0, 64);
  const auto limit = args.takeInt("--array-limit", 1, 100000);
  const bool retry = args.takeFlag("--retry-failed");
  const bool dryRun = args.takeFlag("--dry-run");
  const auto pos = args.positionals(1, 1, kUsage);
  if (!slurm) throw UsageError("sweep submit hands trials to a scheduler: say --slurm (the one supported)\nusage: " + std::string(kUsage));
  const auto safe = [](const std::string& v, const char* what) {
    for (unsigned char c : v)
      if (!std::isalnum(c) && std::string(":-_.,").find(char(c)) == std::string::npos)
        throw UsageError(std::string(what) + " '" + v + "' has a character Slurm does not take here");
  };
  if (partition) safe(*partition, "--partition");
  if (time) safe(*time, "--time");
  const auto plan = model_core::readSweepPlan(fs::absolute(pos[0]).lexically_normal().string());
  // The path goes into the batch script's comments, #SBATCH lines and command: a newline there would
  // end a directive and start a command.
  for (unsigned char c : plan.dir)
    if (c < 0x20 || c == 0x7f)
      throw UsageError("the sweep folder's path " + model_core::displayText(plan.dir) +
                       " holds a control character; Slurm scripts cannot name it safely: move the folder "
                       "(mv) to a path without one and submit from there");
  auto jobs = model_core::readSlurmJobs(plan.dir);
  std::string note;
  const auto queued = slurmStates(jobs, note);
  std::vector<std::int64_t> indices;
  int ended = 0, inQueue = 0, elsewhere = 0;
  for (const auto& t : plan.trials) {
    const auto st = model_core::trialStatus(plan, t);
    if (queued.count(t.index)) {
      ++inQueue;
    } else if (st.state == TrialState::Running) {
      ++elsewhere;
    } else if (st.state == TrialState::Finished || ((st.state == TrialState::Failed || st.state == TrialState::Diverged) && !retry)) {
      ++ended;
    } else {
      if (st.state == TrialState::Failed || st.state == TrialState::Diverged) model_core::clearTrialResult(plan, t, st);
      indices.push_back(t.index);
    }
  }
  if (!note.empty()) err << "tensorscope: " << note << "\n";
  if (indices.empty()) {
    out << "nothing to submit: " << ended << " trials have ended, " << inQueue << " are queued or running in Slurm"
        << (elsewhere ? ", " + std::to_string(elsewhere) + " run elsewhere" : std::string()) << "\n";
    return kExitOk;
  }
  fs::create_directories(plan.dir + "/slurm");
  const std::string script = plan.dir + "/slurm/submit-" + std::to_string(jobs.size() + 1) + ".sbatch";
  std::string array = arraySpec(indices);
  if (limit) array += "%" + std::to_string(*limit);
  std::string name = "tensorscope-";
  for (unsigned char c : plan.sweep.name) name += std::isalnum(c) ? char(c) : '_';
  std::ostringstream sb;
  sb << "#!/bin/bash\n"
     << "# Written by tensorscope sweep submit: one trial of " << plan.dir << " per array index.\n"
     << "#SBATCH --job-name=" << name.substr(0, 64) << "\n"
     << "#SBATCH --array=" << array << "\n"
     << "#SBATCH --cpus-per-task=" << cpus.value_or(1) << "\n"
     << "#SBATCH --output=" << plan.dir << "/slurm/%A_%a.out\n";
  if (partition) sb << "#SBATCH --partition=" << *partition << "\n";
  if (time) sb << "#SBATCH --time=" << *time << "\n";
  if (gpus && *gpus > 0) sb << "#SBATCH --gres=gpu:" << *gpus << "\n";
  sb << "# Slurm sends SIGTERM before a time limit or preemption: the trial checkpoints and a later\n"
     << "# 'tensorscope sweep submit' resubmits it from there.\n"
     << "exec " << shellQuote(selfExecutable()) << " --threads \"${SLURM_CPUS_PER_TASK:-1}\" sweep run-trial "
     << shellQuote(plan.dir) << " \"$SLURM_ARRAY_TASK_ID\"" << (gpus && *gpus > 0 ? " --device cuda" : "") << "\n";
  files::writeFileAtomically(script, sb.str());
  fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
  if (dryRun) {
    out << "wrote " << script << " (not submitted: --dry-run)\n" << sb.str();
    return kExitOk;
  }
  std::string reply;
  int rc = 127;
  try {
    rc = capture({"sbatch", "--parsable", script}, reply);
  } catch (const std::exception& e) {
    reply = e.what();
  }
  if (rc != 0)
    throw std::runtime_error(rc == 127 ? "sbatch is not available on this machine: submit from a Slurm login node"
                                       : "sbatch refused the job array (" + script + "): " + reply);
  std::string id = reply.substr(0, reply.find_first_of(";\n"));
  if (id.empty() || !std::all_of(id.begin(), id.end(), ::isdigit))
    throw std::runtime_error("sbatch answered '" + reply + "', not a job id");
  jobs.push_back({id, indices, script});
  model_core::writeSlurmJobs(plan.dir, jobs);
  out << "submitted Slurm job " << id << ": " << indices.size() << " trials (array " << array << ")\n"
      << "follow it: tensorscope sweep status " << plan.dir << "\n";
  return kExitOk;
}

// ---- status and report --------------------------------------------------------------------------

int statusCommand(Args& args, std::ostream& out) {
  const bool json = args.takeFlag("--json");
  const auto pos = args.positionals(1, 1, kUsage);
  const auto plan = model_core::readSweepPlan(pos[0]);
  const auto report = model_core::buildReport(plan);
  if (json) {
    out << model_core::formatReport(report, "json");
    return kExitOk;
  }
  std::string note;
  const auto jobs = model_core::readSlurmJobs(plan.dir);
  const auto queued = slurmStates(jobs, note);
  std::map<std::string, int> counts;
  out << "sweep '" << plan.sweep.name << "' (" << model_core::displayText(plan.dir) << "): " << plan.trials.size() << " trials, metric "
      << report.metric << " on " << report.split << "\n";
  std::size_t w = 8;
  for (const auto& t : plan.trials) w = std::max(w, t.name.size() + 2);
  out << pad("trial", w) << pad("state", 13) << pad("step", 14) << report.metric << "\n";
  for (const auto& [t, st] : report.trials) {
    const bool ended = st.state == TrialState::Finished || st.state == TrialState::Failed || st.state == TrialState::Diverged;
    const bool inSlurm = !ended && queued.count(t.index);
    const std::string state = inSlurm && st.state != TrialState::Running ? "queued" : model_core::trialStateName(st.state);
    ++counts[state];
    out << pad(t.name, w) << pad(state, 13)
        << pad(std::to_string(st.step) + "/" + std::to_string(t.config.train.steps), 14);
    if (st.result && st.result->final_metric) out << fixed(*st.result->final_metric, 4);
    else if (!st.damaged.empty()) out << "result.json is damaged (see below)";
    else if (st.result && st.state == TrialState::Failed) out << model_core::displayText(st.result->message).substr(0, 80);
    else if (inSlurm) out << "slurm " << queued.at(t.index);
    else out << "-";
    out << "\n";
  }
  std::string sum;
  for (const auto& [k, n] : counts) sum += (sum.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  out << sum << "\n";
  if (!jobs.empty()) {
    out << "Slurm jobs:";
    for (const auto& j : jobs) out << " " << j.id << " (" << j.indices.size() << " trials)";
    out << "\n";
  }
  if (!note.empty()) out << "(" << model_core::displayText(note) << ")\n";
  for (const auto& [t, st] : report.trials)
    if (!st.damaged.empty()) out << "trial " << t.name << ": " << st.damaged << "\n";
  return kExitOk;
}

/// Writes the figure as SVG, PNG or PDF. PNG and PDF are rendered into memory and written like the
/// SVG (files::writeFileAtomically): a full disk or any write error throws, naming the file, and
/// leaves the previous figure as it was (QPainter::end() does not report a failed write to a file).
void writeFigure(const std::string& svg, const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".svg") {
    files::writeFileAtomically(path, svg);
    return;
  }
  if (ext != ".png" && ext != ".pdf") throw UsageError("--figure takes FILE.svg, FILE.png or FILE.pdf; got '" + path + "'");
#if TENSORSCOPE_WITH_GUI
  const auto app = ensureOffscreenApplication();
  QSvgRenderer renderer(QByteArray::fromStdString(svg));
  if (!renderer.isValid()) throw std::runtime_error("the report figure is not valid SVG (a bug; please report it)");
  const QSize size = renderer.defaultSize();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  bool ok = false;
  if (ext == ".png") {
    QImage image(size * 2, QImage::Format_ARGB32);
    image.fill(Qt::white);
    QPainter p(&image);
    renderer.render(&p);
    p.end();
    ok = image.save(&buffer, "PNG");
  } else {
    QPdfWriter pdf(&buffer);
    pdf.setPageSize(QPageSize(QSizeF(size.width() * 0.75, size.height() * 0.75), QPageSize::Point));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setResolution(96);
    QPainter p(&pdf);
    renderer.render(&p, QRectF(0, 0, pdf.width(), pdf.height()));
    ok = p.end();
  }
  buffer.close();
  if (!ok || bytes.isEmpty()) throw std::runtime_error("cannot render the figure " + path + " (" + ext.substr(1) + ")");
  files::writeFileAtomically(path, std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
#else
  throw UsageError("this headless build writes figures as SVG; PNG and PDF need the explorer's build (Qt)");
#endif
}

int reportCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto format = args.takeOption("--format");
  const auto file = args.takeOption("--out");
  const auto figure = args.takeOption("--figure");
  const auto x = args.takeOption("--x");
  const auto pos = args.positionals(1, 1, kUsage);
  const auto plan = model_core::readSweepPlan(pos[0]);
  const auto report = model_core::buildReport(plan);
  for (const auto& [t, st] : report.trials)  // reported as failed; said here too, for csv, LaTeX and figures
    if (!st.damaged.empty()) err << "tensorscope: trial " << t.name << ": " << st.damaged << "\n";
  const std::string text = model_core::formatReport(report, format.value_or("md"));
  if (file) {
    files::writeFileAtomically(*file, text);
    out << "wrote " << *file << "\n";
  } else {
    out << text;
  }
  if (figure) {
    writeFigure(model_core::reportFigureSvg(plan, report, x.value_or("parameters")), *figure);
    out << "wrote " << *figure << "\n";
  }
  return kExitOk;
}

}  // namespace

std::map<std::int64_t, std::string> slurmQueue(const std::string& sweepDir, std::string& note) {
  return slurmStates(model_core::readSlurmJobs(sweepDir), note);
}

int runSweepCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto sub = args.takeCommand();
  if (sub == "plan") return planCommand(args, out);
  if (sub == "run") return runCommand(args, out, err);
  if (sub == "run-trial") {
    const auto device = args.takeOption("--device");
    const auto pos = args.positionals(2, 2, kUsage);
    if (device && *device != "cpu" && *device != "cuda") throw UsageError("--device takes cpu or cuda, not '" + *device + "'");
    const auto plan = model_core::readSweepPlan(pos[0]);
    return runTrial(plan, trialAt(plan, pos[1]), device.value_or(""), out, err);
  }
  if (sub == "submit") return submitCommand(args, out, err);
  if (sub == "status") return statusCommand(args, out);
  if (sub == "report") return reportCommand(args, out, err);
  throw UsageError("sweep needs a sub-command: plan, run, run-trial, status or report\nusage: " + std::string(kUsage));
}

}  // namespace tensorscope::app
