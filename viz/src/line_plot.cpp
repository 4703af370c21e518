#include "viz/line_plot.h"

#include <QFontMetrics>
#include <QTextStream>
#include <algorithm>
#include <cmath>
#include <limits>

#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct LinePlot::Series {
  QString name;
  std::vector<double> x, y;
  QCPGraph* graph = nullptr;
};

struct LinePlot::Items {
  std::vector<QCPItemStraightLine*> lines;
  std::vector<QCPItemText*> labels;
  QCPItemTracer* tracer = nullptr;
};

LinePlot::LinePlot(QWidget* parent) : PlotWidget(parent), items_(std::make_unique<Items>()) {
  setExportName(QStringLiteral("line_plot"));
  emptyMessage_ = tr("Nothing to plot yet");
  auto* p = plot();
  detail::placeLegendAbove(p, 4, 26);
  p->addLayer(QStringLiteral("tsReferenceLabels"), p->layer(QStringLiteral("main")), QCustomPlot::limAbove);
  items_->tracer = detail::addHoverTracer(p, 10, QString::fromLatin1(kHoverLayer));
  // Label positions depend on the axis lengths: re-plan them whenever the plot is drawn.
  connect(p, &QCustomPlot::afterLayout, this, [this] { placeReferenceLabels(); });
  restyle();
  afterUpdate();
}

LinePlot::~LinePlot() = default;

LinePlot::Series* LinePlot::find(const QString& name) const {
  for (const auto& s : series_)
    if (s->name == name) return s.get();
  return nullptr;
}

void LinePlot::setSeries(const QString& name, const std::vector<double>& x, const std::vector<double>& y) {
  Series* s = find(name);
  if (!s) {
    series_.push_back(std::make_unique<Series>());
    s = series_.back().get();
    s->name = name;
    s->graph = plot()->addGraph();
    s->graph->setName(name);
    s->graph->setProperty("tsMetric", name);
  }
  const std::size_t n = std::min(x.size(), y.size());
  s->x.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
  s->y.assign(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(n));
  refill(*s);
  themeChanged();
  afterUpdate();
}

void LinePlot::removeSeries(const QString& name) {
  const auto it = std::find_if(series_.begin(), series_.end(), [&](const auto& s) { return s->name == name; });
  if (it == series_.end()) return;
  detail::detachTracer(items_->tracer);
  plot()->removeGraph((*it)->graph);
  series_.erase(it);
  themeChanged();
  afterUpdate();
}

void LinePlot::clear() {
  detail::detachTracer(items_->tracer);
  plot()->clearGraphs();
  series_.clear();
  clearReferenceLines();
}

double LinePlot::drawnY(double y) const {
  if (!std::isfinite(y)) return std::numeric_limits<double>::quiet_NaN();
  return logY() && y < logFloor_ ? logFloor_ : y;
}

void LinePlot::refill(Series& s) {
  QVector<double> keys, values;
  keys.reserve(static_cast<int>(s.x.size()));
  values.reserve(static_cast<int>(s.y.size()));
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    keys.append(s.x[i]);
    values.append(std::isfinite(s.x[i]) ? drawnY(s.y[i]) : std::numeric_limits<double>::quiet_NaN());
  }
  s.graph->setData(keys, values);  // sorts by x
}

void LinePlot::setLogY(bool on) {
  if (on == logY()) return;
  auto* axis = plot()->yAxis;
  detail::setLogScale(axis, on);
  axis->setNumberFormat(on ? QStringLiteral("eb") : QStringLiteral("gb"));
  axis->setNumberPrecision(on ? 0 : 6);
  for (auto& s : series_) refill(*s);
  afterUpdate();
}

bool LinePlot::logY() const { return plot()->yAxis->scaleType() == QCPAxis::stLogarithmic; }

void LinePlot::setLogFloor(double floor) {
  if (!(floor > 0) || !std::isfinite(floor)) return;
  logFloor_ = floor;
  for (auto& s : series_) refill(*s);
  afterUpdate();
}

void LinePlot::setAxisTitles(const QString& x, const QString& y) {
  plot()->xAxis->setLabel(x);
  plot()->yAxis->setLabel(y);
  requestReplot();
}

QString LinePlot::xTitle() const { return plot()->xAxis->label(); }
QString LinePlot::yTitle() const { return plot()->yAxis->label(); }

void LinePlot::setIntegerX(bool on) {
  if (on) {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot()->xAxis->setTicker(ticker);
    plot()->xAxis->setSubTicks(false);
  } else {
    plot()->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    plot()->xAxis->setSubTicks(true);
  }
  afterUpdate();
}

