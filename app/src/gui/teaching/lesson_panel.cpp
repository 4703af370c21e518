#include "gui/teaching/lesson_panel.h"

#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <memory>

#include "diagram_view/diagram_view.h"
#include "files/atomic_file.h"
#include "gui/document/default_session.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_model.h"
#include "model_core/run_directory.h"
#include "spec/tensor_network.h"

namespace tensorscope::app {
namespace {

/// The step's text. Its size hint is a few lines, not QTextBrowser's 192 px: the panel's height
/// for a width adds up its parts' hints, and the Lesson dock (a scroll area) scrolled the whole
/// panel, the step's buttons out of view, wherever it was lower than that sum. It still takes the
/// room the dock has (stretch 1) and scrolls a long text itself.
class LessonText : public QTextBrowser {
 public:
  QSize sizeHint() const override { return {QTextBrowser::sizeHint().width(), fontMetrics().lineSpacing() * 5}; }
};

}  // namespace

// --- LessonPanel --------------------------------------------------------------------------------

LessonPanel::LessonPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  chooser_ = new QComboBox;
  chooser_->setToolTip("The lessons shipped with Tensorscope, one idea each, and the ones you added");
  auto* chooserRow = new QHBoxLayout;
  chooserRow->addWidget(chooser_, 1);
  addLessons_ = new QPushButton("Add lessons…");
  addLessons_->setToolTip("Add lesson files (tensorscope.lesson JSON) of your own: each is checked, copied to your "
                          "lessons folder and offered from now on");
  chooserRow->addWidget(addLessons_);
  layout->addLayout(chooserRow);
  problems_ = new QLabel;
  problems_->setWordWrap(true);
  problems_->setStyleSheet("color: #b2182b;");
  problems_->hide();
  layout->addWidget(problems_);
  steps_ = new QListWidget;
  // About five steps in view (the list scrolls to the current one): the step's text needs the room.
  steps_->setMaximumHeight(steps_->fontMetrics().height() * 11 / 2 + 2 * steps_->frameWidth() + 4);
  steps_->setToolTip("The lesson's steps; a step you have done is ticked. Click one to go there.");
  layout->addWidget(steps_);
  title_ = new QLabel;
  QFont f = title_->font();
  f.setBold(true);
  f.setPointSizeF(f.pointSizeF() * 1.15);
  title_->setFont(f);
  titleFont_ = f;
  title_->setWordWrap(true);
  layout->addWidget(title_);
  text_ = new LessonText;
  text_->setOpenExternalLinks(false);
  layout->addWidget(text_, 1);
  action_ = new QLabel;
  action_->setWordWrap(true);
  action_->setTextFormat(Qt::PlainText);
  action_->setObjectName("lessonAction");
  layout->addWidget(action_);
  check_ = new QLabel;
  check_->setWordWrap(true);
  check_->setTextFormat(Qt::PlainText);
  check_->setObjectName("lessonCheck");
  layout->addWidget(check_);
  auto* buttons = new QHBoxLayout;
  back_ = new QPushButton("◀ Back");
  showMe_ = new QPushButton("Show me");
  showMe_->setToolTip("Do this step's action for me");
  next_ = new QPushButton("Next ▶");
  next_->setToolTip("The next step (once this one's check is met)");
  reset_ = new QPushButton("Reset");
  reset_->setToolTip("Start the lesson again from its first step");
  buttons->addWidget(back_);
  buttons->addWidget(showMe_);
  buttons->addWidget(next_);
  buttons->addStretch(1);
  buttons->addWidget(reset_);
  layout->addLayout(buttons);

  connect(chooser_, &QComboBox::activated, this,
          [this](int i) { start(QString::fromStdString(lessons_.at(static_cast<size_t>(i)).id)); });
  connect(steps_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && row != step_) goTo(row);
  });
  connect(back_, &QPushButton::clicked, this, &LessonPanel::back);
  connect(next_, &QPushButton::clicked, this, [this] { next(); });
  connect(reset_, &QPushButton::clicked, this, &LessonPanel::reset);
  connect(addLessons_, &QPushButton::clicked, this, &LessonPanel::chooseLessonFiles);
  connect(showMe_, &QPushButton::clicked, this, &LessonPanel::showMeRequested);
  showStep();
}

