// Sweep files, their expansion into trials, the sweep directory and its reports (model_core/sweep.h).
// Torch-free: tests/fuzz builds this file with the run config reader alone.
#include "model_core/sweep.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cmath>
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
#include "spec/cost_model.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
constexpr int kVersion = 1;

class Problems : public spec::FieldReader {
 public:
  explicit Problems(std::string what) : what_(std::move(what)) {}
  void add(const std::string& field, const std::string& msg) { fail(field, msg); }
  [[noreturn]] void raise() const { throw std::invalid_argument(listProblems("invalid " + what_, lines())); }

 private:
  std::string what_;
};

std::string shortNumber(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

/// A label from a plain axis value: strings as they are, numbers short, anything else as JSON.
std::string labelOf(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return shortNumber(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return spec::jsonPreview(v, 24);
}

/// Trial directory names keep [A-Za-z0-9._+-]; anything else becomes '_'.
std::string safeName(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += (std::isalnum(c) || c == '.' || c == '-' || c == '+') ? char(c) : '_';
  return out.empty() ? "_" : out;
}

/// Why a name or label cannot be printed as it is, or empty: control characters (C0, DEL, C1) would
/// reach terminals, Markdown, LaTeX and SVG raw.
std::string controlCharacterProblem(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    unsigned code = 0;
    if (c < 0x20 || c == 0x7f) code = c;
    else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
             static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      code = static_cast<unsigned char>(s[i + 1]);
    else continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "%04X", code);
    return std::string("holds a control character (U+") + hex +
           "); names and labels are printed on terminals and into reports and figures";
  }
  return "";
}

std::string firstEvalSplit(const RunConfig& c) { return evaluationSplitNames(c).front(); }

/// Splits "model.attention[1].core" into keys and indices ({"model"}, {"attention", 1}, {"core"}).
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};
std::vector<PathStep> parsePath(const std::string& path) {
  if (path.empty()) throw std::invalid_argument("an empty path");
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i <= path.size()) {
    const auto dot = path.find('.', i);
    std::string part = path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    PathStep step;
    const auto br = part.find('[');
    if (br != std::string::npos) {
      if (part.back() != ']' || br + 2 > part.size() - 1)
        throw std::invalid_argument("'" + path + "': an index is written [i]");
      const std::string digits = part.substr(br + 1, part.size() - br - 2);
      if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
        throw std::invalid_argument("'" + path + "': the index must be a number below 10000");
      step.index = std::stoul(digits);
      part = part.substr(0, br);
    }
    if (part.empty()) throw std::invalid_argument("'" + path + "' has an empty field name");
    step.key = part;
    steps.push_back(step);
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  return steps;
}

void setSteps(json& node, const std::vector<PathStep>& steps, std::size_t at, const json& value, const std::string& path) {
  if (!node.is_object()) throw std::invalid_argument("'" + path + "': '" + steps[at - (at > 0)].key + "' is not an object");
  const auto& step = steps[at];
  const bool last = at + 1 == steps.size();
  if (last && !step.index) {
    if (value.is_null()) node.erase(step.key);
    else node[step.key] = value;
    return;
  }
  if (!node.contains(step.key)) {
    if (step.index) throw std::invalid_argument("'" + path + "': there is no '" + step.key + "' to index");
    node[step.key] = json::object();
  }
  json& child = node[step.key];
  if (step.index) {
    if (!child.is_array() || *step.index >= child.size())
      throw std::invalid_argument("'" + path + "': '" + step.key + "' has no element " + std::to_string(*step.index));
    if (last) {
      child[*step.index] = value;
      return;
    }
    setSteps(child[*step.index], steps, at + 1, value, path);
  } else if (child.is_array()) {  // every element (e.g. each layer's attention spec)
    for (auto& e : child) setSteps(e, steps, at + 1, value, path);
  } else {
    setSteps(child, steps, at + 1, value, path);
  }
}

const std::set<std::string> kSolves = {"head_size", "heads", "rank", "d_model"};
const std::set<std::string> kMetrics = {"loss", "accuracy", "exact_match"};

/// The attention specs of a run config's JSON, as a list (a single spec is one element).
std::vector<json*> attentionSpecs(json& config) {
  std::vector<json*> out;
  if (!config.contains("model") || !config["model"].contains("attention")) return out;
  json& a = config["model"]["attention"];
  if (a.is_array())
    for (auto& e : a) out.push_back(&e);
  else
    out.push_back(&a);
  return out;
}

/// Sets the solved size to x in every attention spec (and model.d_model for d_model).
void applySolve(json& config, const std::string& solve, int x) {
  for (json* s : attentionSpecs(config)) {
    if (!s->is_object() || !s->contains("sizes") || !(*s)["sizes"].is_object()) continue;
    json& z = (*s)["sizes"];
    // R follows a solved H or D where it was H·D (Kronecker cores and MHSA need R = H·D).
    const bool tied = z.contains("H") && z.contains("D") && z.contains("R") && z["H"].is_number_integer() &&
                      z["D"].is_number_integer() && z["R"].is_number_integer() &&
                      z["R"].get<std::int64_t>() == z["H"].get<std::int64_t>() * z["D"].get<std::int64_t>();
    if (solve == "head_size" || solve == "heads") {
      z[solve == "head_size" ? "D" : "H"] = x;
      if (tied) z["R"] = z["H"].get<std::int64_t>() * z["D"].get<std::int64_t>();
    } else if (solve == "rank") {
      z["R"] = x;
    } else {
      z["F"] = x;
    }
  }
  if (solve == "d_model") config["model"]["d_model"] = x;
}

