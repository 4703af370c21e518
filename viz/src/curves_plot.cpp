#include "viz/curves_plot.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSignalBlocker>
#include <QSlider>
#include <QTextStream>
#include <QToolButton>
#include <algorithm>
#include <cmath>

#include "curve_series.h"
#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

namespace {
constexpr double kLineWidth = 1.8;
constexpr double kRateLineWidth = 1.3;
constexpr double kDockLegendFraction = 0.3;    // of the plot's height, in the dock
constexpr double kFigureLegendFraction = 0.2;  // in an exported figure  // the learning rate is context, drawn lighter
constexpr double kMarkerSize = 5.0;
// The accuracy axis shows [0, 1] with a little room, so 0 and 1 are not drawn on the frame.
constexpr double kAccuracyLower = -0.03, kAccuracyUpper = 1.03;
// Above this many seconds the time axis counts minutes.
constexpr double kMinutesFrom = 600;

QString runLabel(const QString& run) { return run.isEmpty() ? QStringLiteral("current run") : run; }

QString stepText(double step) {
  return step == std::floor(step) && std::abs(step) < 1e15 ? QString::number(static_cast<qint64>(step))
                                                          : detail::formatValue(step);
}

QString numberField(double v, int precision) {
  return std::isfinite(v) ? QString::number(v, 'g', precision) : QString();
}

// Legend and CSV order of metrics, the same whatever order they arrived in: train loss, evaluation
// losses, accuracy-like metrics, the learning rate, then the rest; by name within a family.
int familyRank(const QString& metric) {
  const QString m = metric.toLower();
  if (m.startsWith(QLatin1String("train")) || m == QLatin1String("loss")) return 0;
  if (m.contains(QLatin1String("loss"))) return 1;
  if (CurvesPlot::isAccuracyLike(m)) return 2;
  if (m == QLatin1String("lr") || m == QLatin1String("learning rate")) return 3;
  return 4;
}

void sortMetrics(QStringList& metrics) {
  std::stable_sort(metrics.begin(), metrics.end(), [](const QString& a, const QString& b) {
    const int ra = familyRank(a), rb = familyRank(b);
    return ra != rb ? ra < rb : a < b;
  });
}

// Training time in minutes: nice steps in minutes, labels in minutes, keys still in seconds.
class MinuteTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    return 60.0 * QCPAxisTicker::getTickStep(QCPRange(range.lower / 60.0, range.upper / 60.0));
  }
  QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override {
    return QCPAxisTicker::getTickLabel(tick / 60.0, locale, formatChar, precision);
  }
};
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
  smoothingSlider_->setMinimumWidth(40);  // shrinks with the dock (a laptop's bottom row is narrow)
  smoothingSlider_->setMaximumWidth(140);
  smoothingSlider_->setToolTip(tr("Exponential moving average of the displayed curves (display only)"));
  bar->addWidget(smoothingSlider_);
  smoothingLabel_ = new QLabel(QStringLiteral("0.00"), this);
  smoothingLabel_->setMinimumWidth(smoothingLabel_->fontMetrics().horizontalAdvance(QStringLiteral("0.00 ")));
  bar->addWidget(smoothingLabel_);
  logCheck_ = new QCheckBox(tr("Log y"), this);
  logCheck_->setToolTip(tr("Logarithmic loss axis"));
  bar->addWidget(logCheck_);
  metricsButton_ = new QToolButton(this);
  metricsButton_->setText(tr("Metrics"));
  metricsButton_->setToolTip(tr("Show or hide metrics (for every run)"));
  metricsButton_->setPopupMode(QToolButton::InstantPopup);
  auto* metricMenu = new QMenu(metricsButton_);
  metricsButton_->setMenu(metricMenu);
  connect(metricMenu, &QMenu::aboutToShow, this, &CurvesPlot::fillMetricMenu);
  bar->addWidget(metricsButton_);
  xCombo_ = new QComboBox(this);
  xCombo_->addItems({tr("x: step"), tr("x: time")});
  xCombo_->setToolTip(tr("x axis: training step, or training time (pauses and evaluations not counted)"));
  bar->addWidget(xCombo_);
  timeNote_ = new QLabel(this);
  timeNote_->setVisible(false);
  bar->addWidget(timeNote_);
  bar->addStretch(1);
  connect(smoothingSlider_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  connect(logCheck_, &QCheckBox::toggled, this, &CurvesPlot::setLogY);
  connect(xCombo_, &QComboBox::currentIndexChanged, this, [this](int i) { setTimeAxis(i == 1); });

  auto* p = plot();
  p->setAutoAddPlottableToLegend(false);
  p->xAxis->setLabel(tr("step"));
  p->yAxis->setLabel(tr("loss"));
  p->xAxis2->setVisible(false);
  // Accuracy-like metrics on the first right axis, fixed to [0, 1]: on the loss axis an exact match
  // in [0, 1] under a loss of 3 reads as a flat line.
  p->yAxis2->setLabel(tr("accuracy / exact match"));
  p->yAxis2->setTickLabels(true);
  p->yAxis2->setRange(kAccuracyLower, kAccuracyUpper);
  auto accuracyTicks = QSharedPointer<QCPAxisTickerFixed>::create();
  accuracyTicks->setTickStep(0.2);
  accuracyTicks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  p->yAxis2->setTicker(accuracyTicks);
  // The learning rate on an axis of its own outside the accuracy axis. It shares no unit or scale
  // with either (1e-4 against [0, 1]), and an axis of its own, labelled, reads better than an
  // unlabelled lr squeezed onto the accuracy scale; it is the outermost because it is the curve a
  // reader looks at least.
  rateAxis_ = p->axisRect()->addAxis(QCPAxis::atRight);
  rateAxis_->setLabel(tr("learning rate"));
  rateAxis_->setTickLabels(true);
  rateAxis_->setNumberFormat(QStringLiteral("gb"));
  rateAxis_->setNumberPrecision(2);
  rateAxis_->setVisible(false);
  p->yAxis2->setVisible(false);
  p->legend->setVisible(false);  // the curves draw their own compact legend
  legend_ = new detail::CurvesLegend(p);
  legendOnTop();
  // A rotated axis title longer than its axis runs into the legend row: shorter words then.
  connect(p, &QCustomPlot::afterLayout, this, &CurvesPlot::fitAxisTitles);
  p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  p->axisRect()->setRangeDragAxes({p->xAxis}, {p->yAxis, p->yAxis2, rateAxis_});
  p->axisRect()->setRangeZoomAxes({p->xAxis}, {p->yAxis, p->yAxis2, rateAxis_});
  p->setNoAntialiasingOnDrag(true);
  connect(p, &QCustomPlot::mouseWheel, this, [this] { autoRescale_ = false; });
  connect(p, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton) autoRescale_ = false;
  });
  connect(p, &QCustomPlot::mouseDoubleClick, this, [this] { setAutoRescale(true); });
  connect(p, &QCustomPlot::beforeReplot, this, [this] {
    applyPendingRescale();
    updateTimeUnits();
  });

  hover_->tracer = detail::addHoverTracer(p, 9, QString::fromLatin1(kHoverLayer));
  hover_->tracer->setInterpolating(false);
  hover_->tracer->setSelectable(false);
  afterUpdate();
  restyle();
}

