/// BottleneckLab (bottleneck_lab.h): the target P and its sources, the fits on a worker thread,
/// the error curve, the threshold found and the fitted pattern of a chosen head size.
#include "gui/teaching/bottleneck_lab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

#include "gui/teaching/bottleneck_patterns.h"
#include "gui/teaching/lab_widgets.h"
#include "viz/line_plot.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::app {

using lab_widgets::finishControls;
using lab_widgets::placeSideBySide;
using lab_widgets::runOnWorker;
using lab_widgets::wrapped;

using bottleneck::checkMap;
using bottleneck::MapCheck;
using bottleneck::maxValue;
using bottleneck::number;
using bottleneck::renormalised;
using bottleneck::toDouble;

BottleneckLab::BottleneckLab(QWidget* parent)
    : LabPanel(parent), latest_(std::make_shared<std::atomic<std::uint64_t>>(0)) {
  buildUi();
  resetDrawing();  // also computes the first (random) target
}

BottleneckLab::~BottleneckLab() {
  // Running workers hold copies of their inputs only; their answers go to watchers deleted with
  // this widget, so nothing reaches a destroyed lab.
  latest_->store(~std::uint64_t{0});
}

void BottleneckLab::buildUi() {
  auto* controls = new QWidget(this);
  auto* left = new QVBoxLayout(controls);
  left->setContentsMargins(0, 0, 0, 0);
  left->addWidget(buildTargetBox(controls));
  left->addWidget(buildFitBox(controls));
  error_ = finishControls(controls, left,
                          tr("Theorem 1 (Bhojanapalli et al. 2020): one head of size d_p ≥ N can represent any "
                             "attention pattern of N tokens. The lab finds how small d_p can be."));
  placeSideBySide(this, controls, buildResults());

  progressTimer_ = new QTimer(this);
  progressTimer_->setInterval(200);
  connect(progressTimer_, &QTimer::timeout, this, &BottleneckLab::updateProgress);
  connectControls();
}

/// The target group: N, the source, and one page of controls per source.
QGroupBox* BottleneckLab::buildTargetBox(QWidget* controls) {
  auto* targetBox = new QGroupBox(tr("Target attention pattern P"), controls);
  auto* targetForm = new QFormLayout(targetBox);
  nSpin_ = new QSpinBox(targetBox);
  nSpin_->setRange(kMinTokens, kMaxTokens);
  nSpin_->setValue(12);
  nSpin_->setToolTip(tr("Tokens N: P is N × N (rows = queries, columns = keys, each row sums to 1)"));
  targetForm->addRow(tr("Tokens N"), nSpin_);
  sourceBox_ = new QComboBox(targetBox);
  sourceBox_->addItem(tr("random"), static_cast<int>(Source::Random));
  sourceBox_->addItem(tr("drawn by hand"), static_cast<int>(Source::Drawn));
  sourceBox_->addItem(tr("from a trained run"), static_cast<int>(Source::Run));
  sourceBox_->setToolTip(tr("Where the target P comes from"));
  targetForm->addRow(tr("Source"), sourceBox_);

  sourcePages_ = new QStackedWidget(targetBox);
  sourcePages_->addWidget(buildRandomPage());  // the page indices are the Source values
  sourcePages_->addWidget(buildDrawnPage());
  sourcePages_->addWidget(buildRunPage());
  targetForm->addRow(sourcePages_);
  return targetBox;
}

