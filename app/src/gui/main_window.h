#pragma once
/// The explorer's main window. It wires docks, the session, the undo stack and the training
/// controller together and delegates; the features live in the docks and controllers.

#include <QMainWindow>
#include <functional>
#include <QUndoStack>
#include <memory>

#include "gui/session.h"
#include "spec/attention_spec.h"

class QDockWidget;
class QPlainTextEdit;
class QTimer;

namespace tensorscope::viz {
class AttentionMapGrid;
class CurvesPlot;
class RoleClusterPlot;
class SpectrumPlot;
class StableRankPlot;
}  // namespace tensorscope::viz
namespace tensorscope::diagram_view {
class DiagramView;
}
namespace tensorscope::model_core {
struct InspectionSnapshot;
}

namespace tensorscope::app {

class CoreEditor;
class DesignPanel;
class RunsPanel;
class TrainingController;
class TrainingPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  struct Options {
    bool restoreLayout = true;   ///< restore dock layout from the last session (off for screenshots)
    bool offerRecovery = true;   ///< offer to restore an autosave after a crash
    /// Answers "restore the autosaved session?"; empty: ask the user in a dialog.
    std::function<bool()> askToRecover;
  };
  explicit MainWindow(const Options& options, QWidget* parent = nullptr);
  MainWindow() : MainWindow(Options{}) {}
  ~MainWindow() override;

  // Access for tests, scripts and the demo runner.
  DesignPanel* designPanel() const { return design_; }
  CoreEditor* coreEditor() const { return core_; }
  TrainingController* controller() const { return controller_; }
  TrainingPanel* trainingPanel() const { return training_; }
  viz::CurvesPlot* curves() const { return curves_; }
  viz::StableRankPlot* stableRankPlot() const { return stableRank_; }
  viz::AttentionMapGrid* attentionMaps() const { return maps_; }
  viz::RoleClusterPlot* roleClusters() const { return roles_; }
  QUndoStack* undoStack() { return &undo_; }
  const Session& session() const { return session_; }
  QList<QDockWidget*> docks() const;

  /// The attention spec of the current run's layer on show in the core editor (layers share one
  /// spec unless their cores differ, as in a fork of a trained multi-layer run).
  spec::AttentionSpec currentSpec() const;
  /// The layer the core editor shows (0 when every layer shares the design).
  int currentLayer() const;
  /// Every layer's design of a run config (a shared spec repeated per layer).
  static std::vector<spec::AttentionSpec> layerDesigns(const model_core::RunConfig& config);
  /// Sets the attention specs (one shared, or one per layer) of the run with this id, selecting it
  /// first (what undo and redo call). Returns false, with the reason in the status bar, for a run
  /// removed since or one that trains (its design is what it trains with).
  bool applySpecToRun(quint64 runId, const std::vector<spec::AttentionSpec>& attention);
  /// Changes the current run's design, in every layer, as one undoable edit named `what` (nothing
  /// when unchanged). Each layer keeps its own C unless the edit changed the C on show.
  void editDesign(const spec::AttentionSpec& after, const QString& what);
  /// Selects run `index` of the session.
  void selectRun(int index);
  /// Starts training the current run (optionally stopping at `steps`). Returns false on refusal.
  bool startTraining(qint64 steps = -1);
  /// Writes the session to the autosave file (also every minute and on close). After a crash
  /// (no clean close), the next start offers to restore it.
  void autosave();
  /// Forks the training run from its current state: asks the trainer for a checkpoint; when it
  /// lands, adds and selects a new run whose design holds the learned C (editable) and whose other
  /// weights start from a snapshot of that checkpoint. False when no run is training.
  bool forkTrainingRun();

  bool openSession(const QString& path);
  bool saveSession(const QString& path);
  /// Adds a run directory written by `tensorscope train` and shows its curves.
  bool openRunDirectory(const QString& dir);
  /// Writes every current view (curves, stable rank, spectrum, maps, roles, core, diagram) to `dir`.
  bool exportFigures(const QString& dir);
  void setDarkTheme(bool dark);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  QDockWidget* addDock(const QString& title, QWidget* content, Qt::DockWidgetArea area);
  void buildDocks();
  void buildMenus();
  void connectTraining();
  void loadSession(Session session);
  void refreshRuns();
  bool forkFromCheckpoint();
  /// Appends a run to the session (shown, overlaid) and selects it.
  void addRun(RunEntry entry, const QString& status);
  void refreshDesignViews();
  void onDesignEdited(const spec::AttentionSpec& spec);
  void onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap);
  void reclusterRoles(int k);
  void loadMetricsFile(const QString& runName, const QString& dir);
  void showError(const QString& title, const QString& text);

  Options options_;
  Session session_;
  QString sessionPath_;
  QUndoStack undo_;
  TrainingController* controller_ = nullptr;
  int trainingRun_ = -1;
  QStringList statuses_;
  QList<bool> overlay_;
  std::shared_ptr<const model_core::InspectionSnapshot> lastInspection_;
  int forkParent_ = -1;  ///< run waiting for the checkpoint a fork starts from
  bool dark_ = false;
  quint64 nextRunId_ = 1;
  int coreLayer_ = 0;  ///< the layer chosen in the core editor
  /// Pushes the current run's new layer designs (collapsed to one spec when all are equal).
  void pushDesign(std::vector<spec::AttentionSpec> after, const QString& what, int stroke = -1);
  void showLearnedCoreOfLayer(const model_core::InspectionSnapshot& snap);
  /// The design of the run that trains, as it started: inspections are read with it.
  spec::AttentionSpec trainingSpec_;

  DesignPanel* design_ = nullptr;
  CoreEditor* core_ = nullptr;
  diagram_view::DiagramView* diagram_ = nullptr;
  QPlainTextEdit* specText_ = nullptr;
  TrainingPanel* training_ = nullptr;
  RunsPanel* runs_ = nullptr;
  viz::CurvesPlot* curves_ = nullptr;
  viz::StableRankPlot* stableRank_ = nullptr;
  viz::SpectrumPlot* spectrum_ = nullptr;
  viz::AttentionMapGrid* maps_ = nullptr;
  viz::RoleClusterPlot* roles_ = nullptr;
  QTimer* autosaveTimer_ = nullptr;
};

}  // namespace tensorscope::app
