#pragma once
/// Training curves: named series ("train loss", "eval loss (interpolation)", "exact match
/// (extrapolation)", "lr") appended step by step, several runs overlaid, display-only EMA
/// smoothing, nearest-point hover read-out and auto-rescale.
///
/// Styles mean one thing each, always: colour = run, line style (dash pattern, and a marker per
/// evaluation split) = metric. A run's colour is its place in the run order the application gives
/// (setRunOrder: the session's order, so a reopened session looks the same whatever order its
/// curves arrive in); a metric's style depends on its name only. The legend is compact: one entry
/// per run and one per metric, never runs × metrics.
///
/// Three value axes: loss on the left (the only one log-scale can apply to), accuracy-like metrics
/// ("accuracy…", "exact match…") on the right with the fixed range [0, 1], and the learning rate on
/// a second right axis outside it. The x axis shows the step, or the training time when the points
/// carry times (setTimeAxis). A metric filter hides metrics everywhere (drawing, legend, rescale).
/// A forked run is drawn from its parent's step (setRunOrigin).

#include <QPen>
#include <QSet>
#include <QFont>
#include <QRectF>
#include <QStringList>
#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <utility>
#include <vector>

#include "viz/plot_widget.h"

class QCheckBox;
class QComboBox;
class QCPAxis;
class QLabel;
class QSlider;
class QToolButton;

namespace tensorscope::viz {

namespace detail {
class CurvesLegend;
}

class CurvesPlot : public PlotWidget {
  Q_OBJECT
 public:
  /// The value axis a metric is drawn against.
  enum class Axis { Loss, Accuracy, Rate };

  explicit CurvesPlot(QWidget* parent = nullptr);
  ~CurvesPlot() override;

  /// Appends (step, value) to `series` of `run` (created on first use), with the training time of
  /// the point in seconds (NaN: unknown; evaluations get theirs from the run's other curves). A
  /// step not after the series' last step means the run was resumed from an earlier checkpoint:
  /// points from that step on are dropped first. Non-finite values leave a gap.
  void appendPoint(const QString& series, double step, double value, const QString& run = QString(),
                   double time = std::numeric_limits<double>::quiet_NaN());
  /// Appends many points at once (e.g. a drained ring buffer); same rules as appendPoint. `times`
  /// is empty (no times) or holds one time per point.
  void appendPoints(const QString& series, const std::vector<double>& steps, const std::vector<double>& values,
                    const QString& run = QString(), const std::vector<double>& times = {});
  /// Replaces a whole series (steps ascending); `times` as for appendPoints.
  void setSeries(const QString& series, const std::vector<double>& steps, const std::vector<double>& values,
                 const QString& run = QString(), const std::vector<double>& times = {});
  void removeRun(const QString& run);
  /// One curve of a run as appended (raw, not smoothed), to draw again later with setSeries.
  struct RunCurve {
    QString metric;
    std::vector<double> steps, values, times;
  };
  /// Every curve of `run` as appended (empty when the run has none).
  std::vector<RunCurve> runCurves(const QString& run) const;
  /// Removes every curve (the run order, origins and the metric filter stay).
  void clear();

  /// The order runs take their colours in (colour i for the i-th run); runs not named here follow
  /// in order of first appearance. Restyles what is drawn.
  void setRunOrder(const QStringList& runs);
  QStringList runOrder() const { return runOrder_; }
  /// A run started from `parentRun`'s weights at `parentRun`'s step `step` (a fork): its points are
  /// drawn at step + its own step, and in the time view from the parent's time at that step.
  /// step 0 and an empty parent: a run of its own.
  void setRunOrigin(const QString& run, double step, const QString& parentRun = QString());
  /// The step a run's own steps are shifted by (0 for a run of its own).
  double runStepOffset(const QString& run) const;

