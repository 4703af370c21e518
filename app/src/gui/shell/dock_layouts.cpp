#include "gui/shell/dock_layouts.h"

#include <QDockWidget>
#include <QMainWindow>
#include <algorithm>

namespace tensorscope::app {
namespace {

QDockWidget* dock(QMainWindow& w, const char* title) { return w.findChild<QDockWidget*>(QString::fromLatin1(title)); }

void raise(QMainWindow& w, std::initializer_list<const char*> titles) {
  for (const char* t : titles)
    if (auto* d = dock(w, t)) d->raise();
}

}  // namespace

QString dockLayoutName(DockLayout layout) {
  switch (layout) {
    case DockLayout::Default: return "Default";
    case DockLayout::Design: return "Design";
    case DockLayout::Train: return "Train";
    case DockLayout::Present: return "Present";
    case DockLayout::Experiments: return "Experiments";
    case DockLayout::Teach: return "Teach";
  }
  return {};
}

void applyDockLayout(QMainWindow& w, DockLayout layout, const QByteArray& defaultState) {
  w.restoreState(defaultState);
  w.setCorner(Qt::BottomLeftCorner, Qt::BottomDockWidgetArea);  // as a first start has it (Teach and Design change it)
  for (auto* d : w.findChildren<QDockWidget*>()) d->show();
  const int height = w.height();
  const auto vertical = [&](const char* top, double share, const char* bottom) {
    if (auto *a = dock(w, top), *b = dock(w, bottom); a && b)
      w.resizeDocks({a, b}, {int(height * share), int(height * (1 - share))}, Qt::Vertical);
  };
  switch (layout) {
    case DockLayout::Default:
      break;
    case DockLayout::Design:  // design, diagram and C large; the plots a strip; the form over the runs list
      // The form column runs the window's full height (at 1280 x 800 the plots' strip left it
      // about 230 px); beside C, the cost where the design has no C (MainWindow::followDesignCore).
      w.setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
      raise(w, {"Design", "Diagram", "Stable rank", "Attention maps"});
      if (w.property("designHasCore").isValid() && !w.property("designHasCore").toBool()) raise(w, {"Cost"});
      vertical("Diagram", 0.78, "Curves");
      vertical("Design", 0.78, "Runs");
      break;
    case DockLayout::Train:  // the live plots large; the training settings in front
      raise(w, {"Training", "Diagram", "Stable rank", "Attention maps"});
      vertical("Diagram", 0.38, "Curves");
      break;
    case DockLayout::Present:  // what an audience reads: the diagram, C and the curves, no forms
      for (const char* t : {"Design", "Training", "Runs", "Spec (JSON)", "Experiments"})
        if (auto* d = dock(w, t)) d->hide();
      raise(w, {"Diagram", "Stable rank", "Attention maps"});
      vertical("Diagram", 0.62, "Curves");
      break;
    case DockLayout::Experiments:
      enlargeExperimentsDock(w);
      break;
    case DockLayout::Teach: {
      // A lesson over the Design form its steps ask for ("Switch the variant … in the Design
      // dock"), both in view in a column of the window's full height, beside the diagram and its
      // inspector (C's editor, tabbed with it, comes to the front when C is clicked); the plots and
      // labs the lessons open below. The other forms and lists go.
      for (const char* t : {"Training", "Runs", "Spec (JSON)", "Experiments"})
        if (auto* d = dock(w, t)) d->hide();
      w.setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
      QDockWidget* lesson = dock(w, "Lesson");
      QDockWidget* design = dock(w, "Design");
      if (lesson && design && !lesson->isFloating() && !design->isFloating()) {
        // Out of their shared tab group (splitDockWidget would only add a tab to it).
        w.removeDockWidget(lesson);
        w.removeDockWidget(design);
        w.addDockWidget(Qt::LeftDockWidgetArea, lesson);
        w.splitDockWidget(lesson, design, Qt::Vertical);
        lesson->show();
        design->show();
        const int column = std::clamp(int(w.width() * 0.3), 360, 460);
        w.resizeDocks({lesson}, {column}, Qt::Horizontal);
        w.resizeDocks({lesson, design}, {int(height * 0.66), int(height * 0.34)}, Qt::Vertical);
      }
      raise(w, {"Lesson", "Design", "Diagram", "Inspector", "Curves"});
      vertical("Diagram", 0.68, "Curves");
      break;
    }
  }
}

void enlargeBottomDock(QMainWindow& w, const QString& title, double heightShare) {
  QDockWidget* e = w.findChild<QDockWidget*>(title);
  if (!e || e->isFloating()) return;
  e->show();
  e->raise();
  w.resizeDocks({e}, {int(w.height() * heightShare)}, Qt::Vertical);
  QList<QDockWidget*> row{e};
  for (const char* t : {"Stable rank", "Attention maps"})
    if (auto* d = dock(w, t); d && d->isVisible() && !d->isFloating() && w.dockWidgetArea(d) == w.dockWidgetArea(e)) row.append(d);
  QList<int> widths{w.width() * 2 / 3};
  for (int i = 1; i < row.size(); ++i) widths.append(w.width() / 3 / int(row.size() - 1));
  w.resizeDocks(row, widths, Qt::Horizontal);
}

bool lessonHasRoom(QMainWindow& w, double heightShare) {
  QDockWidget* lesson = dock(w, "Lesson");
  if (!lesson) return false;
  if (lesson->isFloating()) return true;
  for (QDockWidget* d : w.tabifiedDockWidgets(lesson))
    if (!d->isHidden()) return false;
  return lesson->height() >= int(w.height() * heightShare);
}

}  // namespace tensorscope::app
