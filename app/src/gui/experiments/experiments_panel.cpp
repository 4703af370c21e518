#include "gui/experiments/experiments_panel.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTabWidget>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <map>

#include "gui/document/app_paths.h"
#include "model_core/sweep.h"
#include "model_core/sweep_report_text.h"
#include "sweeps/slurm_client.h"
#include "viz/difference_plot.h"

namespace tensorscope::app {
namespace {

/// The report figure, scaled to the widget with its aspect ratio kept.
class SvgView : public QWidget {
 public:
  SvgView() { setMinimumHeight(120); }
  void setSvg(const QString& svg) {
    renderer_.load(svg.toUtf8());
    update();
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    if (!renderer_.isValid()) return;
    QSizeF s = renderer_.defaultSize();
    s.scale(size(), Qt::KeepAspectRatio);
    renderer_.render(&p, QRectF(QPointF((width() - s.width()) / 2, (height() - s.height()) / 2), s));
  }

 private:
  QSvgRenderer renderer_;
};

QString number(double v, int digits) { return QString::number(v, 'f', digits); }

QTableWidgetItem* cell(const QString& text, bool right = false) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  if (right) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

SweepSnapshot readSnapshot(const model_core::SweepPlan& plan) {
  SweepSnapshot s;
  try {
    s.report = model_core::buildReport(plan);
    std::string note;  // (no squeue here: the files alone tell the states)
    s.slurm = sweeps::slurmQueue(plan.dir, note);
    // With equal parameters (or any axis), the axis tells the designs apart better than parameters.
    const std::string x = plan.sweep.axes.empty() ? "parameters" : plan.sweep.axes.front().name;
    s.svg = QString::fromStdString(model_core::reportFigureSvg(plan, s.report, x));
  } catch (const std::exception& e) {
    s.error = QString::fromStdString(e.what());
  }
  return s;
}

}  // namespace

ExperimentsPanel::ExperimentsPanel(QWidget* parent) : QWidget(parent) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  auto* open = new QPushButton("Open sweep…");
  open->setToolTip("Open a sweep directory made by 'tensorscope sweep plan' (docs/sweeps.md)");
  path_ = new QLabel("No sweep open: plan a sweep file here, or open a folder planned with tensorscope sweep plan");
  path_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  path_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* planFile = new QPushButton("Plan a sweep file…");
  planFile->setObjectName("planSweepFile");
  planFile->setToolTip("Plan a sweep file (the shipped ones, or your own) into a folder of your data and open it: "
                       "what 'tensorscope sweep plan FILE --out DIR' does");
  top->addWidget(open);
  top->addWidget(planFile);
  top->addWidget(path_, 1);
  column->addLayout(top);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel("Jobs"));
  jobs_ = new QSpinBox;
  jobs_->setRange(1, std::max(1, QThread::idealThreadCount()));
  jobs_->setValue(std::max(1, QThread::idealThreadCount() / 2));
  jobs_->setToolTip("Trials trained at once; they share the cores");
  controls->addWidget(jobs_);
  run_ = new QPushButton("Run pending trials");
  run_->setObjectName("runSweep");
  stop_ = new QPushButton("Stop");
  stop_->setObjectName("stopSweep");
  stop_->setToolTip("Every running trial stops at a checkpoint; Run resumes them");
  controls->addWidget(run_);
  controls->addWidget(stop_);
  summary_ = new QLabel;
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  controls->addWidget(summary_, 1);
  column->addLayout(controls);

  auto* split = new QSplitter(Qt::Horizontal);
  auto* tables = new QSplitter(Qt::Vertical);
  designs_ = new QTableWidget(0, 6);
  designs_->setHorizontalHeaderLabels({"Design", "Attention params", "Seeds", "Metric (mean ± std)", "Best", "Tokens/s"});
  trials_ = new QTableWidget(0, 6);
  trials_->setHorizontalHeaderLabels({"Trial", "State", "Step", "Metric", "Seconds", "Where"});
  trials_->setToolTip("Double-click a trial to open its run (curves, C, maps)");
  for (QTableWidget* t : {designs_, trials_}) {
    t->verticalHeader()->hide();
    t->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->horizontalHeader()->setStretchLastSection(true);
    tables->addWidget(t);
  }
  split->addWidget(tables);
  figure_ = new SvgView;
  split->addWidget(figure_);
  split->setStretchFactor(0, 3);  // the tables need the width; the figure keeps its aspect
  split->setStretchFactor(1, 2);
  split->setSizes({600, 400});

  // The duel: the verdicts as the report prints them, above their differences against zero.
  auto* duel = new QWidget;
  auto* duelColumn = new QVBoxLayout(duel);
  duelColumn->setContentsMargins(0, 4, 0, 0);
  verdictHeading_ = new QLabel("Open a sweep to compare its designs with their baseline");
  verdictHeading_->setObjectName("verdictHeading");
  verdictHeading_->setWordWrap(true);
  duelColumn->addWidget(verdictHeading_);
  auto* duelSplit = duelSplit_ = new QSplitter(Qt::Vertical);
  verdicts_ = new QTableWidget(0, VColumns);
  verdicts_->setObjectName("verdicts");
  {
    const std::pair<VerdictColumn, const char*> names[] = {
        {VDesign, "Design"},       {VVerdict, "Verdict"},       {VSeeds, "Seeds"},
        {VMean, "Mean ± std"},     {VDifference, "Difference [95% CI]"}, {VHolm, "Holm p"},
        {VBaseline, "Baseline"},   {VCompared, "Seeds compared"}, {VWelch, "Welch p"},
        {VSignFlip, "Sign-flip p"}, {VDecidedBy, "Decided by"},  {VSettle, "Until settled"}};
    QStringList headers(VColumns);
    for (const auto& [column, name] : names) headers[column] = QString::fromUtf8(name);
    verdicts_->setHorizontalHeaderLabels(headers);
  }
  verdicts_->verticalHeader()->hide();
  verdicts_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  verdicts_->setSelectionBehavior(QAbstractItemView::SelectRows);
  verdicts_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  verdicts_->horizontalHeader()->setStretchLastSection(true);
  verdicts_->setColumnHidden(VSettle, true);
  differences_ = new viz::DifferencePlot;
  differences_->setObjectName("sweepDifferences");
  differences_->setToolTip("Each design's difference from its baseline with its 95% confidence interval; the dashed line "
                           "is no difference. Right-click to export (PNG, SVG, PDF, CSV)");
  duelSplit->addWidget(verdicts_);
  duelSplit->addWidget(differences_);
  // A comparison has a few rows; the figure gets the room (it squashed to one line of bars in a
  // 1600 x 1000 window when the table's size hint decided). Sizes, not a minimum height: a minimum
  // would raise the dock's and the window's own (720 px, a laptop screen, DailyTool tests).
  duelSplit->setStretchFactor(0, 2);
  duelSplit->setStretchFactor(1, 3);
  duelSplit->setSizes({120, 240});
  // Fitted to the rows whenever the rows or the dock change (fitDuelSplit); a drag is the user's.
  duelSplit->installEventFilter(this);
  connect(duelSplit, &QSplitter::splitterMoved, this, [this] { duelSplitDragged_ = true; });
  duelColumn->addWidget(duelSplit, 1);
  views_ = new QTabWidget;
  views_->addTab(duel, "Verdicts");
  views_->addTab(split, "Trials and report figure");
  column->addWidget(views_, 1);

  timer_ = new QTimer(this);
  timer_->setInterval(2000);
  connect(timer_, &QTimer::timeout, this, [this] { refresh(); });
  connect(open, &QPushButton::clicked, this, &ExperimentsPanel::openSweepRequested);
  connect(planFile, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, "Plan a sweep file", resourceDirectory("sweeps"),
                                                      "Sweep file (*.json);;All files (*)");
    if (file.isEmpty()) return;
    QString error;
    const QString dir = planSweepFile(file, sweepsDataDirectory(), &error);
    if (dir.isEmpty()) Q_EMIT message("Cannot plan " + file + ": " + error);
  });
  connect(run_, &QPushButton::clicked, this, &ExperimentsPanel::startRun);
  connect(stop_, &QPushButton::clicked, this, &ExperimentsPanel::stopRun);
  connect(&watcher_, &QFutureWatcher<SweepSnapshot>::finished, this, [this] {
    show(watcher_.result());
    if (refreshAgain_) {
      refreshAgain_ = false;
      refresh();
    }
  });
  connect(trials_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    if (!plan_ || row < 0 || row >= static_cast<int>(plan_->trials.size())) return;
    const auto runDir = QString::fromStdString(plan_->runDir(plan_->trials[static_cast<std::size_t>(row)]));
    if (QFileInfo::exists(runDir + "/config.json")) Q_EMIT openRunRequested(runDir);
    else Q_EMIT message("Trial " + QString::fromStdString(plan_->trials[static_cast<std::size_t>(row)].name) +
                        " has not started: no run to open yet");
  });
  process_.setProcessChannelMode(QProcess::MergedChannels);
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus) {
    output_ += process_.readAll();
    const QString tail = QString::fromUtf8(output_).trimmed().section('\n', -1);  // the run's last words
    Q_EMIT message(code == 0 ? "Sweep run ended" : code == 130 ? "Sweep stopped; Run resumes the interrupted trials"
                                                              : "Sweep run ended with status " + QString::number(code) + ": " + tail);
    updateButtons();
    refresh();
  });
  connect(&process_, &QProcess::readyRead, this, [this] {  // progress comes from the files; keep the last words
    output_ += process_.readAll();
    if (output_.size() > 8192) output_ = output_.right(4096);
  });
  updateButtons();
}

