#include "mask_overlay.h"

#include <algorithm>

namespace tensorscope::viz::detail {

MaskOverlay::MaskOverlay(QCustomPlot* plot, QCPAxis* xAxis, QCPAxis* yAxis, double strokeMinCell)
    : QCPAbstractItem(plot), xAxis_(xAxis), yAxis_(yAxis), strokeMinCell_(strokeMinCell) {
  setClipAxisRect(xAxis->axisRect());
  setClipToAxisRect(true);
  setSelectable(false);
}

double MaskOverlay::selectTest(const QPointF&, bool, QVariant*) const { return -1; }

void MaskOverlay::draw(QCPPainter* painter) {
  stroked_ = false;
  if (cells_.empty()) return;
  const auto cellRect = [this](int r, int c) {
    return QRectF(QPointF(xAxis_->coordToPixel(c - 0.5), yAxis_->coordToPixel(r - 0.5)),
                  QPointF(xAxis_->coordToPixel(c + 0.5), yAxis_->coordToPixel(r + 0.5)))
        .normalized();
  };
  // A grey wash pulls a frozen cell's colour towards grey: still readable, visibly "disabled",
  // and a frozen zero (white) differs from a trainable one.
  const QColor wash(128, 128, 128, 120);
  painter->setPen(Qt::NoPen);
  for (const auto& [r, c] : cells_) painter->fillRect(cellRect(r, c), wash);
  const QRectF first = cellRect(cells_.front().first, cells_.front().second);
  if (std::min(first.width(), first.height()) < strokeMinCell_) return;
  stroked_ = true;
  QColor stroke = colour_;
  stroke.setAlpha(200);
  painter->setBrush(Qt::NoBrush);
  painter->setPen(QPen(stroke, 1.0));
  for (const auto& [r, c] : cells_) {
    const QRectF rect = cellRect(r, c).adjusted(1, 1, -1, -1);
    painter->drawLine(rect.bottomLeft(), rect.topRight());
    painter->drawRect(rect);
  }
}

}  // namespace tensorscope::viz::detail
