#pragma once
/// The views of a model's insides as observers of training and of the document: the stable rank
/// and spectrum of each layer's C (following the layer chosen in the core editor), the attention
/// maps and the TP role clusters. They always show the selected run: the training run's inspections
/// as they come, any other run's as its run directory kept them (model_core/inspection_files.h), and
/// nothing (with the reason) for a run that has none. Each view's dock title says "run · step".
/// (The curves are LiveDocks'.)

#include <QObject>
#include <QString>
#include <functional>
#include <memory>

class QLabel;
class QLineEdit;
class QWidget;

#include "gui/training/run_features.h"

namespace tensorscope::viz {
class AttentionMapGrid;
class RoleClusterPlot;
class SpectrumPlot;
class StableRankPlot;
}  // namespace tensorscope::viz
namespace tensorscope::model_core {
struct InspectionSnapshot;
}  // namespace tensorscope::model_core

namespace tensorscope::app {

class SessionModel;
class TrainingController;

struct SnapshotWidgets {
  viz::StableRankPlot* stableRank = nullptr;
  viz::SpectrumPlot* spectrum = nullptr;
  viz::AttentionMapGrid* maps = nullptr;
  viz::RoleClusterPlot* roles = nullptr;
  QLineEdit* probe = nullptr;     ///< the probe the user types (Enter runs it)
  QLabel* probeNote = nullptr;    ///< what the probe does, or why it cannot
};

/// Sets the header ("run · step") a view shows; empty: the view shows no run's data.
using ViewHeaderSetter = std::function<void(QWidget* view, const QString& header)>;

class SnapshotDocks : public QObject {
  Q_OBJECT
 public:
  SnapshotDocks(SessionModel* model, TrainingController* controller, const SnapshotWidgets& views,
                  ViewHeaderSetter setHeader, QObject* parent = nullptr);
  /// Redraws the role clusters of the last inspection with k clusters.
  void reclusterRoles(int k);
  /// The inspection on show (null when the selected run has none) and the run it belongs to.
  std::shared_ptr<const model_core::InspectionSnapshot> shown() const { return last_; }
  quint64 shownRun() const { return shownRun_; }
  /// Shows the selected run again (from its run directory unless it is the training run).
  void showSelectedRun();
  /// Computes the attention maps (and everything else of an inspection) on `probe`: typed text, an
  /// image number, or empty for the task's default. The training run answers at its next step
  /// boundary (also while paused) and keeps the probe; a stopped run is probed from its checkpoint
  /// on a worker thread. The probe stays for every run shown until it is cleared.
  void setProbe(const QString& probe);
  QString probe() const { return probe_; }
  /// True while a stopped run's probe is computed.
  bool probing() const { return probeRunning_; }
  /// True when the last probe was refused (the probe note says why).
  bool probeRefused() const { return noteIsError_; }
  /// The role vector set shown: (layer, head); (-1, -1) before any.
  std::pair<int, int> roleSource() const { return roleChoice_; }
  void setRoleSource(int layer, int head);

 Q_SIGNALS:
  /// Something the user should read in the status bar.
  void message(const QString& text, int timeoutMs);
  /// The inspection the views now show, of run `runId` (null: that run has none), after they drew
  /// it: a new one of the training run, or the selected run's from its directory.
  void inspected(quint64 runId, std::shared_ptr<const tensorscope::model_core::InspectionSnapshot> snapshot);
  /// A stopped run's probe finished (drawn, or refused with the reason in the probe note).
  void probeFinished();

 private:
  void onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap);
  /// Empties the stable rank, spectrum, maps and role clusters; `why` for the maps and roles.
  void clearInspectionViews(const QString& why);
  /// Says in the maps and roles views why they are empty.
  void explain(const QString& why);
  /// Draws everything of `snap` but the stable rank history (the spectrum, maps and roles).
  void drawSnapshot(const model_core::InspectionSnapshot& snap);
  /// Draws the role clusters of `shown` with k clusters (nothing without an inspection).
  void drawRoles(const model_core::InspectionSnapshot* shown, int k);
  void setHeaders();
  /// Applies the probe to the run on show (after it changed, or the run did).
  void applyProbe();
  void note(const QString& text, bool error = false);
  /// Shows `snap` as the selected run's inspection (after it was read or probed).
  void show(std::shared_ptr<const model_core::InspectionSnapshot> snap);

  ViewHeaderSetter setHeader_;
  quint64 shownRun_ = 0;
  QString shownName_;
  bool rankHistory_ = false;  ///< the stable rank plot holds a history read from the run directory
  /// The newest inspection of the training run (shown only while that run is selected).
  std::shared_ptr<const model_core::InspectionSnapshot> live_;
  quint64 liveRun_ = 0;

  SessionModel* model_;
  SnapshotWidgets v_;
  std::shared_ptr<const model_core::InspectionSnapshot> last_;
  RoleProjection lastRoles_;  ///< the role picture on show, to align the next one with
  std::pair<int, int> roleChoice_{-1, -1};
  TrainingController* controller_;
  QString probe_;
  quint64 probeTicket_ = 0;  ///< the newest probe asked for; older answers are dropped
  bool probeRunning_ = false;
  QString trainerProbe_;     ///< the probe the training run was last given
  bool noteIsError_ = false;
};

}  // namespace tensorscope::app
