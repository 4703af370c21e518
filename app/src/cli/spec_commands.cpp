#include "cli/spec_commands.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>

#include "cli/cli.h"
#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::app {
namespace {

std::string human(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  const double base = std::string(unit) == "B" ? 1024.0 : 1000.0;
  while (v >= base && i < 5) {
    v /= base;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s%s", v, prefixes[i], (base == 1024.0 && i) ? "i" : "", unit);
  return buf;
}

/// Reads and validates a spec file; prints every problem and returns false when it is not usable.
bool loadValid(const std::string& path, spec::AttentionSpec& out, std::ostream& err) {
  std::vector<spec::Issue> issues;
  try {
    out = spec::readSpecFile(path);
    issues = spec::validate(out);
  } catch (const spec::SpecError& e) {
    issues = e.issues();
  }
  if (issues.empty()) return true;
  err << path << ": invalid spec (" << issues.size() << " problem" << (issues.size() == 1 ? "" : "s") << ")\n";
  for (const auto& i : issues) err << "  " << i.field << ": " << i.message << "\n";
  return false;
}

int preset(Args& args, std::ostream& out) {
  if (args.takeFlag("--list")) {
    args.positionals(0, 0, "tensorscope spec preset --list");
    for (const auto& n : spec::specPresetNames()) out << n << "\n";
    return kExitOk;
  }
  const auto pos = args.positionals(1, 1, "tensorscope spec preset NAME   (names: tensorscope spec preset --list)");
  spec::AttentionSpec s;
  try {
    s = spec::makeSpecPreset(pos[0]);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  out << spec::toJson(s) << "\n";
  return kExitOk;
}

int validateCmd(Args& args, std::ostream& out, std::ostream& err) {
  const auto pos = args.positionals(1, 1, "tensorscope spec validate FILE");
  spec::AttentionSpec s;
  if (!loadValid(pos[0], s, err)) return kExitFailure;
  out << pos[0] << ": valid " << spec::toString(s.variant) << " spec";
  if (s.core) out << " (core: " << s.core->preset << ", " << spec::toString(s.core->structure) << ")";
  out << ", " << spec::parameterCount(s) << " trainable parameters\n";
  return kExitOk;
}

int cost(Args& args, std::ostream& out, std::ostream& err) {
  const auto batch = args.takeInt("--batch", 1, 1 << 20);
  const auto seq = args.takeInt("--seq", 1, 1 << 24);
  const auto cache = args.takeInt("--cache", 0, 1 << 24);
  const bool asJson = args.takeFlag("--json");
  const std::string usage = "tensorscope spec cost FILE --batch B --seq N [--cache M] [--json]";
  const auto pos = args.positionals(1, 1, usage);
  if (!batch || !seq) throw UsageError("spec cost needs --batch and --seq\nusage: " + usage);
  spec::AttentionSpec s;
  if (!loadValid(pos[0], s, err)) return kExitFailure;
  const auto c = spec::estimateCost(s, *batch, *seq);
  const long long n = s.variant == spec::Variant::Multilinear ? s.sizes.seq_len : *seq;
  const long long cached = cache ? *cache : n;  // decoding against a cache of M tokens (default N)
  const auto dec = spec::estimateDecodeCost(s, cached);
  if (asJson) {
    nlohmann::json j;
    j["variant"] = std::string(spec::toString(s.variant));
    j["batch"] = *batch;
    j["seq"] = n;
    j["parameters"] = c.parameters;
    j["frozen_parameters"] = c.frozen_parameters;
    j["forward_flops"] = c.forward_flops;
    j["training_flops"] = c.training_flops;
    j["decode"] = {{"cached_tokens", cached},
                   {"supported", dec.supported},
                   {"kv_cache_elements_per_token", dec.cache_elements_per_token},
                   {"state_elements", dec.state_elements},
                   {"flops_per_new_token", dec.flops},
                   {"note", dec.note}};
    j["activation_bytes"] = c.activation_bytes;
    j["largest_intermediate_bytes"] = c.largest_intermediate_bytes;
    for (const auto& t : c.terms)
      j["terms"].push_back({{"name", t.name}, {"flops", t.flops}, {"activation_elements", t.activation_elements}});
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  out << spec::toString(s.variant);
  if (!s.slots.isMhsa()) out << " (" << spec::nameDesigns(s).front().name << ")";
  out << " at B=" << *batch << ", N=" << n;
  if (n != *seq) out << " (multilinear fixes N = seq_len)";
  out << "\n  parameters           " << c.parameters << " trainable";
  if (c.frozen_parameters) out << ", " << c.frozen_parameters << " frozen";
  out << "\n  forward FLOPs        " << human(c.forward_flops, "FLOP")
      << "\n  training FLOPs       " << human(c.training_flops, "FLOP") << " (forward and backward)";
  if (dec.supported) {
    out << "\n  decoding             " << human(dec.flops, "FLOP") << " per new token against " << cached
        << " cached; ";
    if (dec.state_elements > 0) out << "state " << static_cast<long long>(dec.state_elements) << " elements";
    else out << "KV cache " << static_cast<long long>(dec.cache_elements_per_token) << " elements per token";
    out << " (" << dec.note << ")";
  } else {
    out << "\n  decoding             not token by token: " << dec.note;
  }
  out
      << "\n  activation memory    " << human(c.activation_bytes, "B") << " (float32)"
      << "\n  largest intermediate " << human(c.largest_intermediate_bytes, "B") << "\n  terms:\n";
  for (const auto& t : c.terms) {
    // Pad by displayed characters, not bytes: term names carry UTF-8 symbols (ᵀ, Ω, ⊙).
    size_t columns = 0;
    for (unsigned char ch : t.name) columns += (ch & 0xC0) != 0x80;
    char nums[96];
    std::snprintf(nums, sizeof nums, " %12s %12s\n", human(t.flops, "FLOP").c_str(),
                  human(t.activation_elements * 4, "B").c_str());
    out << "    " << t.name << std::string(columns < 36 ? 36 - columns : 0, ' ') << nums;
  }
  return kExitOk;
}

int name(Args& args, std::ostream& out, std::ostream& err) {
  const bool asJson = args.takeFlag("--json");
  const auto pos = args.positionals(1, 1, "tensorscope spec name FILE [--json]");
  spec::AttentionSpec s;
  if (!loadValid(pos[0], s, err)) return kExitFailure;
  const auto names = spec::nameDesigns(s);
  if (asJson) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& n : names) j.push_back({{"name", n.name}, {"equals", n.equals}, {"why", n.why}});
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& n : names) out << (n.equals ? "equals    " : "contains  ") << n.name << ": " << n.why << "\n";
  return kExitOk;
}

/// A spec file, or a preset name where no file has that name ("mhsa", "gqa").
bool loadSpecOrPreset(const std::string& what, spec::AttentionSpec& out, std::ostream& err) {
  if (!std::filesystem::exists(what)) {
    const auto names = spec::specPresetNames();
    if (std::find(names.begin(), names.end(), what) != names.end()) {
      out = spec::makeSpecPreset(what);
      return true;
    }
  }
  return loadValid(what, out, err);
}

/// spec match SPEC --like BASE --on params|kv|flops: the free size of SPEC that brings the cost
/// closest to BASE's (spec/budget_match.h).
int match(Args& args, std::ostream& out, std::ostream& err) {
  const std::string usage =
      "tensorscope spec match SPEC --like BASE --on params|kv|flops [--size NAME] [--tolerance 0.01] [--seq N] "
      "[--causal] [--out FILE] [--json]";
  const auto like = args.takeOption("--like");
  const auto on = args.takeOption("--on");
  const auto size = args.takeOption("--size");
  const auto tol = args.takeOption("--tolerance");
  const auto seq = args.takeInt("--seq", 1, 1 << 24);
  const bool causal = args.takeFlag("--causal");
  const auto outFile = args.takeOption("--out");
  const bool asJson = args.takeFlag("--json");
  const auto pos = args.positionals(1, 1, usage);
  if (!like || !on) throw UsageError("spec match needs --like BASE and --on params|kv|flops\nusage: " + usage);
  spec::BudgetCost cost;
  try {
    cost = spec::parseBudgetCost(*on);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  double tolerance = 0.01;
  if (tol) {
    std::size_t used = 0;
    try {
      tolerance = std::stod(*tol, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != tol->size() || !(tolerance >= 0 && tolerance < 1))
      throw UsageError("--tolerance is a number in [0, 1), e.g. 0.01 for 1%; got '" + *tol + "'");
  }
  spec::AttentionSpec design, base;
  if (!loadSpecOrPreset(pos[0], design, err) || !loadSpecOrPreset(*like, base, err)) return kExitFailure;
  if (causal) design.causal = base.causal = true;  // presets are not causal; a KV cache needs causal layers
  spec::BudgetMatch m;
  try {
    m = spec::matchBudget(design, base, cost, size.value_or(""), tolerance, seq.value_or(0));
  } catch (const std::invalid_argument& e) {
    err << "tensorscope: spec match: " << e.what() << "\n";
    return kExitFailure;
  }
  if (asJson) {
    nlohmann::json j = {{"on", spec::budgetCostName(cost)}, {"target", m.target}, {"found", m.found}, {"tolerance", tolerance}};
    nlohmann::json sizes = nlohmann::json::array();
    for (const auto& s : m.sizes) {
      nlohmann::json e = {{"size", s.size}, {"from", s.from}, {"solvable", s.solvable}};
      if (s.solvable) e["value"] = s.value, e["cost"] = s.cost, e["residual"] = s.residual;
      else e["why"] = s.why;
      sizes.push_back(e);
    }
    j["sizes"] = sizes;
    if (m.found) {
      j["size"] = m.best.size, j["value"] = m.best.value, j["cost"] = m.best.cost, j["residual"] = m.best.residual;
      j["spec"] = nlohmann::json::parse(spec::toJson(m.matched));
    } else {
      j["reason"] = m.reason;
    }
    out << j.dump(2) << "\n";
  } else {
    out << "target: " << m.target << " " << spec::budgetCostName(cost) << " (" << *like << ")\n";
    for (const auto& s : m.sizes) {
      if (!s.solvable) continue;
      char r[32];
      std::snprintf(r, sizeof r, "%+.3g%%", 100 * s.residual);
      out << "  " << s.size << ": " << s.from << " -> " << s.value << " gives " << s.cost << " (" << r << ")\n";
    }
    if (m.found) out << "matched: " << m.best.size << " = " << m.best.value << "\n";
  }
  if (!m.found) {
    err << "tensorscope: spec match: " << m.reason << "\n";
    return kExitFailure;
  }
  if (outFile) {
    std::ofstream f(*outFile);
    f << spec::toJson(m.matched) << "\n";
    if (!f) {
      err << "tensorscope: spec match: cannot write " << *outFile << "\n";
      return kExitFailure;
    }
    if (!asJson) out << "wrote " << *outFile << "\n";
  }
  return kExitOk;
}

}  // namespace

int runSpecCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto sub = args.takeCommand();
  if (sub == "preset") return preset(args, out);
  if (sub == "validate") return validateCmd(args, out, err);
  if (sub == "cost") return cost(args, out, err);
  if (sub == "name") return name(args, out, err);
  if (sub == "match") return match(args, out, err);
  throw UsageError("spec needs a sub-command: preset, validate, cost, name or match; see tensorscope --help");
}

}  // namespace tensorscope::app
