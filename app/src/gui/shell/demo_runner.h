#pragma once
/// Runs a scripted scenario in the window (`tensorscope --demo SCRIPT`), for README screenshots
/// and end-to-end checks. One command per line; '#' starts a comment:
///   preset NAME        apply a spec preset to the current run's design (undoable)
///   slot FIELD VALUE   set a slot in the Design dock as a user does (undoable; e.g. "slot slots.kv_groups 1",
///                      "slot slots.latent.order absorbed", "slot slots.pre_mix on") and scroll the dock to it;
///                      an edit the spec validator refuses (MTA's fields) fails with its reason
///   mixing WEIGHT [I]  show WEIGHT (mix_post, mix_pre, mta_kernel, mta_kernel_after_sm, head_kernel), head or
///                      group I, in the Design dock's head-mixing view, scrolled into view
///   run INDEX          select run INDEX of the session
///   session PATH       open a session file
///   train [STEPS]      start training the current run (stop at STEPS)
///   wait-step N        wait until training reached step N (or ended)
///   wait-end           wait until training ended
///   fork               fork the training run from its current state (as editing its C does)
///   wait-ms N          wait N milliseconds (events keep flowing)
///   dock TITLE         raise a dock (e.g. "Attention maps")
///   theme light|dark
///   screenshot PATH    save the window as PNG
///   figures DIR        export every view to DIR
///   probe [TEXT]       compute the attention maps on TEXT (empty: the default); waits until shown
///   sweep DIR          open a sweep directory in the Experiments dock (its files read before the next line)
///   inspect ID         show the diagram's element ID in the Inspector (a tensor, "box:ID", "leg:LETTER");
///                      waits until the layer's values are there
///   plan-step N        show step N (1-based; 0: none) of the evaluation plan, as Next does
///   lesson ID          start lesson ID in the Lesson dock
///   lesson-do          do the lesson step's action (Show me); waits until its check holds
///   lesson-next        go to the lesson's next step (its check must hold)
///   lab NAME           open and run a lab (bottleneck | stable_rank); waits for its result
///   layout NAME        View > Layout NAME (Default, Design, Train, Present, Experiments, Teach)
///   presenter on|off   View > Presenter mode (F11): the window full screen, as a class sees it
///   roles-colour label|cluster  colour the Role clusters view by structural label or k-means cluster
///   match COST BASE [SIZE] [apply]  the Cost dock's Match budget (params|kv|flops, mhsa or a design
///                      preset, a size of `spec match`); fails on a refusal or no match
///   positions VALUE    the Design dock's Positions (learned, sinusoidal, rotary, rotary_interleaved)
///   stop               stop training
///   quit

#include <QByteArray>
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <functional>
#include <map>
#include <vector>

#include "gui/shell/demo_script.h"

class QLabel;
class QMainWindow;
class QWidget;

namespace tensorscope::app {

class BottleneckLab;
class DesignPanel;
class ExperimentsPanel;
class InspectorDocks;
class LessonPanel;
class LessonRunner;
class SessionFiles;
class SessionModel;
class SnapshotDocks;
class StableRankLab;
class TensorInspector;
class TrainingController;
class TrainingDriver;

/// The parts a demo script drives (MainWindow::demoParts gives them): the document, training, the
/// docks' panels, and the window only as what screenshots photograph and layouts arrange.
struct DemoParts {
  QMainWindow* window = nullptr;
  DesignPanel* design = nullptr;
  QByteArray defaultLayout;  ///< View > Layout > Default's arrangement
  SessionModel* model = nullptr;
  TrainingDriver* training = nullptr;
  TrainingController* controller = nullptr;
  SessionFiles* files = nullptr;
  ExperimentsPanel* experiments = nullptr;
  TensorInspector* inspector = nullptr;
  InspectorDocks* inspectorDocks = nullptr;
  LessonPanel* lessonPanel = nullptr;
  LessonRunner* lessons = nullptr;
  BottleneckLab* bottleneckLab = nullptr;
  StableRankLab* stableRankLab = nullptr;
  SnapshotDocks* snapshots = nullptr;
  QLabel* probeNote = nullptr;
  std::function<bool(const QString& dir)> openSweepDirectory;
  std::function<bool(const QString& id)> startLesson;
  std::function<void(const QString& title)> openLab;
  std::function<void(bool dark)> setDarkTheme;
  std::function<void(bool on)> setPresenter;
  std::function<bool(const QString& dir)> exportFigures;
};

class DemoRunner : public QObject {
  Q_OBJECT
 public:
  /// `script` comes from readDemoScript (checked whole before the demo starts).
  DemoRunner(DemoParts parts, std::vector<DemoCommand> script, QObject* parent = nullptr);
  void start();
  int exitCode() const { return exitCode_; }

 Q_SIGNALS:
  void finished(int exitCode);

 private:
  /// What a command did: done (go on to the next line), waiting (try again on the next tick), or
  /// failed (fail() was called; the demo is over).
  enum class Step { Done, Wait, Failed };
  using Command = Step (DemoRunner::*)(const QString& arg);
  static const std::map<QString, Command>& commands();

  void next();
  Step fail(const QString& why);
  Step waitStep(const QString& arg);
  Step waitEnd(const QString& arg);
  Step waitMs(const QString& arg);
  Step preset(const QString& arg);
  Step run(const QString& arg);
  Step session(const QString& arg);
  Step sweep(const QString& arg);
  Step train(const QString& arg);
  Step stop(const QString& arg);
  Step fork(const QString& arg);
  Step dock(const QString& arg);
  Step inspect(const QString& arg);
  Step planStep(const QString& arg);
  Step lesson(const QString& arg);
  Step lessonDo(const QString& arg);
  Step lessonNext(const QString& arg);
  Step lab(const QString& arg);
  Step layout(const QString& arg);
  Step presenter(const QString& arg);
  Step rolesColour(const QString& arg);
  Step slot(const QString& arg);
  Step match(const QString& arg);
  Step positions(const QString& arg);
  Step mixing(const QString& arg);
  Step mixingDraw(const QString& arg);
  /// Scrolls the Design dock's form so that `w` is at its top.
  void scrollTo(QWidget* w);
  Step probe(const QString& arg);
  Step theme(const QString& arg);
  Step screenshot(const QString& arg);
  Step figures(const QString& arg);
  /// The Inspector dock raised; Wait until the layer's values are there.
  Step inspectorReady();

  DemoParts parts_;
  std::vector<DemoCommand> script_;
  int pc_ = 0;
  bool quit_ = false;
  qint64 lastStep_ = 0;
  bool trainingEnded_ = true;
  bool probeIssued_ = false;
  bool actionIssued_ = false;  // lesson-do asked for its action and waits for the check
  int exitCode_ = 0;
  QElapsedTimer waitClock_;  ///< the current wait-ms command's clock
  qint64 waitUntil_ = -1;    ///< its length in ms; -1 when no wait-ms is under way
  QTimer timer_;
};

}  // namespace tensorscope::app