ExperimentsPanel::~ExperimentsPanel() {
  if (running()) {  // the trials checkpoint before the window goes
    process_.terminate();
    process_.waitForFinished(30000);
  }
  watcher_.waitForFinished();
}

bool ExperimentsPanel::openSweep(const QString& dir, QString* error) {
  try {
    auto plan = std::make_unique<model_core::SweepPlan>(model_core::readSweepPlan(dir.toStdString()));
    if (running()) stopRun();
    plan_ = std::move(plan);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  path_->setText(QString::fromStdString(plan_->sweep.name) + "  —  " + dir);
  path_->setToolTip(QString::fromStdString(plan_->sweep.description));
  shown_ = {};
  lastVerdicts_.clear();
  timer_->start();
  updateButtons();
  refresh();
  return true;
}

QString ExperimentsPanel::sweepsDataDirectory() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/sweeps";
}

QString ExperimentsPanel::planSweepFile(const QString& file, const QString& intoDir, QString* error) {
  try {
    const auto sweep = model_core::readSweepFile(QFile::encodeName(file).toStdString());
    const auto trials = model_core::expandSweep(sweep);
    // A folder of its own, named by the sweep; a second plan of the same file gets "-2", "-3", …
    QString name;
    for (const QChar c : QString::fromStdString(sweep.name)) name += c.isLetterOrNumber() ? c : QChar('_');
    if (name.isEmpty()) name = "sweep";
    QString dir = QDir(intoDir).filePath(name);
    for (int n = 2; QFileInfo::exists(dir); ++n) dir = QDir(intoDir).filePath(QString("%1-%2").arg(name).arg(n));
    QDir().mkpath(intoDir);
    model_core::writeSweepDirectory(QFile::encodeName(dir).toStdString(), sweep, trials);
    if (!openSweep(dir, error)) return {};
    Q_EMIT message(QString("Planned %1 trials of %2 in %3").arg(trials.size()).arg(QString::fromStdString(sweep.name), dir));
    return dir;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return {};
  }
}

