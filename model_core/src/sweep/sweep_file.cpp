// The sweep file: its reader (sweepFromJson, readSweepFile) and writer (sweepToJson).
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

#include "files/read_file.h"
#include "model_core/run_files.h"
#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

namespace {

/// A label from a plain axis value: strings as they are, numbers short, anything else as JSON.
std::string labelOf(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return shortNumber(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return spec::jsonPreview(v, 24);
}

const std::set<std::string> kSolves = {"head_size", "heads", "rank", "d_model"};
const std::set<std::string> kMetrics = {"loss", "accuracy", "exact_match"};

/// One value of an axis: {"label", "set"} (or {"label", "value"} on an axis with a path), or a bare
/// value of the axis's path. Nothing when it cannot be read (the problem is added).
std::optional<SweepAxisValue> readAxisValue(Problems& p, const json& v, const std::string& vf, const std::string& path,
                                            std::set<std::string>& labels) {
  SweepAxisValue value;
  if (v.is_object() && (v.contains("set") || v.contains("label"))) {
    // {"label": L, "set": {path: value, …}}, or on an axis with a path {"label": L, "value": V}.
    p.rejectUnknown(v, vf + ".", {"label", "set", "value", "solve"});
    p.read(v, "label", vf + ".", value.label);
    // Checked again with the match it belongs to (readMatch): match_parameters' names or match's sizes.
    if (p.read(v, "solve", vf + ".", value.solve) && !kSolves.count(value.solve) && value.solve != "any" &&
        std::count(spec::budgetSizeNames().begin(), spec::budgetSizeNames().end(), value.solve) == 0) {
      std::string sizes;
      for (const auto& n : spec::budgetSizeNames()) sizes += n + ", ";
      p.add(vf + ".solve", "must be head_size, heads, rank or d_model (match_parameters), or a size match solves (" + sizes +
                               "any); got '" + value.solve + "'");
    }
    if (!path.empty() && v.contains("value")) {
      value.set[path] = v["value"];
    } else if (!path.empty() && !v.contains("set")) {
      p.add(vf + ".value", "give the value of " + path);
    } else if (path.empty() && v.contains("value")) {
      p.add(vf + ".value", "this axis has no path; say what the value sets in \"set\"");
    }
    if (v.contains("set") && !v["set"].is_object()) {
      p.add(vf + ".set", "must be an object of config paths and their values");
    } else if (!v.contains("set") && path.empty()) {
      p.add(vf + ".set", "must be an object of config paths and their values");
    } else if (v.contains("set")) {
      for (const auto& [key, val] : v["set"].items()) {
        try {
          (void)parsePath(key);
          value.set[key] = val;
        } catch (const std::invalid_argument& e) {
          p.add(vf + ".set", e.what());
        }
      }
    }
  } else if (!path.empty()) {
    value.set[path] = v;
    value.label = labelOf(v);
  } else {
    p.add(vf, "an axis without a path takes values {\"label\": …, \"set\": {path: value, …}}");
    return std::nullopt;
  }
  if (value.label.empty()) value.label = labelOf(v.is_object() && v.contains("value") ? v["value"] : v);
  if (value.label.size() > 64) p.add(vf + ".label", "is longer than 64 characters");
  if (const auto m = controlCharacterProblem(value.label); !m.empty()) p.add(vf + ".label", m);
  if (!labels.insert(value.label).second) p.add(vf + ".label", "'" + value.label + "' labels two values");
  return value;
}

/// Axis `f` (e.g. "axes[0]"): its name, path and values. Nothing when it cannot be read.
std::optional<SweepAxis> readAxis(Problems& p, const json& a, const std::string& f, std::set<std::string>& names) {
  if (!a.is_object()) {
    p.add(f, "must be an object {\"name\", \"path\"?, \"values\"}");
    return std::nullopt;
  }
  p.rejectUnknown(a, f + ".", {"name", "path", "values"});
  SweepAxis axis;
  std::string path;
  p.read(a, "name", f + ".", axis.name);
  p.read(a, "path", f + ".", path);
  if (axis.name.empty()) axis.name = path;
  if (axis.name.empty()) p.add(f + ".name", "name the axis (or give its path)");
  else if (!names.insert(axis.name).second) p.add(f + ".name", "'" + axis.name + "' names two axes");
  if (axis.name == "seed") p.add(f + ".name", "seeds are the sweep's \"seeds\", not an axis");
  if (const auto m = controlCharacterProblem(axis.name); !m.empty()) p.add(f + ".name", m);
  if (!path.empty()) {
    try {
      (void)parsePath(path);
    } catch (const std::invalid_argument& e) {
      p.add(f + ".path", e.what());
      return std::nullopt;  // its values cannot be read without it
    }
  }
  if (!a.contains("values") || !a["values"].is_array() || a["values"].empty()) {
    p.add(f + ".values", "must be a non-empty array");
    return std::nullopt;
  }
  std::set<std::string> labels;
  for (std::size_t k = 0; k < a["values"].size(); ++k)
    if (auto value = readAxisValue(p, a["values"][k], f + ".values[" + std::to_string(k) + "]", path, labels))
      axis.values.push_back(std::move(*value));
  return axis;
}

/// The base run config, inline ("base") or from a file beside the sweep ("base_file"), with "set" applied.
void readBase(Problems& p, const json& j, SweepFile& s, const std::string& baseDir) {
  if (j.contains("base") == j.contains("base_file")) {
    p.add("base", "give the base run config inline (\"base\") or as a file (\"base_file\"), one of them");
  } else if (j.contains("base")) {
    s.base = j["base"];
  } else if (!j["base_file"].is_string()) {
    p.add("base_file", "must be a path; got " + spec::kindName(j["base_file"]));
  } else {
    const std::string path = (fs::path(baseDir) / j["base_file"].get<std::string>()).string();
    try {
      s.base = spec::parseUntrustedJson(files::readBoundedFile(path));
    } catch (const std::exception& e) {
      p.add("base_file", e.what());
    }
  }
  if (j.contains("set")) {
    if (!j["set"].is_object()) {
      p.add("set", "must be an object of config paths and their values");
    } else {
      for (const auto& [key, val] : j["set"].items()) {
        try {
          if (!s.base.is_null()) setConfigPath(s.base, key, val);
        } catch (const std::invalid_argument& e) {
          p.add("set", e.what());
        }
      }
    }
  }
  if (!s.base.is_null()) {
    try {
      (void)runConfigFromJson(s.base.dump());
    } catch (const std::invalid_argument& e) {
      p.add(j.contains("base") ? "base" : "base_file", e.what());
    }
  }
}

/// "seeds": distinct integers >= 0.
void readSeeds(Problems& p, const json& j, SweepFile& s) {
  if (j.contains("seeds")) {
    const json& seeds = j["seeds"];
    s.seeds.clear();
    if (!seeds.is_array() || seeds.empty()) {
      p.add("seeds", "must be a non-empty array of integers");
    } else {
      std::set<std::uint64_t> seen;
      for (std::size_t i = 0; i < seeds.size(); ++i) {
        if (!seeds[i].is_number_unsigned()) {
          p.add("seeds[" + std::to_string(i) + "]", "must be an integer >= 0; got " + spec::jsonPreview(seeds[i]));
        } else if (!seen.insert(seeds[i].get<std::uint64_t>()).second) {
          p.add("seeds[" + std::to_string(i) + "]", "repeats seed " + std::to_string(seeds[i].get<std::uint64_t>()));
        } else {
          s.seeds.push_back(seeds[i].get<std::uint64_t>());
        }
      }
    }
  }
}

/// "budget": steps and/or seconds per trial.
void readBudget(Problems& p, const json& j, SweepFile& s) {
  if (j.contains("budget")) {
    const json& b = j["budget"];
    if (!b.is_object()) {
      p.add("budget", "must be an object {\"steps\": N} and/or {\"seconds\": S}");
    } else {
      p.rejectUnknown(b, "budget.", {"steps", "seconds"});
      if (p.read(b, "steps", "budget.", s.steps) && (s.steps < 1 || s.steps > kMaxRunStep))
        p.add("budget.steps", "must be in [1, 2^40]");
      if (p.read(b, "seconds", "budget.", s.seconds) && !(s.seconds > 0 && s.seconds <= 1e7))
        p.add("budget.seconds", "must be in (0, 1e7]");
    }
  }
}

/// The sizes "match" solves: the matcher's (spec/budget_match.h) and "any".
bool budgetSize(const std::string& name) {
  const auto& n = spec::budgetSizeNames();
  return name == "any" || std::find(n.begin(), n.end(), name) != n.end();
}

std::string budgetSizeList() {
  std::string list;
  for (const auto& n : spec::budgetSizeNames()) list += n + ", ";
  return list + "or any";
}

/// "match_parameters" (the axis, its reference value, what to solve and the tolerance) or "match"
/// (the same with the cost it matches: params, kv or flops, and a size of the budget matcher).
void readMatch(Problems& p, const json& j, SweepFile& s) {
  if (j.contains("match_parameters") && j.contains("match"))
    p.add("match", "give one of match_parameters and match (match on params does what match_parameters does, "
                   "through the cost model's matcher)");
  for (const std::string key : {"match_parameters", "match"}) {
    if (!j.contains(key)) continue;
    const bool budget = key == "match";
    const std::string f = key + ".";
    const json& m = j[key];
    if (!m.is_object()) {
      p.add(key, budget ? "must be an object {\"axis\", \"reference\", \"on\", \"size\", \"tolerance\"}"
                        : "must be an object {\"axis\", \"reference\", \"solve\", \"tolerance\"}");
      continue;
    }
    if (budget) p.rejectUnknown(m, f, {"axis", "reference", "on", "size", "tolerance"});
    else p.rejectUnknown(m, f, {"axis", "reference", "solve", "tolerance"});
    ParameterMatch pm;
    p.read(m, "axis", f, pm.axis);
    p.read(m, "reference", f, pm.reference);
    if (budget) {
      pm.solve = "any";
      p.read(m, "size", f, pm.solve);
      if (!p.read(m, "on", f, pm.on)) p.add(f + "on", "say which cost to match: params, kv or flops");
      else if (pm.on != "params" && pm.on != "kv" && pm.on != "flops")
        p.add(f + "on", "must be params, kv or flops; got '" + pm.on + "'");
      if (!budgetSize(pm.solve)) p.add(f + "size", "must be " + budgetSizeList() + "; got '" + pm.solve + "'");
    } else {
      p.read(m, "solve", f, pm.solve);
      if (!kSolves.count(pm.solve)) p.add(f + "solve", "must be head_size, heads, rank or d_model; got '" + pm.solve + "'");
    }
    p.read(m, "tolerance", f, pm.tolerance);
    const auto axis = std::find_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) { return a.name == pm.axis; });
    if (axis == s.axes.end()) {
      p.add(f + "axis", "'" + pm.axis + "' is not one of the sweep's axes");
    } else {
      if (std::none_of(axis->values.begin(), axis->values.end(), [&](const SweepAxisValue& v) { return v.label == pm.reference; }))
        p.add(f + "reference", "'" + pm.reference + "' is not a value of axis '" + pm.axis + "'");
      for (std::size_t k = 0; k < axis->values.size(); ++k) {
        const auto& own = axis->values[k].solve;
        if (own.empty() || (budget ? budgetSize(own) : kSolves.count(own) > 0)) continue;
        p.add("axes[" + std::to_string(axis - s.axes.begin()) + "].values[" + std::to_string(k) + "].solve",
              budget ? "must be " + budgetSizeList() + " (the sizes " + key + " solves); got '" + own + "'"
                     : "must be head_size, heads, rank or d_model; got '" + own + "'");
      }
    }
    if (!(pm.tolerance > 0 && pm.tolerance < 1)) p.add(f + "tolerance", "must be in (0, 1), e.g. 0.01 for 1%");
    s.match = pm;
  }
}