CurvesPlot::~CurvesPlot() = default;

bool CurvesPlot::isAccuracyLike(const QString& metric) {
  const QString m = metric.trimmed().toLower();
  return m.startsWith(QLatin1String("accuracy")) || m.startsWith(QLatin1String("exact match")) ||
         m.startsWith(QLatin1String("exact_match"));
}

CurvesPlot::Axis CurvesPlot::axisOf(const QString& metric) const {
  if (rightAxisSeries_.contains(metric, Qt::CaseInsensitive)) return Axis::Rate;
  return isAccuracyLike(metric) ? Axis::Accuracy : Axis::Loss;
}

QCPAxis* CurvesPlot::axisFor(Axis axis) const {
  switch (axis) {
    case Axis::Accuracy: return plot()->yAxis2;
    case Axis::Rate: return rateAxis_;
    case Axis::Loss: break;
  }
  return plot()->yAxis;
}

int CurvesPlot::colourIndex(const QString& run) const {
  const auto i = runOrder_.indexOf(run);
  if (i >= 0) return static_cast<int>(i);
  int after = static_cast<int>(runOrder_.size());
  for (const QString& r : runs_) {
    if (r == run) break;
    if (!runOrder_.contains(r)) ++after;
  }
  return after;
}

CurvesPlot::Series& CurvesPlot::seriesFor(const QString& run, const QString& metric) {
  auto& slot = series_[{run, metric}];
  if (slot) return *slot;
  if (!runs_.contains(run)) runs_.append(run);
  if (!metrics_.contains(metric)) metrics_.append(metric);
  slot = std::make_unique<Series>();
  Series& s = *slot;
  s.run = run;
  s.metric = metric;
  s.axis = axisOf(metric);
  auto* p = plot();
  QCPAxis* valueAxis = axisFor(s.axis);
  s.raw = p->addGraph(p->xAxis, valueAxis);
  s.raw->setProperty(detail::kNoHoverProperty, true);
  s.line = p->addGraph(p->xAxis, valueAxis);
  for (QCPGraph* g : {s.raw, s.line}) {  // figure exports choose runs and metrics by these
    g->setProperty("tsRun", run);
    g->setProperty("tsMetric", metric);
  }
  styleSeries(s);
  return s;
}

