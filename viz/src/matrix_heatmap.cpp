#include "viz/matrix_heatmap.h"

#include <QTextStream>
#include <algorithm>
#include <cmath>
#include <limits>

#include "mask_overlay.h"
#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct MatrixHeatmap::Parts {
  QCPColorMap* map = nullptr;
  QCPColorScale* scale = nullptr;
  QCPTextElement* title = nullptr;
  QString fullTitle;  // as given; the element shows it wrapped to the plot's width
  detail::MaskOverlay* overlay = nullptr;
  QCPItemRect* rubber = nullptr;  // the rectangle of a Shift+drag, while it is dragged
  int xStep = 0, yStep = 0;  // tick thinning in use, to notice when a resize changes it
};

MatrixHeatmap::MatrixHeatmap(QWidget* parent) : PlotWidget(parent), parts_(std::make_unique<Parts>()) {
  setExportName(QStringLiteral("matrix"));
  auto* p = plot();
  p->plotLayout()->insertRow(0);
  parts_->title = new QCPTextElement(p, QString(), QFont(font().family(), 10, QFont::Bold));
  p->plotLayout()->addElement(0, 0, parts_->title);
  // The title asks for no width of its own (a set minimum replaces the text's width in the layout):
  // it is wrapped to the width the plot gets instead.
  parts_->title->setMinimumSize(QSize(1, 0));
  parts_->map = new QCPColorMap(p->xAxis, p->yAxis);
  parts_->scale = new QCPColorScale(p);
  parts_->scale->setBarWidth(12);
  p->plotLayout()->addElement(1, 1, parts_->scale);
  parts_->map->setColorScale(parts_->scale);
  parts_->map->setGradient(detail::divergingGradient());
  parts_->map->setInterpolate(false);
  p->yAxis->setRangeReversed(true);  // row 0 at the top, as a matrix is read
  p->xAxis->setLabel(QStringLiteral("s (channel Q and K share)"));
  p->yAxis->setLabel(QStringLiteral("r (map Ω_r, channel of V)"));
  auto* margins = new QCPMarginGroup(p);
  p->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  parts_->scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  parts_->overlay = new detail::MaskOverlay(p, p->xAxis, p->yAxis, kFrozenStrokeMinCell);

  connect(p, &QCustomPlot::afterLayout, this, &MatrixHeatmap::updateTicks);
  parts_->rubber = new QCPItemRect(p);
  parts_->rubber->setBrush(Qt::NoBrush);
  parts_->rubber->setVisible(false);
  connect(p, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
    const Cell cell = cellAt(event->position());
    dragging_ = cell.valid();
    dragCell_ = cell;
    // Shift+drag chooses a rectangle, reported once on release (one edit for all its cells).
    rectangle_ = cell.valid() && (event->modifiers() & Qt::ShiftModifier);
    rectStart_ = cell;
    if (rectangle_) showRubberBand(cell);
    else if (cell.valid()) Q_EMIT cellClicked(cell.row, cell.col, event->buttons());
  });
  connect(p, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
    if (!dragging_ || event->buttons() == Qt::NoButton) return;
    const Cell cell = cellAt(event->position());
    if (!cell.valid() || cell == dragCell_) return;
    if (rectangle_) {
      dragCell_ = cell;
      showRubberBand(cell);
      return;
    }
    // A fast stroke jumps over cells between two mouse events: every cell on the line between the
    // last cell and this one is reported, in order (Bresenham), so a stroke leaves no gaps.
    for (const Cell& c : lineCells(dragCell_, cell)) Q_EMIT cellDragged(c.row, c.col);
    dragCell_ = cell;
  });
  connect(p, &QCustomPlot::mouseRelease, this, [this] {
    if (rectangle_ && rectStart_.valid() && dragCell_.valid()) {
      parts_->rubber->setVisible(false);
      plot()->replot(QCustomPlot::rpQueuedReplot);
      Q_EMIT rectangleChosen(std::min(rectStart_.row, dragCell_.row), std::min(rectStart_.col, dragCell_.col),
                             std::max(rectStart_.row, dragCell_.row), std::max(rectStart_.col, dragCell_.col));
    }
    rectangle_ = false;
    dragging_ = false;
  });
  restyle();
}

MatrixHeatmap::~MatrixHeatmap() = default;

void MatrixHeatmap::setMatrix(const MatrixData& matrix, const QString& title) {
  setMatrix(std::vector<double>(matrix.values.begin(), matrix.values.end()), matrix.rows, matrix.cols, title);
}

