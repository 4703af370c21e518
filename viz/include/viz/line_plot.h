#pragma once
/// A small plot of named series of (x, y) points joined by lines with a marker at every point:
/// colour and marker shape follow the series' order, a compact legend sits above the plot.
/// Options: a logarithmic y axis, axis titles, integer x ticks, and labelled vertical reference
/// lines (e.g. "N = 12" and "N − 1" on the bottleneck lab's error-against-d_p curve).
///
/// On the log axis a value <= 0 (an exact fit: error 0) cannot be drawn: it is drawn at the floor
/// (setLogFloor, default 1e-16, "≤ floor" in the hover read-out); the CSV keeps the true value.

#include <QRectF>
#include <QString>
#include <QStringList>
#include <memory>
#include <utility>
#include <vector>

#include "viz/plot_widget.h"

namespace tensorscope::viz {

class LinePlot : public PlotWidget {
  Q_OBJECT
 public:
  struct ReferenceLine {
    double x = 0;
    QString label;
  };

  explicit LinePlot(QWidget* parent = nullptr);
  ~LinePlot() override;

  /// Adds the series `name` or replaces its points (x and y of equal length; extra entries of the
  /// longer one are ignored). Non-finite points leave a gap. Series keep their first-set order.
  void setSeries(const QString& name, const std::vector<double>& x, const std::vector<double>& y);
  void removeSeries(const QString& name);
  /// Removes every series and reference line; the empty message shows.
  void clear();

  /// Logarithmic y axis (powers of ten, 1-2-5 within short ranges).
  void setLogY(bool on);
  bool logY() const;
  /// Where values <= 0 (or below it) are drawn on the log axis. > 0.
  void setLogFloor(double floor);
  double logFloor() const { return logFloor_; }
  void setAxisTitles(const QString& x, const QString& y);
  QString xTitle() const;
  QString yTitle() const;
  /// Ticks at integers only (e.g. head sizes); off by default.
  void setIntegerX(bool on);

  /// A dashed vertical line at `x` labelled at the top of the plot (labels of neighbouring lines
  /// are staggered so they do not overlap).
  void addReferenceLine(double x, const QString& label);
  void clearReferenceLines();
  const std::vector<ReferenceLine>& referenceLines() const { return references_; }

  /// The message shown while there is no series with a point (default "Nothing to plot yet").
  void setEmptyMessage(const QString& message);
  QString emptyReason() const override;

  QStringList seriesNames() const;
  int pointCount(const QString& name) const;
  std::vector<double> xValues(const QString& name) const;
  std::vector<double> yValues(const QString& name) const;
  std::pair<double, double> xRange() const;
  std::pair<double, double> yRange() const;
  /// Pixel position in plotArea() of point `index` of series `name` as drawn (after layout).
  QPointF pointPixel(const QString& name, int index) const;
  /// Pixel x in plotArea() of reference line `index` (after layout); NaN when there is none.
  double referencePixelX(int index) const;
  /// Where the label of reference line `index` is drawn, in plotArea() pixels (after layout).
  QRectF referenceLabelRect(int index) const;
  /// The legend's entry texts.
  QStringList legendTexts() const;

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;
  void hoverLeft() override;
  /// A figure re-plans the reference labels for its own axis lengths.
  void figureLaidOut() override;

 private:
  struct Series;
  struct Items;
  Series* find(const QString& name) const;
  double drawnY(double y) const;
  void refill(Series& s);
  void afterUpdate();
  void placeReferenceLabels();

  std::vector<std::unique_ptr<Series>> series_;
  std::vector<ReferenceLine> references_;
  QString emptyMessage_;
  double logFloor_ = 1e-16;
  std::unique_ptr<Items> items_;
};

}  // namespace tensorscope::viz
