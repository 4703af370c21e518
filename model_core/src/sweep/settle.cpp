// Seeds until settled: the rule (DIR/settle.json) and each round's added seeds (model_core/sweep.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/sweep.h"
#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

SettleRule parseSettleRule(const std::string& text, const std::string& path) {
  json j;
  try {
    j = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(path + ": malformed JSON: " + e.what());
  }
  if (!spec::hasEnvelope(j, kSweepSettleFormat, kVersion))
    throw std::invalid_argument(path + ": not a settle rule (format " + kSweepSettleFormat + ", version 1)");
  Problems p(path);
  p.rejectUnknown(j, "", {"format", "version", "alpha", "max_seeds", "initial_seeds"});
  SettleRule r;
  if (!p.read(j, "alpha", "", r.alpha) || !(r.alpha > 0 && r.alpha <= 0.5)) p.add("alpha", "must be a number in (0, 0.5]");
  std::int64_t maxSeeds = 0, initial = 0;
  if (!p.read(j, "max_seeds", "", maxSeeds) || maxSeeds < 2 || maxSeeds > kMaxSweepTrials)
    p.add("max_seeds", "must be an integer in [2, " + std::to_string(kMaxSweepTrials) + "]");
  if (!p.read(j, "initial_seeds", "", initial) || initial < 1 || initial > maxSeeds)
    p.add("initial_seeds", "must be an integer in [1, max_seeds]");
  if (!p.empty()) p.raise();
  r.max_seeds = static_cast<int>(maxSeeds);
  r.initial_seeds = static_cast<int>(initial);
  return r;
}

std::string settleRuleToJson(const SettleRule& r) {
  return json{{"format", kSweepSettleFormat}, {"version", kVersion}, {"alpha", r.alpha}, {"max_seeds", r.max_seeds},
              {"initial_seeds", r.initial_seeds}}
             .dump(2) +
         "\n";
}

void recordSettleRule(SweepPlan& plan, const SettleRule& rule) {
  if (rule.max_seeds < rule.initial_seeds)
    throw std::invalid_argument("--max-seeds " + std::to_string(rule.max_seeds) + " is below the sweep's own " +
                                std::to_string(rule.initial_seeds) + " seeds");
  if (rule.max_seeds > kMaxSweepTrials) throw std::invalid_argument("--max-seeds is at most " + std::to_string(kMaxSweepTrials));
  if (!(rule.alpha > 0 && rule.alpha <= 0.5)) throw std::invalid_argument("--alpha must be in (0, 0.5], e.g. 0.05 or 0.01");
  const bool roundsRan = std::any_of(plan.trials.begin(), plan.trials.end(), [](const Trial& t) { return t.round > 0; });
  if (plan.settle && roundsRan) {
    const auto& old = *plan.settle;
    if (old.alpha != rule.alpha || old.max_seeds != rule.max_seeds || old.initial_seeds != rule.initial_seeds)
      throw std::invalid_argument("seeds were added to this sweep until settled at alpha " + shortNumber(old.alpha) +
                                  " and at most " + std::to_string(old.max_seeds) + " seeds (settle.json); going on at alpha " +
                                  shortNumber(rule.alpha) + " and " + std::to_string(rule.max_seeds) +
                                  " seeds would make its error bound untrue. Run it on under its rule (leave out --alpha "
                                  "and --max-seeds), or plan the sweep again into a new folder");
    return;
  }
  if (!plan.settle && roundsRan)
    throw std::invalid_argument(plan.dir + " has seeds added by settle rounds but no settle.json (removed?): its rule is "
                                           "unknown; plan the sweep again into a new folder");
  files::writeFileAtomically(plan.dir + "/settle.json", settleRuleToJson(rule));
  plan.settle = rule;
}

SettleRound planSettleRound(const SweepPlan& plan, const SweepReport& report) {
  if (!plan.settle) throw std::invalid_argument("the sweep has no settle rule (sweep run --until-settled records one)");
  const auto& rule = *plan.settle;
  SettleRound r;
  std::uint64_t top = 0;
  for (const auto& t : plan.trials) {
    top = std::max(top, t.seed);
    r.round = std::max(r.round, t.round);
  }
  r.round += 1;
  r.seed = top + 1;
  std::map<std::string, int> seedsOf;
  for (const auto& t : plan.trials) ++seedsOf[t.design];
  std::vector<std::string> gets;  // in the plan's design order: the open designs, then their baselines
  std::set<std::string> getsSet;
  for (const auto& d : report.designs) {
    if (!d.comparison) continue;
    if (d.comparison->direction != 0) {
      r.settled.push_back(d.design);
    } else if (seedsOf[d.design] >= rule.max_seeds) {
      r.at_cap.push_back(d.design);
    } else {
      r.open.push_back(d.design);
      for (const auto& name : {d.design, d.comparison->baseline})
        if (getsSet.insert(name).second) gets.push_back(name);
    }
  }
  std::int64_t index = static_cast<std::int64_t>(plan.trials.size());
  if (index + static_cast<std::int64_t>(gets.size()) > kMaxSweepTrials)
    throw std::invalid_argument("round " + std::to_string(r.round) + " would add " + std::to_string(gets.size()) +
                                " trials to the " + std::to_string(index) + " the sweep has, past the " +
                                std::to_string(kMaxSweepTrials) + " a sweep may have");
  for (const auto& design : report.designs)
    if (getsSet.count(design.design)) r.added.push_back(addedSeedTrial(plan.trials, design.design, r.seed, index++, r.round));
  return r;
}

}  // namespace tensorscope::model_core