/// Source::Random: seed and concentration.
QWidget* BottleneckLab::buildRandomPage() {
  auto* page = new QWidget(sourcePages_);
  auto* form = new QFormLayout(page);
  form->setContentsMargins(0, 0, 0, 0);
  seedSpin_ = new QSpinBox(page);
  seedSpin_->setRange(0, 1'000'000'000);
  seedSpin_->setValue(1);
  seedSpin_->setToolTip(tr("Seed of the random pattern: the same seed gives the same P"));
  form->addRow(tr("Seed"), seedSpin_);
  concentrationSpin_ = new QDoubleSpinBox(page);
  concentrationSpin_->setRange(0.0, 5.0);
  concentrationSpin_->setSingleStep(0.25);
  concentrationSpin_->setDecimals(2);
  concentrationSpin_->setValue(1.0);
  concentrationSpin_->setToolTip(
      tr("Each row is softmax(concentration · Gaussian noise): 0 gives the uniform pattern, larger values peakier rows"));
  form->addRow(tr("Concentration"), concentrationSpin_);
  return page;
}

/// Source::Drawn: how to draw, and the reset button.
QWidget* BottleneckLab::buildDrawnPage() {
  auto* page = new QWidget(sourcePages_);
  auto* box = new QVBoxLayout(page);
  box->setContentsMargins(0, 0, 0, 0);
  box->addWidget(wrapped(tr("Click an entry of the target P (bottom left) to raise it, right-click to lower it, drag "
                            "to paint. Each row is renormalised to sum to 1."),
                         page));
  resetButton_ = new QPushButton(tr("Reset to uniform"), page);
  resetButton_->setToolTip(tr("Start again from the uniform pattern (every entry 1/N)"));
  box->addWidget(resetButton_, 0, Qt::AlignLeft);
  return page;
}

/// Source::Run: the map, its smoothing and a note on its zeros.
QWidget* BottleneckLab::buildRunPage() {
  auto* page = new QWidget(sourcePages_);
  auto* form = new QFormLayout(page);
  form->setContentsMargins(0, 0, 0, 0);
  mapBox_ = new QComboBox(page);
  mapBox_->setToolTip(tr("Which attention map of the current run (its probe's maps, per layer and head)"));
  mapBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  mapBox_->setMinimumContentsLength(14);
  form->addRow(tr("Map"), mapBox_);
  auto* smoothRow = new QHBoxLayout;
  smoothCheck_ = new QCheckBox(tr("Smooth zeros, ε ="), page);
  smoothCheck_->setToolTip(
      tr("Use P_ε = (1 − ε)·P + ε/N: rows still sum to 1, every entry becomes ≥ ε/N > 0 and none moves by more "
         "than ε. Needed for causal maps: a softmax of finite logits is never exactly 0."));
  epsilonSpin_ = new QDoubleSpinBox(page);
  epsilonSpin_->setDecimals(6);
  epsilonSpin_->setRange(1e-6, 0.5);
  epsilonSpin_->setSingleStep(1e-3);
  epsilonSpin_->setValue(1e-3);
  epsilonSpin_->setToolTip(smoothCheck_->toolTip());
  smoothRow->addWidget(smoothCheck_);
  smoothRow->addWidget(epsilonSpin_, 1);
  form->addRow(smoothRow);
  mapNote_ = wrapped(QString(), page);
  form->addRow(mapNote_);
  return page;
}

/// The fit group: the head-size range, Fit and Cancel, the status line.
QGroupBox* BottleneckLab::buildFitBox(QWidget* controls) {
  auto* fitBox = new QGroupBox(tr("Fit one head of size d_p"), controls);
  auto* fitLayout = new QVBoxLayout(fitBox);
  auto* range = new QHBoxLayout;
  range->addWidget(new QLabel(tr("d_p from"), fitBox));
  fromSpin_ = new QSpinBox(fitBox);
  fromSpin_->setRange(1, 4 * kMaxTokens);
  fromSpin_->setValue(1);
  fromSpin_->setToolTip(tr("Smallest head size to fit"));
  range->addWidget(fromSpin_);
  range->addWidget(new QLabel(tr("to"), fitBox));
  toSpin_ = new QSpinBox(fitBox);
  toSpin_->setRange(1, 4 * kMaxTokens);
  toSpin_->setValue(13);
  toSpin_->setToolTip(tr("Largest head size to fit (default N + 1, one past the theorem's d_p = N)"));
  range->addWidget(toSpin_);
  range->addStretch(1);
  fitLayout->addLayout(range);
  auto* buttons = new QHBoxLayout;
  fitButton_ = new QPushButton(tr("Fit"), fitBox);
  fitButton_->setDefault(true);
  fitButton_->setToolTip(
      tr("For each d_p, fit softmax(U·Vᵀ) with U, V of N × d_p to P (L-BFGS on the mean row KL, on a worker thread)"));
  cancelButton_ = new QPushButton(tr("Cancel"), fitBox);
  cancelButton_->setToolTip(tr("Stop waiting for the running fit (its answer is dropped)"));
  cancelButton_->setEnabled(false);
  buttons->addWidget(fitButton_);
  buttons->addWidget(cancelButton_);
  buttons->addStretch(1);
  fitLayout->addLayout(buttons);
  status_ = wrapped(tr("Press Fit to fit every head size."), fitBox);
  fitLayout->addWidget(status_);
  return fitBox;
}

/// The results column: the error plot, the threshold text, the d_p chooser, target and fit.
QWidget* BottleneckLab::buildResults() {
  auto* results = new QWidget(this);
  auto* right = new QVBoxLayout(results);
  right->setContentsMargins(0, 0, 0, 0);
  plot_ = new viz::LinePlot(results);
  plot_->setExportName(QStringLiteral("bottleneck_error"));
  plot_->setAxisTitles(tr("head size d_p"), tr("best error (log scale)"));
  plot_->setLogY(true);
  plot_->setLogFloor(1e-16);
  plot_->setIntegerX(true);
  plot_->setEmptyMessage(tr("Press Fit: the best error of one head of each size d_p is drawn here"));
  plot_->setToolTip(tr("Max |fitted − P| over the entries and the mean row KL(P ‖ fitted) of the best head of each "
                       "size; exact fits (error 0) are drawn at 1e-16"));
  plot_->setMinimumHeight(220);
  threshold_ = wrapped(QString(), results);
  threshold_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  threshold_->setMinimumHeight(threshold_->fontMetrics().height() * 3);
  auto* shownRow = new QHBoxLayout;
  shownRow->addWidget(new QLabel(tr("Show the fit of d_p ="), results));
  shownSpin_ = new QSpinBox(results);
  shownSpin_->setRange(1, 1);
  shownSpin_->setToolTip(tr("The head size whose fitted pattern is shown beside the target"));
  shownSlider_ = new QSlider(Qt::Horizontal, results);
  shownSlider_->setRange(1, 1);
  shownSlider_->setToolTip(shownSpin_->toolTip());
  shownRow->addWidget(shownSpin_);
  shownRow->addWidget(shownSlider_, 1);
  auto* maps = new QHBoxLayout;
  targetView_ = new viz::MatrixHeatmap(results);
  fittedView_ = new viz::MatrixHeatmap(results);
  targetView_->setExportName(QStringLiteral("bottleneck_target"));
  fittedView_->setExportName(QStringLiteral("bottleneck_fit"));
  for (viz::MatrixHeatmap* view : {targetView_, fittedView_}) {
    view->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0, 1);
    view->setAxisTitles(tr("key m"), tr("query n"));
    view->setMinimumSize(220, 220);
    maps->addWidget(view, 1);
  }
  fittedView_->clear(tr("The fitted pattern of the chosen d_p appears here after a fit"));
  right->addWidget(plot_, 5);
  right->addWidget(threshold_);
  right->addLayout(shownRow);
  right->addLayout(maps, 6);
  return results;
}

