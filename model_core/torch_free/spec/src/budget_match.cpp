// Budget matching on any cost (spec/budget_match.h).
#include "spec/budget_match.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include "spec/core_spec.h"
#include "spec/cost_model.h"
#include "spec/validation.h"

namespace tensorscope::spec {

const char* budgetCostName(BudgetCost c) {
  switch (c) {
    case BudgetCost::Parameters: return "params";
    case BudgetCost::KvCache: return "kv";
    case BudgetCost::TrainingFlops: return "flops";
  }
  return "?";
}

BudgetCost parseBudgetCost(const std::string& text) {
  if (text == "params") return BudgetCost::Parameters;
  if (text == "kv") return BudgetCost::KvCache;
  if (text == "flops") return BudgetCost::TrainingFlops;
  throw std::invalid_argument("the cost to match is params, kv or flops; got '" + text + "'");
}

namespace {

const char* costWords(BudgetCost c) {
  switch (c) {
    case BudgetCost::Parameters: return "trainable parameters";
    case BudgetCost::KvCache: return "KV-cache elements per token";
    case BudgetCost::TrainingFlops: return "training FLOPs per token";
  }
  return "?";
}

/// A size field: how to read and write it. The table is about AttentionSpec's fields, not designs.
struct SizeField {
  const char* name;
  std::function<int&(AttentionSpec&)> ref;
  bool hasField(const AttentionSpec& s) const { return name != std::string("core_rank") || s.core.has_value(); }
};

const std::vector<SizeField>& sizeFields() {
  static const std::vector<SizeField> fields = {
      {"H", [](AttentionSpec& s) -> int& { return s.sizes.H; }},
      {"kv_groups", [](AttentionSpec& s) -> int& { return s.slots.kv_groups; }},
      {"D", [](AttentionSpec& s) -> int& { return s.sizes.D; }},
      {"R", [](AttentionSpec& s) -> int& { return s.sizes.R; }},
      {"F", [](AttentionSpec& s) -> int& { return s.sizes.F; }},
      {"P", [](AttentionSpec& s) -> int& { return s.sizes.P; }},
      {"c", [](AttentionSpec& s) -> int& { return s.sizes.c; }},
      {"kv_rank", [](AttentionSpec& s) -> int& { return s.slots.latent.kv_rank; }},
      {"q_rank", [](AttentionSpec& s) -> int& { return s.slots.latent.q_rank; }},
      {"rope_dim", [](AttentionSpec& s) -> int& { return s.slots.latent.rope_dim; }},
      {"core_rank", [](AttentionSpec& s) -> int& { return s.core->rank; }},
      {"tpa_q_rank", [](AttentionSpec& s) -> int& { return s.slots.tpa.q_rank; }},
      {"tpa_k_rank", [](AttentionSpec& s) -> int& { return s.slots.tpa.k_rank; }},
      {"tpa_v_rank", [](AttentionSpec& s) -> int& { return s.slots.tpa.v_rank; }},
      {"mta_q_kernel", [](AttentionSpec& s) -> int& { return s.slots.mta.q_kernel; }},
      {"mta_k_kernel", [](AttentionSpec& s) -> int& { return s.slots.mta.k_kernel; }},
      {"key_dim", [](AttentionSpec& s) -> int& { return s.slots.collaborative.key_dim; }},
  };
  return fields;
}

/// The design with `field` at x: R follows H and D where it was H·D, and a core is rebuilt for the
/// new sizes (its preset's values, or a low-rank core of its rank); a custom core is kept as it is
/// (the validator refuses it where its shape no longer fits).
AttentionSpec withSize(AttentionSpec s, const SizeField& field, int x) {
  const bool tied = s.sizes.R == s.sizes.H * s.sizes.D;
  field.ref(s) = x;
  const std::string n = field.name;
  if (tied && (n == "H" || n == "D")) s.sizes.R = s.sizes.H * s.sizes.D;
  if (!s.core) return s;
  const bool fits = s.sizes.R == s.sizes.H * s.sizes.D;
  if (n == "core_rank") {
    // Another rank than the preset's is a "custom" low-rank core (the validator's rule).
    if (s.core->structure == CoreStructure::LowRank && fits && x <= s.sizes.R) {
      const bool factorsTrainable = s.core->factors_trainable;
      s.core = makeLowRankCore(s.sizes.H, s.sizes.D, x);
      s.core->factors_trainable = factorsTrainable;
      s.core->preset = "custom";
    }
  } else if (n == "H" || n == "D" || n == "R") {
    if (isCorePreset(s.core->preset) && fits) {
      s.core = makeCorePreset(s.core->preset, s.sizes.H, s.sizes.D);
    } else if (s.core->structure == CoreStructure::LowRank && fits && s.core->rank <= s.sizes.R) {
      const std::string preset = s.core->preset;
      const bool factorsTrainable = s.core->factors_trainable;
      s.core = makeLowRankCore(s.sizes.H, s.sizes.D, s.core->rank);
      s.core->preset = preset;
      s.core->factors_trainable = factorsTrainable;
    }
  }
  return s;
}

std::string number(double v) {
  char buf[48];
  if (v == std::floor(v) && std::abs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string percent(double r) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.3g%%", 100 * r);
  return buf;
}

void requireValid(const AttentionSpec& s, const char* what) {
  const auto issues = validate(s);
  if (issues.empty()) return;
  std::string m = std::string("the ") + what + " is not a valid spec: ";
  for (std::size_t i = 0; i < issues.size(); ++i) m += (i ? "; " : "") + issues[i].field + ": " + issues[i].message;
  throw std::invalid_argument(m);
}

}  // namespace

const std::vector<std::string>& budgetSizeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& f : sizeFields()) n.push_back(f.name);
    return n;
  }();
  return names;
}

