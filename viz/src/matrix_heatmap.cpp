#include "viz/matrix_heatmap.h"

#include <QLabel>
#include <QStackedLayout>
#include <algorithm>
#include <cmath>

#include "qcp.h"

namespace tensorscope::viz {

struct MatrixHeatmap::Plot {
  QStackedLayout* stack = nullptr;
  QLabel* message = nullptr;
  QCustomPlot* plot = nullptr;
  QCPColorMap* map = nullptr;
  QCPColorScale* scale = nullptr;
  QCPTextElement* title = nullptr;
};

namespace {
QCPColorGradient divergingGradient() {
  // Blue - white - red, zero in the middle (matplotlib's RdBu_r in spirit).
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(33, 102, 172));
  g.setColorStopAt(0.25, QColor(146, 197, 222));
  g.setColorStopAt(0.5, QColor(247, 247, 247));
  g.setColorStopAt(0.75, QColor(244, 165, 130));
  g.setColorStopAt(1.0, QColor(178, 24, 43));
  return g;
}
}  // namespace

MatrixHeatmap::MatrixHeatmap(QWidget* parent) : QWidget(parent), plot_(std::make_unique<Plot>()) {
  plot_->stack = new QStackedLayout(this);
  plot_->stack->setContentsMargins(0, 0, 0, 0);
  plot_->plot = new QCustomPlot(this);
  plot_->stack->addWidget(plot_->plot);
  plot_->message = new QLabel(this);
  plot_->message->setAlignment(Qt::AlignCenter);
  plot_->message->setWordWrap(true);
  plot_->message->setStyleSheet("color: palette(mid); font-style: italic; padding: 12px;");
  plot_->stack->addWidget(plot_->message);
  auto* p = plot_->plot;
  p->plotLayout()->insertRow(0);
  plot_->title = new QCPTextElement(p, QString(), QFont(font().family(), 10, QFont::Bold));
  p->plotLayout()->addElement(0, 0, plot_->title);
  plot_->map = new QCPColorMap(p->xAxis, p->yAxis);
  plot_->scale = new QCPColorScale(p);
  p->plotLayout()->addElement(1, 1, plot_->scale);
  plot_->map->setColorScale(plot_->scale);
  plot_->map->setGradient(divergingGradient());
  plot_->map->setInterpolate(false);
  p->yAxis->setRangeReversed(true);  // row 0 at the top, as a matrix is read
  p->xAxis->setLabel("s (key channel)");
  p->yAxis->setLabel("r (query channel)");
  auto* margins = new QCPMarginGroup(p);
  p->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  plot_->scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
}

MatrixHeatmap::~MatrixHeatmap() = default;

void MatrixHeatmap::setMatrix(const std::vector<double>& values, int rows, int cols, const QString& title) {
  rows_ = rows;
  cols_ = cols;
  auto* map = plot_->map;
  plot_->stack->setCurrentWidget(plot_->plot);
  map->data()->setSize(cols, rows);
  map->data()->setRange(QCPRange(0, cols - 1), QCPRange(0, rows - 1));
  double m = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double v = values[static_cast<size_t>(r) * cols + c];
      map->data()->setCell(c, r, v);
      m = std::max(m, std::abs(v));
    }
  range_ = m > 0 ? m : 1.0;
  map->setDataRange(QCPRange(-range_, range_));
  plot_->plot->xAxis->setRange(-0.5, cols - 0.5);
  plot_->plot->yAxis->setRange(-0.5, rows - 0.5);
  plot_->title->setText(title);
  plot_->plot->replot(QCustomPlot::rpQueuedReplot);
}

void MatrixHeatmap::clear(const QString& message) {
  rows_ = cols_ = 0;
  plot_->message->setText(message);
  plot_->stack->setCurrentWidget(plot_->message);
}

}  // namespace tensorscope::viz