void LessonPanel::setLessons(std::vector<spec::Lesson> lessons, const QString& problems) {
  lessons_ = std::move(lessons);
  fillChooser();
  showProblems(problems);
  lesson_ = step_ = -1;
  showStep();
  Q_EMIT lessonsChanged();
}

void LessonPanel::fillChooser() {
  const QSignalBlocker block(chooser_);
  chooser_->clear();
  for (const auto& l : lessons_) {
    chooser_->addItem(QString::fromStdString(l.title));
    chooser_->setItemData(chooser_->count() - 1, QString::fromStdString(l.summary), Qt::ToolTipRole);
  }
  chooser_->setCurrentIndex(lesson_);
  chooser_->setPlaceholderText(lessons_.empty() ? "No lessons found" : "Choose a lesson…");
}

void LessonPanel::showProblems(const QString& text, bool good) {
  problems_->setText(text);
  problems_->setStyleSheet(good ? "color: #1a7f37;" : "color: #b2182b;");
  problems_->setVisible(!text.isEmpty());
}

QString LessonPanel::problemsText() const { return problems_->isHidden() ? QString() : problems_->text(); }

void LessonPanel::chooseLessonFiles() {
  const QStringList paths = QFileDialog::getOpenFileNames(this, "Add lessons", QString(),
                                                          "Tensorscope lesson (*.json);;All files (*)");
  if (!paths.isEmpty()) addLessonFiles(paths);
}

int LessonPanel::addLessonFiles(const QStringList& paths) {
  // The lesson on show stays on show, at its step: the new ones are added around it.
  const QString current = lesson() ? QString::fromStdString(lesson()->id) : QString();
  QStringList added, refused;
  for (const QString& path : paths) {
    QString why;
    auto l = importLessonFile(path, lessons_, userDir_, &why);
    if (!l) {
      refused << why;
      continue;
    }
    added << QString("\u201c%1\u201d").arg(QString::fromStdString(l->title));
    lessons_.push_back(std::move(*l));
  }
  if (!added.isEmpty()) {
    std::stable_sort(lessons_.begin(), lessons_.end(),
                     [](const auto& a, const auto& b) { return std::tie(a.order, a.id) < std::tie(b.order, b.id); });
    lesson_ = -1;
    for (int i = 0; i < static_cast<int>(lessons_.size()); ++i)
      if (QString::fromStdString(lessons_[static_cast<size_t>(i)].id) == current) lesson_ = i;
    fillChooser();
    Q_EMIT lessonsChanged();
  }
  QStringList lines;
  if (!added.isEmpty()) lines << QString("Added %1 (copied to %2).").arg(added.join(", "), userDir_);
  if (!refused.isEmpty()) lines << QString("Not added (%1):\n%2").arg(refused.size()).arg(refused.join('\n'));
  showProblems(lines.join('\n'), refused.isEmpty());
  return static_cast<int>(added.size());
}

const spec::Lesson* LessonPanel::lesson() const {
  return lesson_ >= 0 && lesson_ < static_cast<int>(lessons_.size()) ? &lessons_[static_cast<size_t>(lesson_)] : nullptr;
}

const spec::LessonStep* LessonPanel::step() const {
  const spec::Lesson* l = lesson();
  return l && step_ >= 0 && step_ < static_cast<int>(l->steps.size()) ? &l->steps[static_cast<size_t>(step_)] : nullptr;
}

bool LessonPanel::start(const QString& id) {
  for (int i = 0; i < static_cast<int>(lessons_.size()); ++i)
    if (QString::fromStdString(lessons_[static_cast<size_t>(i)].id) == id) {
      lesson_ = i;
      const QSignalBlocker block(chooser_);
      chooser_->setCurrentIndex(i);
      const QSignalBlocker blockSteps(steps_);
      steps_->clear();
      for (const auto& s : lessons_[static_cast<size_t>(i)].steps) steps_->addItem("○ " + QString::fromStdString(s.title));
      goTo(0);
      return true;
    }
  return false;
}

