// The report's figure (SVG): the metric against parameters or an axis, and the mean curves.
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

#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

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
  // A turned label longer than its panel (about 7.2 px a character at 13 px) would reach above it,
  // into the verdict lines of a sweep with many designs: it is broken in two at the ", " (else the
  // space) nearest its middle, two lines side by side.
  std::vector<std::string> lines{ylabel};
  if (7.2 * double(ylabel.size()) > p.h) {
    std::size_t best = std::string::npos;
    for (const char* sep : {", ", " "}) {
      for (auto at = ylabel.find(sep); at != std::string::npos; at = ylabel.find(sep, at + 1))
        if (best == std::string::npos || std::abs(double(at) - double(ylabel.size()) / 2) < std::abs(double(best) - double(ylabel.size()) / 2))
          best = at;
      if (best != std::string::npos) {
        const std::size_t cut = best + (sep[0] == ',' ? 1 : 0);
        const std::size_t rest = ylabel.find_first_not_of(' ', cut);
        if (rest != std::string::npos) lines = {ylabel.substr(0, cut), ylabel.substr(rest)};  // else one line
        break;
      }
    }
  }
  for (std::size_t i = 0; i < lines.size(); ++i)
    o << "<text transform='translate(" << p.x0 - 48 - 16.0 * double(lines.size() - 1 - i) << "," << p.y0 + p.h / 2
      << ") rotate(-90)' text-anchor='middle'>" << xmlEscape(lines[i]) << "</text>\n";
}

/// A point of the left panel: a design's mean over seeds and the 95% confidence interval of it.
struct Point {
  double x, mean, lo, hi;
  bool hasStd;  ///< an error bar only where the interval is defined (two seeds or more)
};
using Legend = std::vector<std::pair<std::string, const char*>>;

/// The figure's x: parameters, or one of the sweep's axes (its values as categories).
struct FigureX {
  bool byParams = true;
  std::size_t axis = 0;
  std::vector<std::string> categories;
  bool numeric = false;  ///< every category reads as a number: a line joins the points
};

FigureX figureX(const SweepReport& r, const std::string& x) {
  FigureX f;
  f.byParams = x == "parameters";
  if (f.byParams) return f;
  const auto& axes = r.axes;
  const auto it = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.name == x; });
  if (it == axes.end()) {
    std::string names = "parameters";
    for (const auto& a : axes) names += ", " + a.name;
    throw std::invalid_argument("the figure's x is '" + x + "'; this sweep has: " + names);
  }
  f.axis = static_cast<std::size_t>(it - axes.begin());
  f.numeric = true;
  for (const auto& v : r.axes[f.axis].values) {
    f.categories.push_back(v.label);
    char* end = nullptr;
    (void)std::strtod(v.label.c_str(), &end);
    f.numeric = f.numeric && end && *end == 0 && !v.label.empty();
  }
  return f;
}

/// Series of the left panel: designs grouped by their labels other than x (for parameters: each
/// design its own series), in the order they first appear.
std::vector<std::pair<std::string, std::vector<Point>>> figureSeries(const SweepReport& r, const FigureX& fx) {
  std::map<std::string, std::vector<Point>> series;
  std::vector<std::string> order;
  for (const auto& d : r.designs) {
    if (!d.finished) continue;
    std::string key;
    double xv = double(d.attention_parameters);
    for (std::size_t i = 0; i < d.labels.size(); ++i) {
      if (!fx.byParams && i == fx.axis) {
        xv = double(std::find(fx.categories.begin(), fx.categories.end(), d.labels[i].second) - fx.categories.begin());
        continue;
      }
      key += (key.empty() ? "" : " · ") + d.labels[i].second;
    }
    if (fx.byParams) key = d.design;
    if (key.empty()) key = r.metric;
    if (!series.count(key)) order.push_back(key);
    series[key].push_back({xv, d.mean, d.hasStd() ? d.ci_low : d.mean, d.hasStd() ? d.ci_high : d.mean, d.hasStd()});
  }
  std::vector<std::pair<std::string, std::vector<Point>>> out;
  for (const auto& key : order) {
    auto pts = series[key];
    std::sort(pts.begin(), pts.end(), [](const Point& p, const Point& q) { return p.x < q.x; });
    out.emplace_back(key, std::move(pts));
  }
  return out;
}

double curveMean(const std::vector<double>& vals) {
  double m = 0;
  for (double v : vals) m += v;
  return m / double(vals.size());
}

