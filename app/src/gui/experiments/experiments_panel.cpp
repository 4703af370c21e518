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
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>
#include <map>

#include "gui/document/app_paths.h"
#include "model_core/sweep.h"
#include "sweeps/slurm_client.h"

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
  column->addWidget(split, 1);

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
  updateButtons();
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
