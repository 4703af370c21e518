#include "viz/curves_plot.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSignalBlocker>
#include <QSlider>
#include <QTextStream>
#include <algorithm>
#include <cmath>

#include "curve_series.h"
#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

namespace {
QString runLabel(const QString& run) { return run.isEmpty() ? QStringLiteral("current run") : run; }

QString stepText(double step) {
  return step == std::floor(step) && std::abs(step) < 1e15 ? QString::number(static_cast<qint64>(step))
                                                          : detail::formatValue(step);
}
}  // namespace

struct CurvesPlot::Hover {
  QCPItemTracer* tracer = nullptr;
};

CurvesPlot::CurvesPlot(QWidget* parent) : PlotWidget(parent), hover_(std::make_unique<Hover>()) {
  setExportName(QStringLiteral("curves"));
  rightAxisSeries_ = {QStringLiteral("lr"), QStringLiteral("learning rate")};
  auto* bar = controlBar();
  bar->addWidget(new QLabel(tr("Smoothing"), this));
  smoothingSlider_ = new QSlider(Qt::Horizontal, this);
  smoothingSlider_->setRange(0, 99);
  smoothingSlider_->setFixedWidth(140);
  smoothingSlider_->setToolTip(tr("Exponential moving average of the displayed curves (display only)"));
  bar->addWidget(smoothingSlider_);
  smoothingLabel_ = new QLabel(QStringLiteral("0.00"), this);
  smoothingLabel_->setMinimumWidth(smoothingLabel_->fontMetrics().horizontalAdvance(QStringLiteral("0.00 ")));
  bar->addWidget(smoothingLabel_);
  logCheck_ = new QCheckBox(tr("Log y"), this);
  bar->addWidget(logCheck_);
  bar->addStretch(1);
  connect(smoothingSlider_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  connect(logCheck_, &QCheckBox::toggled, this, &CurvesPlot::setLogY);

  auto* p = plot();
  p->xAxis->setLabel(tr("step"));
  p->yAxis->setLabel(tr("value"));
  p->yAxis2->setLabel(tr("learning rate"));
  p->yAxis2->setNumberFormat(QStringLiteral("gb"));
  p->yAxis2->setNumberPrecision(2);
  p->xAxis2->setVisible(false);
  p->legend->setVisible(false);
  p->legend->setFillOrder(QCPLegend::foColumnsFirst);
  p->legend->setWrap(4);
  p->legend->setMargins(QMargins(4, 2, 4, 2));
  p->legend->setIconSize(26, 10);
  p->plotLayout()->insertRow(0);
  detail::placeLegend(p, 0, 0, Qt::Horizontal);
  p->plotLayout()->setRowStretchFactor(0, 0.001);
  p->plotLayout()->setRowSpacing(0);
  p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  p->axisRect()->setRangeDragAxes({p->xAxis}, {p->yAxis, p->yAxis2});
  p->axisRect()->setRangeZoomAxes({p->xAxis}, {p->yAxis, p->yAxis2});
  p->setNoAntialiasingOnDrag(true);
  connect(p, &QCustomPlot::mouseWheel, this, [this] { autoRescale_ = false; });
  connect(p, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton) autoRescale_ = false;
  });
  connect(p, &QCustomPlot::mouseDoubleClick, this, [this] { setAutoRescale(true); });
  connect(p, &QCustomPlot::beforeReplot, this, [this] { applyPendingRescale(); });

  hover_->tracer = new QCPItemTracer(p);
  hover_->tracer->setStyle(QCPItemTracer::tsCircle);
  hover_->tracer->setSize(9);
  hover_->tracer->setInterpolating(false);
  hover_->tracer->setVisible(false);
  hover_->tracer->setSelectable(false);
  hover_->tracer->setLayer(QString::fromLatin1(kHoverLayer));
  afterUpdate();
  restyle();
}

CurvesPlot::~CurvesPlot() = default;