QString ExperimentsPanel::sweepDir() const { return plan_ ? QString::fromStdString(plan_->dir) : QString(); }

void ExperimentsPanel::refresh(bool wait) {
  if (!plan_) return;
  if (watcher_.isRunning()) {
    refreshAgain_ = !wait;
    if (!wait) return;
    watcher_.waitForFinished();
  }
  const model_core::SweepPlan plan = *plan_;
  watcher_.setFuture(QtConcurrent::run([plan] { return readSnapshot(plan); }));
  if (wait) {
    watcher_.waitForFinished();
    show(watcher_.result());
  }
}

void ExperimentsPanel::show(const SweepSnapshot& s) {
  if (!s.error.isEmpty()) {  // the last good snapshot stays shown; the dock itself says why it stopped updating
    summary_->setText("Cannot read the sweep: " + s.error);
    summary_->setToolTip(s.error);
    Q_EMIT message("Cannot read the sweep: " + s.error);
    return;
  }
  summary_->setToolTip({});
  shown_ = s;
  const auto& r = s.report;
  const int digits = r.metric == "loss" ? 4 : 3;
  designs_->setHorizontalHeaderItem(3, new QTableWidgetItem(QString::fromStdString(r.metric + " on " + r.split) +
                                                            (r.higher_is_better ? " ↑" : " ↓") + " (mean ± std)"));
  designs_->setRowCount(static_cast<int>(r.designs.size()));
  for (int i = 0; i < designs_->rowCount(); ++i) {
    const auto& d = r.designs[static_cast<std::size_t>(i)];
    designs_->setItem(i, 0, cell(QString::fromStdString(d.design)));
    designs_->setItem(i, 1, cell(QString::number(d.attention_parameters), true));
    designs_->setItem(i, 2, cell(QString("%1/%2").arg(d.finished).arg(d.trials), true));
    designs_->setItem(i, 3, cell(!d.finished ? "–" : number(d.mean, digits) + " ± " + (d.hasStd() ? number(d.std, digits) : "–"), true));
    designs_->setItem(i, 4, cell(d.finished ? number(d.best_mean, digits) : "–", true));
    designs_->setItem(i, 5, cell(d.finished ? number(d.tokens_per_second, 0) : "–", true));
  }
  trials_->setRowCount(static_cast<int>(r.trials.size()));
  std::map<std::string, int> counts;
  int damaged = 0;
  for (int i = 0; i < trials_->rowCount(); ++i) {
    const auto& [t, st] = r.trials[static_cast<std::size_t>(i)];
    const bool ended = st.state == model_core::TrialState::Finished || st.state == model_core::TrialState::Failed ||
                       st.state == model_core::TrialState::Diverged;
    const auto queued = s.slurm.find(t.index);
    const bool inSlurm = !ended && st.state != model_core::TrialState::Running && queued != s.slurm.end();
    const std::string state = inSlurm ? "queued" : model_core::trialStateName(st.state);
    ++counts[state];
    trials_->setItem(i, 0, cell(QString::fromStdString(t.name)));
    trials_->setItem(i, 1, cell(QString::fromStdString(state)));
    trials_->setItem(i, 2, cell(QString("%1/%2").arg(st.step).arg(t.config.train.steps), true));
    trials_->setItem(i, 3, cell(st.result && st.result->final_metric ? number(*st.result->final_metric, digits) : "–", true));
    trials_->setItem(i, 4, cell(st.result ? number(st.result->wall_seconds, 0) : "–", true));
    trials_->setItem(i, 5, cell(st.result ? QString::fromStdString(st.result->where)
                                : queued != s.slurm.end() ? "slurm " + QString::fromStdString(queued->second)
                                                          : QString()));
    if (!st.damaged.empty()) {  // named here as `sweep status` names it, with the remedy
      ++damaged;
      trials_->item(i, 1)->setToolTip(QString::fromStdString(st.damaged));
      trials_->item(i, 3)->setText("result.json damaged");
    } else if (st.state == model_core::TrialState::Failed && st.result) {
      trials_->item(i, 1)->setToolTip(QString::fromStdString(st.result->message));
    }
  }
  for (QTableWidget* t : {designs_, trials_}) t->resizeColumnsToContents();
  QString text;
  for (const auto& [k, n] : counts) text += (text.isEmpty() ? "" : " · ") + QString::number(n) + " " + QString::fromStdString(k);
  if (damaged)
    text += " · " + QString::number(damaged) + (damaged > 1 ? " damaged results" : " damaged result") + " (hover its state)";
  summary_->setText(text + (running() ? " · running here" : ""));
  static_cast<SvgView*>(figure_)->setSvg(s.svg);
  showVerdicts(r);
  updateButtons();
}

