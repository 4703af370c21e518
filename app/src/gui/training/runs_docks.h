#pragma once
/// The Runs dock as an observer of the document (like DesignDocks): it lists every run with its
/// status (or why its design is invalid) and turns the dock's buttons into document edits: select,
/// overlay, a new run, a duplicate, remove, and open a run folder from disk.

#include <QObject>
#include <QString>
#include <functional>

namespace tensorscope::app {

class RunsPanel;
class SessionModel;

class RunsDocks : public QObject {
  Q_OBJECT
 public:
  /// `showError(title, text)` says why something could not be done.
  RunsDocks(SessionModel* model, RunsPanel* runs, std::function<void(const QString&, const QString&)> showError,
            QObject* parent = nullptr);
  /// Adds a run directory written by `tensorscope train` (or a sweep's trial) with how its training
  /// ended; false (said through showError) for a folder that is not a usable run.
  bool openRunDirectory(const QString& dir);

 private:
  /// Every run's name and status, or why its design is invalid.
  void showRuns();

  SessionModel* model_;
  RunsPanel* runs_;
  std::function<void(const QString&, const QString&)> showError_;
};

}  // namespace tensorscope::app