void LessonPanel::goTo(int index) {
  const spec::Lesson* l = lesson();
  if (!l || index < 0 || index >= static_cast<int>(l->steps.size())) return;
  step_ = index;
  met_ = !l->steps[static_cast<size_t>(index)].check.has_value();
  {
    const QSignalBlocker block(steps_);
    steps_->setCurrentRow(index);
  }
  showStep();
  Q_EMIT stepEntered(lesson_, step_);
}

void LessonPanel::setCompact(bool compact, double fontScale) {
  if (compact == compact_) return;
  compact_ = compact;
  chooser_->setVisible(!compact);
  steps_->setVisible(!compact);
  problems_->setVisible(!compact && !problems_->text().isEmpty());
  if (compact) {
    fontWasSet_ = testAttribute(Qt::WA_SetFont);
    savedFont_ = font();
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * fontScale);
    setFont(f);
    QFont t = titleFont_;
    t.setPointSizeF(t.pointSizeF() * fontScale);
    title_->setFont(t);
  } else {
    setFont(fontWasSet_ ? savedFont_ : QFont());  // an empty font: the parent's again
    title_->setFont(titleFont_);
  }
}

int LessonPanel::presentedHeight(int width) const {
  int h = heightForWidth(width);
  if (h < 0) h = sizeHint().height();
  // The panel's height counts five lines of the step's text: add what the text needs beyond them
  // at this width (margins and the frame off), up to ten lines.
  const std::unique_ptr<QTextDocument> doc(text_->document()->clone());
  doc->setTextWidth(width - 2 * text_->frameWidth() - 16);
  const int line = text_->fontMetrics().lineSpacing();
  const int text = std::min(int(doc->size().height()) + 2 * text_->frameWidth() + 4, 10 * line);
  return h + std::max(0, text - 5 * line);
}

void LessonPanel::showStep() {
  const spec::LessonStep* s = step();
  back_->setEnabled(s && step_ > 0);
  reset_->setEnabled(s != nullptr);
  showMe_->setEnabled(s && s->action.kind != spec::LessonActionKind::Read);
  if (!s) {
    title_->setText(lessons_.empty() ? QString() : "Choose a lesson above.");
    text_->setHtml(lessons_.empty() ? QString() : "<p>Each lesson takes one idea of the five papers and lets you try it on the "
                                                   "executable diagram: read, act, and the lesson sees when you are done.</p>");
    action_->clear();
    check_->clear();
    next_->setEnabled(false);
    return;
  }
  title_->setText(QString("%1 · step %2 of %3: %4")
                      .arg(QString::fromStdString(lesson()->title))
                      .arg(step_ + 1)
                      .arg(lesson()->steps.size())
                      .arg(QString::fromStdString(s->title)));
  text_->setHtml(QString::fromStdString(s->text));  // validated: a small safe HTML subset
  action_->setText(s->action.kind == spec::LessonActionKind::Read ? QString()
                                                                    : "▶ " + QString::fromStdString(s->action.prompt));
  action_->setVisible(!action_->text().isEmpty());
  next_->setEnabled(met_ && step_ + 1 < static_cast<int>(lesson()->steps.size()));
  if (!s->check) check_->setText(step_ + 1 < static_cast<int>(lesson()->steps.size()) ? "" : "✓ The end of this lesson.");
}

void LessonPanel::setState(const spec::LessonState& state) {
  const spec::LessonStep* s = step();
  if (!s || !s->check) return;
  const bool met = spec::checkMet(*s->check, state);
  const bool last = step_ + 1 >= static_cast<int>(lesson()->steps.size());
  check_->setText(met ? (last ? "✓ Done: the end of this lesson." : "✓ Done: go on with Next.")
                      : "○ " + QString::fromStdString(spec::unmetHint(*s->check, state)));
  check_->setStyleSheet(met ? "color: #1a7f37;" : "");
  if (met != met_) {
    met_ = met;
    if (auto* item = steps_->item(step_)) item->setText((met ? "✓ " : "○ ") + QString::fromStdString(s->title));
  }
  next_->setEnabled(met_ && !last);
}