bool CurvesPlot::onRightAxis(const QString& metric) const {
  return rightAxisSeries_.contains(metric, Qt::CaseInsensitive);
}

CurvesPlot::Series& CurvesPlot::seriesFor(const QString& run, const QString& metric) {
  auto& slot = series_[{run, metric}];
  if (slot) return *slot;
  const bool newRun = !runs_.contains(run);
  if (newRun) runs_.append(run);
  if (!metrics_.contains(metric)) metrics_.append(metric);
  slot = std::make_unique<Series>();
  Series& s = *slot;
  s.run = run;
  s.metric = metric;
  s.right = onRightAxis(metric);
  auto* p = plot();
  QCPAxis* valueAxis = s.right ? p->yAxis2 : p->yAxis;
  s.raw = p->addGraph(p->xAxis, valueAxis);
  s.raw->removeFromLegend();
  s.raw->setProperty(detail::kNoHoverProperty, true);
  s.line = p->addGraph(p->xAxis, valueAxis);
  // Colours depend on the number of runs, so a new run restyles everything.
  if (newRun && runs_.size() == 2)
    for (auto& [key, other] : series_) styleSeries(*other);
  else
    styleSeries(s);
  return s;
}

const CurvesPlot::Series* CurvesPlot::find(const QString& run, const QString& metric) const {
  const auto it = series_.find({run, metric});
  return it == series_.end() ? nullptr : it->second.get();
}

void CurvesPlot::styleSeries(Series& s) {
  const bool dark = isDarkTheme();
  const bool multiRun = runs_.size() > 1;
  const int metricIndex = static_cast<int>(metrics_.indexOf(s.metric));
  const QColor colour = detail::categoricalColour(multiRun ? static_cast<int>(runs_.indexOf(s.run)) : metricIndex, dark);
  const Qt::PenStyle style = multiRun ? detail::lineStyle(metricIndex) : (s.right ? Qt::DashLine : Qt::SolidLine);
  QPen pen(colour, 1.8, style);
  s.line->setPen(pen);
  s.line->setName(multiRun ? runLabel(s.run) + QStringLiteral(" · ") + s.metric : s.metric);
  QColor faint = colour;
  faint.setAlpha(dark ? 70 : 60);
  s.raw->setPen(QPen(faint, 1.0, style));
  s.raw->setVisible(s.smoothed(smoothing_));
}

void CurvesPlot::appendPoint(const QString& series, double step, double value, const QString& run) {
  seriesFor(run, series).append(step, value, smoothing_);
  afterUpdate();
}

void CurvesPlot::appendPoints(const QString& series, const std::vector<double>& steps,
                              const std::vector<double>& values, const QString& run) {
  Series& s = seriesFor(run, series);
  const std::size_t n = std::min(steps.size(), values.size());
  for (std::size_t i = 0; i < n; ++i) s.append(steps[i], values[i], smoothing_);
  afterUpdate();
}

void CurvesPlot::setSeries(const QString& series, const std::vector<double>& steps,
                           const std::vector<double>& values, const QString& run) {
  Series& s = seriesFor(run, series);
  const std::size_t n = std::min(steps.size(), values.size());
  s.steps.assign(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n));
  s.values.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
  s.recompute(smoothing_);
  afterUpdate();
}