int currentSolveValue(json& config, const std::string& solve) {
  if (solve == "d_model") return config["model"].value("d_model", 64);
  for (json* s : attentionSpecs(config))
    if (s->is_object() && s->contains("sizes") && (*s)["sizes"].is_object())
      return (*s)["sizes"].value(solve == "head_size" ? "D" : solve == "heads" ? "H" : "R", 16);
  return 16;
}

/// A record's value of a metric (or of tokens_per_second, elapsed_seconds) when it is one a run can
/// report: a damaged or absurd log gives no value rather than an "inf ± inf" or a -nan coordinate.
std::optional<double> metricOf(const json& rec, const std::string& name) {
  if (!rec.contains(name) || !rec[name].is_number()) return std::nullopt;
  const double v = rec[name].get<double>();
  if (name == "tokens_per_second") return v >= 0 && v <= 1e12 ? std::optional<double>(v) : std::nullopt;
  if (name == "elapsed_seconds") return v >= 0 && v <= 1e9 ? std::optional<double>(v) : std::nullopt;
  return plausibleMetric(name, v) ? std::optional<double>(v) : std::nullopt;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string joinLabels(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string s;
  for (const auto& [axis, label] : labels) s += (s.empty() ? "" : " · ") + label;
  return s.empty() ? "base" : s;
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
                          "budget", "match_parameters", "metric"});
  SweepFile s;
  p.read(j, "name", "", s.name);
  p.read(j, "description", "", s.description);
  if (s.name.empty()) p.add("name", "give the sweep a name (it titles its reports)");
  if (const auto m = controlCharacterProblem(s.name); !m.empty()) p.add("name", m);
  if (s.name.size() > 200) p.add("name", "is longer than 200 characters");
  // The base run config, inline or from a file beside the sweep.
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
  // Axes.
  if (j.contains("axes")) {
    const json& axes = j["axes"];
    if (!axes.is_array()) {
      p.add("axes", "must be an array of axes");
    } else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < axes.size(); ++i) {
        const std::string f = "axes[" + std::to_string(i) + "]";
        const json& a = axes[i];
        if (!a.is_object()) {
          p.add(f, "must be an object {\"name\", \"path\"?, \"values\"}");
          continue;
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
            continue;  // its values cannot be read without it
          }
        }
        if (!a.contains("values") || !a["values"].is_array() || a["values"].empty()) {
          p.add(f + ".values", "must be a non-empty array");
          continue;
        }
        std::set<std::string> labels;
        for (std::size_t k = 0; k < a["values"].size(); ++k) {
          const json& v = a["values"][k];
          const std::string vf = f + ".values[" + std::to_string(k) + "]";
          SweepAxisValue value;
          if (v.is_object() && (v.contains("set") || v.contains("label"))) {
            // {"label": L, "set": {path: value, …}}, or on an axis with a path {"label": L, "value": V}.
            p.rejectUnknown(v, vf + ".", {"label", "set", "value", "solve"});
            p.read(v, "label", vf + ".", value.label);
            if (p.read(v, "solve", vf + ".", value.solve) && !kSolves.count(value.solve))
              p.add(vf + ".solve", "must be head_size, heads, rank or d_model; got '" + value.solve + "'");
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
            continue;
          }
          if (value.label.empty()) value.label = labelOf(v.is_object() && v.contains("value") ? v["value"] : v);
          if (value.label.size() > 64) p.add(vf + ".label", "is longer than 64 characters");
          if (const auto m = controlCharacterProblem(value.label); !m.empty()) p.add(vf + ".label", m);
          if (!labels.insert(value.label).second) p.add(vf + ".label", "'" + value.label + "' labels two values");
          axis.values.push_back(std::move(value));
        }
        s.axes.push_back(std::move(axis));
      }
    }
  }
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
  if (j.contains("match_parameters")) {
    const json& m = j["match_parameters"];
    if (!m.is_object()) {
      p.add("match_parameters", "must be an object {\"axis\", \"reference\", \"solve\", \"tolerance\"}");
    } else {
      p.rejectUnknown(m, "match_parameters.", {"axis", "reference", "solve", "tolerance"});
      ParameterMatch pm;
      p.read(m, "axis", "match_parameters.", pm.axis);
      p.read(m, "reference", "match_parameters.", pm.reference);
      p.read(m, "solve", "match_parameters.", pm.solve);
      p.read(m, "tolerance", "match_parameters.", pm.tolerance);
      const auto axis = std::find_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) { return a.name == pm.axis; });
      if (axis == s.axes.end()) {
        p.add("match_parameters.axis", "'" + pm.axis + "' is not one of the sweep's axes");
      } else if (std::none_of(axis->values.begin(), axis->values.end(),
                              [&](const SweepAxisValue& v) { return v.label == pm.reference; })) {
        p.add("match_parameters.reference", "'" + pm.reference + "' is not a value of axis '" + pm.axis + "'");
      }
      if (!kSolves.count(pm.solve)) p.add("match_parameters.solve", "must be head_size, heads, rank or d_model; got '" + pm.solve + "'");
      if (!(pm.tolerance > 0 && pm.tolerance < 1)) p.add("match_parameters.tolerance", "must be in (0, 1), e.g. 0.01 for 1%");
      s.match = pm;
    }
  }
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
  if (p.empty()) {
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
  if (s.match)
    j["match_parameters"] = {{"axis", s.match->axis}, {"reference", s.match->reference}, {"solve", s.match->solve},
                             {"tolerance", s.match->tolerance}};
  j["metric"] = {{"name", s.metric.name}};
  if (!s.metric.split.empty()) j["metric"]["split"] = s.metric.split;
  return j.dump(2);
}