void LinePlot::addReferenceLine(double x, const QString& label) {
  if (!std::isfinite(x)) return;
  references_.push_back({x, label});
  auto* line = new QCPItemStraightLine(plot());
  line->point1->setCoords(x, 0);
  line->point2->setCoords(x, 1);
  auto* text = new QCPItemText(plot());
  text->setLayer(QStringLiteral("tsReferenceLabels"));  // above every line and curve
  text->position->setTypeX(QCPItemPosition::ptPlotCoords);
  text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  text->position->setCoords(x, 0.02);
  text->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  text->setPadding(QMargins(4, 1, 4, 1));
  text->setText(label);
  text->setVisible(!label.isEmpty());
  items_->lines.push_back(line);
  items_->labels.push_back(text);
  themeChanged();
  afterUpdate();
}

void LinePlot::clearReferenceLines() {
  for (auto* line : items_->lines) plot()->removeItem(line);
  for (auto* label : items_->labels) plot()->removeItem(label);
  items_->lines.clear();
  items_->labels.clear();
  references_.clear();
  afterUpdate();
}

void LinePlot::setEmptyMessage(const QString& message) {
  emptyMessage_ = message;
  afterUpdate();
}

QString LinePlot::emptyReason() const {
  for (const auto& s : series_)
    if (!s->x.empty()) return PlotWidget::emptyReason();
  return emptyMessage_;
}

