// Trial results (result.json), their summary from a run's metrics log, and a trial's status.
#include "model_core/sweep.h"


#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/run_files.h"
#include "sweep/sweep_internal.h"
#include "sweep/trial_lock.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// ---- Trial results ------------------------------------------------------------------------------

bool plausibleMetric(const std::string& name, double v) {
  if (!std::isfinite(v)) return false;
  if (name == "accuracy" || name == "exact_match") return v >= 0 && v <= 1;
  return v >= 0 && v <= 1e9;  // a loss (cross-entropy): non-negative; beyond 1e9 nothing a run reports
}

std::string trialResultToJson(const TrialResult& r) {
  std::string message = r.message;
  if (message.size() > kMaxTrialMessageBytes) {  // e.g. an exception's text listing many problems
    std::size_t cut = kMaxTrialMessageBytes - 40;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    message = message.substr(0, cut) + " … (" + std::to_string(r.message.size()) + " bytes in all)";
  }
  json j = {{"format", kTrialResultFormat}, {"version", kVersion}, {"status", r.status}, {"message", message},
            {"steps", r.steps}, {"wall_seconds", r.wall_seconds}, {"tokens_per_second", r.tokens_per_second},
            {"best_step", r.best_step}, {"final_eval", r.final_eval},
            {"where", r.where.substr(0, kMaxTrialWhereBytes)}};
  j["final_metric"] = r.final_metric ? json(*r.final_metric) : json();
  j["best_metric"] = r.best_metric ? json(*r.best_metric) : json();
  return j.dump(2);
}

