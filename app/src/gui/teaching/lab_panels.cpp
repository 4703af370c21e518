#include "gui/teaching/lab_panels.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScrollArea>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

#include "viz/attention_map_grid.h"
#include "viz/line_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/spectrum_plot.h"

namespace tensorscope::app {

namespace {

constexpr const char* kErrorStyle = "color: #d9534f; font-weight: 600;";

QString number(double value, int digits = 3) { return QString::number(value, 'g', digits); }

QString grouped(std::int64_t value) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(value)); }

/// Processes events until `done()` or the timeout.
template <typename F>
bool processUntil(F done, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < timeoutMs) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    if (!done()) QThread::msleep(2);  // leave the cores to the worker
  }
  return done();
}

QLabel* wrapped(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setWordWrap(true);
  return label;
}

QLabel* errorLabel(QWidget* parent) {
  auto* label = wrapped(QString(), parent);
  label->setStyleSheet(QString::fromLatin1(kErrorStyle));
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->hide();
  return label;
}

/// Ends a lab's controls column: the error line, `about` in italics, a stretch; fixes the column's
/// width. Returns the error line.
QLabel* finishControls(QWidget* controls, QVBoxLayout* left, const QString& about) {
  QLabel* error = errorLabel(controls);
  left->addWidget(error);
  auto* note = wrapped(about, controls);
  {
    QFont f = note->font();
    f.setItalic(true);
    note->setFont(f);
  }
  left->addWidget(note);
  left->addStretch(1);
  controls->setMinimumWidth(250);
  controls->setMaximumWidth(330);
  return error;
}

/// The controls column left of the results, which take the remaining width.
void placeSideBySide(QWidget* lab, QWidget* controls, QWidget* results) {
  auto* top = new QHBoxLayout(lab);
  top->addWidget(controls);
  top->addWidget(results, 1);
}

/// Runs `work` on a worker thread (QtConcurrent); `done` gets its Outcome on `owner`'s thread.
/// The watcher is a child of `owner`, so no answer reaches a destroyed owner.
template <typename Outcome, typename Work, typename Done>
void runOnWorker(QObject* owner, Work work, Done done) {
  auto* watcher = new QFutureWatcher<Outcome>(owner);
  QObject::connect(watcher, &QFutureWatcherBase::finished, owner, [watcher, done] {
    const Outcome outcome = watcher->result();
    watcher->deleteLater();
    done(outcome);
  });
  watcher->setFuture(QtConcurrent::run(std::move(work)));
}

double maxValue(const std::vector<float>& values) {
  double m = 0;
  for (float v : values) m = std::max(m, static_cast<double>(v));
  return m;
}

/// Row-stochastic check of a square map: "" when fine, else what is wrong. Also reports zeros.
struct MapCheck {
  QString problem;     ///< refuses the map outright (shape, sign, row sums)
  int zeros = 0;       ///< entries <= 0 (a causal map): refused unless smoothed
};

MapCheck checkMap(const model_core::HostTensor& map, const QString& name) {
  MapCheck out;
  const int n = map.rows();
  if (n <= 0 || map.cols() != n || map.values.size() != static_cast<std::size_t>(n) * n) {
    out.problem = QObject::tr("“%1” is not a square matrix, so it is not an attention pattern.").arg(name);
    return out;
  }
  if (n < BottleneckLab::kMinTokens || n > BottleneckLab::kMaxTokens) {
    out.problem = QObject::tr("“%1” is %2 × %2; the lab fits patterns of %3 to %4 tokens.")
                      .arg(name)
                      .arg(n)
                      .arg(BottleneckLab::kMinTokens)
                      .arg(BottleneckLab::kMaxTokens);
    return out;
  }
  for (int r = 0; r < n; ++r) {
    double sum = 0;
    for (int c = 0; c < n; ++c) {
      const float v = map.values[static_cast<std::size_t>(r) * n + c];
      if (!std::isfinite(v) || v < 0) {
        out.problem = QObject::tr("“%1” has a negative or non-finite entry in row %2: not an attention pattern.").arg(name).arg(r);
        return out;
      }
      if (v <= 0) ++out.zeros;
      sum += v;
    }
    if (std::abs(sum - 1.0) > 1e-3) {
      out.problem = QObject::tr("Row %2 of “%1” sums to %3, not 1: not a softmax over keys.").arg(name).arg(r).arg(sum, 0, 'g', 6);
      return out;
    }
  }
  return out;
}