/// Pads a value range by 8% (at least 1e-3); metrics other than a loss stay in [0, 1] first.
void padRange(const SweepReport& r, double& lo, double& hi) {
  if (lo > hi) lo = 0, hi = 1;
  if (r.metric != "loss") lo = std::max(0.0, lo), hi = std::min(1.0, hi);
  const double pad = std::max((hi - lo) * 0.08, 1e-3);
  lo -= pad, hi += pad;
}

/// The left panel's points, error bars and (for a numeric axis) lines; returns its legend.
Legend drawMetricPanel(std::ostream& o, const Panel& a, const FigureX& fx,
                       const std::vector<std::pair<std::string, std::vector<Point>>>& series) {
  Legend legend;
  std::size_t colour = 0;
  for (const auto& [key, pts] : series) {
    const char* col = kPalette[colour++ % 8];
    legend.emplace_back(key, col);
    if (!fx.byParams && fx.numeric && pts.size() > 1) {  // a line only where the axis is a quantity
      o << "<polyline fill='none' stroke='" << col << "' stroke-width='1.5' points='";
      for (const auto& p : pts) o << a.px(p.x) << "," << a.py(p.mean) << " ";
      o << "'/>\n";
    }
    for (const auto& p : pts) {
      const double cx = a.px(p.x);
      // The interval is cut at the panel's edges (an accuracy's stays in [0, 1]); a cut end has no cap.
      const double lo = std::max(p.lo, a.ylo), hi = std::min(p.hi, a.yhi);
      if (p.hasStd) {
        o << "<line x1='" << cx << "' x2='" << cx << "' y1='" << a.py(lo) << "' y2='" << a.py(hi) << "' stroke='" << col
          << "' stroke-width='1.5'/>";
        if (lo == p.lo)
          o << "<line x1='" << cx - 5 << "' x2='" << cx + 5 << "' y1='" << a.py(lo) << "' y2='" << a.py(lo) << "' stroke='" << col << "'/>";
        if (hi == p.hi)
          o << "<line x1='" << cx - 5 << "' x2='" << cx + 5 << "' y1='" << a.py(hi) << "' y2='" << a.py(hi) << "' stroke='" << col << "'/>";
      }
      o << "<circle cx='" << cx << "' cy='" << a.py(p.mean) << "' r='4.5' fill='" << col << "'/>\n";
    }
  }
  return legend;
}

/// The right panel's mean curve per design (or a note when nothing was evaluated); returns its legend.
Legend drawCurvesPanel(std::ostream& o, const Panel& b, const SweepReport& r, bool anyCurve) {
  Legend legend;
  std::size_t colour = 0;
  for (const auto& d : r.designs) {
    if (!r.curves.count(d.design)) continue;
    const char* col = kPalette[colour++ % 8];
    legend.emplace_back(d.design, col);
    o << "<polyline fill='none' stroke='" << col << "' stroke-width='1.8' points='";
    for (const auto& [step, vals] : r.curves.at(d.design)) o << b.px(double(step)) << "," << b.py(curveMean(vals)) << " ";
    o << "'/>\n";
  }
  if (!anyCurve)
    o << "<text x='" << b.x0 + b.w / 2 << "' y='" << b.y0 + b.h / 2 << "' text-anchor='middle' fill='#888'>no evaluation yet</text>\n";
  return legend;
}

void drawLegend(std::ostream& o, const Legend& items, double x0) {
  double y = 522;
  double xx = x0;
  for (const auto& [label, col] : items) {
    const double w = 34 + 8.2 * double(label.size());
    if (xx + w > x0 + 520) xx = x0, y += 18;
    o << "<rect x='" << xx << "' y='" << y - 9 << "' width='12' height='12' fill='" << col << "'/><text x='" << xx + 17
      << "' y='" << y + 1 << "'>" << xmlEscape(label) << "</text>\n";
    xx += w;
  }
}

/// Every number of the figure comes from a validated result or a plausible metrics record; a
/// non-finite coordinate would still make a figure that draws nothing where it should: never write one.
void refuseNonFinite(const std::string& svg) {
  for (std::size_t at = svg.find("='"); at != std::string::npos; at = svg.find("='", at + 2)) {
    const std::size_t close = svg.find('\'', at + 2);
    const std::string value = svg.substr(at + 2, close - at - 2);
    if (value.find("nan") != std::string::npos || value.find("inf") != std::string::npos)
      throw std::runtime_error("the report figure would hold a non-finite coordinate (" + value.substr(0, 60) +
                               "); a bug: please report it");
  }
}

}  // namespace