/// The controls' signals: the target's controls recompute P, the fit's start or drop a fit, the
/// d_p chooser picks the fit shown, clicks and drags on the target draw it.
void BottleneckLab::connectControls() {
  connect(nSpin_, &QSpinBox::valueChanged, this, [this](int n) {
    if (updating_) return;
    setN(n);
  });
  connect(sourceBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    setSource(static_cast<Source>(sourceBox_->currentData().toInt()));
  });
  connect(seedSpin_, &QSpinBox::valueChanged, this, [this] { updateTarget(); });
  connect(concentrationSpin_, &QDoubleSpinBox::valueChanged, this, [this] { updateTarget(); });
  connect(resetButton_, &QPushButton::clicked, this, &BottleneckLab::resetDrawing);
  connect(mapBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) updateTarget();
  });
  connect(smoothCheck_, &QCheckBox::toggled, this, [this] { updateTarget(); });
  connect(epsilonSpin_, &QDoubleSpinBox::valueChanged, this, [this] {
    if (smoothCheck_->isChecked()) updateTarget();
  });
  connect(fitButton_, &QPushButton::clicked, this, [this] { fit(); });
  connect(cancelButton_, &QPushButton::clicked, this, &BottleneckLab::cancel);
  connect(shownSpin_, &QSpinBox::valueChanged, this, [this](int d) { setShownHeadSize(d); });
  connect(shownSlider_, &QSlider::valueChanged, this, [this](int d) { setShownHeadSize(d); });
  connect(targetView_, &viz::MatrixHeatmap::cellClicked, this, [this](int row, int col, Qt::MouseButtons buttons) {
    if (source() != Source::Drawn) return;
    dragButtons_ = buttons;
    if (buttons & Qt::RightButton)
      lowerEntry(row, col);
    else
      raiseEntry(row, col);
  });
  connect(targetView_, &viz::MatrixHeatmap::cellDragged, this, [this](int row, int col) {
    if (source() != Source::Drawn) return;
    if (dragButtons_ & Qt::RightButton)
      lowerEntry(row, col);
    else
      raiseEntry(row, col);
  });
}