void MatrixHeatmap::setMatrix(const std::vector<double>& values, int rows, int cols, const QString& title) {
  if (rows <= 0 || cols <= 0 || values.size() < static_cast<std::size_t>(rows) * cols) {
    clear(tr("No matrix to show"));
    return;
  }
  if (rows != rows_ || cols != cols_) mask_.clear();
  rows_ = rows;
  cols_ = cols;
  values_.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rows) * cols);
  showPlot();
  auto* data = parts_->map->data();
  data->setSize(cols, rows);
  // A colour map spans its first to its last cell centre plus half a cell each side; with one cell
  // along a side that span is empty (a 1×1 factor drew empty axes): give it the cell's extent.
  data->setRange(cols == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, cols - 1),
                 rows == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, rows - 1));
  // Non-finite entries (a softmax's masked −∞ logits) are drawn transparent; hovering still reads them.
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double v = values_[static_cast<std::size_t>(r) * cols + c];
      data->setCell(c, r, std::isfinite(v) ? v : std::numeric_limits<double>::quiet_NaN());
    }
  applyColourRange();
  plot()->xAxis->setRange(-0.5, cols - 0.5);
  plot()->yAxis->setRange(-0.5, rows - 0.5);
  parts_->fullTitle = title;
  wrapTitle();
  setMask(mask_);
}

void MatrixHeatmap::fontScaleChanged() {
  parts_->title->setText(parts_->fullTitle);  // wrapped again at the new size
  wrapTitle();
}

QString MatrixHeatmap::title() const { return parts_->fullTitle; }
QString MatrixHeatmap::shownTitle() const { return parts_->title->text(); }

void MatrixHeatmap::wrapTitle() {
  const int width = plot()->width() - 12;
  const QString wrapped = width > 40 ? detail::wrapText(parts_->fullTitle, parts_->title->font(), width) : parts_->fullTitle;
  if (wrapped != parts_->title->text()) {
    parts_->title->setText(wrapped);
    requestReplot();
  }
}

bool MatrixHeatmap::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot() && event->type() == QEvent::Resize) wrapTitle();
  return PlotWidget::eventFilter(watched, event);
}

void MatrixHeatmap::clear(const QString& message) {
  rows_ = cols_ = 0;
  values_.clear();
  mask_.clear();
  parts_->overlay->setCells({});
  showMessage(message);
}

void MatrixHeatmap::applyColourRange() {
  if (scale_ == ColourScale::Diverging) {
    double m = 0;
    for (double v : values_)
      if (std::isfinite(v)) m = std::max(m, std::abs(v));
    range_ = m > 0 ? m : 1.0;
    parts_->map->setDataRange(QCPRange(-range_, range_));
  } else {
    range_ = upper_;
    parts_->map->setDataRange(QCPRange(lower_, upper_));
  }
  requestReplot();
}

void MatrixHeatmap::setColourScale(ColourScale scale, double lower, double upper) {
  scale_ = scale;
  lower_ = lower;
  upper_ = upper > lower ? upper : lower + 1.0;
  parts_->map->setGradient(scale == ColourScale::Diverging ? detail::divergingGradient(isDarkTheme())
                                                          : detail::sequentialGradient());
  applyColourRange();
}

void MatrixHeatmap::setAxisTitles(const QString& x, const QString& y) {
  plot()->xAxis->setLabel(x);
  plot()->yAxis->setLabel(y);
  requestReplot();
}

void MatrixHeatmap::setLabels(const QStringList& rowLabels, const QStringList& colLabels) {
  rowLabels_ = rowLabels;
  colLabels_ = colLabels;
  parts_->xStep = parts_->yStep = 0;
  updateTicks();
  requestReplot();
}

void MatrixHeatmap::setMask(const std::vector<unsigned char>& mask) {
  std::vector<std::pair<int, int>> cells;
  if (mask.size() == static_cast<std::size_t>(rows_) * cols_ && rows_ > 0) {
    mask_ = mask;
    for (int r = 0; r < rows_; ++r)
      for (int c = 0; c < cols_; ++c)
        if (mask_[static_cast<std::size_t>(r) * cols_ + c]) cells.emplace_back(r, c);
  } else {
    mask_.clear();
  }
  parts_->overlay->setCells(std::move(cells));
  requestReplot();
}

void MatrixHeatmap::updateTicks() {
  if (rows_ == 0) return;
  auto* rect = plot()->axisRect();
  const bool rowText = rowLabels_.size() == rows_;
  const bool colText = colLabels_.size() == cols_;
  const int xStep =
      detail::setTokenTicks(plot()->xAxis, colText ? colLabels_ : detail::indexLabels(cols_), rect->width());
  const int yStep =
      detail::setTokenTicks(plot()->yAxis, rowText ? rowLabels_ : detail::indexLabels(rows_), rect->height());
  if (xStep != parts_->xStep || yStep != parts_->yStep) {
    // The labels were laid out with the previous thinning; lay out once more with the new one.
    parts_->xStep = xStep;
    parts_->yStep = yStep;
    requestReplot();
  }
}

