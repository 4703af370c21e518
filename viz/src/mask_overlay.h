#pragma once
// The "frozen" entries of a matrix drawn as a QCPColorMap whose cell (r, c) is centred at
// (x = c, y = r): a grey wash desaturates each one; cells at least `strokeMinCell` pixels wide also
// get a diagonal stroke and an outline (on smaller cells strokes would drown the colours). Only the
// masked cells are visited when drawing.

#include <vector>

#include "qcp.h"

namespace tensorscope::viz::detail {

class MaskOverlay : public QCPAbstractItem {
 public:
  MaskOverlay(QCustomPlot* plot, QCPAxis* xAxis, QCPAxis* yAxis, double strokeMinCell);

  /// Masked cells as (row, col) pairs.
  void setCells(std::vector<std::pair<int, int>> cells) { cells_ = std::move(cells); }
  void setColour(const QColor& colour) { colour_ = colour; }
  /// Whether the last draw stroked the cells.
  bool stroked() const { return stroked_; }

  double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;

 protected:
  void draw(QCPPainter* painter) override;

 private:
  QCPAxis* xAxis_;
  QCPAxis* yAxis_;
  std::vector<std::pair<int, int>> cells_;
  QColor colour_ = Qt::black;
  double strokeMinCell_;
  bool stroked_ = false;
};

}  // namespace tensorscope::viz::detail