const CurvesPlot::Series* CurvesPlot::find(const QString& run, const QString& metric) const {
  const auto it = series_.find({run, metric});
  return it == series_.end() ? nullptr : it->second.get();
}

void CurvesPlot::styleSeries(Series& s) {
  const QColor colour = detail::categoricalColour(colourIndex(s.run), isDarkTheme());
  const detail::MetricStyle style = detail::metricStyle(s.metric);
  s.line->setPen(detail::metricPen(style, colour, s.axis == Axis::Rate ? kRateLineWidth : kLineWidth));
  s.line->setScatterStyle(style.marker == QCPScatterStyle::ssNone
                              ? QCPScatterStyle()
                              : QCPScatterStyle(style.marker, colour, colour, kMarkerSize));
  s.line->setName(s.run.isEmpty() ? s.metric : s.run + QStringLiteral(" · ") + s.metric);
  QColor faint = colour;
  faint.setAlpha(isDarkTheme() ? 70 : 60);
  s.raw->setPen(detail::metricPen(style, faint, 1.0));
}

void CurvesPlot::restyleAll() {
  for (auto& [key, s] : series_) styleSeries(*s);
}

// ---- keys: step (with the fork's offset) or training time ------------------------------------

const CurvesPlot::Series* CurvesPlot::timeReference(const QString& run) const {
  const Series* best = nullptr;
  for (const auto& [key, s] : series_)
    if (key.first == run && s->hasOwnTimes() && (!best || s->steps.size() > best->steps.size())) best = s.get();
  return best;
}

double CurvesPlot::timeAt(const QString& run, double step) const {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  const Series* ref = timeReference(run);
  if (!ref) return nan;
  const auto& s = ref->steps;
  const auto& t = ref->times;
  const auto n = static_cast<std::ptrdiff_t>(s.size());
  // The nearest points with times on either side of `step` (the reference's steps ascend).
  const std::ptrdiff_t at = std::lower_bound(s.begin(), s.end(), step) - s.begin();
  if (at < n && s[at] == step && std::isfinite(t[at])) return t[at];
  std::ptrdiff_t lo = at - 1, hi = at;
  while (lo >= 0 && !std::isfinite(t[lo])) --lo;
  while (hi < n && !std::isfinite(t[hi])) ++hi;
  if (lo >= 0 && hi < n) return t[lo] + (step - s[lo]) / (s[hi] - s[lo]) * (t[hi] - t[lo]);
  // Outside the points: at the run's average pace (from time 0 at step 0 with a single point).
  std::ptrdiff_t first = 0, last = n - 1;
  while (first < n && !std::isfinite(t[first])) ++first;
  while (last >= 0 && !std::isfinite(t[last])) --last;
  if (first >= n) return nan;
  const double pace = last > first && s[last] > s[first] ? (t[last] - t[first]) / (s[last] - s[first])
                      : s[first] > 0                     ? t[first] / s[first]
                                                         : 0.0;
  if (hi >= n) return t[last] + (step - s[last]) * pace;
  return std::max(0.0, t[first] - (s[first] - step) * pace);
}

double CurvesPlot::timeOffset(const QString& run) const {
  double offset = 0;
  QString at = run;
  for (int depth = 0; depth < 16; ++depth) {  // a fork of a fork: each parent's time at its fork step
    const auto it = origins_.find(at);
    if (it == origins_.end() || it->second.parent.isEmpty()) break;
    const QString parent = it->second.parent;
    const double t = timeAt(parent, it->second.step - runStepOffset(parent));
    if (std::isfinite(t)) offset += t;
    at = parent;
  }
  return offset;
}

std::vector<double> CurvesPlot::keysFor(const Series& s) const {
  std::vector<double> keys(s.steps.size());
  if (!timeAxis_) {
    const double offset = runStepOffset(s.run);
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = s.steps[i] + offset;
    return keys;
  }
  const double offset = timeOffset(s.run);
  for (std::size_t i = 0; i < keys.size(); ++i)
    keys[i] = (std::isfinite(s.times[i]) ? s.times[i] : timeAt(s.run, s.steps[i])) + offset;
  return keys;
}

double CurvesPlot::runStepOffset(const QString& run) const {
  const auto it = origins_.find(run);
  return it == origins_.end() ? 0.0 : it->second.step;
}

void CurvesPlot::refill(Series& s) { s.fill(keysFor(s)); }

void CurvesPlot::refillAll() {
  for (auto& [key, s] : series_) refill(*s);
}