/// "baseline": {"axis", "label"}, or a label of the first axis; "alpha": the verdicts' level.
void readComparison(Problems& p, const json& j, SweepFile& s) {
  if (j.contains("baseline")) {
    const json& b = j["baseline"];
    SweepBaseline base;
    if (b.is_string()) {
      base.label = b.get<std::string>();
      if (s.axes.empty()) p.add("baseline", "names a value of the first axis, but the sweep has no axes");
      else base.axis = s.axes.front().name;
    } else if (b.is_object()) {
      p.rejectUnknown(b, "baseline.", {"axis", "label"});
      p.read(b, "axis", "baseline.", base.axis);
      p.read(b, "label", "baseline.", base.label);
    } else {
      p.add("baseline", "must be a label of the first axis (\"mhsa\") or {\"axis\", \"label\"}; got " + spec::jsonPreview(b));
    }
    if (!base.axis.empty()) {
      const auto axis = std::find_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) { return a.name == base.axis; });
      if (axis == s.axes.end()) {
        p.add("baseline.axis", "'" + base.axis + "' is not one of the sweep's axes");
      } else if (std::none_of(axis->values.begin(), axis->values.end(),
                              [&](const SweepAxisValue& v) { return v.label == base.label; })) {
        std::string labels;
        for (const auto& v : axis->values) labels += (labels.empty() ? "" : ", ") + v.label;
        p.add(b.is_string() ? "baseline" : "baseline.label",
              "'" + base.label + "' is not a value of axis '" + base.axis + "' (its values: " + labels + ")");
      } else {
        s.baseline = base;
      }
    }
  }
  if (double alpha = 0; p.read(j, "alpha", "", alpha)) {
    if (!(alpha > 0 && alpha <= 0.5)) p.add("alpha", "must be in (0, 0.5], e.g. 0.05 or 0.01; got " + spec::jsonPreview(j["alpha"]));
    else s.alpha = alpha;
  }
}