void CurvesPlot::removeRun(const QString& run) {
  hover_->tracer->setGraph(nullptr);
  hover_->tracer->setVisible(false);
  for (auto it = series_.begin(); it != series_.end();) {
    if (it->first.first == run) {
      plot()->removeGraph(it->second->line);
      plot()->removeGraph(it->second->raw);
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
  runs_.removeAll(run);
  QStringList used;
  for (const QString& m : metrics_)
    for (const auto& [key, s] : series_)
      if (key.second == m && !used.contains(m)) used.append(m);
  metrics_ = used;
  for (auto& [key, s] : series_) styleSeries(*s);
  afterUpdate();
}

void CurvesPlot::clear() {
  hover_->tracer->setGraph(nullptr);
  hover_->tracer->setVisible(false);
  plot()->clearGraphs();
  series_.clear();
  runs_.clear();
  metrics_.clear();
  afterUpdate();
}

void CurvesPlot::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, 0.99);
  {
    const QSignalBlocker block(smoothingSlider_);
    smoothingSlider_->setValue(static_cast<int>(std::lround(weight * 100)));
  }
  smoothingLabel_->setText(QString::number(weight, 'f', 2));
  if (weight == smoothing_) return;
  smoothing_ = weight;
  for (auto& [key, s] : series_) {
    s->recompute(smoothing_);
    styleSeries(*s);
  }
  afterUpdate();
  Q_EMIT smoothingChanged(weight);
}

void CurvesPlot::setLogY(bool on) {
  {
    const QSignalBlocker block(logCheck_);
    logCheck_->setChecked(on);
  }
  if (on == logY()) return;
  auto* axis = plot()->yAxis;
  axis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (on)
    axis->setTicker(QSharedPointer<detail::LogTicker>::create());
  else
    axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  axis->setNumberFormat(QStringLiteral("gb"));
  rescale();
  requestReplot();
  Q_EMIT logYChanged(on);
}

void CurvesPlot::setRightAxisSeries(const QStringList& series) {
  rightAxisSeries_ = series;
  // Move existing graphs by rebuilding them on the right axis.
  std::vector<std::pair<QString, QString>> moved;
  for (const auto& [key, s] : series_)
    if (s->right != onRightAxis(key.second)) moved.push_back(key);
  for (const auto& key : moved) {
    auto& s = *series_[key];
    hover_->tracer->setGraph(nullptr);
    s.right = onRightAxis(key.second);
    QCPAxis* valueAxis = s.right ? plot()->yAxis2 : plot()->yAxis;
    s.line->setValueAxis(valueAxis);
    s.raw->setValueAxis(valueAxis);
    s.recompute(smoothing_);
    styleSeries(s);
  }
  afterUpdate();
}

void CurvesPlot::setYLabel(const QString& label) {
  plot()->yAxis->setLabel(label);
  requestReplot();
}

void CurvesPlot::setAutoRescale(bool on) {
  autoRescale_ = on;
  if (on) {
    rescale();
    requestReplot();
  }
}

bool CurvesPlot::logY() const { return plot()->yAxis->scaleType() == QCPAxis::stLogarithmic; }

bool CurvesPlot::hasRightAxis() const {
  return std::any_of(series_.begin(), series_.end(), [](const auto& kv) { return kv.second->right; });
}

void CurvesPlot::rescale() {
  rescalePending_ = false;
  auto* p = plot();
  p->xAxis->rescale(true);
  p->yAxis->rescale(true);
  p->yAxis2->rescale(true);
  for (QCPAxis* axis : {p->yAxis, p->yAxis2}) {
    QCPRange r = axis->range();
    if (axis->scaleType() == QCPAxis::stLogarithmic && r.lower > 0) {
      const double pad = std::pow(r.upper / r.lower, 0.05);
      axis->setRange(r.lower / pad, r.upper * pad);
    } else {
      const double pad = 0.05 * (r.size() > 0 ? r.size() : std::max(1e-12, std::abs(r.center())));
      axis->setRange(r.lower - pad, r.upper + pad);
    }
  }
}

void CurvesPlot::afterUpdate() {
  auto* p = plot();
  p->legend->setVisible(p->legend->itemCount() > 0);
  p->yAxis2->setVisible(hasRightAxis());
  // Rescaling scans the data, so it runs once per replot (or range query), not once per point.
  rescalePending_ = autoRescale_ && !series_.empty();
  requestReplot();
}

void CurvesPlot::applyPendingRescale() const {
  if (!rescalePending_) return;
  rescalePending_ = false;
  const_cast<CurvesPlot*>(this)->rescale();
}