// ---- Expansion ----------------------------------------------------------------------------------

void setConfigPath(json& config, const std::string& path, const json& value) { setSteps(config, parsePath(path), 0, value, path); }

std::int64_t attentionParameters(const RunConfig& c) {
  std::int64_t n = 0;
  for (int l = 0; l < c.model.layers; ++l) n += spec::parameterCount(layerSpec(c.model, l));
  return n;
}

namespace {

/// "000-mhsa-0.001-s1": the index, the labels (cut to keep the name within kMaxTrialNameBytes; the
/// index keeps cut names unique) and the seed.
std::string trialName(std::int64_t index, int width, const std::vector<std::pair<std::string, std::string>>& labels,
                      std::uint64_t seed) {
  const std::string number = std::to_string(index);
  std::string name(static_cast<std::size_t>(std::max<int>(0, width - static_cast<int>(number.size()))), '0');
  name.append(number);
  std::string middle;
  for (const auto& [axis, label] : labels) middle.append("-").append(safeName(label));  // appended: GCC 12's false -Wstringop-overflow on "-" + string
  const std::string tail = "-s" + std::to_string(seed);
  const std::size_t room = kMaxTrialNameBytes - name.size() - tail.size();
  if (middle.size() > room) middle.resize(room);
  return name + middle + tail;
}

/// One problem of an expansion and the trials that have it (a bad value on one axis breaks every
/// trial it is in: it is said once, with the trials).
struct GroupedProblems {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> trials;
  void add(const std::string& trial, const std::string& problem) {
    auto& list = trials[problem];
    if (list.empty()) order.push_back(problem);
    list.push_back(trial);
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& problem : order) {
      const auto& names = trials.at(problem);
      std::string who = names.size() == 1 ? "trial " + names[0] : "trials " + names[0];
      for (std::size_t i = 1; i < names.size() && i < 3; ++i) who += ", " + names[i];
      if (names.size() > 3) who += " and " + std::to_string(names.size() - 3) + " more";
      if (names.size() > 1) who += " (" + std::to_string(names.size()) + " trials)";
      out.push_back(who + ": " + problem);
    }
    return out;
  }
};

/// The parameter match's answer for one trial config: the solved size and how close it came.
struct Solved {
  int best = -1;
  std::int64_t target = 0, gap = -1, count = 0;
};

}  // namespace