/// "metric": loss, accuracy or exact_match, optionally on a named split.
void readMetric(Problems& p, const json& j, SweepFile& s) {
  if (j.contains("metric")) {
    const json& m = j["metric"];
    if (m.is_string()) {
      s.metric.name = m.get<std::string>();
    } else if (m.is_object()) {
      p.rejectUnknown(m, "metric.", {"name", "split"});
      p.read(m, "name", "metric.", s.metric.name);
      p.read(m, "split", "metric.", s.metric.split);
    } else {
      p.add("metric", "must be loss, accuracy or exact_match, or {\"name\", \"split\"}");
    }
    if (!kMetrics.count(s.metric.name)) p.add("metric", "must be loss, accuracy or exact_match; got '" + s.metric.name + "'");
  }
}

/// What only the whole sweep can say: its number of trials, the metric's split and kind for the task.
void checkWhole(Problems& p, SweepFile& s) {
  if (!p.empty()) return;
  std::int64_t n = static_cast<std::int64_t>(s.seeds.size());
  for (const auto& a : s.axes) n = std::min<std::int64_t>(n * static_cast<std::int64_t>(a.values.size()), kMaxSweepTrials + 1);
  if (n > kMaxSweepTrials) p.add("axes", "expand to more than " + std::to_string(kMaxSweepTrials) + " trials");
  const auto base = runConfigFromJson(s.base.dump());
  if (!s.metric.split.empty()) {
    const auto splits = evaluationSplitNames(base);
    if (std::find(splits.begin(), splits.end(), s.metric.split) == splits.end())
      p.add("metric.split", "task " + base.task.name + " evaluates on " + splits.front() +
                                (splits.size() > 1 ? " and " + splits.back() : "") + ", not '" + s.metric.split + "'");
  }
  if (s.metric.name == "exact_match" && base.task.name != "arithmetic" && base.task.name != "copy" &&
      base.task.name != "reverse" && base.task.name != "sort")
    p.add("metric", "exact_match is measured on question-answer tasks; task " + base.task.name + " has loss and accuracy");
}

}  // namespace

