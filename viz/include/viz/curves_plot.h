#pragma once
/// Training curves: named series ("train loss", "eval loss (interpolation)", "exact match", "lr")
/// appended step by step, several runs overlaid, display-only EMA smoothing, log-scale y, a second
/// y axis for the learning rate, nearest-point hover read-out, legend and auto-rescale.
///
/// Colours: with one run each metric has its own colour; once several runs are shown, colour
/// identifies the run and line style the metric. Series on the right axis ("lr" by default) are
/// dashed and never smoothed.

#include <QStringList>
#include <map>
#include <utility>
#include <vector>

#include "viz/plot_widget.h"

class QCheckBox;
class QLabel;
class QSlider;

namespace tensorscope::viz {

class CurvesPlot : public PlotWidget {
  Q_OBJECT
 public:
  explicit CurvesPlot(QWidget* parent = nullptr);
  ~CurvesPlot() override;

  /// Appends (step, value) to `series` of `run` (created on first use). A step not after the
  /// series' last step means the run was resumed from an earlier checkpoint: points from that
  /// step on are dropped first. Non-finite values leave a gap.
  void appendPoint(const QString& series, double step, double value, const QString& run = QString());
  /// Appends many points at once (e.g. a drained ring buffer); same rules as appendPoint.
  void appendPoints(const QString& series, const std::vector<double>& steps, const std::vector<double>& values,
                    const QString& run = QString());
  /// Replaces a whole series (steps ascending).
  void setSeries(const QString& series, const std::vector<double>& steps, const std::vector<double>& values,
                 const QString& run = QString());
  void removeRun(const QString& run);
  void clear();

  /// EMA weight a in [0, 0.99]: shown s_0 = y_0, s_i = a·s_{i-1} + (1−a)·y_i. Display only: the
  /// raw points stay stored (and exported) and are drawn faintly behind the smoothed line.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  /// Logarithmic left y axis (the right axis stays linear).
  void setLogY(bool on);
  /// Whether the left y axis is logarithmic (read from the axis).
  bool logY() const;
  /// Metrics drawn against the right y axis (default: "lr", "learning rate").
  void setRightAxisSeries(const QStringList& series);
  void setYLabel(const QString& label);
  /// Rescales to all data after every update (on by default; a manual pan/zoom turns it off,
  /// a double-click or the context menu turns it back on).
  void setAutoRescale(bool on);
  bool autoRescale() const { return autoRescale_; }
  void rescale();

  QStringList runs() const { return runs_; }
  /// Series names (metrics) in order of first appearance.
  QStringList seriesNames() const { return metrics_; }
  /// Points stored / plotted for a series (0 when it does not exist).
  int pointCount(const QString& series, const QString& run = QString()) const;
  /// The values as displayed (smoothed) for a series.
  std::vector<double> displayedValues(const QString& series, const QString& run = QString()) const;
  std::pair<double, double> xRange() const;
  std::pair<double, double> yRange() const;
  std::pair<double, double> y2Range() const;
  /// Whether the right axis is shown (some series lives on it).
  bool hasRightAxis() const;
  /// The legend text of a series.
  QString legendName(const QString& series, const QString& run = QString()) const;

 Q_SIGNALS:
  void smoothingChanged(double weight);
  void logYChanged(bool on);

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;
  void hoverLeft() override;
  void addContextActions(QMenu& menu) override;

 private:
  struct Series;
  Series& seriesFor(const QString& run, const QString& metric);
  const Series* find(const QString& run, const QString& metric) const;
  void styleSeries(Series& s);
  void afterUpdate();
  void applyPendingRescale() const;
  bool onRightAxis(const QString& metric) const;

  std::map<std::pair<QString, QString>, std::unique_ptr<Series>> series_;  // (run, metric)
  QStringList runs_, metrics_, rightAxisSeries_;
  double smoothing_ = 0;
  bool autoRescale_ = true;
  mutable bool rescalePending_ = false;
  QSlider* smoothingSlider_ = nullptr;
  QLabel* smoothingLabel_ = nullptr;
  QCheckBox* logCheck_ = nullptr;
  struct Hover;
  std::unique_ptr<Hover> hover_;
};

}  // namespace tensorscope::viz