void CurvesPlot::pointsAdded(Series& s, std::size_t firstNew, bool cut) {
  dirtyRuns_.insert(s.run);
  if (cut) {
    refill(s);
    return;
  }
  const double stepOffset = runStepOffset(s.run);
  const double timeShift = timeAxis_ ? timeOffset(s.run) : 0.0;
  for (std::size_t i = firstNew; i < s.steps.size(); ++i) {
    double key = s.steps[i] + stepOffset;
    if (timeAxis_) key = (std::isfinite(s.times[i]) ? s.times[i] : timeAt(s.run, s.steps[i])) + timeShift;
    if (!std::isfinite(key)) continue;
    s.line->addData(key, s.shown[i]);  // keys ascending: an O(1) append
    s.raw->addData(key, s.values[i]);
  }
}

// ---- data in ---------------------------------------------------------------------------------

void CurvesPlot::appendPoint(const QString& series, double step, double value, const QString& run, double time) {
  Series& s = seriesFor(run, series);
  const std::size_t first = s.steps.size();
  const bool appended = s.append(step, value, time, smoothing_);
  pointsAdded(s, first, !appended);
  afterUpdate();
}

void CurvesPlot::appendPoints(const QString& series, const std::vector<double>& steps,
                              const std::vector<double>& values, const QString& run, const std::vector<double>& times) {
  Series& s = seriesFor(run, series);
  const std::size_t n = std::min(steps.size(), values.size());
  const std::size_t first = s.steps.size();
  bool cut = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = i < times.size() ? times[i] : std::numeric_limits<double>::quiet_NaN();
    cut = !s.append(steps[i], values[i], t, smoothing_) || cut;
  }
  pointsAdded(s, first, cut);
  afterUpdate();
}

void CurvesPlot::setSeries(const QString& series, const std::vector<double>& steps,
                           const std::vector<double>& values, const QString& run, const std::vector<double>& times) {
  Series& s = seriesFor(run, series);
  const std::size_t n = std::min(steps.size(), values.size());
  s.steps.assign(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n));
  s.values.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
  s.times.assign(n, std::numeric_limits<double>::quiet_NaN());
  std::copy_n(times.begin(), std::min(n, times.size()), s.times.begin());
  s.recompute(smoothing_);
  pointsAdded(s, 0, true);
  afterUpdate();
}

std::vector<CurvesPlot::RunCurve> CurvesPlot::runCurves(const QString& run) const {
  std::vector<RunCurve> out;
  for (const auto& [key, s] : series_)
    if (key.first == run) out.push_back({key.second, s->steps, s->values, s->times});
  return out;
}

void CurvesPlot::removeRun(const QString& run) {
  detail::detachTracer(hover_->tracer);
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
  restyleAll();  // runs outside the given order move up
  if (timeAxis_) refillAll();  // forks of this run lose their time offset
  afterUpdate();
}

void CurvesPlot::clear() {
  detail::detachTracer(hover_->tracer);
  for (auto& [key, s] : series_) {
    plot()->removeGraph(s->line);
    plot()->removeGraph(s->raw);
  }
  series_.clear();
  runs_.clear();
  metrics_.clear();
  afterUpdate();
}

void CurvesPlot::setRunOrder(const QStringList& runs) {
  if (runs == runOrder_) return;
  runOrder_ = runs;
  restyleAll();
  afterUpdate();
}

void CurvesPlot::setRunOrigin(const QString& run, double step, const QString& parentRun) {
  if (step == 0 && parentRun.isEmpty()) origins_.erase(run);
  else origins_[run] = RunOrigin{step, parentRun};
  refillAll();  // the run and any fork of it move
  afterUpdate();
}

// ---- settings --------------------------------------------------------------------------------

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
    refill(*s);
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
  detail::setLogScale(axis, on);
  axis->setNumberFormat(QStringLiteral("gb"));
  rescale();
  requestReplot();
  Q_EMIT logYChanged(on);
}