QString LessonPanel::checkText() const { return check_->text(); }

bool LessonPanel::next() {
  const spec::Lesson* l = lesson();
  if (!l || !met_ || step_ + 1 >= static_cast<int>(l->steps.size())) return false;
  if (auto* item = steps_->item(step_)) item->setText("✓ " + QString::fromStdString(l->steps[static_cast<size_t>(step_)].title));
  goTo(step_ + 1);
  return true;
}

void LessonPanel::back() { goTo(step_ - 1); }

void LessonPanel::reset() {
  if (const spec::Lesson* l = lesson()) start(QString::fromStdString(l->id));
}

// --- LessonRunner -------------------------------------------------------------------------------

model_core::RunConfig lessonRunConfig(const spec::AttentionSpec& design, const std::string& task) {
  if (design.variant != spec::Variant::Multilinear)
    return defaultRunConfig(design, task.empty() ? QString("reverse") : QString::fromStdString(task));
  // Multilinear fixes N: copy sequences short enough that their extrapolation split (half again as
  // long) fits N + 1 tokens.
  auto c = defaultRunConfig(design, "copy");
  const int N = design.sizes.seq_len;
  int length = std::max(1, (N - 3) / 2);
  while (length > 1 && 2 * (length + (length + 1) / 2) + 3 > N + 1) --length;
  c.task.seq_len = N;
  c.task.algorithmic_length = length;
  for (auto& a : c.model.attention) a.sizes.seq_len = N;
  return c;
}

diagram_view::DiagramScene::Highlight lessonHighlight(const std::vector<std::string>& ids, const spec::TensorNetwork& network) {
  diagram_view::DiagramScene::Highlight h;
  for (const auto& id : ids) {
    const QString q = QString::fromStdString(id);
    if (q.startsWith("leg:")) {
      const auto parts = q.split(':');
      for (const auto& n : network.nodes)
        if (parts.size() == 3 && QString::fromStdString(n.id) == parts[1]) {
          const int i = parts[2].toInt();
          if (i >= 0 && i < static_cast<int>(n.legs.size())) {
            h.legs << QString(QChar::fromLatin1(n.legs[static_cast<size_t>(i)].index));
            h.tensors << parts[1];
          }
        }
      continue;
    }
    const bool box = std::any_of(network.boxes.begin(), network.boxes.end(), [&](const auto& b) { return b.id == id; });
    if (box) {
      h.boxes << q;
      for (const auto& b : network.boxes)
        if (b.id == id)
          for (const auto& n : b.nodes) h.tensors << QString::fromStdString(n);
    } else {
      h.tensors << q;
      h.emphasised << q;
    }
  }
  h.tensors.removeDuplicates();
  // Every leg of a highlighted tensor stays drawn.
  for (const auto& n : network.nodes)
    if (h.tensors.contains(QString::fromStdString(n.id)))
      for (const auto& l : n.legs) h.legs << QString(QChar::fromLatin1(l.index));
  h.legs.removeDuplicates();
  return h;
}

namespace {

QStringList problemLines(const spec::LessonError& e) {
  QStringList lines;
  for (const auto& p : e.problems()) lines << QString::fromStdString(p.source + ": " + p.field + ": " + p.message);
  return lines;
}

void sortLessons(std::vector<spec::Lesson>& lessons) {
  std::stable_sort(lessons.begin(), lessons.end(),
                   [](const auto& a, const auto& b) { return std::tie(a.order, a.id) < std::tie(b.order, b.id); });
}

/// The lessons of `dir`; a bad file is named in `bad` and the good ones stay available.
std::vector<spec::Lesson> readLessonsIn(const QString& dir, QStringList& bad) {
  try {
    return spec::readLessonDirectory(QFile::encodeName(dir).toStdString());
  } catch (const spec::LessonError& e) {
    // The good files stay available: read them one by one, the bad ones named.
    std::vector<spec::Lesson> good;
    bad << problemLines(e);
    QDir d(dir);
    for (const auto& f : d.entryList({"*.json"}, QDir::Files, QDir::Name)) try {
        good.push_back(spec::readLessonFile(QFile::encodeName(d.absoluteFilePath(f)).toStdString()));
      } catch (const std::exception&) {
      }
    sortLessons(good);
    return good;
  }
}

bool hasLesson(const std::vector<spec::Lesson>& lessons, const std::string& id, const spec::Lesson** found = nullptr) {
  for (const auto& l : lessons)
    if (l.id == id) {
      if (found) *found = &l;
      return true;
    }
  return false;
}

}  // namespace

