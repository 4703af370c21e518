#pragma once
/// The Runs dock: every run of the session, its status, which is current, and which are overlaid
/// on the curves to compare designs.

#include <QWidget>

class QListWidget;
class QPushButton;

namespace tensorscope::app {

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunsPanel(QWidget* parent = nullptr);

  /// Rebuilds the list: names with a status line; `overlaid` marks the runs drawn on the curves;
  /// a run with `problems` (its invalid design, one per line) is marked with a warning icon and
  /// lists them in its tooltip; `costs` (one line per run: task, size, steps, a time estimate) go
  /// in the tooltips too, so that a run's length shows before it trains.
  void setRuns(const QStringList& names, const QStringList& statuses, const QList<bool>& overlaid, int current,
               const QStringList& problems = {}, const QStringList& costs = {});
  int currentRun() const;
  QListWidget* list() const { return list_; }

 Q_SIGNALS:
  void currentChanged(int index);
  void overlayChanged(int index, bool shown);
  void newRunRequested();
  void duplicateRequested();
  void removeRequested(int index);
  void openRunDirectoryRequested();

 private:
  QListWidget* list_ = nullptr;
  bool updating_ = false;
};

}  // namespace tensorscope::app