void CurvesPlot::setRightAxisSeries(const QStringList& series) {
  rightAxisSeries_ = series;
  hover_->tracer->setGraph(nullptr);
  for (auto& [key, s] : series_) {
    const Axis axis = axisOf(key.second);
    if (axis == s->axis) continue;
    s->axis = axis;
    s->line->setValueAxis(axisFor(axis));
    s->raw->setValueAxis(axisFor(axis));
    s->recompute(smoothing_);  // the learning rate is never smoothed
    refill(*s);
    styleSeries(*s);
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

void CurvesPlot::setMetricVisible(const QString& metric, bool visible) {
  if (visible == metricVisible(metric)) return;
  if (visible) hiddenMetrics_.remove(metric);
  else hiddenMetrics_.insert(metric);
  afterUpdate();
  Q_EMIT metricFilterChanged();
}

QStringList CurvesPlot::visibleMetrics() const {
  QStringList out;
  for (const QString& m : metrics_)
    if (metricVisible(m)) out.append(m);
  return out;
}

QStringList CurvesPlot::hiddenMetrics() const {
  QStringList out(hiddenMetrics_.begin(), hiddenMetrics_.end());
  out.sort();
  return out;
}

void CurvesPlot::setHiddenMetrics(const QStringList& metrics) {
  const QSet<QString> hidden(metrics.begin(), metrics.end());
  if (hidden == hiddenMetrics_) return;
  hiddenMetrics_ = hidden;
  afterUpdate();
  Q_EMIT metricFilterChanged();
}

void CurvesPlot::fillMetricMenu() {
  QMenu* menu = metricsButton_->menu();
  menu->clear();
  QStringList names = metrics_;
  for (const QString& m : hiddenMetrics_)
    if (!names.contains(m)) names.append(m);
  sortMetrics(names);
  if (names.isEmpty()) menu->addAction(tr("No metrics yet"))->setEnabled(false);
  for (const QString& m : names) {
    // A metric's name as written: '&' would otherwise mark a shortcut and disappear.
    QString text = m;
    text.replace(QLatin1Char('&'), QLatin1String("&&"));
    QAction* a = menu->addAction(text);
    a->setCheckable(true);
    a->setChecked(metricVisible(m));
    connect(a, &QAction::toggled, this, [this, m](bool on) { setMetricVisible(m, on); });
  }
  if (!hiddenMetrics_.isEmpty()) {
    menu->addSeparator();
    menu->addAction(tr("Show all"), this, [this] { setHiddenMetrics({}); });
  }
}

void CurvesPlot::setTimeAxis(bool on) {
  {
    const QSignalBlocker block(xCombo_);
    xCombo_->setCurrentIndex(on ? 1 : 0);
  }
  if (on == timeAxis_) return;
  timeAxis_ = on;
  minutes_ = false;
  plot()->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  plot()->xAxis->setLabel(on ? tr("training time (s)") : tr("step"));
  detail::detachTracer(hover_->tracer);
  refillAll();
  autoRescale_ = true;  // the old x range means nothing now
  afterUpdate();
  Q_EMIT timeAxisChanged(on);
}

int CurvesPlot::curvesWithoutTime() const {
  if (!timeAxis_) return 0;
  int n = 0;
  for (const auto& [key, s] : series_)
    if (metricVisible(key.second) && !s->steps.empty() && !s->hasOwnTimes() && !timeReference(key.first)) ++n;
  return n;
}

void CurvesPlot::updateTimeUnits() {
  if (!timeAxis_) return;
  const bool minutes = plot()->xAxis->range().upper > kMinutesFrom;
  if (minutes == minutes_) return;
  minutes_ = minutes;
  if (minutes) plot()->xAxis->setTicker(QSharedPointer<MinuteTicker>::create());
  else plot()->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  plot()->xAxis->setLabel(minutes ? tr("training time (min)") : tr("training time (s)"));
}

// ---- after every change ----------------------------------------------------------------------

void CurvesPlot::updateVisibility() {
  for (auto& [key, s] : series_) {
    bool shown = metricVisible(key.second);
    if (shown && timeAxis_) shown = s->hasOwnTimes() || timeReference(key.first);
    s->line->setVisible(shown);
    s->raw->setVisible(shown && s->smoothed(smoothing_));
  }
  for (Axis axis : {Axis::Accuracy, Axis::Rate}) {
    const bool used = std::any_of(series_.begin(), series_.end(),
                                  [&](const auto& kv) { return kv.second->axis == axis && kv.second->line->visible(); });
    axisFor(axis)->setVisible(used);
  }
  const int missing = curvesWithoutTime();
  timeNote_->setVisible(missing > 0);
  timeNote_->setText(tr("%n curve(s) without times hidden", nullptr, missing));
  timeNote_->setToolTip(tr("Runs read from logs without training times have no place on a time axis."));
}

void CurvesPlot::legendOnTop() {
  QCustomPlot* p = plot();
  if (legend_->layout()) legend_->layout()->take(legend_);
  p->plotLayout()->simplify();
  legend_->setVertical(false);
  legend_->setVisible(true);
  p->plotLayout()->insertRow(0);
  p->plotLayout()->addElement(0, 0, legend_);
  p->plotLayout()->setRowStretchFactor(0, 0.001);
  p->plotLayout()->setRowSpacing(0);
}

void CurvesPlot::legendBelow() {
  QCPLayoutGrid* main = plot()->plotLayout();
  if (legend_->layout()) legend_->layout()->take(legend_);
  main->simplify();
  const int row = main->rowCount();
  main->addElement(row, 0, legend_);
  main->setRowStretchFactor(row, 0.001);
}

QSize CurvesPlot::beginFigure(const FigureOptions& options, const QSize& size) {
  QCustomPlot* p = plot();
  updateLegend(&options);
  // An axis none of the figure's curves use (the learning rate left unticked) takes no room.
  for (Axis axis : {Axis::Accuracy, Axis::Rate})
    axisFor(axis)->setVisible(std::any_of(series_.begin(), series_.end(), [&](const auto& kv) {
      return kv.second->axis == axis && kv.second->line->visible() && figureShows(kv.second->line, options);
    }));
  // A compact legend of at most a fifth of the figure's height ("+n more" past that).
  legend_->setCompact(true);
  legend_->setMaxHeightFraction(kFigureLegendFraction);
  // A column-wide figure has room for three or four step labels ("1250" and "1500" touched at
  // 88 mm with QCustomPlot's five; asking for 3 gives 0, 500, 1000, 1500).
  figureTickCountBefore_ = p->xAxis->ticker()->tickCount();
  p->xAxis->ticker()->setTickCount(options.widthMm < 100 ? 3 : figureTickCountBefore_);
  figureFontBefore_ = p->legend->font();  // the compact legend draws in the plot legend's font
  QFont font = p->legend->font();
  font.setPointSizeF(options.fontPt);
  p->legend->setFont(font);
  if (legend_->layout()) legend_->layout()->take(legend_);
  p->plotLayout()->simplify();
  QCPLayoutGrid* main = p->plotLayout();
  figureLegendRight_ = options.legend == LegendPosition::Right;
  figureLegendMoved_ = false;
  switch (options.legend) {
    case LegendPosition::None:
      legend_->setVisible(false);
      main->addElement(main->rowCount(), 0, legend_);  // kept in the layout, not drawn
      break;
    case LegendPosition::Top:
      legendOnTop();
      break;
    case LegendPosition::Bottom:
      legendBelow();
      break;
    case LegendPosition::Right: {
      legend_->setVertical(true);
      int row = 0;
      for (int r = 0; r < main->rowCount(); ++r)
        if (main->element(r, 0) == p->axisRect()) row = r;
      main->addElement(row, 1, legend_);
      main->setColumnStretchFactor(1, 0.001);
      break;
    }
    case LegendPosition::Inside:
      QColor veil = theme().legendBackground.isValid() ? theme().legendBackground : theme().background;
      veil.setAlphaF(0.88f);
      legend_->setVertical(true, veil);
      p->axisRect()->insetLayout()->addElement(legend_, Qt::AlignTop | Qt::AlignRight);
      break;
  }
  return size;
}

void CurvesPlot::figureLaidOut() {
  // A journal column with the accuracy and learning-rate axes has no room for a legend beside the
  // curves as well: below it goes, rather than leaving the curves a sliver.
  if (figureLegendRight_ && plot()->axisRect()->width() < plot()->viewport().width() / 2) {
    legend_->setVertical(false);
    legendBelow();
    layOutNow();
    figureLegendMoved_ = true;
  }
  figureLegendRect_ = legend_->visible() ? QRectF(legend_->outerRect()) : QRectF();
  figureLegendEntries_ = legend_->visible() ? static_cast<int>(legend_->entries().size()) : 0;
}

void CurvesPlot::endFigure() {
  legend_->setCompact(false);
  legend_->setMaxHeightFraction(kDockLegendFraction);
  updateVisibility();  // the dock's axes back
  if (figureFontBefore_) plot()->legend->setFont(*figureFontBefore_);
  plot()->xAxis->ticker()->setTickCount(figureTickCountBefore_);
  figureFontBefore_.reset();
  legendOnTop();
  updateLegend();
}

void CurvesPlot::updateLegend(const FigureOptions* figure) {
  // Colour = run and style = metric, so the legend lists them apart: the runs, the metric
  // families by dash pattern ("eval loss"), and the evaluation splits by marker
  // ("interpolation"), instead of every run x metric combination.
  using Entry = detail::CurvesLegend::Entry;
  std::vector<Entry> entries;
  QStringList shownRuns, shownMetrics;
  for (const auto& [key, s] : series_)
    if (s->line->visible() && (!figure || figureShows(s->line, *figure))) {
      if (!shownRuns.contains(key.first)) shownRuns.append(key.first);
      if (!shownMetrics.contains(key.second)) shownMetrics.append(key.second);
    }
  std::stable_sort(shownRuns.begin(), shownRuns.end(),
                   [this](const QString& a, const QString& b) { return colourIndex(a) < colourIndex(b); });
  sortMetrics(shownMetrics);
  // One unnamed run (the widget used on its own) needs no run entry.
  if (!(shownRuns.size() == 1 && shownRuns.front().isEmpty()))
    for (const QString& run : shownRuns)
      entries.push_back({runLabel(run), QPen(detail::categoricalColour(colourIndex(run), isDarkTheme()), 3.0),
                         QCPScatterStyle::ssNone, Entry::Run});
  const QColor neutral = theme().text;
  QStringList families;
  std::vector<std::pair<QString, QCPScatterStyle::ScatterShape>> splits;
  for (const QString& m : shownMetrics) {
    const auto [family, split] = detail::splitMetricName(m);
    const detail::MetricStyle style = detail::metricStyle(m);
    if (!families.contains(family)) {
      families.append(family);
      // A metric without a split shows its own marker; splits have entries of their own.
      entries.push_back({family, detail::metricPen(style, neutral, kLineWidth),
                         split.isEmpty() ? style.marker : QCPScatterStyle::ssNone, Entry::Metric});
    }
    if (!split.isEmpty() && style.marker != QCPScatterStyle::ssNone &&
        std::none_of(splits.begin(), splits.end(), [&](const auto& p) { return p.first == split; }))
      splits.emplace_back(split, style.marker);
  }
  // Splits in marker order (disc, triangle, ...), by name within one marker.
  std::stable_sort(splits.begin(), splits.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  for (const auto& [split, marker] : splits) entries.push_back({split, QPen(neutral, 1.2), marker, Entry::Split});
  legend_->setEntries(std::move(entries));
}

void CurvesPlot::fitAxisTitles() {
  const int room = plot()->axisRect()->height();
  const auto fit = [room](QCPAxis* axis, const QStringList& choices) {
    const QFontMetrics fm(axis->labelFont());
    QString pick = choices.back();
    for (const QString& c : choices)
      if (fm.horizontalAdvance(c) <= room) {
        pick = c;
        break;
      }
    if (axis->label() != pick) axis->setLabel(pick);
  };
  fit(plot()->yAxis2, {tr("accuracy / exact match"), tr("accuracy"), tr("acc.")});
  fit(rateAxis_, {tr("learning rate"), tr("lr")});
}

void CurvesPlot::afterUpdate() {
  if (timeAxis_ && !dirtyRuns_.isEmpty()) {
    // Evaluations take their times from the run's other curves, and forks from their parents':
    // new points of a run can move those.
    for (auto& [key, s] : series_) {
      const auto origin = origins_.find(key.first);
      const bool parentDirty = origin != origins_.end() && dirtyRuns_.contains(origin->second.parent);
      if (parentDirty || (dirtyRuns_.contains(key.first) && !s->hasOwnTimes())) refill(*s);
    }
  }
  dirtyRuns_.clear();
  updateVisibility();
  updateLegend();
  // Rescaling scans the data, so it runs once per replot (or range query), not once per point.
  rescalePending_ = autoRescale_ && !series_.empty();
  requestReplot();
}

void CurvesPlot::rescale() {
  rescalePending_ = false;
  auto* p = plot();
  p->xAxis->rescale(true);
  for (QCPAxis* axis : {p->yAxis, rateAxis_}) {
    axis->rescale(true);
    QCPRange r = axis->range();
    if (axis->scaleType() == QCPAxis::stLogarithmic && r.lower > 0) {
      const double pad = std::pow(r.upper / r.lower, 0.05);
      axis->setRange(r.lower / pad, r.upper * pad);
    } else {
      const double pad = 0.05 * (r.size() > 0 ? r.size() : std::max(1e-12, std::abs(r.center())));
      axis->setRange(r.lower - pad, r.upper + pad);
    }
  }
  p->yAxis2->setRange(kAccuracyLower, kAccuracyUpper);
}

void CurvesPlot::applyPendingRescale() const {
  if (!rescalePending_) return;
  rescalePending_ = false;
  const_cast<CurvesPlot*>(this)->rescale();
}

// ---- queries ---------------------------------------------------------------------------------

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

std::vector<double> CurvesPlot::displayedKeys(const QString& series, const QString& run) const {
  std::vector<double> out;
  if (const Series* s = find(run, series)) {
    out.reserve(static_cast<std::size_t>(s->line->dataCount()));
    for (auto it = s->line->data()->constBegin(); it != s->line->data()->constEnd(); ++it) out.push_back(it->key);
  }
  return out;
}

bool CurvesPlot::seriesShown(const QString& series, const QString& run) const {
  const Series* s = find(run, series);
  return s && s->line->visible();
}

QPen CurvesPlot::seriesPen(const QString& series, const QString& run) const {
  const Series* s = find(run, series);
  return s ? s->line->pen() : QPen();
}

std::pair<double, double> CurvesPlot::xRange() const {
  applyPendingRescale();
  return {plot()->xAxis->range().lower, plot()->xAxis->range().upper};
}

std::pair<double, double> CurvesPlot::yRange() const { return axisRange(Axis::Loss); }

std::pair<double, double> CurvesPlot::axisRange(Axis axis) const {
  applyPendingRescale();
  const QCPRange r = axisFor(axis)->range();
  return {r.lower, r.upper};
}

bool CurvesPlot::hasRightAxis() const { return axisShown(Axis::Accuracy) || axisShown(Axis::Rate); }

bool CurvesPlot::axisShown(Axis axis) const { return axisFor(axis)->visible(); }

QString CurvesPlot::axisLabel(Axis axis) const { return axisFor(axis)->label(); }

QString CurvesPlot::xLabel() const {
  const_cast<CurvesPlot*>(this)->applyPendingRescale();
  const_cast<CurvesPlot*>(this)->updateTimeUnits();
  return plot()->xAxis->label();
}

QString CurvesPlot::legendName(const QString& series, const QString& run) const {
  const Series* s = find(run, series);
  return s ? s->line->name() : QString();
}

QStringList CurvesPlot::legendTexts() const {
  QStringList out;
  for (const auto& e : legend_->entries()) out.append(e.text);
  return out;
}

int CurvesPlot::legendRows() const { return legend_->rows(); }
int CurvesPlot::legendShownEntries() const { return legend_->shownEntries(); }
int CurvesPlot::legendHeight() const { return legend_->outerRect().height(); }

// ---- export, theme, hover --------------------------------------------------------------------

void CurvesPlot::writeCsv(QTextStream& out) const {
  // Raw points of every curve (hidden metrics too), runs in colour order and metrics in legend
  // order: step as plotted (a fork's own step plus its parent's), the run's own step, the training
  // time as in the time view (empty when unknown), the value and the displayed (smoothed) value.
  out << "run,metric,step,run_step,time_s,value,displayed\n";
  QStringList runs = runs_;
  std::stable_sort(runs.begin(), runs.end(), [this](const QString& a, const QString& b) { return colourIndex(a) < colourIndex(b); });
  QStringList metrics = metrics_;
  sortMetrics(metrics);
  for (const QString& run : runs) {
    const double offset = runStepOffset(run);
    const double timeShift = timeOffset(run);
    for (const QString& metric : metrics) {
      const Series* s = find(run, metric);
      if (!s) continue;
      const QString prefix = csvField(run) + QLatin1Char(',') + csvField(metric) + QLatin1Char(',');
      for (std::size_t i = 0; i < s->steps.size(); ++i) {
        const double t = std::isfinite(s->times[i]) ? s->times[i] : timeAt(run, s->steps[i]);
        out << prefix << QString::number(s->steps[i] + offset, 'g', 12) << ',' << QString::number(s->steps[i], 'g', 12)
            << ',' << numberField(t + timeShift, 10) << ',' << QString::number(s->values[i], 'g', 10) << ','
            << QString::number(s->shown[i], 'g', 10) << '\n';
      }
    }
  }
}

void CurvesPlot::themeChanged() {
  auto* p = plot();
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setBrush(Qt::NoBrush);
  p->yAxis2->grid()->setVisible(false);
  rateAxis_->grid()->setVisible(false);
  hover_->tracer->setBrush(QBrush(theme().background));
  restyleAll();
  updateLegend();
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
  detail::moveTracerTo(tracer, hit);
  QString text = hit.graph->name() + QLatin1Char('\n');
  const Series* series = nullptr;
  for (const auto& [key, s] : series_)
    if (s->line == hit.graph) series = s.get();
  std::ptrdiff_t i = -1;
  if (series) {
    const std::vector<double> keys = timeAxis_ ? keysFor(*series) : std::vector<double>();
    if (timeAxis_) {
      for (std::size_t k = 0; k < keys.size(); ++k)
        if (keys[k] == hit.key) i = static_cast<std::ptrdiff_t>(k);
    } else {
      const double own = hit.key - runStepOffset(series->run);
      const auto at = std::lower_bound(series->steps.begin(), series->steps.end(), own) - series->steps.begin();
      if (at < static_cast<std::ptrdiff_t>(series->steps.size())) i = at;
    }
  }
  if (timeAxis_) {
    text += minutes_ ? detail::formatValue(hit.key / 60.0) + QStringLiteral(" min") : detail::formatValue(hit.key) + QStringLiteral(" s");
    if (i >= 0) text += QStringLiteral(" (step ") + stepText(series->steps[i] + runStepOffset(series->run)) + QLatin1Char(')');
  } else {
    text += QStringLiteral("step ") + stepText(hit.key);
  }
  text += QStringLiteral(": ") + detail::formatValue(hit.value);
  if (series && i >= 0 && series->smoothed(smoothing_))
    text += QStringLiteral(" (smoothed; raw ") + detail::formatValue(series->values[i]) + QLatin1Char(')');
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
  QAction* time = menu.addAction(tr("x: training time"), this, [this](bool on) { setTimeAxis(on); });
  time->setCheckable(true);
  time->setChecked(timeAxis_);
}

}  // namespace tensorscope::viz