int MatrixHeatmap::labelStep(Qt::Orientation orientation) const {
  return orientation == Qt::Horizontal ? parts_->xStep : parts_->yStep;
}

std::vector<MatrixHeatmap::Cell> MatrixHeatmap::lineCells(const Cell& from, const Cell& to) {
  std::vector<Cell> cells;
  const int dc = std::abs(to.col - from.col), dr = -std::abs(to.row - from.row);
  const int sc = from.col < to.col ? 1 : -1, sr = from.row < to.row ? 1 : -1;
  int err = dc + dr, r = from.row, c = from.col;
  while (!(r == to.row && c == to.col)) {
    const int e2 = 2 * err;
    if (e2 >= dr) err += dr, c += sc;
    if (e2 <= dc) err += dc, r += sr;
    cells.push_back({r, c});
  }
  return cells;
}

void MatrixHeatmap::showRubberBand(const Cell& to) {
  parts_->rubber->topLeft->setCoords(std::min(rectStart_.col, to.col) - 0.5, std::min(rectStart_.row, to.row) - 0.5);
  parts_->rubber->bottomRight->setCoords(std::max(rectStart_.col, to.col) + 0.5, std::max(rectStart_.row, to.row) + 0.5);
  parts_->rubber->setPen(QPen(palette().color(QPalette::WindowText), 1.5, Qt::DashLine));  // either theme
  parts_->rubber->setVisible(true);
  plot()->replot(QCustomPlot::rpQueuedReplot);
}

MatrixHeatmap::Cell MatrixHeatmap::cellAt(const QPointF& pos) const {
  if (rows_ == 0 || isShowingMessage() || !plot()->axisRect()->rect().contains(pos.toPoint())) return {};
  const int c = static_cast<int>(std::floor(plot()->xAxis->pixelToCoord(pos.x()) + 0.5));
  const int r = static_cast<int>(std::floor(plot()->yAxis->pixelToCoord(pos.y()) + 0.5));
  if (r < 0 || r >= rows_ || c < 0 || c >= cols_) return {};
  return {r, c};
}

QPointF MatrixHeatmap::cellCentre(int row, int col) const {
  return {plot()->xAxis->coordToPixel(col), plot()->yAxis->coordToPixel(row)};
}

QString MatrixHeatmap::cellText(int row, int col) const {
  QString text = QStringLiteral("[%1, %2] = %3").arg(row).arg(col).arg(detail::formatValue(value(row, col)));
  if (rowLabels_.size() == rows_ && colLabels_.size() == cols_)
    text += QStringLiteral("\n%1 → %2").arg(rowLabels_[row], colLabels_[col]);
  if (!mask_.empty() && mask_[static_cast<std::size_t>(row) * cols_ + col]) text += tr("\nfrozen");
  return text;
}

void MatrixHeatmap::hoverAt(const QPointF& pos) {
  const Cell cell = cellAt(pos);
  setHoverText(cell.valid() ? cellText(cell.row, cell.col) : QString(), pos.toPoint());
}

void MatrixHeatmap::writeCsv(QTextStream& out) const {
  const bool labels = rowLabels_.size() == rows_ && colLabels_.size() == cols_;
  out << (labels ? "row,col,row_label,col_label,value,frozen\n" : "row,col,value,frozen\n");
  for (int r = 0; r < rows_; ++r)
    for (int c = 0; c < cols_; ++c) {
      out << r << ',' << c << ',';
      if (labels) out << csvField(rowLabels_[r]) << ',' << csvField(colLabels_[c]) << ',';
      const std::size_t i = static_cast<std::size_t>(r) * cols_ + c;
      out << QString::number(values_[i], 'g', 9) << ',' << (!mask_.empty() && mask_[i] ? 1 : 0) << '\n';
    }
}

QString MatrixHeatmap::emptyReason() const {
  if (rows_ == 0) return isShowingMessage() ? PlotWidget::emptyReason() : tr("No matrix to show");
  return PlotWidget::emptyReason();
}

void MatrixHeatmap::figureLaidOut() {
  parts_->xStep = parts_->yStep = 0;
  updateTicks();
}

bool MatrixHeatmap::frozenCellsStroked() const { return parts_->overlay->stroked(); }

void MatrixHeatmap::themeChanged() {
  parts_->overlay->setColour(theme().hatch);
  if (scale_ == ColourScale::Diverging) parts_->map->setGradient(detail::divergingGradient(isDarkTheme()));
  plot()->xAxis->grid()->setVisible(false);
  plot()->yAxis->grid()->setVisible(false);
}

}  // namespace tensorscope::viz