std::string reportFigureSvg(const SweepReport& r, const std::string& x) {
  // Left: metric against x, one series per value of the other axes. Right: mean curves per design.
  const FigureX fx = figureX(r, x);
  const auto series = figureSeries(r, fx);
  // Each panel has its own value range: the end points would be squashed by the early curve.
  double ylo = 1e300, yhi = -1e300, clo = 1e300, chi = -1e300, shi = 1;
  for (const auto& [k, pts] : series)
    for (const auto& p : pts) ylo = std::min(ylo, p.lo), yhi = std::max(yhi, p.hi);
  bool anyCurve = false;
  for (const auto& [d, c] : r.curves)
    for (const auto& [step, vals] : c) {
      const double m = curveMean(vals);
      clo = std::min(clo, m), chi = std::max(chi, m), shi = std::max(shi, double(step));
      anyCurve = true;
    }
  padRange(r, ylo, yhi);
  padRange(r, clo, chi);
  double xlo = -0.5, xhi = double(fx.categories.size()) - 0.5;
  if (fx.byParams) {
    xlo = 1e300, xhi = -1e300;
    for (const auto& d : r.designs) xlo = std::min(xlo, double(d.attention_parameters)), xhi = std::max(xhi, double(d.attention_parameters));
    const double xp = std::max((xhi - xlo) * 0.08, std::max(1.0, xhi * 0.02));
    xlo -= xp, xhi += xp;
  }
  // The verdicts against the baseline, one line each under the title (at most kVerdictLines, then
  // how many more): the panels are shorter by as much, so the figure keeps its size.
  constexpr std::size_t kVerdictLines = 6;
  std::vector<std::string> verdicts;
  std::size_t compared = 0;
  for (const auto& d : r.designs)
    if (d.comparison && ++compared <= kVerdictLines) verdicts.push_back(d.design + ": " + d.comparison->verdict);
  if (compared > kVerdictLines) verdicts.push_back("… and " + std::to_string(compared - kVerdictLines) + " more (see the report)");
  const double reserve = verdicts.empty() ? 0.0 : 16.0 * double(verdicts.size() + 1) + 6;
  const int W = 1200, H = 580;
  std::ostringstream o;
  o << "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' viewBox='0 0 " << W << " " << H << "' font-family='DejaVu Sans, sans-serif' font-size='13'>\n";
  o << "<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='" << W / 2 << "' y='26' text-anchor='middle' font-size='17'>" << xmlEscape(r.name) << "</text>\n";
  const std::string ylabel = r.metric + " (" + r.split + ")";
  // Turned category labels take room below the axis: the panels are shorter by as much.
  std::size_t longest = 0;
  for (const auto& c : fx.categories) longest = std::max(longest, c.size());
  const bool turned = !fx.byParams && !fx.categories.empty() && double(longest) * 7.5 > 470.0 / double(fx.categories.size());
  const double ph = (turned ? std::max(200.0, 400.0 - 4.0 * double(longest)) : 400.0) - reserve;
  const double top = 50 + reserve;
  if (!verdicts.empty()) {
    o << "<text x='" << W / 2 << "' y='48' text-anchor='middle' font-size='12' font-weight='bold'>Against the baseline (alpha "
      << shortNumber(r.alpha) << ", Holm-corrected; error bars: 95% confidence intervals of the means)</text>\n";
    for (std::size_t i = 0; i < verdicts.size(); ++i)
      o << "<text x='" << W / 2 << "' y='" << 64 + 16 * int(i) << "' text-anchor='middle' font-size='12'>" << xmlEscape(verdicts[i])
        << "</text>\n";
  }
  const Panel a{80, top, 470, ph, xlo, xhi, ylo, yhi, !fx.byParams};
  drawAxes(o, a, fx.byParams ? "attention parameters" : x, ylabel + ", mean and 95% CI over seeds", fx.categories);
  const Legend legend = drawMetricPanel(o, a, fx, series);
  const Panel b{660, top, 470, ph, 0, shi, clo, chi, false};
  drawAxes(o, b, "training step", ylabel + ", mean over the seeds at each step", {});
  const Legend curveLegend = drawCurvesPanel(o, b, r, anyCurve);
  if (legend.size() > 1) drawLegend(o, legend, 30);  // one series needs no key
  drawLegend(o, curveLegend, 610);
  o << "</svg>\n";
  const std::string svg = o.str();
  refuseNonFinite(svg);
  return svg;
}

}  // namespace tensorscope::model_core
