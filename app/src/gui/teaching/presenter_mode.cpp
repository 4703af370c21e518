#include "gui/teaching/presenter_mode.h"

#include <QAction>
#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QMenuBar>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <algorithm>

#include "diagram_view/diagram_view.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/tensor_inspector.h"

namespace tensorscope::app {

PresenterMode::PresenterMode(QMainWindow* window, TensorInspector* inspector, diagram_view::DiagramView* diagram,
                             QObject* parent)
    : QObject(parent), window_(window), inspector_(inspector), diagram_(diagram) {
  toggle_ = new QAction("&Presenter mode", this);
  toggle_->setCheckable(true);
  toggle_->setShortcut(QKeySequence(Qt::Key_F11));
  toggle_->setToolTip("Full screen: the diagram and the inspector in large type; Right / Left step the plan, "
                      "Space plays it, Esc leaves (F11)");
  window_->addAction(toggle_);  // works with the menu bar hidden
  connect(toggle_, &QAction::toggled, this, &PresenterMode::setActive);
  const auto key = [this](const QKeySequence& seq, auto slot) {
    auto* a = new QAction(this);
    a->setShortcut(seq);
    a->setShortcutContext(Qt::WindowShortcut);
    a->setEnabled(false);
    connect(a, &QAction::triggered, this, slot);
    window_->addAction(a);
    keys_ << a;
  };
  key(QKeySequence(Qt::Key_Right), [this] { inspector_->next(); });
  key(QKeySequence(Qt::Key_Left), [this] { inspector_->back(); });
  key(QKeySequence(Qt::Key_Space), [this] { inspector_->setPlaying(!inspector_->playing()); });
  key(QKeySequence(Qt::Key_Escape), [this] { setActive(false); });
}

QDockWidget* PresenterMode::dock(const char* name) const {
  for (QDockWidget* d : window_->findChildren<QDockWidget*>())
    if (d->objectName() == QLatin1String(name)) return d;
  return nullptr;
}

void PresenterMode::setActive(bool active) {
  if (active == active_) return;
  active_ = active;
  {
    const QSignalBlocker block(toggle_);
    toggle_->setChecked(active);
  }
  for (QAction* a : keys_) a->setEnabled(active);
  if (active) {
    savedState_ = window_->saveState();
    savedGeometry_ = window_->geometry();
    wasMaximized_ = window_->isMaximized();
    lessonShown_ = lesson_ && lesson_->step() != nullptr;
    for (QDockWidget* d : window_->findChildren<QDockWidget*>()) {
      const QString t = d->objectName();
      if (t != "Diagram" && t != "Inspector" && !(t == "Lesson" && lessonShown_)) d->hide();
    }
    hiddenBars_.clear();
    for (QWidget* bar : std::initializer_list<QWidget*>{window_->menuBar(), window_->statusBar()})
      if (bar && bar->isVisible()) hiddenBars_ << bar;
    for (QToolBar* bar : window_->findChildren<QToolBar*>())
      if (bar->isVisible()) hiddenBars_ << bar;
    for (QWidget* bar : hiddenBars_) bar->hide();
    inspector_->setFontScale(kFontScale);
    diagram_->setPresentationScale(kFontScale);
    if (lessonShown_) lesson_->setCompact(true, kFontScale * 0.85);
    arrange();
    window_->showFullScreen();
    applySizes();
    window_->installEventFilter(this);  // the full-screen size may come later (a window manager)
    diagram_->fitToView();
  } else {
    window_->removeEventFilter(this);
    for (QWidget* bar : hiddenBars_) bar->show();
    hiddenBars_.clear();
    inspector_->setFontScale(1.0);
    diagram_->setPresentationScale(1.0);
    if (lesson_) lesson_->setCompact(false);
    lessonShown_ = false;
    if (wasMaximized_) window_->showMaximized();
    else window_->showNormal();
    window_->setGeometry(savedGeometry_);
    window_->restoreState(savedState_);
    // Once a window manager has given the window its size back, the docks' sizes once more.
    QTimer::singleShot(0, window_, [this, state = savedState_] {
      if (!active_) window_->restoreState(state);
    });
    diagram_->fitToView();
  }
  Q_EMIT activeChanged(active);
}

void PresenterMode::arrange() {
  QDockWidget* diagramDock = dock("Diagram");
  QDockWidget* inspectorDock = dock("Inspector");
  QDockWidget* lessonDock = lessonShown_ ? dock("Lesson") : nullptr;
  if (!diagramDock || !inspectorDock) return;
  // Out of their tab groups (the diagram's with Spec (JSON), the inspector's with C, the lesson's
  // with Design): splitDockWidget would only add a tab to a tabbed dock. restoreState puts them back.
  for (QDockWidget* d : {diagramDock, inspectorDock, lessonDock}) {
    if (!d) continue;
    d->setFloating(false);
    window_->removeDockWidget(d);
  }
  window_->addDockWidget(Qt::LeftDockWidgetArea, diagramDock);
  window_->splitDockWidget(diagramDock, inspectorDock, Qt::Horizontal);
  if (lessonDock) window_->splitDockWidget(diagramDock, lessonDock, Qt::Vertical);
  for (QDockWidget* d : {diagramDock, inspectorDock, lessonDock})
    if (d) d->show();
}

void PresenterMode::applySizes() {
  sizesPending_ = false;
  if (!active_) return;
  QDockWidget* diagramDock = dock("Diagram");
  QDockWidget* inspectorDock = dock("Inspector");
  if (!diagramDock || !inspectorDock) return;
  const int width = window_->width(), height = window_->height();
  window_->resizeDocks({diagramDock, inspectorDock},
                       {int(width * kDiagramShare), width - int(width * kDiagramShare)}, Qt::Horizontal);
  if (QDockWidget* lessonDock = lessonShown_ ? dock("Lesson") : nullptr) {
    // kLessonShare of the height, more where the step (title, text, action, check, buttons) needs
    // it at the column's width, never more than kMaxLessonShare.
    const int title = lessonDock->height() - (lessonDock->widget() ? lessonDock->widget()->height() : 0);
    const int need = lesson_->presentedHeight(int(width * kDiagramShare) - 24) + std::max(title, 24);
    const int share = std::clamp(need, int(height * kLessonShare), int(height * kMaxLessonShare));
    window_->resizeDocks({diagramDock, lessonDock}, {height - share, share}, Qt::Vertical);
  }
}

bool PresenterMode::eventFilter(QObject* watched, QEvent* event) {
  if (watched == window_ && event->type() == QEvent::Resize && active_ && !sizesPending_) {
    sizesPending_ = true;
    QTimer::singleShot(0, this, &PresenterMode::applySizes);
  }
  return QObject::eventFilter(watched, event);
}

}  // namespace tensorscope::app
