#pragma once
/// Runs a scripted scenario in the window (`tensorscope --demo SCRIPT`), for README screenshots
/// and end-to-end checks. One command per line; '#' starts a comment:
///   preset NAME        apply a spec preset to the current run's design (undoable)
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
///   stop               stop training
///   quit

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <vector>

#include "gui/shell/demo_script.h"

namespace tensorscope::app {

class MainWindow;

class DemoRunner : public QObject {
  Q_OBJECT
 public:
  /// `script` comes from readDemoScript (checked whole before the demo starts).
  DemoRunner(MainWindow* window, std::vector<DemoCommand> script, QObject* parent = nullptr);
  void start();
  int exitCode() const { return exitCode_; }

 Q_SIGNALS:
  void finished(int exitCode);

 private:
  void next();
  void fail(const QString& why);

  MainWindow* window_;
  std::vector<DemoCommand> script_;
  int pc_ = 0;
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