double budgetCostOf(const AttentionSpec& spec, BudgetCost on, std::int64_t seq) {
  if (seq <= 0) seq = spec.sizes.seq_len;
  switch (on) {
    case BudgetCost::Parameters: return double(parameterCount(spec));
    case BudgetCost::KvCache: {
      const auto d = estimateDecodeCost(spec, seq);
      if (!d.supported) throw std::invalid_argument("a " + std::string(toString(spec.variant)) + " layer has no KV cache to match: " + d.note);
      if (d.state_elements > 0 && d.cache_elements_per_token == 0)
        throw std::invalid_argument("a " + std::string(toString(spec.variant)) + " layer keeps a fixed state of " +
                                    number(d.state_elements) + " elements, not a per-token KV cache, so there is no KV cost to match");
      return d.cache_elements_per_token;
    }
    case BudgetCost::TrainingFlops: {
      const auto c = estimateCost(spec, 1, seq);
      const double n = spec.variant == Variant::Multilinear ? double(spec.sizes.seq_len) : double(seq);
      return c.training_flops / n;
    }
  }
  return 0;
}

BudgetMatch matchBudget(const AttentionSpec& design, const AttentionSpec& base, BudgetCost on, const std::string& size,
                        double tolerance, std::int64_t seq) {
  if (!(tolerance >= 0 && tolerance < 1)) throw std::invalid_argument("the tolerance is in [0, 1), e.g. 0.01 for 1%");
  if (!size.empty() && std::find(budgetSizeNames().begin(), budgetSizeNames().end(), size) == budgetSizeNames().end()) {
    std::string names;
    for (const auto& n : budgetSizeNames()) names += (names.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown size '" + size + "'; the sizes are " + names);
  }
  requireValid(design, "design");
  requireValid(base, "base");
  BudgetMatch m;
  m.on = on;
  m.target = budgetCostOf(base, on, seq);
  const double own = budgetCostOf(design, on, seq);
  const auto residual = [&](double cost) { return m.target == 0 ? (cost == 0 ? 0.0 : 1.0) : (cost - m.target) / m.target; };
  for (const auto& field : sizeFields()) {
    if (!size.empty() && size != field.name) continue;
    SizeSolution sol;
    sol.size = field.name;
    if (!field.hasField(design)) {
      sol.why = "the design has no core";
      m.sizes.push_back(sol);
      continue;
    }
    AttentionSpec probe = design;
    sol.from = field.ref(probe);
    if (sol.from == 0) {
      sol.why = std::string(field.name) + " is 0 (off) in this design; setting it would make another design";
      m.sizes.push_back(sol);
      continue;
    }
    bool any = false, moves = false;
    int valid = 0;
    double bestGap = -1;
    const int top = std::min(std::max(4 * sol.from, 64), 8192);
    for (int x = 1; x <= top; ++x) {
      const AttentionSpec s = withSize(design, field, x);
      if (!validate(s).empty()) continue;
      double cost = 0;
      try {
        cost = budgetCostOf(s, on, seq);
      } catch (const std::invalid_argument&) {
        continue;
      }
      any = true;
      ++valid;
      moves = moves || cost != own;
      const double gap = std::abs(cost - m.target);
      if (bestGap < 0 || gap < bestGap) bestGap = gap, sol.value = x, sol.cost = cost, sol.residual = residual(cost);
    }
    sol.solvable = any && moves;
    if (!any) sol.why = "no value of " + std::string(field.name) + " from 1 to " + std::to_string(top) + " gives a valid design";
    else if (valid == 1)
      sol.why = "no value of " + std::string(field.name) + " other than its own (" + std::to_string(sol.from) +
                ") gives a valid design";
    else if (!moves) sol.why = std::string(field.name) + " does not change the " + costWords(on) + " of this design";
    m.sizes.push_back(sol);
  }
  // The closest solvable size (the named one alone when named); ties go to the earlier size.
  const SizeSolution* best = nullptr;
  for (const auto& s : m.sizes)
    if (s.solvable && (!best || std::abs(s.residual) < std::abs(best->residual))) best = &s;
  if (!best) {
    std::string why;
    for (const auto& s : m.sizes) why += (why.empty() ? "" : "; ") + s.why;
    m.reason = (size.empty() ? "no size of this design can be solved for its " : "size " + size + " cannot be solved for the ") +
               std::string(costWords(on)) + ": " + why;
    return m;
  }
  m.best = *best;
  if (std::abs(best->residual) <= tolerance) {
    m.found = true;
    const auto field = std::find_if(sizeFields().begin(), sizeFields().end(), [&](const SizeField& f) { return best->size == f.name; });
    m.matched = withSize(design, *field, best->value);
  } else {
    m.reason = "the closest is " + best->size + " = " + std::to_string(best->value) + " with " + number(best->cost) + " " +
               costWords(on) + ", " + percent(best->residual) + " from the base's " + number(m.target) +
               "; the tolerance is " + number(100 * tolerance) + "%: widen it or solve another size";
  }
  return m;
}

}  // namespace tensorscope::spec