// --- target --------------------------------------------------------------------------------

void BottleneckLab::setN(int n) {
  n = std::clamp(n, static_cast<int>(kMinTokens), static_cast<int>(kMaxTokens));
  const int old = static_cast<int>(std::lround(std::sqrt(static_cast<double>(drawn_.size()))));
  {
    const QSignalBlocker block(nSpin_);
    nSpin_->setValue(n);
  }
  if (toSpin_->value() == old + 1 || old == 0) {
    const QSignalBlocker block(toSpin_);
    toSpin_->setValue(n + 1);
  }
  if (old != n) {
    drawn_.assign(static_cast<std::size_t>(n) * n, 1.0 / n);
    updateTarget();
  }
}

void BottleneckLab::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  // A lab opened for the first time shows a curve at once (the default random P of 12 tokens
  // fits in well under a second); the fit runs on a worker thread all the same.
  if (!shownOnce_) {
    shownOnce_ = true;
    if (!curve_ && !busy() && problem_.isEmpty()) QTimer::singleShot(0, this, [this] {
      if (!curve_ && !busy() && problem_.isEmpty()) fit();
    });
  }
}

int BottleneckLab::n() const { return target_.rows() > 0 ? target_.rows() : nSpin_->value(); }

void BottleneckLab::setSource(Source source) {
  {
    const QSignalBlocker block(sourceBox_);
    sourceBox_->setCurrentIndex(sourceBox_->findData(static_cast<int>(source)));
  }
  sourcePages_->setCurrentIndex(static_cast<int>(source));
  nSpin_->setEnabled(source != Source::Run);
  nSpin_->setToolTip(source == Source::Run ? tr("A run's map has its own N (shown here)")
                                           : tr("Tokens N: P is N × N (rows = queries, columns = keys, each row sums to 1)"));
  updateTarget();
}

BottleneckLab::Source BottleneckLab::source() const { return static_cast<Source>(sourceBox_->currentData().toInt()); }