void LinePlot::afterUpdate() {
  auto* p = plot();
  bool any = false;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  double ylo = std::numeric_limits<double>::infinity(), yhi = -ylo;
  for (const auto& s : series_)
    for (std::size_t i = 0; i < s->x.size(); ++i) {
      const double y = drawnY(s->y[i]);
      if (!std::isfinite(s->x[i]) || !std::isfinite(y)) continue;
      any = true;
      xlo = std::min(xlo, s->x[i]);
      xhi = std::max(xhi, s->x[i]);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  if (!any) {
    showMessage(emptyMessage_);
    p->legend->setVisible(false);
    return;
  }
  showPlot();
  int named = 0;
  for (const auto& s : series_) named += s->name.isEmpty() ? 0 : 1;
  p->legend->setVisible(named > 0);
  for (const auto& r : references_) {
    xlo = std::min(xlo, r.x);
    xhi = std::max(xhi, r.x);
  }
  const double xspan = xhi - xlo;
  const double xpad = plot()->xAxis->subTicks() ? std::max(0.04 * xspan, xspan > 0 ? 0.0 : 0.5) : 0.6;
  p->xAxis->setRange(xlo - xpad, xhi + xpad);
  // Room above the data for the reference labels.
  const bool room = !references_.empty();
  if (logY()) {
    const double lo = std::log10(std::max(ylo, logFloor_)), hi = std::log10(std::max(yhi, logFloor_));
    const double span = std::max(hi - lo, 1.0);
    p->yAxis->setRange(std::pow(10.0, lo - 0.06 * span), std::pow(10.0, hi + (room ? 0.16 : 0.06) * span));
  } else {
    const double span = yhi > ylo ? yhi - ylo : std::max(std::abs(yhi), 1.0);
    p->yAxis->setRange(ylo - 0.05 * span, yhi + (room ? 0.3 : 0.08) * span);
  }
  requestReplot();
}

void LinePlot::placeReferenceLabels() {
  if (items_->labels.empty()) return;
  auto* p = plot();
  const QRect rect = p->axisRect()->rect();
  if (rect.width() <= 0 || rect.height() <= 0) return;
  // Left to right, each label takes the first free place: level 0 (the top) before the levels
  // below it; on a level, right of its line before left of it. A place is free when it stays
  // inside the plot, overlaps no label already placed and crosses no other reference line; when
  // no place is (lines closer than their labels are wide), crossing a line is allowed.
  std::vector<std::size_t> order(items_->labels.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) { return references_[a].x < references_[b].x; });
  std::vector<double> linePx;
  for (const auto& r : references_) linePx.push_back(p->xAxis->coordToPixel(r.x));
  constexpr int kLevels = 4;
  std::vector<QRectF> placed;
  for (std::size_t i : order) {
    QCPItemText* label = items_->labels[i];
    if (!label->visible()) continue;
    const QFontMetrics fm(label->font());
    const QMargins pad = label->padding();
    const double w = fm.horizontalAdvance(label->text()) + pad.left() + pad.right();
    const double h = fm.height() + pad.top() + pad.bottom();
    const double px = linePx[i];
    auto candidate = [&](int level, bool left) {
      return QRectF(left ? px - w : px, rect.top() + 2.0 + level * (h + 2.0), w, h);
    };
    auto fits = [&](const QRectF& c, bool mayCross) {
      if (c.left() < rect.left() + 1 || c.right() > rect.right() - 1) return false;
      for (const QRectF& other : placed)
        if (c.adjusted(-2, -1, 2, 1).intersects(other)) return false;
      if (!mayCross)
        for (std::size_t j = 0; j < linePx.size(); ++j)
          if (j != i && linePx[j] > c.left() - 1 && linePx[j] < c.right() + 1) return false;
      return true;
    };
    int level = 0;
    bool left = false, found = false;
    for (bool mayCross : {false, true}) {
      for (int l = 0; l < kLevels && !found; ++l)
        for (bool side : {false, true})
          if (!found && fits(candidate(l, side), mayCross)) {
            level = l;
            left = side;
            found = true;
          }
      if (found) break;
    }
    if (!found) left = px + w > rect.right() - 1;  // nowhere free: at the top, inside the plot
    const QRectF c = candidate(level, left);
    placed.push_back(c);
    label->setPositionAlignment((left ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    label->position->setCoords(references_[i].x, (c.top() - rect.top()) / rect.height());
  }
}

QStringList LinePlot::seriesNames() const {
  QStringList names;
  for (const auto& s : series_) names.append(s->name);
  return names;
}

int LinePlot::pointCount(const QString& name) const {
  const Series* s = find(name);
  return s ? static_cast<int>(s->x.size()) : 0;
}

std::vector<double> LinePlot::xValues(const QString& name) const {
  const Series* s = find(name);
  return s ? s->x : std::vector<double>{};
}

std::vector<double> LinePlot::yValues(const QString& name) const {
  const Series* s = find(name);
  return s ? s->y : std::vector<double>{};
}

std::pair<double, double> LinePlot::xRange() const { return {plot()->xAxis->range().lower, plot()->xAxis->range().upper}; }
std::pair<double, double> LinePlot::yRange() const { return {plot()->yAxis->range().lower, plot()->yAxis->range().upper}; }

QPointF LinePlot::pointPixel(const QString& name, int index) const {
  const Series* s = find(name);
  if (!s || index < 0 || index >= static_cast<int>(s->x.size())) return {};
  return {plot()->xAxis->coordToPixel(s->x[static_cast<std::size_t>(index)]),
          plot()->yAxis->coordToPixel(drawnY(s->y[static_cast<std::size_t>(index)]))};
}

double LinePlot::referencePixelX(int index) const {
  if (index < 0 || index >= static_cast<int>(items_->lines.size())) return std::numeric_limits<double>::quiet_NaN();
  return items_->lines[static_cast<std::size_t>(index)]->point1->pixelPosition().x();
}

QRectF LinePlot::referenceLabelRect(int index) const {
  if (index < 0 || index >= static_cast<int>(items_->labels.size())) return {};
  const QCPItemText* label = items_->labels[static_cast<std::size_t>(index)];
  if (!label->visible()) return {};
  return QRectF(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition()).normalized();
}

QStringList LinePlot::legendTexts() const {
  QStringList texts;
  for (const auto& s : series_)
    if (!s->name.isEmpty()) texts.append(s->name);
  return texts;
}

void LinePlot::writeCsv(QTextStream& out) const {
  out << "series,x,y\n";
  for (const auto& s : series_)
    for (std::size_t i = 0; i < s->x.size(); ++i)
      out << csvField(s->name) << ',' << QString::number(s->x[i], 'g', 12) << ','
          << QString::number(s->y[i], 'g', 10) << '\n';
}

void LinePlot::themeChanged() {
  const auto& t = theme();
  auto* p = plot();
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setBrush(Qt::NoBrush);
  int i = 0;
  for (auto& s : series_) {
    const QColor c = detail::categoricalColour(i, t.dark);
    s->graph->setPen(QPen(c, 2.0));
    s->graph->setScatterStyle(QCPScatterStyle(detail::scatterShape(i), QPen(c, 1.6), QBrush(t.panel), 7.0));
    ++i;
  }
  for (auto* line : items_->lines) line->setPen(QPen(t.reference, 1.3, Qt::DashLine));
  for (auto* label : items_->labels) {
    label->setColor(t.text);
    label->setBrush(QBrush(t.panel));  // opaque: readable over the curves it may cross
  }
  items_->tracer->setBrush(QBrush(t.background));
}

void LinePlot::hoverAt(const QPointF& pos) {
  const detail::NearestPoint hit = detail::nearestGraphPoint(plot(), pos, 24.0);
  detail::moveTracerTo(items_->tracer, hit);
  if (hit.graph) {
    QString value = detail::formatValue(hit.value);
    // The true value, not the floor it is drawn at.
    for (const auto& s : series_)
      if (s->graph == hit.graph)
        for (std::size_t i = 0; i < s->x.size(); ++i)
          if (s->x[i] == hit.key) {
            value = logY() && s->y[i] < logFloor_ ? tr("%1 (≤ %2, drawn at the floor)")
                                                        .arg(detail::formatValue(s->y[i]), detail::formatValue(logFloor_))
                                                  : detail::formatValue(s->y[i]);
            break;
          }
    setHoverText(tr("%1\nx = %2 · y = %3").arg(hit.graph->name(), detail::formatValue(hit.key), value), pos.toPoint());
  } else {
    setHoverText(QString(), pos.toPoint());
  }
  replotHover();
}

void LinePlot::figureLaidOut() { placeReferenceLabels(); }

void LinePlot::hoverLeft() {
  items_->tracer->setVisible(false);
  setHoverText(QString(), QPoint());
  replotHover();
}

}  // namespace tensorscope::viz