int CurvesPlot::pointCount(const QString& series, const QString& run) const {
  const Series* s = find(run, series);
  return s ? s->line->dataCount() : 0;
}

std::vector<double> CurvesPlot::displayedValues(const QString& series, const QString& run) const {
  std::vector<double> out;
  if (const Series* s = find(run, series)) {
    out.reserve(static_cast<std::size_t>(s->line->dataCount()));
    for (auto it = s->line->data()->constBegin(); it != s->line->data()->constEnd(); ++it) out.push_back(it->value);
  }
  return out;
}

std::pair<double, double> CurvesPlot::xRange() const {
  applyPendingRescale();
  return {plot()->xAxis->range().lower, plot()->xAxis->range().upper}; }
std::pair<double, double> CurvesPlot::yRange() const {
  applyPendingRescale();
  return {plot()->yAxis->range().lower, plot()->yAxis->range().upper}; }
std::pair<double, double> CurvesPlot::y2Range() const {
  applyPendingRescale();
  return {plot()->yAxis2->range().lower, plot()->yAxis2->range().upper};
}

QString CurvesPlot::legendName(const QString& series, const QString& run) const {
  const Series* s = find(run, series);
  return s ? s->line->name() : QString();
}

void CurvesPlot::writeCsv(QTextStream& out) const {
  out << "run,series,step,value,displayed\n";
  for (const QString& run : runs_)
    for (const QString& metric : metrics_) {
      const Series* s = find(run, metric);
      if (!s) continue;
      const QString prefix = csvField(run) + QLatin1Char(',') + csvField(metric) + QLatin1Char(',');
      for (std::size_t i = 0; i < s->steps.size(); ++i)
        out << prefix << QString::number(s->steps[i], 'g', 12) << ',' << QString::number(s->values[i], 'g', 10)
            << ',' << QString::number(s->shown[i], 'g', 10) << '\n';
    }
}

void CurvesPlot::themeChanged() {
  auto* p = plot();
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setBrush(Qt::NoBrush);
  hover_->tracer->setBrush(QBrush(theme().background));
  for (auto& [key, s] : series_) styleSeries(*s);
}

void CurvesPlot::hoverAt(const QPointF& pos) {
  const detail::NearestPoint hit = detail::nearestGraphPoint(plot(), pos, 24.0);
  auto* tracer = hover_->tracer;
  if (!hit.graph) {
    if (tracer->visible()) {
      tracer->setVisible(false);
      replotHover();
    }
    setHoverText(QString(), pos.toPoint());
    return;
  }
  tracer->setGraph(hit.graph);
  tracer->setGraphKey(hit.key);
  tracer->setPen(QPen(hit.graph->pen().color(), 2));
  tracer->setVisible(true);
  QString text = hit.graph->name() + QStringLiteral("\nstep ") + stepText(hit.key) + QStringLiteral(": ") +
                 detail::formatValue(hit.value);
  for (const auto& [key, s] : series_)
    if (s->line == hit.graph && s->smoothed(smoothing_)) {
      const auto i = std::lower_bound(s->steps.begin(), s->steps.end(), hit.key) - s->steps.begin();
      if (i < static_cast<std::ptrdiff_t>(s->values.size()))
        text += QStringLiteral(" (smoothed; raw ") + detail::formatValue(s->values[i]) + QLatin1Char(')');
    }
  setHoverText(text, pos.toPoint());
  replotHover();
}

void CurvesPlot::hoverLeft() {
  hover_->tracer->setVisible(false);
  replotHover();
}

void CurvesPlot::addContextActions(QMenu& menu) {
  menu.addAction(tr("Rescale axes"), this, [this] { setAutoRescale(true); });
  QAction* log = menu.addAction(tr("Log-scale y"), this, [this](bool on) { setLogY(on); });
  log->setCheckable(true);
  log->setChecked(logY());
}

}  // namespace tensorscope::viz
