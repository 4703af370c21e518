#pragma once
// The parts of CurvesPlot that are not the widget: one curve (raw points, times, displayed values
// and its two graphs), the fixed line style of each metric family, and the compact legend (one
// entry per run, one per metric) drawn as a QCustomPlot layout element of its own.

#include <QColor>
#include <QFont>
#include <QPen>
#include <limits>
#include <vector>

#include "qcp.h"
#include "viz/curves_plot.h"

namespace tensorscope::viz {

struct CurvesPlot::Series {
  QString run, metric;
  Axis axis = Axis::Loss;
  /// Raw points as appended; `times` holds the training time of each point (NaN: unknown, e.g. an
  /// evaluation, whose time the plot interpolates from the run's other curves).
  std::vector<double> steps, values, times, shown;
  double ema = std::numeric_limits<double>::quiet_NaN();  // EMA of the finite values so far
  QCPGraph* line = nullptr;  // displayed values
  QCPGraph* raw = nullptr;   // raw values, drawn faintly while smoothing

  /// The learning rate is never smoothed.
  bool smoothed(double weight) const { return weight > 0 && axis != Axis::Rate; }
  /// Whether some point carries its own time.
  bool hasOwnTimes() const;
  /// Appends a point. A step not after the last one first drops the tail (the run was resumed from
  /// an earlier checkpoint) and returns false: the caller refills the graphs. Else true, and the
  /// caller adds the last point to the graphs (an O(1) append).
  bool append(double step, double value, double time, double weight);
  /// Recomputes the displayed values for a new EMA weight (the graphs are refilled by the caller).
  void recompute(double weight);
  /// Refills both graphs with `keys` (one per point; NaN keys are left out).
  void fill(const std::vector<double>& keys);

 private:
  double next(double value, double weight);
};

namespace detail {

/// How a metric is drawn, fixed by its name alone (so a metric looks the same in every run, in
/// every session and after every reopen): the dash pattern by family (train loss solid, eval loss
/// dashed, accuracy / exact match dotted, learning rate dash-dot, others from a fixed list by a
/// stable hash of the name) and, for evaluations, a marker by split ("interpolation" or
/// "validation" a disc, "extrapolation" a triangle, others a square or diamond).
struct MetricStyle {
  QVector<qreal> dashes;  ///< in pen widths; empty = solid
  QCPScatterStyle::ScatterShape marker = QCPScatterStyle::ssNone;
};
MetricStyle metricStyle(const QString& metric);
/// "eval loss (interpolation)" -> {"eval loss", "interpolation"}; a name without "(…)" has no split.
std::pair<QString, QString> splitMetricName(const QString& metric);
/// A pen of `colour` and `width` with the metric's dash pattern.
QPen metricPen(const MetricStyle& style, const QColor& colour, double width);
/// FNV-1a of the UTF-16 text: the same in every process (qHash is seeded per process).
quint32 stableHash(const QString& text);

/// The curves' legend: runs (colour swatch and full name), metric families (neutral colour, dash
/// pattern) and evaluation splits (neutral marker), flowing left to right and wrapping at the
/// plot's width (the runs on a line of their own when everything does not fit on one); it takes at most
/// `maxHeightFraction` of the plot's height and then ends with "+n more". Font and text colour are
/// the plot legend's (QCustomPlot::legend), so a theme or an export restyling that legend restyles
/// this one. Text is drawn as plain text: no mnemonics, no rich text, nothing eaten.
class CurvesLegend : public QCPLayoutElement {
 public:
  struct Entry {
    QString text;
    QPen pen;
    QCPScatterStyle::ScatterShape marker = QCPScatterStyle::ssNone;
    enum Group { Run, Metric, Split };
    Group group = Metric;  ///< a run (thick solid swatch), a metric (line), a split (marker only)
  };
  explicit CurvesLegend(QCustomPlot* plot);
  void setEntries(std::vector<Entry> entries);
  const std::vector<Entry>& entries() const { return entries_; }
  void setMaxHeightFraction(double f) { maxHeightFraction_ = f; }
  /// One entry per row, as wide as the widest entry (a legend right of the plot or inside it);
  /// a valid `fill` is painted behind it (inside the plot, over the curves).
  void setVertical(bool vertical, const QColor& fill = QColor()) {
    vertical_ = vertical;
    fill_ = fill;
  }
  bool vertical() const { return vertical_; }
  /// Tighter swatches and gaps, entries flowing on without a line of their own for the runs: the
  /// legend of a figure, which must not take a column's height.
  void setCompact(bool compact);
  /// Rows and entries shown after the last layout (entries beyond are summed up as "+n more").
  int rows() const { return rows_; }
  int shownEntries() const { return shown_; }
  /// The rectangle of each shown entry (plot pixels), after the last layout.
  const std::vector<QRect>& entryRects() const { return rects_; }

  void update(UpdatePhase phase) override;
  QSize minimumOuterSizeHint() const override;
  QSize maximumOuterSizeHint() const override;

 protected:
  void applyDefaultAntialiasingHint(QCPPainter* painter) const override;
  void draw(QCPPainter* painter) override;

 private:
  struct Spacing {
    int swatch, swatchGap, entryGap, groupGap;
  };
  Spacing spacing() const;
  int rowHeight(const QFontMetrics& fm) const;
  QFont font() const;
  int entryWidth(const QFontMetrics& fm, const Entry& e) const;
  void layoutFor(int width, int maxHeight);

  std::vector<Entry> entries_;
  std::vector<QPoint> positions_;  // top-left of each shown entry, relative to the content rect
  std::vector<QRect> rects_;
  double maxHeightFraction_ = 0.3;
  bool vertical_ = false;
  bool compact_ = false;
  QColor fill_;  ///< painted behind the entries when valid (inside the plot)
  int width_ = 0;  ///< vertical: the widest entry
  int rows_ = 0, shown_ = 0, height_ = 0;
  QString moreText_;
  QPoint morePos_;
};

}  // namespace detail
}  // namespace tensorscope::viz
