#include "plot_helpers.h"

#include <QFontMetrics>
#include <algorithm>
#include <cmath>

namespace tensorscope::viz::detail {

NearestPoint nearestGraphPoint(QCustomPlot* plot, const QPointF& pos, double maxDistance) {
  NearestPoint best;
  for (int i = 0; i < plot->graphCount(); ++i) {
    QCPGraph* graph = plot->graph(i);
    if (!graph->visible() || graph->data()->isEmpty() || graph->property(kNoHoverProperty).toBool())
      continue;
    QCPAxis* keyAxis = graph->keyAxis();
    QCPAxis* valueAxis = graph->valueAxis();
    if (!keyAxis->axisRect()->rect().contains(pos.toPoint())) continue;
    const double key = keyAxis->pixelToCoord(pos.x());
    auto data = graph->data();
    auto it = data->findBegin(key, true);
    // Points within a few pixels horizontally can be the nearest; scan a small window.
    const double keySpan = std::abs(keyAxis->pixelToCoord(pos.x() + maxDistance) - key);
    for (auto j = it; j != data->constEnd() && j->key <= key + keySpan; ++j) {
      if (!std::isfinite(j->value)) continue;
      const double dx = keyAxis->coordToPixel(j->key) - pos.x();
      const double dy = valueAxis->coordToPixel(j->value) - pos.y();
      const double d = std::hypot(dx, dy);
      if (d < best.distance) best = {graph, j->key, j->value, d};
      if (std::abs(dx) > maxDistance && j->key > key) break;
    }
    // Backwards from the found point as well (findBegin returns the point left of key).
    for (auto j = it; j != data->constBegin();) {
      --j;
      const double dx = keyAxis->coordToPixel(j->key) - pos.x();
      if (std::abs(dx) > maxDistance) break;
      if (!std::isfinite(j->value)) continue;
      const double d = std::hypot(dx, valueAxis->coordToPixel(j->value) - pos.y());
      if (d < best.distance) best = {graph, j->key, j->value, d};
    }
  }
  if (best.distance > maxDistance) return NearestPoint{};
  return best;
}

namespace {
int thinningStep(int n, double pixelLength, double labelExtent) {
  if (n <= 0 || pixelLength <= 0) return 1;
  const double spacing = pixelLength / n;
  return std::max(1, static_cast<int>(std::ceil((labelExtent + 2.0) / spacing)));
}
}  // namespace

TickPlan planTicks(const QFont& font, const QStringList& labels, double pixelLength, bool horizontal) {
  const QFontMetrics metrics(font);
  const int n = static_cast<int>(labels.size());
  int widest = 0;
  for (const QString& label : labels) widest = std::max(widest, metrics.horizontalAdvance(label));
  TickPlan plan;
  if (horizontal) {
    plan.step = thinningStep(n, pixelLength, widest + 6);
    plan.extent = metrics.height();
    if (plan.step > 1 && widest > metrics.height() * 1.5) {
      // Long labels: rotated they need only a line height each.
      plan.rotated = true;
      plan.step = thinningStep(n, pixelLength, metrics.height());
      plan.extent = widest;
    }
  } else {
    plan.step = thinningStep(n, pixelLength, metrics.height());
    plan.extent = widest;
  }
  return plan;
}

void applyTicks(QCPAxis* axis, const QStringList& labels, const TickPlan& plan) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < labels.size(); i += plan.step) ticker->addTick(i, labels[i]);
  axis->setTicker(ticker);
  axis->setTickLabelRotation(plan.rotated ? -90 : 0);
  axis->setSubTicks(false);
}

int setTokenTicks(QCPAxis* axis, const QStringList& labels, double pixelLength) {
  const TickPlan plan =
      planTicks(axis->tickLabelFont(), labels, pixelLength, axis->orientation() == Qt::Horizontal);
  applyTicks(axis, labels, plan);
  return plan.step;
}

