// The report of a sweep: per-design summaries and their md, csv, LaTeX and JSON forms.
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

#include "model_core/run_files.h"
#include "model_core/sweep_report_text.h"
#include "stats/statistics.h"
#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

// ---- Reports ------------------------------------------------------------------------------------

SweepReport buildReport(const SweepPlan& plan) {
  SweepReport rep;
  rep.name = plan.sweep.name;
  rep.metric = plan.sweep.metric.name;
  rep.higher_is_better = plan.sweep.metric.higherIsBetter();
  rep.axes = plan.sweep.axes;
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
      d.matched = t.matched;
      d.match_on = t.match_on;
      d.match_cost = t.match_cost;
      d.match_target = t.match_target;
      d.match_residual = t.match_residual;
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
      d.seed_values.emplace_back(t.seed, *st.result->final_metric);
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
  rep.baseline = baselineOf(plan.sweep);
  rep.alpha = plan.sweep.alpha;
  if (plan.settle) {  // every look decides at the rule's alpha per look (docs/sweeps.md, Seeds until settled)
    rep.settle = plan.settle;
    rep.alpha = plan.settle->alphaPerLook();
  }
  addReportStatistics(rep);
  if (rep.settle)
    for (auto& d : rep.designs)
      if (d.comparison)
        d.settle_state = d.comparison->direction != 0 ? "settled" : d.trials >= rep.settle->max_seeds ? "cap" : "open";
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

/// Shortest exact-enough text of a statistic (up to 6 significant digits).
std::string stat(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// The verdict rule in words, as every format states it above its comparisons.
std::string decisionRule(const SweepReport& r) {
  const std::size_t k = stats::signFlipPairsNeeded(r.alpha);
  return "Each design against its baseline design (the same labels, " + r.baseline->axis + " = " + r.baseline->label +
         "): the difference of the final " + r.metric +
         " (design - baseline) with its 95% confidence interval (paired t over the seeds where both finished the same "
         "seeds, Welch-Satterthwaite otherwise); Welch's t-test over every finished seed and the exact sign-flip "
         "permutation test over the seeds both finished. The sign-flip test decides where there are at least " +
         std::to_string(k) + " pairs (its smallest p, 2/2^n, reaches alpha = " + stat(r.alpha) +
         " from there), Welch's test otherwise; the deciding p-values are corrected by Holm's step-down method across the " +
         std::to_string(r.comparisons_tested) + " comparison" + (r.comparisons_tested == 1 ? "" : "s") + " tested.";
}

/// The settle rule in words, as every format states it with the seeds each verdict took.
std::string settleRuleText(const SweepReport& r) {
  const auto& s = *r.settle;
  return "Seeds until settled: each round added one seed to every design whose verdict was open (and to its baseline, "
         "so the seeds stay paired), until no verdict was open or a design had " + std::to_string(s.max_seeds) +
         " seeds. Starting from " + std::to_string(s.initial_seeds) + " seed" + (s.initial_seeds == 1 ? "" : "s") +
         ", the verdicts are looked at, at most, " + std::to_string(s.looks()) +
         " times; each look decides at alpha / " + std::to_string(s.looks()) + " = " + stat(s.alphaPerLook()) +
         " (Bonferroni over the looks, Holm across the designs within a look), so the chance that any look declares a "
         "difference where there is none is at most alpha = " + stat(s.alpha) + " over the whole sequence.";
}

/// "settled at n = 5", "open at the cap (n = 8)", "open (n = 4, more seeds to come)".
std::string settleWords(const DesignSummary& d) {
  const std::string n = "n = " + std::to_string(d.trials);
  if (d.settle_state == "settled") return "settled at " + n;
  if (d.settle_state == "cap") return "open at the cap (" + n + ")";
  return "open (" + n + ", more seeds to come)";
}

std::string latexP(double p) { return p < 0.001 ? "$<0.001$" : pValue(p); }

bool anyComparison(const SweepReport& r) {
  return std::any_of(r.designs.begin(), r.designs.end(), [](const DesignSummary& d) { return d.comparison.has_value(); });
}

bool anyMatch(const SweepReport& r) {
  return std::any_of(r.designs.begin(), r.designs.end(), [](const DesignSummary& d) { return !d.match_on.empty(); });
}

}  // namespace

std::string matchResidualText(double residual) {
  char res[32];
  std::snprintf(res, sizeof res, "%+.2f%%", 100 * residual);
  return res;
}

std::string reportDecisionRule(const SweepReport& r) { return anyComparison(r) && r.baseline ? decisionRule(r) : std::string(); }

std::vector<ReportRowText> reportRowTexts(const SweepReport& r) {
  const int digits = r.metric == "loss" ? 4 : 3;
  std::vector<ReportRowText> rows;
  for (const auto& d : r.designs) {
    ReportRowText row;
    row.design = displayText(d.design);
    row.seeds = std::to_string(d.finished) + "/" + std::to_string(d.trials);
    row.mean_std = d.finished ? fixed(d.mean, digits) + " ± " + (d.hasStd() ? fixed(d.std, digits) : "–") : "–";
    row.ci95 = d.finished && d.hasStd() ? "[" + fixed(d.ci_low, digits) + ", " + fixed(d.ci_high, digits) + "]" : "–";
    row.is_baseline = d.is_baseline;
    if (!d.match_on.empty()) row.match_residual = matchResidualText(d.match_residual);
    if (d.comparison) {
      const auto& c = *d.comparison;
      row.compared = true;
      row.baseline = displayText(c.baseline);
      row.compared_seeds = std::to_string(c.n) + " vs " + std::to_string(c.n_baseline) +
                           (c.pairs ? " (" + std::to_string(c.pairs) + " paired)" : "");
      row.difference = c.tested ? (c.difference >= 0 ? "+" : "") + fixed(c.difference, digits) + " [" + fixed(c.ci_low, digits) +
                                      ", " + fixed(c.ci_high, digits) + "]" + (c.paired ? " paired" : " Welch")
                                : "–";
      row.welch_p = c.tested ? pValue(c.welch_p) : "–";
      row.sign_flip_p = c.sign_flip_p ? pValue(*c.sign_flip_p) : "–";
      row.decided_by = c.tested ? c.decided_by : "–";
      row.p_holm = c.tested ? pValue(c.p_holm) : "–";
      row.verdict = displayText(c.verdict);
      if (r.settle) row.settle = settleWords(d);
    }
    rows.push_back(row);
  }
  return rows;
}

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
      auto& e = designs.back();
      e["ci95"] = d.hasStd() ? json::array({d.ci_low, d.ci_high}) : json();
      json seeds = json::array();
      for (const auto& [seed, v] : d.seed_values) seeds.push_back({{"seed", seed}, {"value", v}});
      e["seed_values"] = seeds;
      e["is_baseline"] = d.is_baseline;
      if (!d.match_on.empty())
        e["budget_match"] = {{"on", d.match_on}, {"matched", d.matched}, {"cost", d.match_cost}, {"target", d.match_target},
                             {"residual", d.match_residual}};
      if (r.settle && d.comparison) e["settle"] = {{"seeds", d.trials}, {"state", d.settle_state}, {"words", settleWords(d)}};
      if (d.comparison) {
        const auto& c = *d.comparison;
        json cj = {{"baseline", c.baseline}, {"n", c.n}, {"n_baseline", c.n_baseline}, {"pairs", c.pairs},
                   {"tested", c.tested}, {"verdict", c.verdict}, {"direction", c.direction},
                   {"sign_flip_p", c.sign_flip_p ? json(*c.sign_flip_p) : json()}};
        if (c.tested) {
          cj["paired"] = c.paired;
          cj["difference"] = c.difference;
          cj["difference_ci95"] = json::array({c.ci_low, c.ci_high});
          cj["welch"] = {{"t", std::isfinite(c.welch_t) ? json(c.welch_t) : json(c.welch_t < 0 ? "-inf" : "inf")},
                         {"df", c.welch_df}, {"p", c.welch_p}};
          cj["decided_by"] = c.decided_by;
          cj["p"] = c.p;
          cj["p_holm"] = c.p_holm;
        }
        e["comparison"] = cj;
      } else {
        e["comparison"] = json();
      }
    }
    json trials = json::array();
    for (const auto& [t, st] : r.trials) {
      json e = {{"index", t.index}, {"name", t.name}, {"design", t.design}, {"seed", t.seed},
                {"state", trialStateName(st.state)}, {"step", st.step}};
      if (st.result) e["result"] = json::parse(trialResultToJson(*st.result));
      if (!st.damaged.empty()) e["damaged"] = st.damaged;
      trials.push_back(e);
    }
    json out = {{"format", "tensorscope.sweep_report"}, {"version", kVersion}, {"name", r.name}, {"metric", r.metric},
                {"split", r.split}, {"higher_is_better", r.higher_is_better}, {"alpha", r.alpha},
                {"baseline", r.baseline ? json{{"axis", r.baseline->axis}, {"label", r.baseline->label}} : json()},
                {"comparisons_tested", r.comparisons_tested},
                {"decision_rule", anyComparison(r) ? json(decisionRule(r)) : json()},
                {"designs", designs}, {"trials", trials}};
    if (r.settle)
      out["until_settled"] = {{"alpha", r.settle->alpha},       {"max_seeds", r.settle->max_seeds},
                              {"initial_seeds", r.settle->initial_seeds}, {"looks", r.settle->looks()},
                              {"alpha_per_look", r.settle->alphaPerLook()}, {"rule", settleRuleText(r)}};
    return out.dump(2) + "\n";
  }
  std::ostringstream o;
  if (format == "csv") {
    o << "design,attention_parameters,trials,finished," << r.metric << "_mean," << r.metric
      << "_std,best_mean,best_step,tokens_per_second," << r.metric << "_ci95_low," << r.metric
      << "_ci95_high,baseline,pairs,difference,difference_ci95_low,difference_ci95_high,welch_t,welch_df,welch_p,"
         "sign_flip_p,decided_by,p_holm,verdict" << (r.settle ? ",seeds_taken,settle" : "")
      << (anyMatch(r) ? ",match_on,matched,match_cost,match_target,match_residual" : "") << "\n";
    // The budget match (as md's "Budget match"): empty cells for the reference and unmatched designs.
    const auto matchCells = [&](const DesignSummary& d) -> std::string {
      if (!anyMatch(r)) return "";
      if (d.match_on.empty()) return ",,,,,";
      return "," + d.match_on + "," + csvField(d.matched) + "," + shortNumber(d.match_cost) + "," + shortNumber(d.match_target) +
             "," + stat(d.match_residual);
    };
    for (const auto& d : r.designs) {
      o << csvField(d.design) << "," << d.attention_parameters << "," << d.trials << "," << d.finished << ","
        << (d.finished ? shortNumber(d.mean) : "") << "," << (d.hasStd() ? shortNumber(d.std) : "") << ","
        << (d.finished ? shortNumber(d.best_mean) : "") << "," << (d.finished ? fixed(d.best_step, 0) : "") << ","
        << (d.finished ? fixed(d.tokens_per_second, 0) : "") << "," << (d.hasStd() ? stat(d.ci_low) : "") << ","
        << (d.hasStd() ? stat(d.ci_high) : "") << ",";
      const std::string settleCells = !r.settle ? "" : d.comparison ? "," + std::to_string(d.trials) + "," + d.settle_state : ",,";
      // The twelve columns baseline … verdict: "baseline" and eleven empty cells, or twelve empty.
      if (d.is_baseline) {
        o << "baseline" << std::string(11, ',') << settleCells << matchCells(d) << "\n";
      } else if (!d.comparison) {
        o << std::string(11, ',') << settleCells << matchCells(d) << "\n";
      } else {
        const auto& c = *d.comparison;
        o << csvField(c.baseline) << "," << c.pairs << ",";
        if (c.tested)
          o << stat(c.difference) << "," << stat(c.ci_low) << "," << stat(c.ci_high) << "," << stat(c.welch_t) << ","
            << stat(c.welch_df) << "," << stat(c.welch_p) << ",";
        else
          o << ",,,,,,";
        o << (c.sign_flip_p ? stat(*c.sign_flip_p) : "") << "," << c.decided_by << "," << (c.tested ? stat(c.p_holm) : "")
          << "," << csvField(c.verdict) << settleCells << matchCells(d) << "\n";
      }
    }
    return o.str();
  }
  if (format == "md") {
    const auto rows = reportRowTexts(r);
    o << "## " << displayText(r.name) << "\n\n";
    o << "| design | attention params | seeds | " << metricTitle << " | best | best step | tokens/s | 95% CI of the mean |\n";
    o << "|---|---|---|---|---|---|---|---|\n";
    for (std::size_t i = 0; i < r.designs.size(); ++i) {
      const auto& d = r.designs[i];
      o << "| " << rows[i].design << " | " << d.attention_parameters << " | " << rows[i].seeds << " | ";
      if (d.finished)
        o << rows[i].mean_std << " | " << fixed(d.best_mean, digits) << " | " << fixed(d.best_step, 0) << " | "
          << fixed(d.tokens_per_second, 0) << " | " << rows[i].ci95 << " |\n";
      else
        o << "– | – | – | – | – |\n";
    }
    if (anyMatch(r)) {
      o << "\n### Budget match\n\n| design | on | matched | cost | reference's | residual |\n|---|---|---|---|---|---|\n";
      for (std::size_t i = 0; i < r.designs.size(); ++i) {
        const auto& d = r.designs[i];
        if (d.match_on.empty()) continue;
        o << "| " << rows[i].design << " | " << d.match_on << " | " << d.matched << " | " << shortNumber(d.match_cost)
          << " | " << shortNumber(d.match_target) << " | " << rows[i].match_residual << " |\n";
      }
    }
    if (anyComparison(r)) {
      o << "\n### Against the baseline\n\n" << decisionRule(r) << "\n\n";
      o << "| design | baseline | seeds | difference (95% CI) | Welch p | sign-flip p | decided by | Holm p | verdict |\n";
      o << "|---|---|---|---|---|---|---|---|---|\n";
      for (const auto& row : rows) {
        if (!row.compared) continue;
        o << "| " << row.design << " | " << row.baseline << " | " << row.compared_seeds << " | " << row.difference << " | "
          << row.welch_p << " | " << row.sign_flip_p << " | " << row.decided_by << " | " << row.p_holm << " | " << row.verdict
          << " |\n";
      }
    }
    if (r.settle && anyComparison(r)) {
      o << "\n### Seeds until settled\n\n" << settleRuleText(r) << "\n\n| design | seeds | verdict | state |\n|---|---|---|---|\n";
      for (const auto& d : r.designs)
        if (d.comparison)
          o << "| " << displayText(d.design) << " | " << d.trials << " | " << displayText(d.comparison->verdict) << " | "
            << settleWords(d) << " |\n";
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
    if (anyComparison(r)) {
      o << "\n% " << latexEscape(decisionRule(r)) << "\n";
      o << "\\begin{tabular}{llrrrrl}\n\\hline\n";
      o << "Design & Baseline & Difference (95\\% CI) & Welch $p$ & Sign-flip $p$ & Holm $p$ & Verdict \\\\\n\\hline\n";
      for (const auto& d : r.designs) {
        if (!d.comparison) continue;
        const auto& c = *d.comparison;
        o << latexEscape(d.design) << " & " << latexEscape(c.baseline) << " & ";
        if (c.tested)
          o << "$" << (c.difference >= 0 ? "+" : "") << fixed(c.difference, digits) << "$ [$" << fixed(c.ci_low, digits) << "$, $"
            << fixed(c.ci_high, digits) << "$] & " << latexP(c.welch_p) << " & ";
        else
          o << "-- & -- & ";
        o << (c.sign_flip_p ? latexP(*c.sign_flip_p) : "--") << " & " << (c.tested ? latexP(c.p_holm) : "--")
          << " & " << latexEscape(c.verdict) << " \\\\\n";
      }
      o << "\\hline\n\\end{tabular}\n";
    }
    if (anyMatch(r)) {  // the budget match, as md's "Budget match": residual = (cost - target) / target
      o << "\n% Budget match: each design's cost against its reference's; residual = (cost - reference's) / reference's\n";
      o << "\\begin{tabular}{llrrrr}\n\\hline\nDesign & On & Matched & Cost & Reference's & Residual \\\\\n\\hline\n";
      for (const auto& d : r.designs) {
        if (d.match_on.empty()) continue;
        std::string residual = matchResidualText(d.match_residual);
        residual = "$" + residual.substr(0, residual.size() - 1) + "\\%$";
        o << latexEscape(d.design) << " & " << latexEscape(d.match_on) << " & " << latexEscape(d.matched) << " & "
          << shortNumber(d.match_cost) << " & " << shortNumber(d.match_target) << " & " << residual << " \\\\\n";
      }
      o << "\\hline\n\\end{tabular}\n";
    }
    if (r.settle && anyComparison(r)) {
      o << "\n% " << latexEscape(settleRuleText(r)) << "\n";
      o << "\\begin{tabular}{lrl}\n\\hline\nDesign & Seeds & Until settled \\\\\n\\hline\n";
      for (const auto& d : r.designs)
        if (d.comparison) o << latexEscape(d.design) << " & " << d.trials << " & " << latexEscape(settleWords(d)) << " \\\\\n";
      o << "\\hline\n\\end{tabular}\n";
    }
    return o.str();
  }
  throw std::invalid_argument("unknown report format '" + format + "'; the formats are md, csv, latex and json");
}

void readReportCurves(const SweepPlan& plan, SweepReport& r) {
  r.curves.clear();
  for (const auto& [t, st] : r.trials) {
    if (st.state == TrialState::Pending) continue;
    auto& c = r.curves[t.design];
    readMetrics(
        plan.runDir(t),
        [&](std::int64_t, const MetricsRecord& rec) {
          if (rec.kind != MetricsRecord::Kind::Eval || rec.split != r.split) return;
          if (auto v = metricOf(rec, r.metric)) c[rec.step].push_back(*v);
        },
        [](std::int64_t, const std::string&) {});
  }
}

std::string reportFigureSvg(const SweepPlan& plan, const SweepReport& report, const std::string& x) {
  SweepReport withCurves = report;
  readReportCurves(plan, withCurves);
  return reportFigureSvg(withCurves, x);
}

}  // namespace tensorscope::model_core
