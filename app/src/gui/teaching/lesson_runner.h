#pragma once
/// The runner that binds a lesson to the explorer (issue 15): entering a step loads its design into
/// the lesson's own run, highlights its elements on the diagram and states the action; its check is
/// evaluated against what the explorer shows (spec::LessonState, refreshed four times a second),
/// and Show me performs the action. It drives the parts it is given (LessonParts), not the window.

#include <QObject>
#include <QString>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lesson/lesson.h"

class QDockWidget;
class QTimer;

namespace tensorscope::diagram_view {
class DiagramView;
}

namespace tensorscope::app {

class CoreEditor;
class LessonPanel;
class SessionModel;
class TensorInspector;
class TrainingController;
class TrainingDriver;

/// What a lesson reads and drives.
struct LessonParts {
  SessionModel* model = nullptr;
  TrainingDriver* training = nullptr;
  TrainingController* controller = nullptr;
  CoreEditor* core = nullptr;
  diagram_view::DiagramView* diagram = nullptr;
  TensorInspector* inspector = nullptr;
  std::function<QDockWidget*(const QString& title)> dock;  ///< a dock by its title (nullptr: none)
  std::function<void(const QString& title, const QString& text)> showError;
};

class LessonRunner : public QObject {
  Q_OBJECT
 public:
  LessonRunner(LessonParts parts, LessonPanel* panel, QObject* parent = nullptr);
  /// What the explorer shows, as the checks read it.
  spec::LessonState state() const;
  /// Performs the current step's action as a learner would (Show me; scripted tests).
  bool performAction();
  /// The lesson's run (0 before a lesson started).
  quint64 lessonRun() const { return run_; }
  /// A lab showed a result (the window reports it); it counts for the step on show.
  void labDone(spec::LessonLab lab);
  /// Opens a lab's dock (the window supplies how).
  void setLabOpener(std::function<void(spec::LessonLab)> open) { openLab_ = std::move(open); }
  /// Runs a lab (the window supplies how); false when it could not start.
  void setLabRunner(std::function<bool(spec::LessonLab)> run) { runLab_ = std::move(run); }
  /// zero_row: forks the stopped current run from its checkpoint (a fork not yet trained is used as
  /// it is) and zeroes row `row` of layer 0's `parameter` in the fork's starting snapshot, and in
  /// the fork's drawn values when its design draws that mixing (spec/slot_values.h).
  bool zeroRow(const std::string& parameter, int row);

 private:
  void enter(int lesson, int step);
  void refreshState();
  /// A lesson action's design edit of the current run: a run that has trained is forked with it (the
  /// lesson then works in the fork), any other run is edited (undoable). False when no fork was made.
  bool editDesign(const spec::AttentionSpec& next, const QString& what);

  LessonParts parts_;
  std::string lesson_;  ///< the id of the lesson run_ belongs to
  LessonPanel* panel_;
  quint64 run_ = 0;
  std::vector<spec::LessonLab> labsDone_;
  std::int64_t trainingStep_ = 0;         ///< the training run's newest step
  std::map<quint64, double> evalLoss_;    ///< each run's newest evaluation loss (this window)
  /// Each stopped run's checkpoint step, read once per status change (state() is polled).
  mutable std::map<quint64, std::int64_t> checkpointSteps_;
  /// Each fork's zeroed mixing rows in its starting snapshot, read once (an intervention re-reads).
  mutable std::map<quint64, std::vector<std::string>> zeroedRows_;
  QTimer* timer_;
  std::function<void(spec::LessonLab)> openLab_;
  std::function<bool(spec::LessonLab)> runLab_;
};

}  // namespace tensorscope::app