void ExperimentsPanel::showVerdicts(const model_core::SweepReport& r) {
  const auto rows = model_core::reportRowTexts(r);  // the md report's cells, character for character
  verdicts_->setHorizontalHeaderItem(VMean, new QTableWidgetItem(QString::fromStdString(r.metric + " on " + r.split) +
                                                                 (r.higher_is_better ? " ↑" : " ↓") + " (mean ± std)"));
  verdicts_->setColumnHidden(VSettle, !r.settle);
  verdicts_->setRowCount(static_cast<int>(rows.size()));
  const QString rule = QString::fromStdString(model_core::reportDecisionRule(r));
  QStringList changed;
  std::vector<viz::DifferencePlot::Row> bars;
  for (int i = 0; i < verdicts_->rowCount(); ++i) {
    const auto& row = rows[static_cast<std::size_t>(i)];
    const auto& d = r.designs[static_cast<std::size_t>(i)];
    const auto text = [](const std::string& t) { return QString::fromStdString(t); };
    verdicts_->setItem(i, VDesign, cell(text(row.design)));
    verdicts_->setItem(i, VSeeds, cell(text(row.seeds), true));
    verdicts_->setItem(i, VMean, cell(text(row.mean_std), true));
    verdicts_->item(i, VMean)->setToolTip("95% CI of the mean: " + text(row.ci95));
    verdicts_->setItem(i, VBaseline, cell(row.is_baseline ? "(the baseline)" : text(row.baseline)));
    verdicts_->setItem(i, VCompared, cell(text(row.compared_seeds), true));
    verdicts_->setItem(i, VDifference, cell(text(row.difference), true));
    verdicts_->setItem(i, VWelch, cell(text(row.welch_p), true));
    verdicts_->setItem(i, VSignFlip, cell(text(row.sign_flip_p), true));
    verdicts_->setItem(i, VDecidedBy, cell(text(row.decided_by)));
    verdicts_->setItem(i, VHolm, cell(text(row.p_holm), true));
    verdicts_->setItem(i, VVerdict, cell(text(row.verdict)));
    verdicts_->setItem(i, VSettle, cell(text(row.settle)));
    if (!row.compared) continue;
    verdicts_->item(i, VVerdict)->setToolTip(rule);
    const auto& c = *d.comparison;
    QFont f = verdicts_->item(i, VVerdict)->font();
    f.setBold(c.direction != 0);  // an established difference stands out
    verdicts_->item(i, VVerdict)->setFont(f);
    bars.push_back({text(row.design), c.tested, c.difference, c.ci_low, c.ci_high, c.direction, text(row.verdict)});
    // Say what a finished seed changed (the first look at a sweep says nothing).
    const auto last = lastVerdicts_.find(d.design);
    if (last != lastVerdicts_.end() && last->second != row.verdict) changed << text(row.design) + ": " + text(row.verdict);
    lastVerdicts_[d.design] = row.verdict;
  }
  verdicts_->resizeColumnsToContents();
  fitDuelSplit();
  if (bars.empty()) {
    verdictHeading_->setText(r.designs.size() < 2 ? "One design: nothing to compare"
                                                  : "No design has a baseline design to be compared with");
    verdictHeading_->setToolTip({});
    differences_->clear(verdictHeading_->text());
    return;
  }
  const auto& b = *r.baseline;
  verdictHeading_->setText(QString("Each design against its baseline (%1 = %2) on the final %3, %4 is better · alpha = %5%6, "
                                   "Holm over %7 tested comparison%8 · hover a verdict for the rule")
                               .arg(QString::fromStdString(b.axis), QString::fromStdString(b.label),
                                    QString::fromStdString(r.metric), QString(r.higher_is_better ? "higher" : "lower"),
                                    QString::number(r.alpha, 'g', 6), QString(r.settle ? " per look (until settled)" : ""))
                               .arg(r.comparisons_tested)
                               .arg(r.comparisons_tested == 1 ? "" : "s"));
  verdictHeading_->setToolTip(rule);
  differences_->setComparisons(bars, QString::fromStdString(r.metric) + " of the design − " + QString::fromStdString(r.metric) +
                                         " of its baseline (final, 95% CI)");
  if (!changed.isEmpty()) Q_EMIT message("Verdicts changed: " + changed.join(" · "));
}

