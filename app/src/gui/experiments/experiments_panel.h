#pragma once
/// The Experiments dock (issue 14, docs/sweeps.md): open a sweep directory, watch its trials'
/// status update live (trained here or on Slurm: it reads the trial directories), the comparison
/// table and the figure; run the pending trials in a `tensorscope sweep run` process or stop it;
/// double-click a trial to open its run in the explorer. The files are read on a worker thread.
/// The Verdicts tab is the duel (issue 37): per design its seeds, mean ± std, the difference to its
/// baseline with the 95% CI, the p-values, the test that decides and the verdict words, printed by
/// the sweep report's own code (model_core/sweep_report_text.h), updated as trial results land, and
/// the differences with their intervals against zero as a figure that exports like every figure.

#include <QFutureWatcher>
#include <QProcess>
#include <QString>
#include <QWidget>
#include <map>
#include <memory>

#include "model_core/sweep.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTableWidget;
class QTimer;

namespace tensorscope::viz {
class DifferencePlot;
}

namespace tensorscope::app {

/// What one refresh read from a sweep directory.
struct SweepSnapshot {
  model_core::SweepReport report;
  std::map<std::int64_t, std::string> slurm;  ///< squeue's state of trials handed to Slurm
  QString svg;
  QString error;  ///< a file that could not be read (the last good snapshot stays shown)
};

class ExperimentsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ExperimentsPanel(QWidget* parent = nullptr);
  ~ExperimentsPanel() override;

  /// Opens a planned sweep directory. Returns false (with the reason in `error`) for one that is not.
  bool openSweep(const QString& dir, QString* error = nullptr);
  QString sweepDir() const;
  /// Plans a sweep file (a shipped one or the user's) into a new folder under `intoDir` named by
  /// the sweep ("NAME", "NAME-2", …) and opens it. Returns the folder, or "" with the reason in
  /// `error` (a sweep file's every problem, as `sweep plan` says them).
  QString planSweepFile(const QString& file, const QString& intoDir, QString* error = nullptr);
  /// Where the Experiments dock plans sweep files: the user's data folder, sweeps/.
  static QString sweepsDataDirectory();
  /// Reads the directory now (also called every two seconds while a sweep is open); `wait` blocks
  /// until the snapshot is shown (tests).
  void refresh(bool wait = false);
  /// Starts `tensorscope sweep run DIR --jobs J` (its trials in their own processes); stop sends it
  /// SIGTERM, and every trial stops at a checkpoint.
  bool startRun();
  void stopRun();
  bool running() const;
  /// The tensorscope binary that runs sweeps (default: this program).
  void setProgram(const QString& path) { program_ = path; }

  QTableWidget* trialsTable() const { return trials_; }
  QTableWidget* designsTable() const { return designs_; }
  QLabel* summary() const { return summary_; }
  /// The duel: one row per design (see the class comment); columns in VerdictColumn order. The
  /// verdict comes right after the design, then the numbers it rests on, so a narrow dock shows it
  /// without scrolling (the md report keeps its own order).
  QTableWidget* verdictTable() const { return verdicts_; }
  enum VerdictColumn { VDesign, VVerdict, VSeeds, VMean, VDifference, VHolm, VBaseline, VCompared, VWelch, VSignFlip,
                       VDecidedBy, VSettle, VColumns };
  /// The differences with their 95% intervals against zero (the duel's figure).
  viz::DifferencePlot* differencePlot() const { return differences_; }
  /// Which baseline, alpha and family the verdicts are over (the full rule is its tooltip).
  QLabel* verdictHeading() const { return verdictHeading_; }
  QTabWidget* views() const { return views_; }
  const SweepSnapshot& snapshot() const { return shown_; }

 Q_SIGNALS:
  /// A trial's run directory to open in the explorer (double-click).
  void openRunRequested(const QString& runDir);
  /// The user asked to open a sweep directory (the window shows the dialog).
  void openSweepRequested();
  void message(const QString& text);

 private:
  void show(const SweepSnapshot& s);
  void updateButtons();
  /// Gives the verdict table the height of its rows (at most 60% of the duel), the figure the
  /// rest; not once the user has dragged the divider.
  void fitDuelSplit();
  bool eventFilter(QObject* watched, QEvent* event) override;

  std::unique_ptr<model_core::SweepPlan> plan_;
  SweepSnapshot shown_;
  QFutureWatcher<SweepSnapshot> watcher_;
  bool refreshAgain_ = false;
  QProcess process_;
  QByteArray output_;  ///< the tail of the run's output, for its last line when it fails
  QString program_;
  QTimer* timer_ = nullptr;
  QLabel* path_ = nullptr;
  QLabel* summary_ = nullptr;
  QSpinBox* jobs_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* stop_ = nullptr;
  QTableWidget* trials_ = nullptr;
  QTableWidget* designs_ = nullptr;
  QWidget* figure_ = nullptr;
  QTabWidget* views_ = nullptr;
  QTableWidget* verdicts_ = nullptr;
  QSplitter* duelSplit_ = nullptr;
  bool duelSplitDragged_ = false;
  QLabel* verdictHeading_ = nullptr;
  viz::DifferencePlot* differences_ = nullptr;
  std::map<std::string, std::string> lastVerdicts_;  ///< design -> verdict last shown (to say what changed)
  void showVerdicts(const model_core::SweepReport& r);
};

}  // namespace tensorscope::app