/// Rows renormalised in float64, stored as float32.
model_core::HostTensor renormalised(const model_core::HostTensor& map) {
  model_core::HostTensor out = map;
  const int n = map.rows();
  for (int r = 0; r < n; ++r) {
    double sum = 0;
    for (int c = 0; c < n; ++c) sum += map.values[static_cast<std::size_t>(r) * n + c];
    if (sum <= 0) continue;
    for (int c = 0; c < n; ++c)
      out.values[static_cast<std::size_t>(r) * n + c] =
          static_cast<float>(map.values[static_cast<std::size_t>(r) * n + c] / sum);
  }
  return out;
}

std::vector<double> toDouble(const std::vector<float>& values) { return {values.begin(), values.end()}; }

/// Slices [count, n, n] into `count` MatrixData.
std::vector<viz::MatrixData> slices(const model_core::HostTensor& t) {
  std::vector<viz::MatrixData> out;
  if (t.shape.size() != 3) return out;
  const int count = static_cast<int>(t.shape[0]), rows = static_cast<int>(t.shape[1]), cols = static_cast<int>(t.shape[2]);
  const std::size_t size = static_cast<std::size_t>(rows) * cols;
  if (t.values.size() != size * static_cast<std::size_t>(count)) return out;
  for (int i = 0; i < count; ++i) {
    viz::MatrixData m;
    m.rows = rows;
    m.cols = cols;
    m.values.assign(t.values.begin() + static_cast<std::ptrdiff_t>(size * i),
                    t.values.begin() + static_cast<std::ptrdiff_t>(size * (i + 1)));
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

// =============================================================================================
// LabPanel
// =============================================================================================

LabPanel::LabPanel(QWidget* parent) : QWidget(parent) {}

bool LabPanel::waitUntilIdle(int timeoutMs) { return processUntil([this] { return !busy(); }, timeoutMs); }

QString LabPanel::statusText() const { return status_->text(); }
QString LabPanel::errorText() const { return error_->isHidden() ? QString() : error_->text(); }

void LabPanel::setError(const QString& text) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

void LabPanel::setDarkTheme(bool dark) {
  for (viz::PlotWidget* w : findChildren<viz::PlotWidget*>()) w->setDarkTheme(dark);
}

// =============================================================================================
// BottleneckLab
// =============================================================================================

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
  {  // random
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
    sourcePages_->addWidget(page);
  }
  {  // drawn
    auto* page = new QWidget(sourcePages_);
    auto* box = new QVBoxLayout(page);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(wrapped(tr("Click an entry of the target P (bottom left) to raise it, right-click to lower it, drag "
                              "to paint. Each row is renormalised to sum to 1."),
                           page));
    resetButton_ = new QPushButton(tr("Reset to uniform"), page);
    resetButton_->setToolTip(tr("Start again from the uniform pattern (every entry 1/N)"));
    box->addWidget(resetButton_, 0, Qt::AlignLeft);
    sourcePages_->addWidget(page);
  }
  {  // run
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
    sourcePages_->addWidget(page);
  }
  targetForm->addRow(sourcePages_);
  left->addWidget(targetBox);

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
  left->addWidget(fitBox);
  error_ = finishControls(controls, left,
                          tr("Theorem 1 (Bhojanapalli et al. 2020): one head of size d_p ≥ N can represent any "
                             "attention pattern of N tokens. The lab finds how small d_p can be."));

  // Results
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
  placeSideBySide(this, controls, results);

  progressTimer_ = new QTimer(this);
  progressTimer_->setInterval(200);
  connect(progressTimer_, &QTimer::timeout, this, &BottleneckLab::updateProgress);

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
      const MapCheck check = checkMap(map, runNames_.value(index));
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
  QString text;
  if (found < 0) {
    text = tr("No head size in %1 … %2 reaches P (max error ≥ 1e-6). This P is reproduced exactly from d_p = %3 "
              "(the rank of its row-centred log P); widen the range.")
               .arg(lo)
               .arg(hi)
               .arg(std::max(1, c.required_rank));
  } else if (found == lo && found > 1 && c.required_rank < found) {
    text = tr("Exact (error < 1e-6) already at the smallest size fitted, d_p = %1; start the range lower to see the "
              "threshold (this P needs rank %2).")
               .arg(found)
               .arg(c.required_rank);
  } else {
    text = tr("Threshold found: d_p = %1 (the smallest d_p with max error < 1e-6). ").arg(found);
    if (c.required_rank == n - 1 && found == n - 1)
      text += tr("Exact from d_p = N − 1 = %1: each query row's constant is free (softmax ignores it), so log P "
                 "centred per row has rank ≤ N − 1 and a head of that size reproduces it. Theorem 1's d_p ≥ N = %2 is "
                 "sufficient, not necessary.")
                  .arg(n - 1)
                  .arg(n);
    else if (c.required_rank == 0)
      text += tr("Every row of this P is uniform: log P centred per row is 0, so any head (even zero weights) "
                 "reproduces it. A generic P needs N − 1 = %1.")
                  .arg(n - 1);
    else if (c.required_rank < n - 1)
      text += tr("This P needs only rank %1: log P centred per row has rank %1 < N − 1 = %2 (it is the softmax of "
                 "rank-%1 logits). A generic P needs N − 1 = %2; Theorem 1's d_p ≥ N = %3 is sufficient.")
                  .arg(c.required_rank)
                  .arg(n - 1)
                  .arg(n);
    else
      text += tr("The construction is exact from d_p = %1 (rank of the row-centred log P); the optimiser got below "
                 "1e-6 at d_p = %2.")
                  .arg(c.required_rank)
                  .arg(found);
    if (worstBelow >= 0) text += tr(" Below it the error stays ≥ %1.").arg(number(worstBelow));
  }
  threshold_->setText(text);

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

// =============================================================================================
// StableRankLab
// =============================================================================================

StableRankLab::StableRankLab(QWidget* parent) : LabPanel(parent) { buildUi(); }

StableRankLab::~StableRankLab() = default;

void StableRankLab::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (!shownOnce_) {
    shownOnce_ = true;
    if (!result_ && !busy()) QTimer::singleShot(0, this, [this] {
      if (!result_ && !busy()) generate();
    });
  }
}

void StableRankLab::buildUi() {
  auto* controls = new QWidget(this);
  auto* left = new QVBoxLayout(controls);
  left->setContentsMargins(0, 0, 0, 0);
  auto* sizes = new QGroupBox(tr("Sizes"), controls);
  auto* form = new QFormLayout(sizes);
  auto spin = [&](int lo, int hi, int value, const QString& tip) {
    auto* s = new QSpinBox(sizes);
    s->setRange(lo, hi);
    s->setValue(value);
    s->setToolTip(tip);
    return s;
  };
  fSpin_ = spin(1, 1024, 32, tr("Model width F (the input x is N × F)"));
  hSpin_ = spin(1, 64, 4, tr("Heads H of the THSA layer (R = H·D channels)"));
  dSpin_ = spin(1, 64, 4, tr("Head size D, shared by THSA and the MHSA it is compared with"));
  nSpin_ = spin(2, 64, 8, tr("Tokens N of the random input: each map is N × N"));
  form->addRow(tr("Width F"), fSpin_);
  form->addRow(tr("Heads H"), hSpin_);
  form->addRow(tr("Head size D"), dSpin_);
  form->addRow(tr("Tokens N"), nSpin_);
  left->addWidget(sizes);

  auto* coreBox = new QGroupBox(tr("Core C"), controls);
  auto* coreForm = new QFormLayout(coreBox);
  auto* rankRow = new QHBoxLayout;
  rankSpin_ = new QDoubleSpinBox(coreBox);
  rankSpin_->setDecimals(2);
  rankSpin_->setSingleStep(0.25);
  rankSpin_->setRange(1.0, 16.0);
  rankSpin_->setValue(2.0);
  rankSpin_->setToolTip(tr("Stable rank ‖C‖²_F / ‖C‖²₂ of the generated C, from 1 (rank one) to R (orthogonal)"));
  rankSlider_ = new QSlider(Qt::Horizontal, coreBox);
  rankSlider_->setRange(100, 1600);
  rankSlider_->setValue(200);
  rankSlider_->setToolTip(rankSpin_->toolTip());
  rankRow->addWidget(rankSpin_);
  rankRow->addWidget(rankSlider_, 1);
  coreForm->addRow(tr("Stable rank"), rankRow);
  shapeBox_ = new QComboBox(coreBox);
  shapeBox_->addItem(tr("flat"), static_cast<int>(model_core::SpectrumShape::Flat));
  shapeBox_->addItem(tr("geometric"), static_cast<int>(model_core::SpectrumShape::Geometric));
  shapeBox_->setToolTip(tr("Flat: σ₁ = 1 and every other σ equal. Geometric: σᵢ = ρ^(i−1). Both reach the same "
                           "stable rank."));
  coreForm->addRow(tr("Spectrum"), shapeBox_);
  seedSpin_ = new QSpinBox(coreBox);
  seedSpin_->setRange(0, 1'000'000'000);
  seedSpin_->setValue(1);
  seedSpin_->setToolTip(tr("Seed of C's random singular vectors, the input and the weights"));
  coreForm->addRow(tr("Seed"), seedSpin_);
  gainSpin_ = new QDoubleSpinBox(coreBox);
  gainSpin_->setRange(0.1, 20.0);
  gainSpin_->setSingleStep(0.5);
  gainSpin_->setValue(4.0);
  gainSpin_->setToolTip(tr("Multiplies the q and k weights of both layers: 1 is the modules' own init (nearly uniform "
                           "maps); larger values give sharper maps"));
  coreForm->addRow(tr("q·k gain"), gainSpin_);
  auto* buttons = new QVBoxLayout;
  generateButton_ = new QPushButton(tr("Generate C"), coreBox);
  generateButton_->setToolTip(tr("A random C with exactly this stable rank (random orthogonal U, V; σ as chosen)"));
  designButton_ = new QPushButton(tr("Use the design's C"), coreBox);
  designButton_->setToolTip(tr("The core C of the current design (its H and D)"));
  designButton_->setEnabled(false);
  buttons->addWidget(generateButton_);
  buttons->addWidget(designButton_);
  coreForm->addRow(buttons);
  liveCheck_ = new QCheckBox(tr("Update as the controls change"), coreBox);
  liveCheck_->setChecked(true);
  liveCheck_->setToolTip(tr("Recompute a moment after any control changes"));
  coreForm->addRow(liveCheck_);
  left->addWidget(coreBox);
  status_ = wrapped(QString(), controls);
  left->addWidget(status_);
  error_ = finishControls(controls, left,
                          tr("Tuformer: THSA's core C mixes the R = H·D channels; an MHSA layer is THSA with a "
                             "block-diagonal C of stable rank H. A C of stable rank s behaves like about round(s) "
                             "heads."));

  auto* results = new QWidget(this);
  auto* grid = new QGridLayout(results);
  grid->setContentsMargins(0, 0, 0, 0);
  coreView_ = new viz::MatrixHeatmap(results);
  coreView_->setExportName(QStringLiteral("stable_rank_lab_core"));
  coreView_->setMinimumSize(240, 200);
  coreView_->clear(tr("Generate C (left) or use the design's C"));
  spectrum_ = new viz::SpectrumPlot(results);
  spectrum_->setExportName(QStringLiteral("stable_rank_lab_spectrum"));
  spectrum_->setMinimumSize(240, 200);
  thsaTitle_ = new QLabel(tr("THSA maps"), results);
  mhsaTitle_ = new QLabel(tr("MHSA maps"), results);
  for (QLabel* title : {thsaTitle_, mhsaTitle_}) {
    QFont f = title->font();
    f.setBold(true);
    title->setFont(f);
    title->setWordWrap(true);
  }
  thsaMaps_ = new viz::AttentionMapGrid(results);
  mhsaMaps_ = new viz::AttentionMapGrid(results);
  thsaMaps_->setExportName(QStringLiteral("stable_rank_lab_thsa_maps"));
  mhsaMaps_->setExportName(QStringLiteral("stable_rank_lab_mhsa_maps"));
  for (viz::AttentionMapGrid* g : {thsaMaps_, mhsaMaps_}) {
    g->setMaxColumns(8);
    g->setMinimumSize(240, 200);
    g->clear(tr("The maps appear after Generate C"));
  }
  thsaMaps_->setToolTip(tr("The THSA layer's R per-channel maps on a random input (click one to enlarge)"));
  mhsaMaps_->setToolTip(tr("The MHSA layer with H′ = round(stable rank) heads on the same input"));
  readout_ = wrapped(QString(), results);
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  readout_->setMinimumHeight(readout_->fontMetrics().height() * 3);
  grid->addWidget(coreView_, 0, 0);
  grid->addWidget(spectrum_, 0, 1);
  grid->addWidget(thsaTitle_, 1, 0);
  grid->addWidget(mhsaTitle_, 1, 1);
  grid->addWidget(thsaMaps_, 2, 0);
  grid->addWidget(mhsaMaps_, 2, 1);
  grid->addWidget(readout_, 3, 0, 1, 2);
  grid->setRowStretch(0, 3);
  grid->setRowStretch(2, 7);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  placeSideBySide(this, controls, results);

  liveTimer_ = new QTimer(this);
  liveTimer_->setSingleShot(true);
  liveTimer_->setInterval(150);
  connect(liveTimer_, &QTimer::timeout, this, [this] {
    if (coreSource_ == CoreSource::Design && hasDesignCore() && H() == designH_ && D() == designD_)
      useDesignCore();
    else
      generate();
  });
  auto live = [this] {
    if (!updating_ && liveCheck_->isChecked()) liveTimer_->start();
  };
  for (QSpinBox* s : {fSpin_, hSpin_, dSpin_, nSpin_}) connect(s, &QSpinBox::valueChanged, this, [this] { sizesChanged(); });
  connect(rankSpin_, &QDoubleSpinBox::valueChanged, this, [this, live](double v) {
    {
      const QSignalBlocker block(rankSlider_);
      rankSlider_->setValue(static_cast<int>(std::lround(v * 100)));
    }
    if (!updating_) coreSource_ = CoreSource::Generated;
    live();
  });
  connect(rankSlider_, &QSlider::valueChanged, this, [this](int v) { rankSpin_->setValue(v / 100.0); });
  connect(shapeBox_, &QComboBox::currentIndexChanged, this, [this, live] {
    coreSource_ = CoreSource::Generated;
    live();
  });
  connect(seedSpin_, &QSpinBox::valueChanged, this, live);
  connect(gainSpin_, &QDoubleSpinBox::valueChanged, this, live);
  connect(generateButton_, &QPushButton::clicked, this, [this] { generate(); });
  connect(designButton_, &QPushButton::clicked, this, [this] { useDesignCore(); });
  updating_ = true;  // nothing runs before the lab is shown (showEvent) or asked
  sizesChanged();
  updating_ = false;
}

void StableRankLab::sizesChanged() {
  const int r = R();
  {
    const QSignalBlocker a(rankSpin_), b(rankSlider_);
    rankSpin_->setMaximum(std::max(1, r));
    rankSlider_->setMaximum(std::max(100, 100 * r));
    rankSlider_->setValue(static_cast<int>(std::lround(rankSpin_->value() * 100)));
  }
  if (coreSource_ == CoreSource::Design && (H() != designH_ || D() != designD_)) coreSource_ = CoreSource::Generated;
  if (r > 256)
    setError(tr("R = H·D = %1 is above the lab's 256 channels.").arg(r));
  else
    setError(QString());
  if (!updating_ && liveCheck_->isChecked()) liveTimer_->start();
}

void StableRankLab::setSizes(int F, int H, int D, int N) {
  updating_ = true;
  fSpin_->setValue(F);
  hSpin_->setValue(H);
  dSpin_->setValue(D);
  nSpin_->setValue(N);
  updating_ = false;
  sizesChanged();
  liveTimer_->stop();
}

int StableRankLab::F() const { return fSpin_->value(); }
int StableRankLab::H() const { return hSpin_->value(); }
int StableRankLab::D() const { return dSpin_->value(); }
int StableRankLab::N() const { return nSpin_->value(); }

void StableRankLab::setTargetStableRank(double stableRank) {
  rankSpin_->setValue(std::clamp(stableRank, 1.0, static_cast<double>(std::max(1, R()))));
  coreSource_ = CoreSource::Generated;
  liveTimer_->stop();
}

double StableRankLab::targetStableRank() const { return rankSpin_->value(); }

void StableRankLab::setShape(model_core::SpectrumShape shape) {
  shapeBox_->setCurrentIndex(shapeBox_->findData(static_cast<int>(shape)));
  liveTimer_->stop();
}

void StableRankLab::setSeed(std::uint64_t seed) {
  seedSpin_->setValue(static_cast<int>(std::min<std::uint64_t>(seed, 1'000'000'000)));
  liveTimer_->stop();
}

void StableRankLab::setQkGain(double gain) {
  gainSpin_->setValue(gain);
  liveTimer_->stop();
}

void StableRankLab::setCore(const model_core::HostTensor& core, int H, int D) {
  const int r = H * D;
  if (core.rows() <= 0 || H <= 0 || D <= 0 || core.rows() != r || core.cols() != r) {
    designCore_ = {};
    designH_ = designD_ = 0;
    designButton_->setEnabled(false);
    designButton_->setToolTip(core.shape.empty() ? tr("The current design has no core C (not a THSA layer)")
                                                 : tr("The design's C is not (H·D) × (H·D)"));
    if (coreSource_ == CoreSource::Design) coreSource_ = CoreSource::Generated;
    return;
  }
  designCore_ = core;
  designH_ = H;
  designD_ = D;
  designButton_->setEnabled(true);
  designButton_->setToolTip(tr("The core C of the current design: H = %1, D = %2, R = %3").arg(H).arg(D).arg(r));
  if (coreSource_ == CoreSource::Design && liveCheck_->isChecked() && result_) liveTimer_->start();
}

bool StableRankLab::generate() {
  liveTimer_->stop();
  coreSource_ = CoreSource::Generated;
  return start({}, false, rankSpin_->value());
}

bool StableRankLab::useDesignCore() {
  liveTimer_->stop();
  if (!hasDesignCore()) {
    setError(tr("The current design has no core C to use."));
    return false;
  }
  updating_ = true;
  hSpin_->setValue(designH_);
  dSpin_->setValue(designD_);
  updating_ = false;
  sizesChanged();
  liveTimer_->stop();
  coreSource_ = CoreSource::Design;
  return start(designCore_, true, 0);
}

bool StableRankLab::start(const model_core::HostTensor& core, bool designCore, double targetStableRank) {
  const int r = R(), n = N();
  if (r > 256) {
    setError(tr("R = H·D = %1 is above the lab's 256 channels.").arg(r));
    return false;
  }
  if (static_cast<double>(r) * n * n > double(1 << 24)) {
    setError(tr("R·N² = %1 is too large for the lab (at most 2^24).").arg(static_cast<double>(r) * n * n));
    return false;
  }
  setError(QString());
  model_core::StableRankLabInput input;
  input.F = F();
  input.H = H();
  input.D = D();
  input.N = n;
  input.core = core;
  input.seed = static_cast<std::uint64_t>(seedSpin_->value());
  input.qk_gain = gainSpin_->value();
  const auto shape = static_cast<model_core::SpectrumShape>(shapeBox_->currentData().toInt());
  const std::uint64_t generation = ++generation_;
  running_ = generation;
  status_->setText(tr("Computing…"));
  runOnWorker<StableRankOutcome>(this, [input, designCore, targetStableRank, shape, generation]() mutable {
    StableRankOutcome out;
    out.generation = generation;
    out.designCore = designCore;
    out.targetStableRank = targetStableRank;
    try {
      if (!designCore)
        input.core = model_core::coreWithStableRank(input.H * input.D, targetStableRank, input.seed, shape);
      out.result = model_core::stableRankLab(input);
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    return out;
  }, [this](const StableRankOutcome& outcome) { finished(outcome); });
  return true;
}

void StableRankLab::finished(const StableRankOutcome& outcome) {
  if (outcome.generation != running_) return;  // a newer request is on its way
  running_ = 0;
  if (!outcome.error.isEmpty() || !outcome.result) {
    setError(tr("The lab failed: %1").arg(outcome.error));
    status_->clear();
    return;
  }
  result_ = outcome.result;
  resultTarget_ = outcome.designCore ? 0.0 : outcome.targetStableRank;
  status_->setText(outcome.designCore ? tr("Showing the design's C.") : tr("Showing a generated C."));
  showResult();
  Q_EMIT labDone();
}

void StableRankLab::showResult() {
  if (!result_) return;
  const auto& r = *result_;
  const int R = r.R, Hp = r.mhsa_heads, D = r.mhsa_head_size;
  coreView_->setColourScale(viz::MatrixHeatmap::ColourScale::Diverging);
  {
    std::vector<double> c = r.thsa_spec.core ? r.thsa_spec.core->dense_values : std::vector<double>();
    if (c.size() != static_cast<std::size_t>(R) * R) c.assign(static_cast<std::size_t>(R) * R, 0.0);
    coreView_->setMatrix(c, R, R, tr("core C (%1 × %1), stable rank %2").arg(R).arg(r.stable_rank, 0, 'f', 2));
  }
  viz::CoreSpectrum spectrum;
  spectrum.layer = 0;
  spectrum.singular_values = r.singular_values;
  spectrum.stable_rank = r.stable_rank;
  spectrum_->setSpectra({spectrum});
  spectrum_->setHeads(Hp);

  QStringList tokens;
  const int n = static_cast<int>(r.input.shape.size() == 3 ? r.input.shape[1] : 0);
  for (int i = 0; i < n; ++i) tokens << QString::number(i);
  const int designH = r.thsa_spec.sizes.H;
  thsaMaps_->setGroupSize(std::max(1, R / std::max(1, designH)));
  // One grid row per head when it fits: row h holds head h's D channels, beside MHSA's map h.
  thsaMaps_->setMaxColumns(D >= 2 && D <= 8 ? D : 8);
  thsaMaps_->setAggregation(viz::AttentionMapGrid::Aggregation::PerChannel);
  thsaMaps_->setProbeName(tr("x ~ N(0, 1)"));
  thsaMaps_->setMaps({slices(r.thsa_maps)}, tokens);
  mhsaMaps_->setGroupSize(1);
  mhsaMaps_->setProbeName(tr("x ~ N(0, 1)"));
  mhsaMaps_->setMaps({slices(r.mhsa_maps)}, tokens);
  thsaTitle_->setText(tr("THSA, dense C: %1 channel maps (H = %2 heads × D = %3)").arg(R).arg(designH).arg(D));
  mhsaTitle_->setText(tr("MHSA: H′ = %1 head map%2 of size D = %3").arg(Hp).arg(Hp == 1 ? "" : "s").arg(D));

  const double ratio = r.mhsa_parameters > 0 ? static_cast<double>(r.thsa_parameters) / r.mhsa_parameters : 0.0;
  const int F = r.thsa_spec.sizes.F;
  QString text = tr("Stable rank ‖C‖²_F / ‖C‖²₂ = %1").arg(r.stable_rank, 0, 'f', 3);
  if (resultTarget_ > 0) text += tr(" (asked %1)").arg(resultTarget_, 0, 'f', 2);
  else text += tr(" (the design's C)");
  text += tr("  →  H′ = round(%1) = %2 MHSA heads of size D = %3.\n").arg(r.stable_rank, 0, 'f', 3).arg(Hp).arg(D);
  // (R² is spelled out: a superscript digit right after %2 would be read as part of the number.)
  text += tr("Parameters: THSA 4·F·R + R² = 4·%1·%2 + %3 = %4  ·  MHSA 4·F·H′·D = 4·%1·%5·%6 = %7  ·  "
             "THSA / MHSA = %8×\n")
              .arg(F)
              .arg(R)
              .arg(QString::number(R) + QStringLiteral("²"))
              .arg(grouped(r.thsa_parameters))
              .arg(Hp)
              .arg(D)
              .arg(grouped(r.mhsa_parameters))
              .arg(ratio, 0, 'f', 2);
  text += tr("Forward FLOPs (batch 1, N = %1): THSA %2  ·  MHSA %3")
              .arg(n)
              .arg(grouped(static_cast<std::int64_t>(r.thsa_cost.forward_flops)))
              .arg(grouped(static_cast<std::int64_t>(r.mhsa_cost.forward_flops)));
  if (resultTarget_ > 0 && !r.singular_values.empty())
    text += tr("\nThis C has ‖C‖₂ = σ₁ = %1 (the mhsa preset's is √H·D = %2), so THSA's logits are smaller than "
               "MHSA's and its maps flatter; the q·k gain sharpens both.")
                .arg(r.singular_values.front(), 0, 'g', 3)
                .arg(std::sqrt(static_cast<double>(designH)) * D, 0, 'g', 3);
  readout_->setText(text);
}

QString StableRankLab::readoutText() const { return readout_->text(); }

}  // namespace tensorscope::app