std::vector<Trial> expandSweep(const SweepFile& s) {
  // Grid points: one value index per axis, the last axis fastest; seeds innermost.
  std::vector<std::vector<std::size_t>> points{{}};
  for (const auto& a : s.axes) {
    std::vector<std::vector<std::size_t>> next;
    for (const auto& pt : points)
      for (std::size_t k = 0; k < a.values.size(); ++k) {
        auto q = pt;
        q.push_back(k);
        next.push_back(q);
      }
    points = std::move(next);
  }
  GroupedProblems problems;
  const auto configAt = [&](const std::vector<std::size_t>& pt, std::uint64_t seed) {
    json c = s.base;
    for (std::size_t i = 0; i < s.axes.size(); ++i)
      for (const auto& [path, value] : s.axes[i].values[pt[i]].set.items()) setConfigPath(c, path, value);
    setConfigPath(c, "train.seed", seed);
    if (s.steps > 0) setConfigPath(c, "train.steps", s.steps);
    return c;
  };
  std::size_t matchAxis = 0, reference = 0;
  if (s.match) {
    for (std::size_t i = 0; i < s.axes.size(); ++i)
      if (s.axes[i].name == s.match->axis) matchAxis = i;
    for (std::size_t k = 0; k < s.axes[matchAxis].values.size(); ++k)
      if (s.axes[matchAxis].values[k].label == s.match->reference) reference = k;
  }
  // The match depends on the model and task of a trial and of its reference, not on the seed or the
  // training settings: solved once per such pair (a 4,096-trial sweep has far fewer).
  std::map<std::string, Solved> solvedFor;
  std::vector<Trial> trials;
  std::int64_t position = 0;
  const int width = std::to_string(points.size() * s.seeds.size()).size() < 3 ? 3 : 4;
  for (const auto& pt : points) {
    for (const auto seed : s.seeds) {
      Trial t;
      t.index = position++;  // counted over refused trials too: each is named as it would be planned
      t.seed = seed;
      for (std::size_t i = 0; i < s.axes.size(); ++i) t.labels.emplace_back(s.axes[i].name, s.axes[i].values[pt[i]].label);
      t.design = joinLabels(t.labels);
      t.name = trialName(t.index, width, t.labels, seed);
      std::string context;  // what a config problem belongs to: the trial, or its reference
      try {
        json c = configAt(pt, seed);
        t.config = runConfigFromJson(c.dump());
        if (s.match && pt[matchAxis] != reference) {
          auto refPt = pt;
          refPt[matchAxis] = reference;
          const json refJson = configAt(refPt, seed);
          const auto& own = s.axes[matchAxis].values[pt[matchAxis]].solve;
          const std::string solve = own.empty() ? s.match->solve : own;
          const std::string key = solve + "\n" + c["model"].dump() + "\n" + c["task"].dump() + "\n" +
                                  refJson["model"].dump() + "\n" + refJson["task"].dump();
          auto found = solvedFor.find(key);
          if (found == solvedFor.end()) {
            context = "its reference " + s.match->reference + ": ";
            Solved sv;
            sv.target = attentionParameters(runConfigFromJson(refJson.dump()));
            context.clear();
            const int now = currentSolveValue(c, solve);
            for (int x = 1; x <= std::max(4 * now, 64) && x <= 8192; ++x) {
              json cx = c;
              applySolve(cx, solve, x);
              RunConfig rc;
              try {
                rc = runConfigFromJson(cx.dump());
              } catch (const std::invalid_argument&) {
                continue;  // e.g. H·D above the widest layer: not a candidate
              }
              const std::int64_t count = attentionParameters(rc);
              const std::int64_t gap = std::llabs(count - sv.target);
              if (sv.gap < 0 || gap < sv.gap) sv.gap = gap, sv.best = x, sv.count = count;
            }
            found = solvedFor.emplace(key, sv).first;
          }
          const Solved& sv = found->second;
          if (sv.best < 0) {
            problems.add(t.name, "no " + solve + " gives a valid config");
            continue;
          }
          const double rel = sv.target > 0 ? double(sv.gap) / double(sv.target) : 0;
          if (rel > s.match->tolerance) {
            problems.add(t.name, "the closest " + solve + " (" + std::to_string(sv.best) + ") gives " +
                                     std::to_string(sv.count) + " attention parameters, " + shortNumber(100 * rel) +
                                     "% from " + s.match->reference + "'s " + std::to_string(sv.target) +
                                     "; the tolerance is " + shortNumber(100 * s.match->tolerance) +
                                     "%: widen it or solve another size");
            continue;
          }
          applySolve(c, solve, sv.best);
          t.config = runConfigFromJson(c.dump());
          t.matched = std::string(solve == "head_size" ? "D" : solve == "heads" ? "H" : solve == "rank" ? "R" : "F") + "=" +
                      std::to_string(sv.best);
        }
        t.attention_parameters = attentionParameters(t.config);
        const auto N = modelSequenceLength(t.config);
        double flops = 0;
        for (int l = 0; l < t.config.model.layers; ++l)
          flops += spec::estimateCost(layerSpec(t.config.model, l), t.config.train.batch, N).forward_flops;
        t.attention_gflop_per_step = 3 * flops / 1e9;
      } catch (const std::invalid_argument& e) {
        problems.add(t.name, context + e.what());
        continue;
      }
      trials.push_back(std::move(t));
    }
  }
  if (!problems.order.empty()) throw std::invalid_argument(listProblems("the sweep '" + s.name + "' does not expand", problems.lines()));
  return trials;
}

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

}  // namespace

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
      return plan;
    }
  }
  // The trials are expanded again from the sweep file and checked against plan.json: a hand-edited
  // or damaged plan is refused rather than trusted.
  plan.trials = expandSweep(plan.sweep);
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
  return plan;
}

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
      [&](std::int64_t, const json& rec) {
        const std::string kind = rec.value("kind", std::string());
        const std::int64_t step = rec["step"].get<std::int64_t>();
        if (kind == "train") {
          r.steps = std::max(r.steps, step);
          if (auto v = metricOf(rec, "tokens_per_second")) rates.push_back(*v);
          if (auto v = metricOf(rec, "elapsed_seconds")) r.wall_seconds = std::max(r.wall_seconds, *v);
        } else if (kind == "eval") {
          const std::string s = rec.value("split", std::string());
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
      const json rec = parseMetricsRecord(std::string_view(tail).substr(begin, end - begin));
      if (rec.value("kind", std::string()) == "train") step = rec["step"].get<std::int64_t>();
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
      [&](std::int64_t, const json& rec) {
        if (rec.value("kind", std::string()) == "train") step = std::max(step, rec["step"].get<std::int64_t>());
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
  const std::string lock = dir + "/lock";
  if (fs::exists(lock)) {
    const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (::flock(fd, LOCK_SH | LOCK_NB) != 0) st.state = TrialState::Running;
      ::close(fd);
    }
  }
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

// ---- Reports ------------------------------------------------------------------------------------

SweepReport buildReport(const SweepPlan& plan) {
  SweepReport rep;
  rep.name = plan.sweep.name;
  rep.metric = plan.sweep.metric.name;
  rep.higher_is_better = plan.sweep.metric.higherIsBetter();
  rep.split = plan.sweep.metric.split.empty() && !plan.trials.empty() ? firstEvalSplit(plan.trials.front().config)
                                                                       : plan.sweep.metric.split;
  std::map<std::string, std::size_t> at;
  for (const auto& t : plan.trials) {
    rep.trials.emplace_back(t, trialStatus(plan, t));
    if (!at.count(t.design)) {
      at[t.design] = rep.designs.size();
      DesignSummary d;
      d.design = t.design;
      d.labels = t.labels;
      d.attention_parameters = t.attention_parameters;
      rep.designs.push_back(d);
    }
  }
  for (auto& d : rep.designs) {
    std::vector<double> finals, bests, rates, steps;
    for (const auto& [t, st] : rep.trials) {
      if (t.design != d.design) continue;
      ++d.trials;
      if (st.state != TrialState::Finished || !st.result || !st.result->final_metric) continue;
      ++d.finished;
      finals.push_back(*st.result->final_metric);
      if (st.result->best_metric) bests.push_back(*st.result->best_metric), steps.push_back(double(st.result->best_step));
      rates.push_back(st.result->tokens_per_second);
    }
    const auto mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x;
      return v.empty() ? 0.0 : s / double(v.size());
    };
    d.mean = mean(finals);
    if (finals.size() > 1) {
      double ss = 0;
      for (double x : finals) ss += (x - d.mean) * (x - d.mean);
      d.std = std::sqrt(ss / double(finals.size() - 1));
    }
    d.best_mean = mean(bests);
    d.tokens_per_second = mean(rates);
    d.best_step = mean(steps);
  }
  return rep;
}

namespace {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

/// Text for LaTeX: its ten special characters escaped, control characters shown (displayText).
std::string latexEscape(const std::string& text) {
  std::string out;
  for (char c : displayText(text)) {
    if (c == '\\') out += "\\textbackslash{}";
    else if (c == '^') out += "\\textasciicircum{}";
    else if (c == '~') out += "\\textasciitilde{}";
    else if (std::string("&%$#_{}").find(c) != std::string::npos) out += std::string("\\") + c;
    else out += c;
  }
  return out;
}

std::string csvField(const std::string& text) {
  const std::string s = displayText(text);
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string formatReport(const SweepReport& r, const std::string& format) {
  const int digits = r.metric == "loss" ? 4 : 3;
  const std::string metricTitle = r.metric + " (" + r.split + (r.higher_is_better ? ", higher is better)" : ", lower is better)");
  if (format == "json") {
    json designs = json::array();
    for (const auto& d : r.designs) {
      json labels = json::object();
      for (const auto& [a, l] : d.labels) labels[a] = l;
      designs.push_back({{"design", d.design}, {"labels", labels}, {"attention_parameters", d.attention_parameters},
                         {"trials", d.trials}, {"finished", d.finished},
                         {"mean", d.finished ? json(d.mean) : json()}, {"std", d.hasStd() ? json(d.std) : json()},
                         {"best_mean", d.finished ? json(d.best_mean) : json()},
                         {"tokens_per_second", d.tokens_per_second}, {"best_step", d.best_step}});
    }
    json trials = json::array();
    for (const auto& [t, st] : r.trials) {
      json e = {{"index", t.index}, {"name", t.name}, {"design", t.design}, {"seed", t.seed},
                {"state", trialStateName(st.state)}, {"step", st.step}};
      if (st.result) e["result"] = json::parse(trialResultToJson(*st.result));
      if (!st.damaged.empty()) e["damaged"] = st.damaged;
      trials.push_back(e);
    }
    return json{{"format", "tensorscope.sweep_report"}, {"version", kVersion}, {"name", r.name}, {"metric", r.metric},
                {"split", r.split}, {"higher_is_better", r.higher_is_better}, {"designs", designs}, {"trials", trials}}
               .dump(2) + "\n";
  }
  std::ostringstream o;
  if (format == "csv") {
    o << "design,attention_parameters,trials,finished," << r.metric << "_mean," << r.metric
      << "_std,best_mean,best_step,tokens_per_second\n";
    for (const auto& d : r.designs)
      o << csvField(d.design) << "," << d.attention_parameters << "," << d.trials << "," << d.finished << ","
        << (d.finished ? shortNumber(d.mean) : "") << "," << (d.hasStd() ? shortNumber(d.std) : "") << ","
        << (d.finished ? shortNumber(d.best_mean) : "") << "," << (d.finished ? fixed(d.best_step, 0) : "") << ","
        << (d.finished ? fixed(d.tokens_per_second, 0) : "") << "\n";
    return o.str();
  }
  if (format == "md") {
    o << "## " << displayText(r.name) << "\n\n";
    o << "| design | attention params | seeds | " << metricTitle << " | best | best step | tokens/s |\n";
    o << "|---|---|---|---|---|---|---|\n";
    for (const auto& d : r.designs) {
      o << "| " << displayText(d.design) << " | " << d.attention_parameters << " | " << d.finished << "/" << d.trials << " | ";
      if (d.finished)
        o << fixed(d.mean, digits) << " ± " << (d.hasStd() ? fixed(d.std, digits) : "–") << " | " << fixed(d.best_mean, digits) << " | "
          << fixed(d.best_step, 0) << " | " << fixed(d.tokens_per_second, 0) << " |\n";
      else
        o << "– | – | – | – |\n";
    }
    o << "\n| trial | state | step | " << r.metric << " | wall s |\n|---|---|---|---|---|\n";
    for (const auto& [t, st] : r.trials) {
      o << "| " << t.name << " | " << trialStateName(st.state) << " | " << st.step << " | ";
      if (st.result && st.result->final_metric) o << fixed(*st.result->final_metric, digits);
      else o << "–";
      o << " | " << (st.result ? fixed(st.result->wall_seconds, 0) : "–") << " |\n";
    }
    bool heading = false;
    for (const auto& [t, st] : r.trials) {
      if (st.damaged.empty()) continue;
      if (!heading) o << "\nTrials whose result could not be read (counted as failed):\n\n";
      heading = true;
      o << "- " << t.name << ": " << st.damaged << "\n";
    }
    return o.str();
  }
  if (format == "latex") {
    o << "% " << latexEscape(r.name) << ": " << metricTitle << ", mean $\\pm$ std over seeds (tensorscope sweep report)\n";
    o << "\\begin{tabular}{lrrr}\n\\hline\n";
    o << "Design & Attention params & Seeds & " << latexEscape(r.metric) << " \\\\\n\\hline\n";
    for (const auto& d : r.designs) {
      o << latexEscape(d.design) << " & " << d.attention_parameters << " & " << d.finished << " & ";
      if (d.finished && d.hasStd()) o << "$" << fixed(d.mean, digits) << " \\pm " << fixed(d.std, digits) << "$";
      else if (d.finished) o << "$" << fixed(d.mean, digits) << " \\pm$ --";  // one seed: no deviation
      else o << "--";
      o << " \\\\\n";
    }
    o << "\\hline\n\\end{tabular}\n";
    return o.str();
  }
  throw std::invalid_argument("unknown report format '" + format + "'; the formats are md, csv, latex and json");
}

// ---- The figure ---------------------------------------------------------------------------------

namespace {

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

/// Text for SVG: markup escaped and control characters shown (XML 1.0 forbids most of them).
std::string xmlEscape(const std::string& text) {
  std::string out;
  for (char c : displayText(text)) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

/// "Nice" ticks covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string tickLabel(double v) {
  std::ostringstream s;
  if (std::abs(v) >= 1e4) s << shortNumber(v / 1000) << "k";
  else s << shortNumber(v);
  return s.str();
}

/// One plot panel: axes box, ticks, labels; maps data to pixels.
struct Panel {
  double x0, y0, w, h, xlo, xhi, ylo, yhi;
  bool categorical = false;
  double px(double x) const { return x0 + (x - xlo) / (xhi - xlo) * w; }
  double py(double y) const { return y0 + h - (y - ylo) / (yhi - ylo) * h; }
};

void drawAxes(std::ostringstream& o, const Panel& p, const std::string& xlabel, const std::string& ylabel,
              const std::vector<std::string>& categories) {
  o << "<rect x='" << p.x0 << "' y='" << p.y0 << "' width='" << p.w << "' height='" << p.h
    << "' fill='none' stroke='#444'/>\n";
  for (double v : ticks(p.ylo, p.yhi)) {
    if (v < p.ylo - 1e-12 || v > p.yhi + 1e-12) continue;
    o << "<line x1='" << p.x0 << "' x2='" << p.x0 + p.w << "' y1='" << p.py(v) << "' y2='" << p.py(v)
      << "' stroke='#ddd'/><text x='" << p.x0 - 6 << "' y='" << p.py(v) + 4 << "' text-anchor='end'>" << tickLabel(v)
      << "</text>\n";
  }
  if (p.categorical) {
    // Labels that would collide (long or many) are turned 30 degrees, anchored at their tick.
    std::size_t longest = 0;
    for (const auto& c : categories) longest = std::max(longest, c.size());
    const bool turn = !categories.empty() && double(longest) * 7.5 > p.w / double(categories.size());
    for (std::size_t i = 0; i < categories.size(); ++i) {
      const double x = p.px(double(i)), y = p.y0 + p.h + (turn ? 12 : 18);
      if (turn)
        o << "<text transform='translate(" << x << "," << y << ") rotate(-30)' text-anchor='end'>";
      else
        o << "<text x='" << x << "' y='" << y << "' text-anchor='middle'>";
      o << xmlEscape(categories[i]) << "</text>\n";
    }
  } else {
    for (double v : ticks(p.xlo, p.xhi)) {
      if (v < p.xlo - 1e-12 || v > p.xhi + 1e-12) continue;
      o << "<text x='" << p.px(v) << "' y='" << p.y0 + p.h + 18 << "' text-anchor='middle'>" << tickLabel(v) << "</text>\n";
    }
  }
  std::size_t longest = 0;
  for (const auto& c : categories) longest = std::max(longest, c.size());
  const bool turned = p.categorical && !categories.empty() && double(longest) * 7.5 > p.w / double(categories.size());
  o << "<text x='" << p.x0 + p.w / 2 << "' y='" << p.y0 + p.h + (turned ? 24 + 4.0 * double(longest) : 40.0)
    << "' text-anchor='middle'>" << xmlEscape(xlabel) << "</text>\n";
  o << "<text transform='translate(" << p.x0 - 48 << "," << p.y0 + p.h / 2 << ") rotate(-90)' text-anchor='middle'>"
    << xmlEscape(ylabel) << "</text>\n";
}

}  // namespace

std::string reportFigureSvg(const SweepPlan& plan, const SweepReport& r, const std::string& x) {
  // Left: metric against x, one series per value of the other axes. Right: mean curves per design.
  std::size_t xAxis = 0;
  const bool byParams = x == "parameters";
  if (!byParams) {
    const auto& axes = plan.sweep.axes;
    const auto it = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.name == x; });
    if (it == axes.end()) {
      std::string names = "parameters";
      for (const auto& a : axes) names += ", " + a.name;
      throw std::invalid_argument("the figure's x is '" + x + "'; this sweep has: " + names);
    }
    xAxis = static_cast<std::size_t>(it - axes.begin());
  }
  std::vector<std::string> categories;
  bool numericX = !byParams;
  if (!byParams)
    for (const auto& v : plan.sweep.axes[xAxis].values) {
      categories.push_back(v.label);
      char* end = nullptr;
      (void)std::strtod(v.label.c_str(), &end);
      numericX = numericX && end && *end == 0 && !v.label.empty();
    }
  // Series: designs grouped by their labels other than x (for parameters: each design its own series).
  struct Point {
    double x, mean, std;
    bool hasStd;  ///< an error bar only where the deviation is defined (two seeds or more)
  };
  std::map<std::string, std::vector<Point>> series;
  std::vector<std::string> order;
  for (const auto& d : r.designs) {
    if (!d.finished) continue;
    std::string key;
    double xv = double(d.attention_parameters);
    for (std::size_t i = 0; i < d.labels.size(); ++i) {
      if (!byParams && i == xAxis) {
        xv = double(std::find(categories.begin(), categories.end(), d.labels[i].second) - categories.begin());
        continue;
      }
      key += (key.empty() ? "" : " · ") + d.labels[i].second;
    }
    if (byParams) key = d.design;
    if (key.empty()) key = r.metric;
    if (!series.count(key)) order.push_back(key);
    series[key].push_back({xv, d.mean, d.hasStd() ? d.std : 0.0, d.hasStd()});
  }
  // Curves: the metric over steps, the mean over the seeds of each design that reached each step
  // (running trials too, so a sweep's curves grow while it trains).
  std::map<std::string, std::map<std::int64_t, std::vector<double>>> curves;
  const std::string split = r.split;
  for (const auto& [t, st] : r.trials) {
    if (st.state == TrialState::Pending) continue;
    auto& c = curves[t.design];
    readMetrics(
        plan.runDir(t),
        [&](std::int64_t, const json& rec) {
          if (rec.value("kind", std::string()) != "eval" || rec.value("split", std::string()) != split) return;
          if (auto v = metricOf(rec, r.metric)) c[rec["step"].get<std::int64_t>()].push_back(*v);
        },
        [](std::int64_t, const std::string&) {});
  }
  // Each panel has its own value range: the end points would be squashed by the early curve.
  double ylo = 1e300, yhi = -1e300, clo = 1e300, chi = -1e300, shi = 1;
  for (const auto& [k, pts] : series)
    for (const auto& p : pts) ylo = std::min(ylo, p.mean - p.std), yhi = std::max(yhi, p.mean + p.std);
  bool anyCurve = false;
  for (const auto& [d, c] : curves)
    for (const auto& [step, vals] : c) {
      double m = 0;
      for (double v : vals) m += v;
      m /= double(vals.size());
      clo = std::min(clo, m), chi = std::max(chi, m), shi = std::max(shi, double(step));
      anyCurve = true;
    }
  const auto range = [&](double& lo, double& hi) {
    if (lo > hi) lo = 0, hi = 1;
    if (r.metric != "loss") lo = std::max(0.0, lo), hi = std::min(1.0, hi);
    const double pad = std::max((hi - lo) * 0.08, 1e-3);
    lo -= pad, hi += pad;
  };
  range(ylo, yhi);
  range(clo, chi);
  double xlo = 0, xhi = 1;
  if (byParams) {
    xlo = 1e300, xhi = -1e300;
    for (const auto& d : r.designs) xlo = std::min(xlo, double(d.attention_parameters)), xhi = std::max(xhi, double(d.attention_parameters));
    const double xp = std::max((xhi - xlo) * 0.08, std::max(1.0, xhi * 0.02));
    xlo -= xp, xhi += xp;
  } else {
    xlo = -0.5, xhi = double(categories.size()) - 0.5;
  }
  const int W = 1200, H = 580;
  std::ostringstream o;
  o << "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' viewBox='0 0 " << W << " " << H << "' font-family='DejaVu Sans, sans-serif' font-size='13'>\n";
  o << "<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='" << W / 2 << "' y='26' text-anchor='middle' font-size='17'>" << xmlEscape(r.name) << "</text>\n";
  const std::string ylabel = r.metric + " (" + r.split + ")";
  // Turned category labels take room below the axis: the panels are shorter by as much.
  std::size_t longest = 0;
  for (const auto& c : categories) longest = std::max(longest, c.size());
  const bool turned = !byParams && !categories.empty() && double(longest) * 7.5 > 470.0 / double(categories.size());
  const double ph = turned ? std::max(200.0, 400.0 - 4.0 * double(longest)) : 400.0;
  Panel a{80, 50, 470, ph, xlo, xhi, ylo, yhi, !byParams};
  drawAxes(o, a, byParams ? "attention parameters" : x, ylabel + ", mean ± std over seeds", categories);
  std::size_t colour = 0;
  std::vector<std::pair<std::string, const char*>> legend;
  for (const auto& key : order) {
    auto pts = series[key];
    std::sort(pts.begin(), pts.end(), [](const Point& p, const Point& q) { return p.x < q.x; });
    const char* col = kPalette[colour++ % 8];
    legend.emplace_back(key, col);
    if (!byParams && numericX && pts.size() > 1) {  // a line only where the axis is a quantity
      o << "<polyline fill='none' stroke='" << col << "' stroke-width='1.5' points='";
      for (const auto& p : pts) o << a.px(p.x) << "," << a.py(p.mean) << " ";
      o << "'/>\n";
    }
    for (const auto& p : pts) {
      const double cx = a.px(p.x);
      if (p.hasStd)
        o << "<line x1='" << cx << "' x2='" << cx << "' y1='" << a.py(p.mean - p.std) << "' y2='" << a.py(p.mean + p.std)
        << "' stroke='" << col << "' stroke-width='1.5'/>";
      if (p.hasStd)
        o << "<line x1='" << cx - 5 << "' x2='" << cx + 5 << "' y1='" << a.py(p.mean - p.std) << "' y2='"
        << a.py(p.mean - p.std) << "' stroke='" << col << "'/><line x1='" << cx - 5 << "' x2='" << cx + 5 << "' y1='"
        << a.py(p.mean + p.std) << "' y2='" << a.py(p.mean + p.std) << "' stroke='" << col << "'/>";
      o << "<circle cx='" << cx << "' cy='" << a.py(p.mean) << "' r='4.5' fill='" << col << "'/>\n";
    }
  }
  Panel b{660, 50, 470, ph, 0, shi, clo, chi, false};
  drawAxes(o, b, "training step", ylabel + ", mean over the seeds at each step", {});
  colour = 0;
  std::vector<std::pair<std::string, const char*>> curveLegend;
  for (const auto& d : r.designs) {
    if (!curves.count(d.design)) continue;
    const char* col = kPalette[colour++ % 8];
    curveLegend.emplace_back(d.design, col);
    o << "<polyline fill='none' stroke='" << col << "' stroke-width='1.8' points='";
    for (const auto& [step, vals] : curves[d.design]) {
      double m = 0;
      for (double v : vals) m += v;
      o << b.px(double(step)) << "," << b.py(m / double(vals.size())) << " ";
    }
    o << "'/>\n";
  }
  if (!anyCurve)
    o << "<text x='" << b.x0 + b.w / 2 << "' y='" << b.y0 + b.h / 2 << "' text-anchor='middle' fill='#888'>no evaluation yet</text>\n";
  const auto drawLegend = [&](const std::vector<std::pair<std::string, const char*>>& items, double x0) {
    double y = 522;
    double xx = x0;
    for (const auto& [label, col] : items) {
      const double w = 34 + 8.2 * double(label.size());
      if (xx + w > x0 + 520) xx = x0, y += 18;
      o << "<rect x='" << xx << "' y='" << y - 9 << "' width='12' height='12' fill='" << col << "'/><text x='" << xx + 17
        << "' y='" << y + 1 << "'>" << xmlEscape(label) << "</text>\n";
      xx += w;
    }
  };
  if (legend.size() > 1) drawLegend(legend, 30);  // one series needs no key
  drawLegend(curveLegend, 610);
  o << "</svg>\n";
  // Every number above comes from a validated result or a plausible metrics record; a non-finite
  // coordinate would still make a figure that draws nothing where it should: never write one.
  const std::string svg = o.str();
  for (std::size_t at = svg.find("='"); at != std::string::npos; at = svg.find("='", at + 2)) {
    const std::size_t close = svg.find('\'', at + 2);
    const std::string value = svg.substr(at + 2, close - at - 2);
    if (value.find("nan") != std::string::npos || value.find("inf") != std::string::npos)
      throw std::runtime_error("the report figure would hold a non-finite coordinate (" + value.substr(0, 60) +
                               "); a bug: please report it");
  }
  return svg;
}

}  // namespace tensorscope::model_core
