#pragma once
/// The teaching docks as observers of the document (like DesignDocks for the design docks): the
/// Inspector's values (InspectorDocks), the Lesson dock and its runner, and the two labs. It holds
/// the teaching wiring the window used to: the design's C to the stable-rank lab, a run's maps to
/// the bottleneck lab, a lab's result to the lesson's check, and the rule that a click on a tensor
/// of the diagram (not C: the core editor shows C) shows the Inspector.

#include <QObject>
#include <QString>
#include <functional>

#include "gui/teaching/lesson_runner.h"

class QDockWidget;

namespace tensorscope::app {

class BottleneckLab;
class SnapshotDocks;
class LessonPanel;
class StableRankLab;
class InspectorDocks;

/// The teaching widgets the window made (its docks hold them).
struct TeachingWidgets {
  LessonPanel* lessons = nullptr;
  BottleneckLab* bottleneck = nullptr;
  StableRankLab* stableRank = nullptr;
};

class TeachingDocks : public QObject {
  Q_OBJECT
 public:
  /// `parts`: what the lessons read and drive (parts.dock finds the Inspector's and labs' docks);
  /// `openLab`: shows a lab's dock large, by its title.
  TeachingDocks(const LessonParts& parts, SnapshotDocks* inspections, const TeachingWidgets& widgets,
                std::function<void(const QString& title)> openLab, QObject* parent = nullptr);

  InspectorDocks* views() const { return views_; }
  LessonRunner* runner() const { return runner_; }

 private:
  void connectLabs(SnapshotDocks* inspections);
  void connectInspectorClicks();
  /// The current design's C to the stable-rank lab (nothing for a design without one, or too wide).
  void coreToLab();

  LessonParts parts_;
  TeachingWidgets widgets_;
  std::function<void(const QString&)> openLab_;
  InspectorDocks* views_ = nullptr;
  LessonRunner* runner_ = nullptr;
};

}  // namespace tensorscope::app