  /// EMA weight a in [0, 0.99]: shown s_0 = y_0, s_i = a·s_{i-1} + (1−a)·y_i. Display only: the
  /// raw points stay stored (and exported) and are drawn faintly behind the smoothed line.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  /// Logarithmic loss axis (the accuracy and learning-rate axes stay linear).
  void setLogY(bool on);
  /// Whether the loss axis is logarithmic (read from the axis).
  bool logY() const;
  /// Metrics drawn against the learning-rate axis (default: "lr", "learning rate").
  void setRightAxisSeries(const QStringList& series);
  /// Whether a metric name is accuracy-like (starts with "accuracy" or "exact match"): such
  /// metrics go on the [0, 1] axis.
  static bool isAccuracyLike(const QString& metric);
  /// The axis `metric` is (or would be) drawn against.
  Axis axisOf(const QString& metric) const;
  void setYLabel(const QString& label);
  /// Rescales to all data after every update (on by default; a manual pan/zoom turns it off,
  /// a double-click or the context menu turns it back on).
  void setAutoRescale(bool on);
  bool autoRescale() const { return autoRescale_; }
  void rescale();

  /// Metric filter: a hidden metric is not drawn, not in the legend and not in the rescale. The
  /// filter is by name and outlives the curves (a metric hidden stays hidden for every run, also
  /// those added later and after clear()).
  void setMetricVisible(const QString& metric, bool visible);
  bool metricVisible(const QString& metric) const { return !hiddenMetrics_.contains(metric); }
  /// Metrics present and not hidden, in order of first appearance.
  QStringList visibleMetrics() const;
  /// Every hidden metric name (also those without curves now), sorted.
  QStringList hiddenMetrics() const;
  void setHiddenMetrics(const QStringList& metrics);

  /// x axis: training time in seconds (true) or step (false). In the time view, a curve whose run
  /// has no times is hidden (the control bar says how many).
  void setTimeAxis(bool on);
  bool timeAxis() const { return timeAxis_; }
  /// Curves left out of the time view for want of times.
  int curvesWithoutTime() const;

  QStringList runs() const { return runs_; }
  /// Series names (metrics) in order of first appearance.
  QStringList seriesNames() const { return metrics_; }
  /// Points stored / plotted for a series (0 when it does not exist).
  int pointCount(const QString& series, const QString& run = QString()) const;
  /// The values as displayed (smoothed) for a series.
  std::vector<double> displayedValues(const QString& series, const QString& run = QString()) const;
  /// The x positions as displayed (steps with the run's offset, or times in the time view).
  std::vector<double> displayedKeys(const QString& series, const QString& run = QString()) const;
  /// Whether a series is drawn now (its metric shown; in the time view, its run has times).
  bool seriesShown(const QString& series, const QString& run = QString()) const;
  /// The pen a series is drawn with (colour of the run, style of the metric).
  QPen seriesPen(const QString& series, const QString& run = QString()) const;
  /// The training time of `run` at `step` (its own step), interpolated from its curves' times;
  /// NaN when it has none.
  double timeAt(const QString& run, double step) const;
  std::pair<double, double> xRange() const;
  /// Range of the loss axis.
  std::pair<double, double> yRange() const;
  std::pair<double, double> axisRange(Axis axis) const;
  /// Whether a right axis (accuracy or learning rate) is shown.
  bool hasRightAxis() const;
  bool axisShown(Axis axis) const;
  QString axisLabel(Axis axis) const;
  QString xLabel() const;
  /// The name a series goes by in the hover read-out: "run · metric" (the metric alone for an
  /// unnamed run). Its graphs also carry the properties "tsRun" and "tsMetric".
  QString legendName(const QString& series, const QString& run = QString()) const;
  /// The legend's entry texts as drawn: runs first, then metrics.
  QStringList legendTexts() const;
  /// Rows the legend takes and the entries it shows after the last replot (see replotNow).
  int legendRows() const;
  int legendShownEntries() const;
  /// The legend's height in pixels after the last replot.
  int legendHeight() const;