QString wrapText(const QString& text, const QFont& font, double width) {
  const QFontMetricsF metrics(font);
  QStringList lines;
  for (const QString& paragraph : text.split(QLatin1Char('\n'))) {
    QString line;
    for (const QString& word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
      const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
      if (!line.isEmpty() && metrics.horizontalAdvance(longer) > width) {
        lines << line;
        line = word;
      } else {
        line = longer;
      }
    }
    lines << line;
  }
  return lines.join(QLatin1Char('\n'));
}

QStringList indexLabels(int n) {
  QStringList labels;
  labels.reserve(n);
  for (int i = 0; i < n; ++i) labels.append(QString::number(i));
  return labels;
}

QVector<double> LogTicker::createTickVector(double, const QCPRange& range) {
  QVector<double> ticks;
  if (range.lower <= 0 || range.upper <= range.lower) return ticks;
  const int lo = static_cast<int>(std::floor(std::log10(range.lower)));
  const int hi = static_cast<int>(std::ceil(std::log10(range.upper)));
  const double span = std::log10(range.upper / range.lower);
  const int every = std::max(1, (hi - lo) / 8);
  subTicks_ = span > 2.5 && every == 1 ? 8 : 0;
  for (int e = lo; e <= hi; ++e) {
    const double power = std::pow(10.0, e);
    if (span <= 2.5) {
      for (double m : {1.0, 2.0, 5.0}) ticks.append(m * power);
    } else if (e % every == 0) {
      ticks.append(power);
    }
  }
  return ticks;
}

int LogTicker::getSubTickCount(double) { return subTicks_; }

void placeLegend(QCustomPlot* plot, int row, int column, Qt::Orientation spacerDirection) {
  plot->axisRect()->insetLayout()->take(plot->legend);
  auto* holder = new QCPLayoutGrid;
  plot->plotLayout()->addElement(row, column, holder);
  holder->setRowSpacing(0);
  holder->setColumnSpacing(0);
  holder->setAutoMargins(QCP::msNone);
  holder->setMargins(spacerDirection == Qt::Horizontal ? QMargins(6, 4, 6, 0) : QMargins(4, 10, 10, 0));
  holder->addElement(0, 0, plot->legend);
  auto* spacer = new QCPLayoutElement(plot);
  if (spacerDirection == Qt::Horizontal) {
    holder->addElement(0, 1, spacer);
    holder->setColumnStretchFactors({0.001, 1.0});
  } else {
    holder->addElement(1, 0, spacer);
    holder->setRowStretchFactors({0.001, 1.0});
  }
}

void placeLegendAbove(QCustomPlot* plot, int wrap, int iconWidth) {
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot->legend->setWrap(wrap);
  plot->legend->setIconSize(iconWidth, 10);
  plot->plotLayout()->insertRow(0);
  placeLegend(plot, 0, 0, Qt::Horizontal);
  plot->plotLayout()->setRowStretchFactor(0, 0.001);
  plot->plotLayout()->setRowSpacing(0);
  plot->legend->setVisible(false);
}

QCPItemTracer* addHoverTracer(QCustomPlot* plot, double size, const QString& layer) {
  auto* tracer = new QCPItemTracer(plot);
  tracer->setStyle(QCPItemTracer::tsCircle);
  tracer->setSize(size);
  tracer->setVisible(false);
  tracer->setLayer(layer);
  return tracer;
}

void moveTracerTo(QCPItemTracer* tracer, const NearestPoint& hit) {
  tracer->setVisible(hit.graph != nullptr);
  if (!hit.graph) return;
  tracer->setGraph(hit.graph);
  tracer->setGraphKey(hit.key);
  tracer->setPen(QPen(hit.graph->pen().color(), 2));
}

void detachTracer(QCPItemTracer* tracer) {
  tracer->setGraph(nullptr);
  tracer->setVisible(false);
}

void setLogScale(QCPAxis* axis, bool on) {
  axis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (on)
    axis->setTicker(QSharedPointer<LogTicker>::create());
  else
    axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
}

QString formatValue(double value) {
  if (!std::isfinite(value)) return QString::number(value);
  return QString::number(value, 'g', 4);
}

}  // namespace tensorscope::viz::detail