void BottleneckLab::setSeed(std::uint64_t seed) { seedSpin_->setValue(static_cast<int>(std::min<std::uint64_t>(seed, 1'000'000'000))); }

void BottleneckLab::setConcentration(double concentration) { concentrationSpin_->setValue(concentration); }

void BottleneckLab::setRunMaps(const QStringList& names, std::vector<model_core::HostTensor> maps) {
  const QString keep = mapBox_->currentText();
  runNames_ = names;
  runMaps_ = std::move(maps);
  while (runNames_.size() < static_cast<int>(runMaps_.size())) runNames_.append(tr("map %1").arg(runNames_.size()));
  {
    updating_ = true;
    mapBox_->clear();
    for (int i = 0; i < static_cast<int>(runMaps_.size()); ++i) {
      const auto& m = runMaps_[static_cast<std::size_t>(i)];
      mapBox_->addItem(m.rows() > 0 ? tr("%1 (%2 × %3)").arg(runNames_[i]).arg(m.rows()).arg(m.cols()) : runNames_[i]);
      mapBox_->setItemData(i, runNames_[i], Qt::ToolTipRole);
    }
    const int index = mapBox_->findText(keep);
    mapBox_->setCurrentIndex(index >= 0 ? index : (runMaps_.empty() ? -1 : 0));
    updating_ = false;
  }
  if (source() == Source::Run) updateTarget();
}

void BottleneckLab::setRunMap(int index) {
  if (index >= 0 && index < mapBox_->count()) mapBox_->setCurrentIndex(index);
}

void BottleneckLab::setSmoothing(bool on, double epsilon) {
  {
    const QSignalBlocker block(epsilonSpin_);
    epsilonSpin_->setValue(epsilon);
  }
  {
    const QSignalBlocker block(smoothCheck_);
    smoothCheck_->setChecked(on);
  }
  updateTarget();
}

model_core::HostTensor BottleneckLab::smoothed(const model_core::HostTensor& map, double epsilon) {
  model_core::HostTensor out = map;
  const int n = map.rows();
  if (n <= 0 || map.cols() != n) return out;
  for (std::size_t i = 0; i < out.values.size(); ++i)
    out.values[i] = static_cast<float>((1.0 - epsilon) * map.values[i] + epsilon / n);
  return renormalised(out);
}

void BottleneckLab::raiseEntry(int row, int col, double amount) {
  const int size = static_cast<int>(std::lround(std::sqrt(static_cast<double>(drawn_.size()))));
  if (row < 0 || col < 0 || row >= size || col >= size) return;
  double* r = drawn_.data() + static_cast<std::size_t>(row) * size;
  r[col] += amount / size;
  const double sum = std::accumulate(r, r + size, 0.0);
  for (int c = 0; c < size; ++c) r[c] /= sum;
  if (source() == Source::Drawn) updateTarget();
}

void BottleneckLab::lowerEntry(int row, int col) {
  const int size = static_cast<int>(std::lround(std::sqrt(static_cast<double>(drawn_.size()))));
  if (row < 0 || col < 0 || row >= size || col >= size) return;
  double* r = drawn_.data() + static_cast<std::size_t>(row) * size;
  r[col] = std::max(r[col] * 0.5, 1e-6);  // stays strictly positive
  const double sum = std::accumulate(r, r + size, 0.0);
  for (int c = 0; c < size; ++c) r[c] /= sum;
  if (source() == Source::Drawn) updateTarget();
}

void BottleneckLab::resetDrawing() {
  const int n = nSpin_->value();
  drawn_.assign(static_cast<std::size_t>(n) * n, 1.0 / n);
  updateTarget();
}

void BottleneckLab::updateTarget() {
  if (busy()) cancel();
  problem_.clear();
  target_ = {};
  mapNote_->clear();
  const int n = nSpin_->value();
  switch (source()) {
    case Source::Random:
      try {
        target_ = model_core::randomAttentionPattern(n, static_cast<std::uint64_t>(seedSpin_->value()),
                                                     concentrationSpin_->value());
      } catch (const std::exception& e) {
        problem_ = QString::fromUtf8(e.what());
      }
      break;
    case Source::Drawn: {
      if (drawn_.size() != static_cast<std::size_t>(n) * n)  // N changed under a run's map
        drawn_.assign(static_cast<std::size_t>(n) * n, 1.0 / n);
      target_.shape = {n, n};
      target_.values.assign(drawn_.begin(), drawn_.end());
      target_ = renormalised(target_);
      break;
    }
    case Source::Run: {
      const int index = mapBox_->currentIndex();
      if (runMaps_.empty() || index < 0 || index >= static_cast<int>(runMaps_.size())) {
        problem_ = tr("No attention maps from a trained run yet: train or open a run, and its probe's maps are "
                      "offered here.");
        break;
      }
      const auto& map = runMaps_[static_cast<std::size_t>(index)];
      const MapCheck check = checkMap(map, runNames_.value(index), kMinTokens, kMaxTokens);
      if (!check.problem.isEmpty()) {
        problem_ = check.problem;
        break;
      }
      {
        const QSignalBlocker block(nSpin_);
        nSpin_->setValue(map.rows());
      }
      if (check.zeros > 0 && !smoothCheck_->isChecked()) {
        problem_ = tr("This map has %1 zero entries (a causal mask?). A softmax of finite logits is never exactly 0, "
                      "so no head reaches it and the lab refuses it. Tick “Smooth zeros” to fit "
                      "P_ε = (1 − ε)·P + ε/N instead.")
                       .arg(check.zeros);
        mapNote_->setText(tr("%1 zero entries: refused unless smoothed.").arg(check.zeros));
        target_ = map;  // shown, not fitted
        break;
      }
      target_ = check.zeros > 0 || smoothCheck_->isChecked() ? smoothed(map, epsilonSpin_->value()) : renormalised(map);
      if (smoothCheck_->isChecked())
        mapNote_->setText(check.zeros > 0 ? tr("%1 zero entries smoothed: every entry ≥ ε/N = %2.")
                                                .arg(check.zeros)
                                                .arg(number(epsilonSpin_->value() / map.rows()))
                                          : tr("Smoothed with ε = %1 (the map had no zeros).").arg(number(epsilonSpin_->value())));
      break;
    }
  }
  if (toSpin_->value() < fromSpin_->value()) toSpin_->setValue(fromSpin_->value());
  const QString refused = problem_;
  setError(refused);
  fitButton_->setEnabled(refused.isEmpty());
  showTarget();
  clearResults(refused.isEmpty() ? tr("P changed: press Fit.") : tr("Nothing to fit."));
  Q_EMIT targetChanged();
}

void BottleneckLab::showTarget() {
  const int n = target_.rows();
  if (n <= 0) {
    targetView_->clear(problem_.isEmpty() ? tr("No target P") : problem_);
    return;
  }
  const double top = std::max(maxValue(target_.values), 1e-9);
  targetView_->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0, top);
  QString title = tr("target P (%1 × %1)").arg(n);
  if (source() == Source::Drawn) title = tr("target P: click to raise, right-click to lower");
  if (!problem_.isEmpty()) title = tr("this map (refused: it has zeros)");
  targetView_->setMatrix(toDouble(target_.values), n, n, title);
}

void BottleneckLab::clearResults(const QString& why) {
  curve_.reset();
  curveTarget_ = {};
  plot_->clear();
  plot_->setEmptyMessage(tr("Press Fit: the best error of one head of each size d_p is drawn here"));
  fittedView_->clear(tr("The fitted pattern of the chosen d_p appears here after a fit"));
  threshold_->clear();
  if (!busy()) status_->setText(why.isEmpty() ? tr("Press Fit to fit every head size.") : why);
}

// --- fit -----------------------------------------------------------------------------------

void BottleneckLab::setHeadSizeRange(int from, int to) {
  fromSpin_->setValue(from);
  toSpin_->setValue(std::max(from, to));
}

std::vector<int> BottleneckLab::headSizes() const {
  std::vector<int> sizes;
  for (int d = fromSpin_->value(); d <= toSpin_->value(); ++d) sizes.push_back(d);
  return sizes;
}

bool BottleneckLab::fit() {
  if (!problem_.isEmpty() || target_.rows() <= 0) {
    setError(problem_.isEmpty() ? tr("There is no target P to fit.") : problem_);
    return false;
  }
  const std::vector<int> sizes = headSizes();
  if (sizes.empty()) {
    setError(tr("The head-size range is empty: “from” must not exceed “to”."));
    return false;
  }
  setError(QString());
  const std::uint64_t generation = ++generation_;
  latest_->store(generation);
  running_ = generation;
  curveTarget_ = target_;
  startedMs_ = QDateTime::currentMSecsSinceEpoch();
  runningWhat_ = tr("Fitting d_p = %1 … %2 to the %3 × %3 target")
                     .arg(sizes.front())
                     .arg(sizes.back())
                     .arg(target_.rows());
  runOnWorker<BottleneckOutcome>(this, [target = target_, sizes, generation, latest = latest_] {
    BottleneckOutcome out;
    out.generation = generation;
    if (latest->load() != generation) {  // superseded or cancelled before it started
      out.skipped = true;
      return out;
    }
    QElapsedTimer timer;
    timer.start();
    try {
      out.curve = model_core::fitLowRankBottleneck(target, sizes);
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    out.seconds = timer.elapsed() / 1000.0;
    return out;
  }, [this](const BottleneckOutcome& outcome) { finished(outcome); });
  cancelButton_->setEnabled(true);
  fitButton_->setText(tr("Fit again"));
  progressTimer_->start();
  updateProgress();
  return true;
}

void BottleneckLab::cancel() {
  if (!busy()) return;
  ++generation_;
  latest_->store(generation_);
  running_ = 0;
  progressTimer_->stop();
  cancelButton_->setEnabled(false);
  fitButton_->setText(tr("Fit"));
  status_->setText(tr("Cancelled: the fit's answer will be ignored."));
}

void BottleneckLab::updateProgress() {
  if (!busy()) return;
  const double s = (QDateTime::currentMSecsSinceEpoch() - startedMs_) / 1000.0;
  status_->setText(tr("%1 … %2 s (the window stays usable; Cancel or a new Fit drops it)").arg(runningWhat_).arg(s, 0, 'f', 1));
}

void BottleneckLab::finished(const BottleneckOutcome& outcome) {
  if (outcome.generation != running_) return;  // superseded or cancelled: dropped
  running_ = 0;
  progressTimer_->stop();
  cancelButton_->setEnabled(false);
  fitButton_->setText(tr("Fit"));
  if (!outcome.error.isEmpty() || !outcome.curve) {
    setError(tr("The fit failed: %1").arg(outcome.error));
    status_->setText(tr("No curve."));
    return;
  }
  curve_ = outcome.curve;
  status_->setText(tr("Fitted %1 head sizes in %2 s.").arg(curve_->points.size()).arg(outcome.seconds, 0, 'f', 2));
  showCurve();
  Q_EMIT fitted();
  Q_EMIT labDone();
}

int BottleneckLab::thresholdFound() const {
  if (!curve_) return -1;
  int best = -1;
  for (const auto& p : curve_->points)
    if (p.error < kExactError && (best < 0 || p.head_size < best)) best = p.head_size;
  return best;
}

QString BottleneckLab::thresholdText() const { return threshold_->text(); }

void BottleneckLab::showCurve() {
  if (!curve_) return;
  const auto& c = *curve_;
  const int n = c.n;
  std::vector<const model_core::BottleneckPoint*> points;
  for (const auto& p : c.points) points.push_back(&p);
  std::stable_sort(points.begin(), points.end(), [](auto* a, auto* b) { return a->head_size < b->head_size; });
  std::vector<double> x, err, kl;
  for (const auto* p : points) {
    if (!x.empty() && x.back() == p->head_size) continue;  // repeats: the first
    x.push_back(p->head_size);
    err.push_back(p->error);
    kl.push_back(p->kl);
  }
  plot_->clear();
  plot_->setSeries(tr("max |fitted − P|"), x, err);
  plot_->setSeries(tr("mean KL(P ‖ fitted), nats"), x, kl);
  plot_->addReferenceLine(n - 1, tr("N − 1 = %1").arg(n - 1));
  plot_->addReferenceLine(n, tr("N = %1").arg(n));
  if (c.required_rank >= 1 && c.required_rank < n - 1)
    plot_->addReferenceLine(c.required_rank, tr("rank(centred log P) = %1").arg(c.required_rank));

  const int found = thresholdFound();
  const int lo = static_cast<int>(x.front()), hi = static_cast<int>(x.back());
  double worstBelow = -1;  // the smallest error below the threshold
  for (const auto* p : points)
    if (found > 0 && p->head_size < found) worstBelow = worstBelow < 0 ? p->error : std::min(worstBelow, p->error);
  threshold_->setText(bottleneck::thresholdExplanation(c, found, lo, hi, worstBelow));

  {
    const QSignalBlocker a(shownSpin_), b(shownSlider_);
    shownSpin_->setRange(lo, hi);
    shownSlider_->setRange(lo, hi);
  }
  // The most telling fit: the largest d_p that does not reach P (or the smallest fitted).
  int shown = lo;
  if (found > lo) shown = found - 1;
  setShownHeadSize(shown);
}

void BottleneckLab::setShownHeadSize(int headSize) {
  {
    const QSignalBlocker a(shownSpin_), b(shownSlider_);
    shownSpin_->setValue(headSize);
    shownSlider_->setValue(headSize);
  }
  showFitted();
}

int BottleneckLab::shownHeadSize() const { return shownSpin_->value(); }

void BottleneckLab::showFitted() {
  if (!curve_) return;
  const int d = shownSpin_->value();
  const model_core::BottleneckPoint* point = nullptr;
  for (const auto& p : curve_->points)
    if (p.head_size == d) {
      point = &p;
      break;
    }
  if (!point || point->fitted.rows() <= 0) {
    fittedView_->clear(tr("No fit for d_p = %1").arg(d));
    return;
  }
  const int n = point->fitted.rows();
  const double top = std::max({maxValue(point->fitted.values), maxValue(curveTarget_.values), 1e-9});
  for (viz::MatrixHeatmap* view : {targetView_, fittedView_})  // one colour scale for both
    view->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0, top);
  fittedView_->setMatrix(toDouble(point->fitted.values), n, n,
                         tr("fitted, d_p = %1: max error %2").arg(d).arg(number(point->error, 2)));
}

}  // namespace tensorscope::app