 Q_SIGNALS:
  void smoothingChanged(double weight);
  void logYChanged(bool on);
  void timeAxisChanged(bool on);
  /// A metric was shown or hidden with the filter.
  void metricFilterChanged();

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;
  void hoverLeft() override;
  void addContextActions(QMenu& menu) override;
  /// A figure: the compact legend lists only the runs and metrics the options keep, in the
  /// figure's point size, where the options put it (above, below, right of or inside the plot, or
  /// nowhere); endFigure puts it back above the plot.
  QSize beginFigure(const FigureOptions& options, const QSize& size) override;
  void figureLaidOut() override;
  void endFigure() override;

 public:
  /// Where the last figure drew the compact legend (empty when it drew none) and its entries.
  QRectF lastFigureLegendRect() const { return figureLegendRect_; }
  int lastFigureLegendEntries() const { return figureLegendEntries_; }
  /// Whether the last figure put a legend asked for at the right below the plot instead: beside
  /// it, the curves would have kept less than half the figure's width.
  bool lastFigureLegendMovedBelow() const { return figureLegendMoved_; }

 protected:

 private:
  struct Series;
  struct RunOrigin {
    double step = 0;
    QString parent;
  };
  Series& seriesFor(const QString& run, const QString& metric);
  const Series* find(const QString& run, const QString& metric) const;
  const Series* timeReference(const QString& run) const;
  QCPAxis* axisFor(Axis axis) const;
  int colourIndex(const QString& run) const;
  void styleSeries(Series& s);
  void restyleAll();
  /// The x position of each point of `s` in the current view (NaN: not drawable).
  std::vector<double> keysFor(const Series& s) const;
  double timeOffset(const QString& run) const;
  void refill(Series& s);
  void refillAll();
  /// After new points in `s` (its last point new unless `cut`): keep the graphs in step.
  void pointsAdded(Series& s, std::size_t firstNew, bool cut);
  void updateVisibility();
  /// `figure`: only the series a figure with these options draws.
  void updateLegend(const FigureOptions* figure = nullptr);
  /// Takes the legend out of wherever it is and puts it in the row above the plot (as built).
  void legendOnTop();
  /// Takes the legend out of wherever it is and puts it in a row below everything.
  void legendBelow();
  /// Shortens the right axes' titles to what their height holds (after each layout).
  void fitAxisTitles();
  void updateTimeUnits();
  void afterUpdate();
  void applyPendingRescale() const;
  void fillMetricMenu();

  std::map<std::pair<QString, QString>, std::unique_ptr<Series>> series_;  // (run, metric)
  std::map<QString, RunOrigin> origins_;
  QStringList runs_, metrics_, rightAxisSeries_, runOrder_;
  QSet<QString> hiddenMetrics_;
  QSet<QString> dirtyRuns_;  // runs with new points since the last update (time view)
  std::optional<QFont> figureFontBefore_;  // the legend font a figure export replaced
  QRectF figureLegendRect_;
  int figureTickCountBefore_ = 5;
  int figureLegendEntries_ = 0;
  bool figureLegendRight_ = false;  // the figure being drawn asked for the legend at the right
  bool figureLegendMoved_ = false;
  bool minutes_ = false;     // the time axis counts minutes
  double smoothing_ = 0;
  bool autoRescale_ = true;
  bool timeAxis_ = false;
  mutable bool rescalePending_ = false;
  QCPAxis* rateAxis_ = nullptr;
  detail::CurvesLegend* legend_ = nullptr;
  QSlider* smoothingSlider_ = nullptr;
  QLabel* smoothingLabel_ = nullptr;
  QCheckBox* logCheck_ = nullptr;
  QToolButton* metricsButton_ = nullptr;
  QComboBox* xCombo_ = nullptr;
  QLabel* timeNote_ = nullptr;
  struct Hover;
  std::unique_ptr<Hover> hover_;
};

}  // namespace tensorscope::viz