// ---- The sweep file -----------------------------------------------------------------------------

SweepFile sweepFromJson(const std::string& text, const std::string& baseDir) {
  json j;
  try {
    j = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(std::string("invalid sweep: malformed JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("invalid sweep: the document must be a JSON object");
  Problems p("sweep");
  if (!spec::hasEnvelope(j, kSweepFormat, kVersion)) {
    p.add("format", std::string("a sweep file starts {\"format\": \"") + kSweepFormat + "\", \"version\": 1, …}");
    p.raise();
  }
  p.rejectUnknown(j, "", {"format", "version", "name", "description", "base", "base_file", "set", "axes", "seeds",
                          "budget", "match_parameters", "match", "metric", "baseline", "alpha"});
  SweepFile s;
  p.read(j, "name", "", s.name);
  p.read(j, "description", "", s.description);
  if (s.name.empty()) p.add("name", "give the sweep a name (it titles its reports)");
  if (const auto m = controlCharacterProblem(s.name); !m.empty()) p.add("name", m);
  if (s.name.size() > 200) p.add("name", "is longer than 200 characters");
  readBase(p, j, s, baseDir);
  // Axes.
  if (j.contains("axes")) {
    const json& axes = j["axes"];
    if (!axes.is_array()) {
      p.add("axes", "must be an array of axes");
    } else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < axes.size(); ++i)
        if (auto axis = readAxis(p, axes[i], "axes[" + std::to_string(i) + "]", names)) s.axes.push_back(std::move(*axis));
    }
  }
  readSeeds(p, j, s);
  readBudget(p, j, s);
  readMatch(p, j, s);
  readMetric(p, j, s);
  readComparison(p, j, s);
  checkWhole(p, s);
  if (!p.empty()) p.raise();
  return s;
}

SweepFile readSweepFile(const std::string& path) {
  std::string text;
  try {
    text = files::readBoundedFile(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  try {
    return sweepFromJson(text, fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

std::string sweepToJson(const SweepFile& s) {
  json j = {{"format", kSweepFormat}, {"version", kVersion}, {"name", s.name}};
  if (!s.description.empty()) j["description"] = s.description;
  j["base"] = s.base;  // with "set" applied
  json axes = json::array();
  for (const auto& a : s.axes) {
    json values = json::array();
    for (const auto& v : a.values) {
      json value = {{"label", v.label}, {"set", v.set}};
      if (!v.solve.empty()) value["solve"] = v.solve;
      values.push_back(value);
    }
    axes.push_back({{"name", a.name}, {"values", values}});
  }
  j["axes"] = axes;
  j["seeds"] = s.seeds;
  json budget = json::object();
  if (s.steps > 0) budget["steps"] = s.steps;
  if (s.seconds > 0) budget["seconds"] = s.seconds;
  if (!budget.empty()) j["budget"] = budget;
  if (s.match && s.match->on.empty())
    j["match_parameters"] = {{"axis", s.match->axis}, {"reference", s.match->reference}, {"solve", s.match->solve},
                             {"tolerance", s.match->tolerance}};
  else if (s.match)
    j["match"] = {{"axis", s.match->axis}, {"reference", s.match->reference}, {"on", s.match->on}, {"size", s.match->solve},
                  {"tolerance", s.match->tolerance}};
  j["metric"] = {{"name", s.metric.name}};
  if (!s.metric.split.empty()) j["metric"]["split"] = s.metric.split;
  // Written only when given: the sweep.json of sweeps planned before them stays byte for byte.
  if (s.baseline) j["baseline"] = {{"axis", s.baseline->axis}, {"label", s.baseline->label}};
  if (s.alpha != kDefaultSweepAlpha) j["alpha"] = s.alpha;
  return j.dump(2);
}

std::optional<SweepBaseline> baselineOf(const SweepFile& sweep) {
  if (sweep.baseline) return sweep.baseline;
  if (sweep.match) return SweepBaseline{sweep.match->axis, sweep.match->reference};
  if (!sweep.axes.empty() && !sweep.axes.front().values.empty())
    return SweepBaseline{sweep.axes.front().name, sweep.axes.front().values.front().label};
  return std::nullopt;
}

}  // namespace tensorscope::model_core
