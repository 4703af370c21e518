#pragma once
// Small pieces shared by the viz widgets: nearest-point search for hover read-outs, thinned
// text tick labels, number formatting.

#include <QString>
#include <QStringList>
#include <limits>

#include "qcp.h"

namespace tensorscope::viz::detail {

/// Graphs with this dynamic property set to true are skipped by nearestGraphPoint.
inline constexpr const char* kNoHoverProperty = "tsNoHover";

struct NearestPoint {
  QCPGraph* graph = nullptr;
  double key = 0, value = 0;
  double distance = std::numeric_limits<double>::infinity();  ///< pixels
};

/// The data point of a visible graph closest to `pos` (pixels), searching only the neighbours of
/// the key under the cursor in each graph, so it stays cheap for 100k-point graphs.
NearestPoint nearestGraphPoint(QCustomPlot* plot, const QPointF& pos, double maxDistance);

/// How text tick labels at 0..n-1 fit along an axis `pixelLength` pixels long: every `step`-th
/// label is shown, rotated by 90° on horizontal axes when long labels would not fit flat.
struct TickPlan {
  int step = 1;
  bool rotated = false;
  int extent = 0;  ///< pixels the labels take perpendicular to the axis
};
TickPlan planTicks(const QFont& font, const QStringList& labels, double pixelLength, bool horizontal);
/// Installs text ticks following `plan`.
void applyTicks(QCPAxis* axis, const QStringList& labels, const TickPlan& plan);

/// planTicks + applyTicks for `axis`. Returns the thinning step.
int setTokenTicks(QCPAxis* axis, const QStringList& labels, double pixelLength);
/// Breaks `text` at spaces so that no line is wider than `width` (a single long word stays whole).
QString wrapText(const QString& text, const QFont& font, double width);
/// The labels "0", "1", … "n-1".
QStringList indexLabels(int n);

/// Ticks for logarithmic axes at 1-2-5 multiples of each decade for short ranges, and at powers of
/// ten (thinned for very long ranges) otherwise.
class LogTicker : public QCPAxisTicker {
 protected:
  QVector<double> createTickVector(double tickStep, const QCPRange& range) override;
  int getSubTickCount(double tickStep) override;

 private:
  int subTicks_ = 0;  // 2..9 between powers of ten when every decade has a tick
};

/// Puts the plot's legend into `cell` of the main layout inside a sub-layout that keeps it at its
/// natural size (a legend alone in a cell stretches its rows/columns over the whole cell).
/// `row`/`column` give the sub-layout's orientation: legend then spacer along that direction.
void placeLegend(QCustomPlot* plot, int row, int column, Qt::Orientation spacerDirection);
/// The legend in a new top row of its own that takes no more height than it needs (placeLegend),
/// filled row by row with `wrap` entries a row and icons `iconWidth` × 10; hidden to start with.
void placeLegendAbove(QCustomPlot* plot, int wrap, int iconWidth);

/// The hover marker: a hidden circle of `size` pixels on `layer` (PlotWidget::kHoverLayer).
QCPItemTracer* addHoverTracer(QCustomPlot* plot, double size, const QString& layer);
/// Puts `tracer` on the point `hit` found, in its graph's colour, and shows it; hides it when
/// `hit` found no point.
void moveTracerTo(QCPItemTracer* tracer, const NearestPoint& hit);
/// Takes `tracer` off its graph (before graphs are removed) and hides it.
void detachTracer(QCPItemTracer* tracer);

/// Switches `axis` between a linear scale and a logarithmic one with LogTicker's ticks.
void setLogScale(QCPAxis* axis, bool on);

/// Four significant digits, no trailing zeros ("0.1234", "1.5e-05").
QString formatValue(double value);

}  // namespace tensorscope::viz::detail
