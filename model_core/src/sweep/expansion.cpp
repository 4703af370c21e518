// The grid's expansion into trials, the budget and the parameter match (expandSweep).
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

#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "spec/spec_json.h"
#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

namespace {

/// Trial directory names keep [A-Za-z0-9._+-]; anything else becomes '_'.
std::string safeName(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += (std::isalnum(c) || c == '.' || c == '-' || c == '+') ? char(c) : '_';
  return out.empty() ? "_" : out;
}

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

std::string joinLabels(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string s;
  for (const auto& [axis, label] : labels) s += (s.empty() ? "" : " · ") + label;
  return s.empty() ? "base" : s;
}

}  // namespace

namespace sweep_internal {
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

}  // namespace sweep_internal

// ---- Expansion ----------------------------------------------------------------------------------

std::int64_t attentionParameters(const RunConfig& c) {
  std::int64_t n = 0;
  for (int l = 0; l < c.model.layers; ++l) n += spec::parameterCount(layerSpec(c.model, l));
  return n;
}

namespace {

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

/// Grid points: one value index per axis, the last axis fastest.
std::vector<std::vector<std::size_t>> gridPoints(const SweepFile& s) {
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
  return points;
}

/// The size `solve` names (head_size, heads, rank, d_model) that brings config `c` closest to the
/// attention parameters of `reference`, tried from 1 to max(4·now, 64) (at most 8192). `context`
/// names the reference while its config is read (what a problem there belongs to).
Solved solveMatch(json c, const json& reference, const std::string& solve, const std::string& referenceName,
                  std::string& context) {
  Solved sv;
  context = "its reference " + referenceName + ": ";
  sv.target = attentionParameters(runConfigFromJson(reference.dump()));
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
  return sv;
}

/// The answer of "match" (spec::matchBudget) for one trial config: the config with its matched
/// attention specs, what was set, the costs summed over layers, or the problem.
struct BudgetSolved {
  std::string problem;
  json config;
  std::string matched;
  double cost = 0, target = 0;
};

/// Matches every attention spec of `c` (one for all layers, or one per layer) to the reference's
/// (its layer's, or its first layer's for a spec shared by all layers) on the match's cost, solving
/// `size` ("any": every free size, the closest).
BudgetSolved solveBudget(const json& c, const json& referenceJson, const ParameterMatch& m, const std::string& size,
                         std::string& context) {
  BudgetSolved out;
  out.config = c;
  const RunConfig design = runConfigFromJson(c.dump());
  context = "its reference " + m.reference + ": ";
  const RunConfig reference = runConfigFromJson(referenceJson.dump());
  context.clear();
  const auto on = spec::parseBudgetCost(m.on);
  json& specs = out.config["model"]["attention"];
  const std::size_t n = design.model.attention.size();
  const double weight = n == 1 ? double(design.model.layers) : 1.0;  // one spec stands for every layer
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& theirs = layerSpec(reference.model, reference.model.attention.size() == 1 ? 0 : static_cast<int>(i));
    if (size == "F") {
      out.problem = "F is the model's width in a run config (it equals model.d_model): solve another size";
      return out;
    }
    // Every free size but F (the model's width, not the layer's to change), the closest within the
    // tolerance; ties go to the earlier size, as the matcher's own "every size" does.
    spec::BudgetMatch bm;
    std::string whyNot;
    bool first = true;
    for (const auto& name : spec::budgetSizeNames()) {
      if (name == "F" || (size != "any" && size != name)) continue;
      auto one = spec::matchBudget(design.model.attention[i], theirs, on, name, m.tolerance);
      if (!one.found) {
        whyNot += (whyNot.empty() ? "" : "; ") + one.reason;
        if (first) bm = one;
        first = false;
        continue;
      }
      if (!bm.found || std::abs(one.best.residual) < std::abs(bm.best.residual)) bm = one;
      first = false;
    }
    if (!bm.found) {
      out.problem = (n > 1 ? "layer " + std::to_string(i) + ": " : std::string()) +
                    (size == "any" ? "no size brings it within the tolerance: " + whyNot : bm.reason);
      return out;
    }
    out.cost += weight * bm.best.cost;
    out.target += weight * bm.target;
    const json matched = json::parse(spec::toJson(bm.matched, -1));
    if (specs.is_array()) specs[i] = matched;
    else specs = matched;
    const std::string part = bm.best.size + "=" + std::to_string(bm.best.value);
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  for (const auto& part : parts) out.matched += (out.matched.empty() ? "" : ", ") + part;
  return out;
}

/// A trial's attention parameters and the attention layers' GFLOP of one training step
/// (forward and backward: 3× the forward).
void measureAttention(Trial& t) {
  t.attention_parameters = attentionParameters(t.config);
  const auto N = modelSequenceLength(t.config);
  double flops = 0;
  for (int l = 0; l < t.config.model.layers; ++l)
    flops += spec::estimateCost(layerSpec(t.config.model, l), t.config.train.batch, N).forward_flops;
  t.attention_gflop_per_step = 3 * flops / 1e9;
}

}  // namespace

std::vector<Trial> expandSweep(const SweepFile& s) {
  const auto points = gridPoints(s);  // seeds innermost, below
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
  std::map<std::string, BudgetSolved> budgetFor;
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
          if (!s.match->on.empty()) {  // "match": the cost model's matcher, on params, kv or flops
            const std::string key = "budget\n" + s.match->on + "\n" + solve + "\n" + c["model"].dump() + "\n" +
                                    c["task"].dump() + "\n" + refJson["model"].dump() + "\n" + refJson["task"].dump();
            auto found = budgetFor.find(key);
            if (found == budgetFor.end()) found = budgetFor.emplace(key, solveBudget(c, refJson, *s.match, solve, context)).first;
            const BudgetSolved& b = found->second;
            if (!b.problem.empty()) {
              problems.add(t.name, "matching " + s.match->reference + "'s " + s.match->on + ": " + b.problem);
              continue;
            }
            // The answer is shared by every seed of the design (the cache's key has no seed): only
            // its attention specs are taken, onto this trial's own config (its train.seed).
            c["model"]["attention"] = b.config["model"]["attention"];
            t.config = runConfigFromJson(c.dump());
            t.matched = b.matched;
            t.match_on = s.match->on;
            t.match_cost = b.cost;
            t.match_target = b.target;
            t.match_residual = b.target == 0 ? (b.cost == 0 ? 0.0 : 1.0) : (b.cost - b.target) / b.target;
            measureAttention(t);
            trials.push_back(std::move(t));
            continue;
          }
          const std::string key = solve + "\n" + c["model"].dump() + "\n" + c["task"].dump() + "\n" +
                                  refJson["model"].dump() + "\n" + refJson["task"].dump();
          auto found = solvedFor.find(key);
          if (found == solvedFor.end())
            found = solvedFor.emplace(key, solveMatch(c, refJson, solve, s.match->reference, context)).first;
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
        measureAttention(t);
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

}  // namespace tensorscope::model_core
