#pragma once
/// The duel figure of a sweep (docs/sweeps.md, Statistics; the Experiments dock): one row per
/// design compared with its baseline, the difference of the final metric (design − baseline) as a
/// point with its 95% confidence interval as a horizontal bar, a dashed line at zero (no
/// difference), and each design's verdict written above its bar. A design not tested yet has its
/// row and verdict but no bar. It draws the numbers it is given: the sweep report computes them.

#include <QRectF>
#include <QString>
#include <memory>
#include <vector>

#include "viz/plot_widget.h"

namespace tensorscope::viz {

class DifferencePlot : public PlotWidget {
  Q_OBJECT
 public:
  struct Row {
    QString design;
    bool tested = false;  ///< difference, low and high are defined
    double difference = 0, low = 0, high = 0;
    /// -1 / +1: a difference established (lower / higher than the baseline), 0: none established.
    int direction = 0;
    QString verdict;
  };

  explicit DifferencePlot(QWidget* parent = nullptr);
  ~DifferencePlot() override;

  /// Replaces the rows (drawn top to bottom in this order). `axisTitle` names the difference, e.g.
  /// "loss − loss of mhsa (95% CI)".
  void setComparisons(const std::vector<Row>& rows, const QString& axisTitle);
  /// Removes every row; the empty message shows `why` (default: no comparison yet).
  void clear(const QString& why = QString());
  const std::vector<Row>& rows() const { return rows_; }
  QString emptyReason() const override;
  QString axisTitle() const;

  /// Bars drawn (tested rows).
  int barCount() const;
  /// Where row `index`'s interval is drawn, in plotArea() pixels (after layout); empty when the
  /// row has no bar.
  QRectF barRect(int index) const;
  /// The pixel x of the zero line in plotArea() (after layout).
  double zeroPixelX() const;
  /// Where row `index`'s verdict text is drawn, in plotArea() pixels (after layout).
  QRectF verdictRect(int index) const;
  std::pair<double, double> xRange() const;

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;

 private:
  void rebuild();
  void wrapVerdicts();

  std::vector<Row> rows_;
  QString emptyText_;
  struct Items;
  std::unique_ptr<Items> items_;
};

}  // namespace tensorscope::viz
