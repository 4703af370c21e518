#pragma once
/// The explorer's main window: it builds the docks and menus and wires them to the document
/// (SessionModel), the design docks' binding (DesignDocks), training (TrainingDriver) and the live
/// views (LiveDocks). It holds no state of the session and no feature logic of its own.

#include <QMainWindow>
#include <QMessageBox>
#include <functional>
#include <vector>

#include "gui/training/training_driver.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace tensorscope::viz {
class AttentionMapGrid;
class CurvesPlot;
class PlotWidget;
class RoleClusterPlot;
class SpectrumPlot;
class StableRankPlot;
}  // namespace tensorscope::viz
namespace tensorscope::diagram_view {
class DiagramView;
}
namespace tensorscope::spec {
struct AttentionSpec;
}

namespace tensorscope::app {

class CoreEditor;
struct DemoParts;
class DesignDocks;
class ExperimentsPanel;
class TensorInspector;
class InspectorDocks;
class PresenterMode;
class LessonPanel;
class LessonRunner;
class TeachingDocks;
class RunsDocks;
class BottleneckLab;
class StableRankLab;
class DesignPanel;
class SnapshotDocks;
class LiveDocks;
class RunsPanel;
class SessionFiles;
class SessionModel;
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
    bool reopenLastSession = true;  ///< open the last saved or opened session file at start
    bool rememberedTheme = true;    ///< start in the theme last chosen (off: light, for screenshots)
    /// Answers "save the changes?" (Save, Discard or Cancel); empty: a dialog, or Discard where no
    /// one can answer (offscreen).
    std::function<QMessageBox::StandardButton()> askToSave;
    /// Answers a yes/no question by its title (e.g. "Edit C of a training run?"); empty: a dialog,
    /// or no where no one can answer (offscreen).
    std::function<bool(const QString& title)> confirm;
    /// Answers "resume this run or train it again?"; empty: a dialog, or resume where no one can
    /// answer (offscreen).
    TrainingDriver::HistoryQuestion askHistory;
  };
  explicit MainWindow(const Options& options, QWidget* parent = nullptr);
  MainWindow() : MainWindow(Options{}) {}
  ~MainWindow() override;

  // The document and the parts, for tests, scripts and the demo runner.
  SessionModel& model() const { return *model_; }
  TrainingDriver& training() const { return *driver_; }
  SessionFiles& files() const { return *files_; }
  TrainingController* controller() const;
  DesignPanel* designPanel() const { return design_; }
  CoreEditor* coreEditor() const { return core_; }
  TrainingPanel* trainingPanel() const { return trainingPanel_; }
  RunsPanel* runsPanel() const { return runs_; }
  viz::CurvesPlot* curves() const { return curves_; }
  viz::StableRankPlot* stableRankPlot() const { return stableRank_; }
  viz::SpectrumPlot* spectrumPlot() const { return spectrum_; }
  viz::AttentionMapGrid* attentionMaps() const { return maps_; }
  viz::RoleClusterPlot* roleClusters() const { return roles_; }
  QLineEdit* probeEdit() const { return probeEdit_; }
  QLabel* probeNote() const { return probeNote_; }
  SnapshotDocks* snapshotDocks() const { return inspection_; }
  ExperimentsPanel* experiments() const { return experiments_; }
  TensorInspector* inspector() const { return inspector_; }
  InspectorDocks* teaching() const;
  PresenterMode* presenter() const { return presenter_; }
  LessonPanel* lessonPanel() const { return lessonPanel_; }
  LessonRunner* lessons() const;
  BottleneckLab* bottleneckLab() const { return bottleneckLab_; }
  StableRankLab* stableRankLab() const { return stableRankLab_; }
  /// Starts lesson `id` in the Lesson dock (false when there is none).
  bool startLesson(const QString& id);
  /// Shows a lab's dock large (the bottleneck or stable-rank lab).
  void openLab(const QString& title);
  diagram_view::DiagramView* diagram() const { return diagram_; }
  QList<QDockWidget*> docks() const;
  /// The parts a demo script drives (`tensorscope --demo`): DemoRunner is given these, not the window.
  DemoParts demoParts();
  /// The dock titled `title` (its object name), or null.
  QDockWidget* dock(const QString& title) const;

  /// Adds a run directory written by `tensorscope train` and shows its curves.
  bool openRunDirectory(const QString& dir);
  /// Opens a sweep directory in the Experiments dock (and shows the dock).
  bool openSweepDirectory(const QString& dir);
  /// Experiments > Sweep this design: the dialog, then the planned sweep in the Experiments dock.
  void sweepCurrentDesign();
  /// Writes every current view (curves, stable rank, spectrum, maps, roles, core, diagram) to `dir`.
  bool exportFigures(const QString& dir);
  void setDarkTheme(bool dark);
  bool darkTheme() const { return dark_; }
  /// The dock arrangement of a first start (View > Layout > Default restores it).
  const QByteArray& defaultLayout() const { return defaultLayout_; }
  /// Asks a yes/no question (Options::confirm, a dialog, or no when offscreen).
  bool confirm(const QString& title, const QString& text);
  /// Shows an error in the status bar and, on a real screen, in a dialog.
  void showError(const QString& title, const QString& text);

 protected:
  void closeEvent(QCloseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 Q_SIGNALS:
  void themeChanged(bool dark);

 private:
  QDockWidget* addDock(const QString& title, QWidget* content, Qt::DockWidgetArea area, bool scroll = false);
  /// The docks and their widgets (main_window_docks.cpp).
  void buildDocks();
  void updateTitle();
  /// A design edit of a run with a checkpoint: asks, then forks the run with the edit.
  void forkForDesignEdit(quint64 runId, const std::vector<spec::AttentionSpec>& after, const QString& what);
  std::vector<viz::PlotWidget*> plots() const;
  /// The Cost dock comes to the front of C's tab group when the shown design has no C, and C again
  /// when it gets one (only over the other of the two: a raised Inspector stays). Also sets the
  /// window property "designHasCore" that the Design layout reads.
  void followDesignCore();

  Options options_;
  bool dark_ = false;
  QByteArray defaultLayout_;
  SessionModel* model_ = nullptr;
  TrainingDriver* driver_ = nullptr;
  SessionFiles* files_ = nullptr;
  DesignDocks* designDocks_ = nullptr;
  bool coreOnTop_ = true, costOnTop_ = false;  ///< which of the two is its tab group's front tab
  int hadCore_ = -1;                           ///< whether the design shown last had a C (-1: none shown)
  LiveDocks* live_ = nullptr;
  SnapshotDocks* inspection_ = nullptr;

  DesignPanel* design_ = nullptr;
  CoreEditor* core_ = nullptr;
  diagram_view::DiagramView* diagram_ = nullptr;
  QPlainTextEdit* specText_ = nullptr;
  TrainingPanel* trainingPanel_ = nullptr;
  RunsPanel* runs_ = nullptr;
  viz::CurvesPlot* curves_ = nullptr;
  viz::StableRankPlot* stableRank_ = nullptr;
  viz::SpectrumPlot* spectrum_ = nullptr;
  viz::AttentionMapGrid* maps_ = nullptr;
  viz::RoleClusterPlot* roles_ = nullptr;
  QLineEdit* probeEdit_ = nullptr;
  QLabel* probeNote_ = nullptr;
  ExperimentsPanel* experiments_ = nullptr;
  TensorInspector* inspector_ = nullptr;
  TeachingDocks* teachingDocks_ = nullptr;
  RunsDocks* runsDocks_ = nullptr;
  PresenterMode* presenter_ = nullptr;
  LessonPanel* lessonPanel_ = nullptr;
  BottleneckLab* bottleneckLab_ = nullptr;
  StableRankLab* stableRankLab_ = nullptr;
};

}  // namespace tensorscope::app