std::vector<spec::Lesson> shippedLessons(QString* problems) {
  const QString dir = resourceDirectory("lessons");
  if (problems) problems->clear();
  if (dir.isEmpty()) {
    if (problems) *problems = "The lessons folder was not found (resources/lessons of the installation).";
    return {};
  }
  QStringList bad;
  auto good = readLessonsIn(dir, bad);
  if (problems && !bad.isEmpty()) *problems = "Some lessons could not be read:\n" + bad.join('\n');
  return good;
}

std::vector<spec::Lesson> availableLessons(QString* problems, const QString& userDir) {
  QString shippedProblems;
  auto lessons = shippedLessons(&shippedProblems);
  QStringList bad;
  if (!shippedProblems.isEmpty())
    bad << (shippedProblems.contains('\n') ? shippedProblems.section('\n', 1) : shippedProblems);
  if (QFileInfo(userDir).isDir()) {
    for (auto& l : readLessonsIn(userDir, bad)) {
      const spec::Lesson* shipped = nullptr;
      if (hasLesson(lessons, l.id, &shipped)) {
        bad << QString("%1: id: lesson id \"%2\" is also the id of %3; the installed lesson is offered")
                   .arg(QString::fromStdString(l.source), QString::fromStdString(l.id), QString::fromStdString(shipped->source));
        continue;
      }
      lessons.push_back(std::move(l));
    }
    sortLessons(lessons);
  }
  if (problems) *problems = bad.isEmpty() ? QString() : "Some lessons could not be read:\n" + bad.join('\n');
  return lessons;
}

std::optional<spec::Lesson> importLessonFile(const QString& path, const std::vector<spec::Lesson>& offered,
                                             const QString& userDir, QString* error) {
  const auto say = [error](const QString& why) {
    if (error) *error = why;
    return std::nullopt;
  };
  spec::Lesson lesson;
  try {
    lesson = spec::readLessonFile(QFile::encodeName(path).toStdString());
  } catch (const spec::LessonError& e) {
    return say(problemLines(e).join('\n'));
  } catch (const std::exception& e) {
    return say(path + ": " + QString::fromUtf8(e.what()));
  }
  if (const spec::Lesson* other = nullptr; hasLesson(offered, lesson.id, &other))
    return say(QString("%1: id: lesson id \"%2\" is already offered by %3; rename the lesson (its id and file name) to add "
                       "it beside that one")
                   .arg(path, QString::fromStdString(lesson.id), QString::fromStdString(other->source)));
  for (const auto& other : offered)
    if (other.order == lesson.order)
      return say(QString("%1: order: order %2 is already the order of %3 (\"%4\"); give the lesson an order of its own "
                         "(its place in the lesson list)")
                     .arg(path)
                     .arg(lesson.order)
                     .arg(QString::fromStdString(other.source), QString::fromStdString(other.title)));
  const QString target = QDir(userDir).absoluteFilePath(QString::fromStdString(lesson.id) + ".json");
  if (!QDir().mkpath(userDir)) return say(QString("%1: cannot create the lessons folder %2").arg(path, userDir));
  QFile in(path);
  if (!in.open(QIODevice::ReadOnly)) return say(path + ": " + in.errorString());
  const QByteArray bytes = in.readAll();
  try {
    // The file as the teacher wrote it (its formatting kept), written whole or not at all.
    files::writeFileAtomically(QFile::encodeName(target).toStdString(), std::string_view(bytes.constData(), bytes.size()));
  } catch (const std::exception& e) {
    return say(QString("%1: cannot copy it to %2: %3").arg(path, target, QString::fromUtf8(e.what())));
  }
  lesson.source = QFile::encodeName(target).toStdString();
  return lesson;
}

}  // namespace tensorscope::app
