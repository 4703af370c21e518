#include "gui/teaching/presenter_mode.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QMenuBar>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>

#include "diagram_view/diagram_view.h"
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
    const bool lesson = keepLesson_ && keepLesson_();
    for (QDockWidget* d : window_->findChildren<QDockWidget*>()) {
      const QString t = d->objectName();
      if (t != "Diagram" && t != "Inspector" && !(t == "Lesson" && lesson)) d->hide();
    }
    QDockWidget* diagramDock = nullptr;
    QDockWidget* inspectorDock = nullptr;
    for (QDockWidget* d : window_->findChildren<QDockWidget*>()) {
      if (d->objectName() == "Diagram") diagramDock = d;
      if (d->objectName() == "Inspector") inspectorDock = d;
    }
    if (diagramDock && inspectorDock) {
      diagramDock->show();
      inspectorDock->show();
      inspectorDock->raise();
      window_->splitDockWidget(diagramDock, inspectorDock, Qt::Horizontal);
      window_->resizeDocks({diagramDock, inspectorDock}, {window_->width() * 3 / 5, window_->width() * 2 / 5}, Qt::Horizontal);
    }
    hiddenBars_.clear();
    for (QWidget* bar : std::initializer_list<QWidget*>{window_->menuBar(), window_->statusBar()})
      if (bar && bar->isVisible()) hiddenBars_ << bar;
    for (QToolBar* bar : window_->findChildren<QToolBar*>())
      if (bar->isVisible()) hiddenBars_ << bar;
    for (QWidget* bar : hiddenBars_) bar->hide();
    inspector_->setFontScale(kFontScale);
    window_->showFullScreen();
    diagram_->fitToView();
  } else {
    for (QWidget* bar : hiddenBars_) bar->show();
    hiddenBars_.clear();
    inspector_->setFontScale(1.0);
    if (wasMaximized_) window_->showMaximized();
    else window_->showNormal();
    window_->setGeometry(savedGeometry_);
    window_->restoreState(savedState_);
    diagram_->fitToView();
  }
  Q_EMIT activeChanged(active);
}

}  // namespace tensorscope::app