TrialResult parseTrialResult(const std::string& text, const std::string& path, const std::string& metric) {
  json j;
  try {
    j = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(path + ": malformed JSON: " + e.what());
  }
  if (!spec::hasEnvelope(j, kTrialResultFormat, kVersion))
    throw std::invalid_argument(path + ": not a trial result (format " + kTrialResultFormat + ", version 1)");
  Problems p(path);
  p.rejectUnknown(j, "", {"format", "version", "status", "message", "steps", "wall_seconds", "tokens_per_second",
                          "best_step", "final_eval", "where", "final_metric", "best_metric"});
  TrialResult r;
  p.read(j, "status", "", r.status);
  p.read(j, "message", "", r.message);
  p.read(j, "steps", "", r.steps);
  p.read(j, "wall_seconds", "", r.wall_seconds);
  p.read(j, "tokens_per_second", "", r.tokens_per_second);
  p.read(j, "best_step", "", r.best_step);
  p.read(j, "where", "", r.where);
  if (r.status != "finished" && r.status != "diverged" && r.status != "failed")
    p.add("status", "must be finished, diverged or failed; got '" + r.status.substr(0, 40) + "'");
  if (r.message.size() > kMaxTrialMessageBytes)
    p.add("message", "is longer than " + std::to_string(kMaxTrialMessageBytes) + " characters");
  if (r.where.size() > kMaxTrialWhereBytes) p.add("where", "is longer than " + std::to_string(kMaxTrialWhereBytes) + " characters");
  if (r.steps < 0 || r.steps > kMaxRunStep) p.add("steps", "must be in [0, 2^40]; got " + std::to_string(r.steps));
  if (r.best_step < -1 || r.best_step > r.steps)
    p.add("best_step", "must be in [-1, steps = " + std::to_string(r.steps) + "]; got " + std::to_string(r.best_step));
  if (!(r.wall_seconds >= 0 && r.wall_seconds <= 1e9)) p.add("wall_seconds", "must be in [0, 1e9]; got " + shortNumber(r.wall_seconds));
  if (!(r.tokens_per_second >= 0 && r.tokens_per_second <= 1e12))
    p.add("tokens_per_second", "must be in [0, 1e12]; got " + shortNumber(r.tokens_per_second));
  const std::string kind = metric == "accuracy" || metric == "exact_match" ? "an accuracy in [0, 1]" : "a loss in [0, 1e9]";
  for (const char* key : {"final_metric", "best_metric"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    double v = 0;
    if (!p.read(j, key, "", v)) continue;
    if (!plausibleMetric(metric.empty() ? "loss" : metric, v)) p.add(key, "must be " + kind + "; got " + shortNumber(v));
    else (std::string(key) == "final_metric" ? r.final_metric : r.best_metric) = v;
  }
  if (j.contains("final_eval")) {
    const json& fe = j["final_eval"];
    if (!fe.is_object() || fe.size() > 16) {
      p.add("final_eval", "must be an object of at most 16 splits");
    } else {
      for (const auto& [split, values] : fe.items()) {
        const std::string f = "final_eval." + displayText(split.substr(0, 64));
        if (!values.is_object()) {
          p.add(f, "must be an object {\"loss\", \"accuracy\", \"exact_match\"}");
          continue;
        }
        p.rejectUnknown(values, f + ".", {"loss", "accuracy", "exact_match"});
        for (const char* m : {"loss", "accuracy", "exact_match"}) {
          double v = 0;
          if (values.contains(m) && p.read(values, m, f + ".", v) && !plausibleMetric(m, v))
            p.add(f + "." + m, std::string("must be in ") + (std::string(m) == "loss" ? "[0, 1e9]" : "[0, 1]") + "; got " +
                                   shortNumber(v));
        }
      }
      r.final_eval = fe;
    }
  }
  if (!p.empty()) p.raise();
  return r;
}

TrialResult summariseTrialRun(const std::string& runDir, const SweepMetric& metric, const std::string& firstSplit) {
  TrialResult r;
  const std::string split = metric.split.empty() ? firstSplit : metric.split;
  std::vector<double> rates;
  std::int64_t lastEvalStep = -1;
  readMetrics(
      runDir,
      [&](std::int64_t, const MetricsRecord& rec) {
        const std::int64_t step = rec.step;
        if (rec.kind == MetricsRecord::Kind::Train) {
          r.steps = std::max(r.steps, step);
          if (auto v = metricOf(rec, "tokens_per_second")) rates.push_back(*v);
          if (auto v = metricOf(rec, "elapsed_seconds")) r.wall_seconds = std::max(r.wall_seconds, *v);
        } else if (rec.kind == MetricsRecord::Kind::Eval) {
          const std::string& s = rec.split;
          json e = json::object();
          for (const char* k : {"loss", "accuracy", "exact_match"})
            if (auto v = metricOf(rec, k)) e[k] = *v;
          if (step >= lastEvalStep) {
            if (step > lastEvalStep) r.final_eval = json::object();
            r.final_eval[s] = e;
            lastEvalStep = step;
          }
          if (s != split) return;
          const auto v = metricOf(rec, metric.name);
          if (!v) return;
          r.final_metric = *v;
          if (!r.best_metric || (metric.higherIsBetter() ? *v > *r.best_metric : *v < *r.best_metric))
            r.best_metric = *v, r.best_step = step;
        }
      },
      [](std::int64_t, const std::string&) {});
  r.tokens_per_second = median(rates);
  return r;
}

const char* trialStateName(TrialState s) {
  switch (s) {
    case TrialState::Pending: return "pending";
    case TrialState::Running: return "running";
    case TrialState::Interrupted: return "interrupted";
    case TrialState::Finished: return "finished";
    case TrialState::Diverged: return "diverged";
    case TrialState::Failed: return "failed";
  }
  return "?";
}

namespace {

/// The last training step a run's metrics log records, read from its end (a long run's log holds
/// many thousand records; status reads every trial's each time).
std::int64_t lastTrainStep(const std::string& runDir) {
  std::ifstream in(runDir + "/" + kMetricsLogName, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  constexpr std::streamoff kTail = 64 << 10;
  in.seekg(size > kTail ? size - kTail : 0);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::int64_t step = -1;
  std::size_t end = tail.size();
  while (end > 0 && step < 0) {
    const std::size_t nl = tail.rfind('\n', end - 1);
    const std::size_t begin = nl == std::string::npos ? 0 : nl + 1;
    if (begin == 0 && size > kTail) break;  // a line cut by the tail: not a record
    try {
      const auto rec = metricsRecordFromJson(parseMetricsRecord(std::string_view(tail).substr(begin, end - begin)));
      if (rec.kind == MetricsRecord::Kind::Train) step = rec.step;
    } catch (const std::exception&) {
    }  // a damaged or empty line: look further back
    if (nl == std::string::npos) break;
    end = nl;
  }
  if (step >= 0) return step;
  // No training record at the end: the whole log says (rare, and bounded by readMetrics).
  step = 0;
  readMetrics(
      runDir,
      [&](std::int64_t, const MetricsRecord& rec) {
        if (rec.kind == MetricsRecord::Kind::Train) step = std::max(step, rec.step);
      },
      [](std::int64_t, const std::string&) {});
  return step;
}

}  // namespace

TrialStatus trialStatus(const SweepPlan& plan, const Trial& t) {
  TrialStatus st;
  const std::string dir = plan.trialDir(t);
  const std::string resultPath = dir + "/result.json";
  if (fs::exists(resultPath)) {
    try {
      st.result = parseTrialResult(files::readBoundedFile(resultPath), resultPath, plan.sweep.metric.name);
      st.state = st.result->status == "finished" ? TrialState::Finished
                 : st.result->status == "diverged" ? TrialState::Diverged
                                                   : TrialState::Failed;
      st.step = st.result->steps;
      return st;
    } catch (const std::exception& e) {
      st.state = TrialState::Failed;
      st.damaged = "result.json is damaged (" + displayText(std::string(e.what()).substr(0, 600)) + ")" +
                   "; the trial counts as failed: redo it with tensorscope sweep run " + plan.dir +
                   " --retry-failed (the damaged file is kept as result.json.damaged)";
      st.step = lastTrainStep(plan.runDir(t));
      return st;
    }
  }
  if (trialLockHeld(dir + "/lock")) st.state = TrialState::Running;
  st.step = lastTrainStep(plan.runDir(t));
  if (st.state != TrialState::Running && fs::exists(plan.runDir(t) + "/config.json")) st.state = TrialState::Interrupted;
  return st;
}

void clearTrialResult(const SweepPlan& plan, const Trial& t, const TrialStatus& status) {
  const std::string path = plan.trialDir(t) + "/result.json";
  std::error_code ec;
  if (status.damaged.empty()) fs::remove(path, ec);
  else fs::rename(path, path + ".damaged", ec);
  if (ec) throw std::runtime_error("cannot clear " + path + " to run the trial again: " + ec.message());
}

}  // namespace tensorscope::model_core