void ExperimentsPanel::fitDuelSplit() {
  if (duelSplitDragged_ || !duelSplit_) return;
  const int total = duelSplit_->height() - duelSplit_->handleWidth();
  if (total <= 0) return;
  // Every row, the header and the frame; the horizontal scroll bar where the columns are wider.
  int rowsHeight = 0;
  for (int i = 0; i < verdicts_->rowCount(); ++i) rowsHeight += verdicts_->rowHeight(i);
  int columnsWidth = 0;
  for (int c = 0; c < VColumns; ++c)
    if (!verdicts_->isColumnHidden(c)) columnsWidth += verdicts_->columnWidth(c);
  const int frame = 2 * verdicts_->frameWidth();
  const bool scrolls = columnsWidth + frame > verdicts_->width();
  const int wanted = verdicts_->horizontalHeader()->sizeHint().height() + rowsHeight + frame +
                     (scrolls ? verdicts_->horizontalScrollBar()->sizeHint().height() : 0);
  const int table = std::min(wanted, total * 3 / 5);
  duelSplit_->setSizes({table, total - table});
}

bool ExperimentsPanel::eventFilter(QObject* watched, QEvent* event) {
  // After the splitter has laid out its new height (its own resize handling runs after this filter).
  if (watched == duelSplit_ && event->type() == QEvent::Resize)
    QMetaObject::invokeMethod(this, [this] { fitDuelSplit(); }, Qt::QueuedConnection);
  return QWidget::eventFilter(watched, event);
}

bool ExperimentsPanel::startRun() {
  if (!plan_ || running()) return false;
  output_.clear();
  const QStringList args = {"sweep", "run", QString::fromStdString(plan_->dir), "--jobs", QString::number(jobs_->value()), "--json"};
  process_.start(program_.isEmpty() ? QCoreApplication::applicationFilePath() : program_, args);
  if (!process_.waitForStarted(5000)) {
    Q_EMIT message("Cannot start the sweep run: " + process_.errorString());
    return false;
  }
  Q_EMIT message("Running the pending trials of " + QString::fromStdString(plan_->sweep.name) + ", " +
                 QString::number(jobs_->value()) + " at a time");
  updateButtons();
  refresh();
  return true;
}

void ExperimentsPanel::stopRun() {
  if (!running()) return;
  process_.terminate();  // SIGTERM: the run forwards it to its trials, which checkpoint
  Q_EMIT message("Stopping the sweep run: each trial stops at its next step with a checkpoint");
}

bool ExperimentsPanel::running() const { return process_.state() != QProcess::NotRunning; }

void ExperimentsPanel::updateButtons() {
  run_->setEnabled(plan_ && !running());
  stop_->setEnabled(running());
  jobs_->setEnabled(!running());
}

}  // namespace tensorscope::app
