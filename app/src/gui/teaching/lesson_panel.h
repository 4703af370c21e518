#pragma once
/// Lessons in the explorer (issue 15): the Lesson dock (LessonPanel; the runner that binds a lesson
/// to the explorer is LessonRunner, lesson_runner.h). A lesson (lesson/lesson.h, resources/lessons/*.json) is a
/// list of steps; entering a step loads its design into the lesson's own run, highlights its
/// elements on the diagram and states the action; its check is evaluated against what the explorer
/// shows (spec::LessonState, refreshed four times a second) and Next opens once it holds.

#include <QFont>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
  /// Where Add lessons… copies lesson files to (userLessonDirectory() in the window).
  void setUserLessonDirectory(const QString& dir) { userDir_ = dir; }
  /// Add lessons…: each file is read as an installed lesson is (every problem named, with its
  /// field), refused when its id or order is already offered, else copied to the user's lessons
  /// folder and offered at once; the lesson on show stays. The panel says what was added and why
  /// a file was not. Returns how many were added.
  int addLessonFiles(const QStringList& paths);
  /// The note above the steps: the folder's problems, or what Add lessons… did ("" when hidden).
  QString problemsText() const;
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
  /// The lessons offered changed (Add lessons…): the Lessons menu lists them again.
  void lessonsChanged();

 public Q_SLOTS:
  /// Add lessons…: a file dialog, then addLessonFiles.
  void chooseLessonFiles();

 private:
  void showStep();
  void fillChooser();
  void showProblems(const QString& text, bool good = false);

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
  QPushButton* addLessons_;
  QString userDir_;
};

/// Binds the Lesson dock to the window: loads each step's design into the lesson's run (a run of
/// its own, added when a lesson starts, so the user's runs keep their designs), sends highlights
/// to the diagram, performs "Show me" (the action a scripted learner would do), opens labs, and
/// keeps the panel's LessonState current.

/// The shipped lessons (installed resources/lessons), and a sentence for every file that did not
/// read ("" when all did).
std::vector<spec::Lesson> shippedLessons(QString* problems);
/// The lessons the explorer offers: the shipped ones and those of the user's folder `userDir`
/// (Add lessons… copies there), sorted by order then id; a user lesson with a shipped lesson's id is
/// named in `problems` and not offered, as is every file that did not read.
std::vector<spec::Lesson> availableLessons(QString* problems, const QString& userDir);
/// Adds lesson file `path`: read and validated as installed lessons are (readLessonFile), refused
/// when its id or order is already one of `offered`'s, else copied whole (atomically) to
/// `userDir`/ID.json. The lesson as copied (source: the copy), or nullopt with the reason in `error`
/// (one "FILE: FIELD: MESSAGE" line per problem).
std::optional<spec::Lesson> importLessonFile(const QString& path, const std::vector<spec::Lesson>& offered,
                                             const QString& userDir, QString* error);

/// The diagram highlight of a step's element ids ("Wq", "attn", "leg:Wq:0") in `network`: the
/// named tensors and boxes, a leg as its index; the named tensors also get a ring.
diagram_view::DiagramScene::Highlight lessonHighlight(const std::vector<std::string>& ids,
                                                      const spec::TensorNetwork& network);

/// The run config a lesson's run trains with for `design`: the lesson's `task` (Lesson::task) with
/// the default session's settings for it, the default session's task (reversing 16 digits) when the
/// lesson names none, and for a design that fixes N (multilinear) copying sequences that fit its N.
model_core::RunConfig lessonRunConfig(const spec::AttentionSpec& design, const std::string& task = {});

}  // namespace tensorscope::app
