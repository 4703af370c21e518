#include "gui/dock_layouts.h"

#include <QDockWidget>
#include <QMainWindow>

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
  }
  return {};
}

void applyDockLayout(QMainWindow& w, DockLayout layout, const QByteArray& defaultState) {
  w.restoreState(defaultState);
  for (auto* d : w.findChildren<QDockWidget*>()) d->show();
  const int height = w.height();
  const auto vertical = [&](const char* top, double share, const char* bottom) {
    if (auto *a = dock(w, top), *b = dock(w, bottom); a && b)
      w.resizeDocks({a, b}, {int(height * share), int(height * (1 - share))}, Qt::Vertical);
  };
  switch (layout) {
    case DockLayout::Default:
      break;
    case DockLayout::Design:  // design, diagram and C large; the plots a strip
      raise(w, {"Design", "Diagram", "Stable rank", "Attention maps"});
      vertical("Diagram", 0.78, "Curves");
      break;
    case DockLayout::Train:  // the live plots large; the training settings in front
      raise(w, {"Training", "Diagram", "Stable rank", "Attention maps"});
      vertical("Diagram", 0.38, "Curves");
      break;
    case DockLayout::Present:  // what an audience reads: the diagram, C and the curves, no forms
      for (const char* t : {"Design", "Training", "Runs", "Spec (JSON)"})
        if (auto* d = dock(w, t)) d->hide();
      raise(w, {"Diagram", "Stable rank", "Attention maps"});
      vertical("Diagram", 0.62, "Curves");
      break;
  }
}

}  // namespace tensorscope::app
