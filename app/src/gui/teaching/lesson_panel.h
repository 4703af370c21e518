#pragma once
/// Lessons in the explorer (issue 15): the Lesson dock (LessonPanel; the runner that binds a lesson
/// to the explorer is LessonRunner, lesson_runner.h). A lesson (lesson/lesson.h, resources/lessons/*.json) is a
/// list of steps; entering a step loads its design into the lesson's own run, highlights its
/// elements on the diagram and states the action; its check is evaluated against what the explorer
/// shows (spec::LessonState, refreshed four times a second) and Next opens once it holds.

#include <QFont>
#include <QString>
#include <QWidget>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "diagram_view/diagram_scene.h"
#include "lesson/lesson.h"
#include "model_core/run_config.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QTextBrowser;
class QTimer;

namespace tensorscope::app {

class LessonPanel : public QWidget {
  Q_OBJECT
 public:
  explicit LessonPanel(QWidget* parent = nullptr);

  /// The lessons to offer (readLessonDirectory), and what was wrong with the folder ("" if
  /// nothing): a damaged file is named, the others stay available.
  void setLessons(std::vector<spec::Lesson> lessons, const QString& problems = {});
  const std::vector<spec::Lesson>& lessons() const { return lessons_; }
  /// Starts lesson `id` at its first step (false when there is none).
  bool start(const QString& id);
  /// The lesson and step on show (-1: none).
  int lessonIndex() const { return lesson_; }
  int stepIndex() const { return step_; }
  const spec::Lesson* lesson() const;
  const spec::LessonStep* step() const;

  /// What the explorer shows now: re-evaluates the step's check.
  void setState(const spec::LessonState& state);
  /// Whether the step's check holds (true for a step without a check).
  bool checkMet() const { return met_; }
  /// The check line as shown (✓ done, or the hint).
  QString checkText() const;

  /// Next is allowed once the check holds; Back always; Reset starts the lesson again.
  bool next();
  void back();
  void reset();
  /// Enters step `index` of the current lesson.
  void goTo(int index);
  /// Presenter mode: only the step's title, text, action, check and buttons (no chooser, no step
  /// list), in type `fontScale` times the desktop's; false puts the panel back as it was.
  void setCompact(bool compact, double fontScale = 1.0);
  bool compact() const { return compact_; }
  /// The height the panel asks for at `width` with its step's text whole (up to ten lines): what
  /// presenter mode gives the Lesson dock, within its bounds; the text scrolls beyond.
  int presentedHeight(int width) const;

 Q_SIGNALS:
  /// A step was entered (the runner loads its design and highlights).
  void stepEntered(int lesson, int step);
  /// "Show me": the runner performs the step's action for the learner.
  void showMeRequested();

 private:
  void showStep();

  std::vector<spec::Lesson> lessons_;
  int lesson_ = -1, step_ = -1;
  bool met_ = true;
  QComboBox* chooser_;
  QLabel* problems_;
  QListWidget* steps_;
  QLabel* title_;
  QTextBrowser* text_;
  QLabel* action_;
  QLabel* check_;
  QPushButton* back_;
  QPushButton* next_;
  QPushButton* showMe_;
  QPushButton* reset_;
  QFont titleFont_;  ///< the title's font on the desktop
  bool compact_ = false;
  bool fontWasSet_ = false;  ///< whether the panel had a font of its own before it was compact
  QFont savedFont_;
};

/// Binds the Lesson dock to the window: loads each step's design into the lesson's run (a run of
/// its own, added when a lesson starts, so the user's runs keep their designs), sends highlights
/// to the diagram, performs "Show me" (the action a scripted learner would do), opens labs, and
/// keeps the panel's LessonState current.

/// The shipped lessons (installed resources/lessons), and a sentence for every file that did not
/// read ("" when all did).
std::vector<spec::Lesson> shippedLessons(QString* problems);

/// The diagram highlight of a step's element ids ("Wq", "attn", "leg:Wq:0") in `network`: the
/// named tensors and boxes, a leg as its index; the named tensors also get a ring.
diagram_view::DiagramScene::Highlight lessonHighlight(const std::vector<std::string>& ids,
                                                      const spec::TensorNetwork& network);

/// The run config a lesson's run trains with for `design`: the default session's task (reversing
/// 16 digits) and settings, and for a design that fixes N (multilinear) copying sequences that fit
/// its N.
model_core::RunConfig lessonRunConfig(const spec::AttentionSpec& design);

}  // namespace tensorscope::app
