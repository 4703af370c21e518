#include "mask_overlay.h"

namespace tensorscope::viz::detail {

MaskOverlay::MaskOverlay(QCustomPlot* plot, QCPAxis* xAxis, QCPAxis* yAxis)
    : QCPAbstractItem(plot), xAxis_(xAxis), yAxis_(yAxis) {
  setClipAxisRect(xAxis->axisRect());
  setClipToAxisRect(true);
  setSelectable(false);
}

double MaskOverlay::selectTest(const QPointF&, bool, QVariant*) const { return -1; }

void MaskOverlay::draw(QCPPainter* painter) {
  if (cells_.empty()) return;
  const QBrush hatch(colour_, Qt::BDiagPattern);
  QColor edge = colour_;
  edge.setAlpha(255);
  // A light wash under the hatching keeps it visible on the dark ends of the colour map and reads
  // as "disabled".
  const QColor wash(255, 255, 255, 110);
  painter->setPen(Qt::NoPen);
  for (const auto& [r, c] : cells_) {
    const QRectF rect = QRectF(QPointF(xAxis_->coordToPixel(c - 0.5), yAxis_->coordToPixel(r - 0.5)),
                               QPointF(xAxis_->coordToPixel(c + 0.5), yAxis_->coordToPixel(r + 0.5)))
                            .normalized();
    painter->fillRect(rect, wash);
    painter->fillRect(rect, hatch);
  }
  painter->setBrush(Qt::NoBrush);
  painter->setPen(QPen(edge, 1.5));
  for (const auto& [r, c] : cells_) {
    const QRectF rect = QRectF(QPointF(xAxis_->coordToPixel(c - 0.5), yAxis_->coordToPixel(r - 0.5)),
                               QPointF(xAxis_->coordToPixel(c + 0.5), yAxis_->coordToPixel(r + 0.5)))
                            .normalized();
    painter->drawRect(rect.adjusted(1, 1, -1, -1));
  }
}

}  // namespace tensorscope::viz::detail
