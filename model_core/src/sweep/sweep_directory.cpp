// The sweep directory: sweep.json, plan.json, the trials' run.json, plan.check and slurm.json.
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
#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

// ---- The sweep directory ------------------------------------------------------------------------

std::string planToJson(const SweepFile& s, const std::vector<Trial>& trials) {
  json list = json::array();
  for (const auto& t : trials) {
    json labels = json::object();
    for (const auto& [axis, label] : t.labels) labels[axis] = label;
    json e = {{"index", t.index},          {"name", t.name},
              {"labels", labels},          {"seed", t.seed},
              {"design", t.design},        {"attention_parameters", t.attention_parameters},
              {"attention_gflop_per_step", t.attention_gflop_per_step}, {"steps", t.config.train.steps}};
    if (!t.matched.empty()) e["matched"] = t.matched;
    if (!t.match_on.empty())
      e["match"] = {{"on", t.match_on}, {"cost", t.match_cost}, {"target", t.match_target}, {"residual", t.match_residual}};
    if (t.round > 0) e["round"] = t.round;
    list.push_back(e);
  }
  return json{{"format", kSweepPlanFormat}, {"version", kVersion}, {"name", s.name}, {"trials", list}}.dump(2);
}

namespace {

constexpr const char* kPlanCheckFormat = "tensorscope.sweep_plan_check";

/// FNV-1a (64 bits) over the files a plan is made of, each with its length: plan.check records it
/// so that a later command knows the files are the ones checked against the expansion.
std::string planDigest(const std::string& sweepText, const std::string& planText, const std::vector<std::string>& runTexts) {
  std::uint64_t h = 1469598103934665603ull;
  const auto add = [&](const std::string& text) {
    const std::string head = std::to_string(text.size()) + ":";
    for (const std::string* part : {&head, &text})
      for (unsigned char c : *part) h = (h ^ c) * 1099511628211ull;
  };
  add(sweepText);
  add(planText);
  for (const auto& t : runTexts) add(t);
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void writePlanCheck(const fs::path& root, const std::string& digest) {
  files::writeFileAtomically((root / "plan.check").string(),
                             json{{"format", kPlanCheckFormat}, {"version", kVersion}, {"digest", digest}}.dump() + "\n");
}

std::string readText(const fs::path& path) {
  try {
    return files::readBoundedFile(path.string());
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

/// The trials as plan.json lists them, with their configs from the run.json texts; nullopt where
/// plan.json is not the shape planToJson writes.
std::optional<std::vector<Trial>> trialsFromPlan(const SweepFile& sweep, const json& plan, const std::vector<std::string>& runTexts) {
  if (!plan.is_object() || !plan.contains("trials") || !plan["trials"].is_array() || plan["trials"].size() != runTexts.size())
    return std::nullopt;
  std::vector<Trial> trials;
  for (std::size_t i = 0; i < runTexts.size(); ++i) {
    const json& e = plan["trials"][i];
    Trial t;
    try {
      t.index = e.at("index").get<std::int64_t>();
      t.name = e.at("name").get<std::string>();
      t.seed = e.at("seed").get<std::uint64_t>();
      t.design = e.at("design").get<std::string>();
      t.attention_parameters = e.at("attention_parameters").get<std::int64_t>();
      t.attention_gflop_per_step = e.at("attention_gflop_per_step").get<double>();
      t.matched = e.value("matched", std::string());
      t.round = e.value("round", 0);
      if (e.contains("match")) {
        const json& m = e.at("match");
        t.match_on = m.at("on").get<std::string>();
        t.match_cost = m.at("cost").get<double>();
        t.match_target = m.at("target").get<double>();
        t.match_residual = m.at("residual").get<double>();
      }
      for (const auto& a : sweep.axes) t.labels.emplace_back(a.name, e.at("labels").at(a.name).get<std::string>());
      t.config = runConfigFromJson(runTexts[i]);
      if (t.index != static_cast<std::int64_t>(i) || t.config.train.steps != e.at("steps").get<std::int64_t>())
        return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

std::optional<SettleRule> readSettle(const fs::path& root) {
  const auto path = root / "settle.json";
  if (!fs::exists(path)) return std::nullopt;
  return parseSettleRule(readText(path), path.string());
}

}  // namespace

namespace sweep_internal {

Trial addedSeedTrial(const std::vector<Trial>& trials, const std::string& design, std::uint64_t seed, std::int64_t index,
                     int round) {
  const auto it = std::find_if(trials.begin(), trials.end(), [&](const Trial& t) { return t.design == design && t.round == 0; });
  if (it == trials.end()) throw std::invalid_argument("no trial of the sweep file has the design '" + design + "'");
  Trial t = *it;
  std::size_t width = 0;
  while (width < it->name.size() && std::isdigit(static_cast<unsigned char>(it->name[width]))) ++width;
  t.index = index;
  t.seed = seed;
  t.round = round;
  t.config.train.seed = seed;
  t.name = trialName(index, static_cast<int>(std::max<std::size_t>(width, 3)), t.labels, seed);
  return t;
}

}  // namespace sweep_internal

void writeSweepDirectory(const std::string& dir, const SweepFile& s, const std::vector<Trial>& trials) {
  const std::string planText = planToJson(s, trials), sweepText = sweepToJson(s);
  const fs::path root(dir);
  // Everything that can be refused is refused before anything is made.
  if (const auto m = controlCharacterProblem(dir); !m.empty())
    throw std::invalid_argument("the sweep folder's path " + displayText(dir) + " " + m.substr(0, m.find(';')) +
                                ": it is written into Slurm scripts and reports; choose another folder");
  std::size_t longest = 0;
  for (const auto& t : trials) longest = std::max(longest, t.name.size());
  // DIR/trials/NAME/run/checkpoints/step-NNNNNNNNNNNN.xxxxxxxx/.optimizer.safetensors.tmpNNNNNNNNNN
  constexpr std::size_t kDeepestInsideATrial = 96;
  const std::size_t deepest = fs::absolute(root).string().size() + 8 + longest + kDeepestInsideATrial;
  if (deepest >= 4096)
    throw std::invalid_argument("the sweep folder's path is too long (" + std::to_string(fs::absolute(root).string().size()) +
                                " bytes): its trials' files would pass the system's limit of 4096 bytes a path; "
                                "plan into a folder with a shorter path");
  std::vector<std::string> runTexts;
  runTexts.reserve(trials.size());
  for (const auto& t : trials) runTexts.push_back(runConfigToJson(t.config));
  if (fs::exists(root / "plan.json")) {
    const std::string old = readText(root / "plan.json");
    if (old != planText || readText(root / "sweep.json") != sweepText)
      throw std::invalid_argument(dir + " holds another plan (plan.json differs): plan into a new directory, or remove "
                                        "this one if its trials are not needed");
  } else if (fs::exists(root) && !fs::is_directory(root)) {
    throw std::invalid_argument(dir + " is not a directory");
  } else if (fs::exists(root) && !fs::is_empty(root)) {
    throw std::invalid_argument(dir + " is not empty and holds no sweep plan: plan into a new directory");
  }
  std::error_code ec;
  fs::create_directories(root / "trials", ec);
  if (ec) throw std::runtime_error("cannot create " + (root / "trials").string() + ": " + ec.message());
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    fs::create_directories(root / "trials" / t.name, ec);
    if (ec) throw std::runtime_error("cannot create " + (root / "trials" / t.name).string() + ": " + ec.message());
    const auto path = root / "trials" / t.name / "run.json";
    if (!fs::exists(path) || readText(path) != runTexts[i]) files::writeFileAtomically(path.string(), runTexts[i]);
  }
  files::writeFileAtomically((root / "sweep.json").string(), sweepText);
  files::writeFileAtomically((root / "plan.json").string(), planText);  // a plan exists once it is complete
  writePlanCheck(root, planDigest(sweepText, planText, runTexts));
}

SweepPlan readSweepPlan(const std::string& dir) {
  SweepPlan plan;
  plan.dir = dir;
  const fs::path root(dir);
  if (!fs::is_directory(root)) throw std::invalid_argument(dir + " is not a directory");
  if (!fs::exists(root / "plan.json"))
    throw std::invalid_argument(dir + " holds no sweep plan (plan.json); make one with: tensorscope sweep plan SWEEP.json --out " + dir);
  const std::string sweepText = readText(root / "sweep.json");
  plan.sweep = readSweepFile((root / "sweep.json").string());
  const std::string text = readText(root / "plan.json");
  json planJson;
  try {
    planJson = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError&) {
    planJson = json();  // compared below, and refused as not matching
  }
  // Fast path: plan.check says these very files were checked against the expansion.
  std::vector<std::string> runTexts;
  bool complete = planJson.is_object() && planJson.contains("trials") && planJson["trials"].is_array();
  if (complete) {
    for (const auto& e : planJson["trials"]) {
      const auto name = e.is_object() && e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
      const auto path = root / "trials" / name / "run.json";
      if (name.empty() || name.find('/') != std::string::npos || name == ".." || !fs::exists(path)) {
        complete = false;
        break;
      }
      runTexts.push_back(readText(path));
    }
  }
  std::string recorded;
  if (complete && fs::exists(root / "plan.check")) {
    try {
      const json check = spec::parseUntrustedJson(readText(root / "plan.check"));
      if (spec::hasEnvelope(check, kPlanCheckFormat, kVersion) && check.contains("digest") && check["digest"].is_string())
        recorded = check["digest"].get<std::string>();
    } catch (const std::exception&) {
    }  // a damaged plan.check only costs the slow path
  }
  const std::string digest = complete ? planDigest(sweepText, text, runTexts) : "";
  if (complete && recorded == digest) {
    if (auto trials = trialsFromPlan(plan.sweep, planJson, runTexts)) {
      plan.trials = std::move(*trials);
      plan.settle = readSettle(root);
      return plan;
    }
  }
  // The trials are expanded again from the sweep file and checked against plan.json: a hand-edited
  // or damaged plan is refused rather than trusted.
  plan.trials = expandSweep(plan.sweep);
  // Trials past the expansion are seeds added by settle rounds: each is its design's trial of the
  // file with another seed, derived again here and compared like the rest.
  if (planJson.is_object() && planJson.contains("trials") && planJson["trials"].is_array()) {
    const std::size_t planned = plan.trials.size();
    for (std::size_t i = planned; i < planJson["trials"].size() && i < std::size_t(kMaxSweepTrials); ++i) {
      const json& e = planJson["trials"][i];
      try {
        plan.trials.push_back(addedSeedTrial(std::vector<Trial>(plan.trials.begin(), plan.trials.begin() + std::ptrdiff_t(planned)),
                                             e.at("design").get<std::string>(), e.at("seed").get<std::uint64_t>(),
                                             static_cast<std::int64_t>(i), e.at("round").get<int>()));
      } catch (const std::exception&) {
        break;  // refused below: the plan does not match
      }
    }
  }
  if (text != planToJson(plan.sweep, plan.trials))
    throw std::invalid_argument((root / "plan.json").string() +
                                " does not match sweep.json (edited or damaged): plan the sweep again into a new directory");
  for (auto& t : plan.trials) {
    const std::string path = plan.trialDir(t) + "/run.json";
    const auto config = readRunConfig(path);
    if (runConfigToJson(config) != runConfigToJson(t.config))
      throw std::invalid_argument(path + " differs from the plan: plan the sweep again into a new directory");
  }
  if (complete) {  // checked now: the next command reads the plan without expanding it
    try {
      writePlanCheck(root, digest);
    } catch (const std::exception&) {
    }  // a read-only sweep folder is read the slow way each time
  }
  plan.settle = readSettle(root);
  return plan;
}

void extendSweepPlan(SweepPlan& plan, const std::vector<Trial>& added) {
  if (added.empty()) return;
  if (plan.trials.size() + added.size() > std::size_t(kMaxSweepTrials))
    throw std::invalid_argument("adding " + std::to_string(added.size()) + " trials would pass the " +
                                std::to_string(kMaxSweepTrials) + " trials a sweep may have");
  const fs::path root(plan.dir);
  std::vector<Trial> trials = plan.trials;
  for (const auto& t : added) {
    if (t.index != static_cast<std::int64_t>(trials.size()))
      throw std::invalid_argument("trial " + t.name + " is not the next index of the plan (" + std::to_string(trials.size()) + ")");
    trials.push_back(t);
  }
  std::error_code ec;
  for (const auto& t : added) {  // unused folders, should the commit below not happen
    fs::create_directories(root / "trials" / t.name, ec);
    if (ec) throw std::runtime_error("cannot create " + (root / "trials" / t.name).string() + ": " + ec.message());
    files::writeFileAtomically((root / "trials" / t.name / "run.json").string(), runConfigToJson(t.config));
  }
  const std::string planText = planToJson(plan.sweep, trials);
  files::writeFileAtomically((root / "plan.json").string(), planText);  // the commit
  std::vector<std::string> runTexts;
  for (const auto& t : trials) runTexts.push_back(readText(root / "trials" / t.name / "run.json"));
  writePlanCheck(root, planDigest(readText(root / "sweep.json"), planText, runTexts));
  plan.trials = std::move(trials);
}

// ---- Slurm jobs ---------------------------------------------------------------------------------

std::vector<SlurmJob> parseSlurmJobs(const std::string& text, const std::string& path) {
  json j;
  try {
    j = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(path + ": malformed JSON: " + e.what());
  }
  if (!spec::hasEnvelope(j, kSlurmJobsFormat, kVersion) || !j.contains("jobs") || !j["jobs"].is_array())
    throw std::invalid_argument(path + ": not a record of Slurm jobs (format " + kSlurmJobsFormat + ", version 1)");
  Problems p(path);
  p.rejectUnknown(j, "", {"format", "version", "jobs"});
  std::vector<SlurmJob> jobs;
  for (std::size_t i = 0; i < j["jobs"].size(); ++i) {
    const json& e = j["jobs"][i];
    const std::string f = "jobs[" + std::to_string(i) + "]";
    if (!e.is_object()) {
      p.add(f, "must be an object {\"job_id\", \"indices\", \"script\"}");
      continue;
    }
    p.rejectUnknown(e, f + ".", {"job_id", "indices", "script"});
    SlurmJob job;
    p.read(e, "job_id", f + ".", job.id);
    p.read(e, "script", f + ".", job.script);
    if (job.id.empty() || job.id.size() > 20 || !std::all_of(job.id.begin(), job.id.end(), ::isdigit))
      p.add(f + ".job_id", "must be Slurm's job id (digits); got " + spec::jsonPreview(e.value("job_id", json())));
    if (!e.contains("indices") || !e["indices"].is_array()) {
      p.add(f + ".indices", "must be an array of trial indices");
    } else {
      for (const auto& x : e["indices"]) {
        if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() >= kMaxSweepTrials) {
          p.add(f + ".indices", "holds " + spec::jsonPreview(x) + ", not a trial index");
          break;
        }
        job.indices.push_back(x.get<std::int64_t>());
      }
    }
    jobs.push_back(job);
  }
  if (!p.empty()) p.raise();
  return jobs;
}

std::vector<SlurmJob> readSlurmJobs(const std::string& dir) {
  const std::string path = dir + "/slurm.json";
  if (!fs::exists(path)) return {};
  std::string text;
  try {
    text = files::readBoundedFile(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  return parseSlurmJobs(text, path);
}

void writeSlurmJobs(const std::string& dir, const std::vector<SlurmJob>& jobs) {
  json list = json::array();
  for (const auto& j : jobs) list.push_back({{"job_id", j.id}, {"indices", j.indices}, {"script", j.script}});
  files::writeFileAtomically(dir + "/slurm.json",
                             json{{"format", kSlurmJobsFormat}, {"version", kVersion}, {"jobs", list}}.dump(2) + "\n");
}

}  // namespace tensorscope::model_core
