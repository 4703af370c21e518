#pragma once
/// The live views as observers of training and of the document: the curves (the training run's
/// metrics as they come, every other run's from its metrics log, overlaid or not), the stable rank
/// and spectrum of each layer's C (following the layer chosen in the core editor), the attention
/// maps and the TP role clusters. Inspections are read with the design the run trains, never with
/// the selected run's.

#include <QObject>
#include <QVector>
#include <memory>

#include "gui/run_features.h"

namespace tensorscope::viz {
class AttentionMapGrid;
class CurvesPlot;
class RoleClusterPlot;
class SpectrumPlot;
class StableRankPlot;
}  // namespace tensorscope::viz
namespace tensorscope::model_core {
struct EvalSnapshot;
struct InspectionSnapshot;
struct MetricsSnapshot;
}  // namespace tensorscope::model_core

namespace tensorscope::app {

class SessionModel;
class TrainingController;

struct LiveViewWidgets {
  viz::CurvesPlot* curves = nullptr;
  viz::StableRankPlot* stableRank = nullptr;
  viz::SpectrumPlot* spectrum = nullptr;
  viz::AttentionMapGrid* maps = nullptr;
  viz::RoleClusterPlot* roles = nullptr;
};

class LiveViews : public QObject {
  Q_OBJECT
 public:
  LiveViews(SessionModel* model, TrainingController* controller, const LiveViewWidgets& views, QObject* parent = nullptr);
  /// Redraws the role clusters of the last inspection with k clusters.
  void reclusterRoles(int k);

 Q_SIGNALS:
  /// Something the user should read in the status bar (damaged lines of a metrics log).
  void message(const QString& text, int timeoutMs);
  /// A new inspection of the training run (after the views drew it).
  void inspected(std::shared_ptr<const tensorscope::model_core::InspectionSnapshot> snapshot);

 private:
  void onMetrics(const QVector<model_core::MetricsSnapshot>& batch);
  void onEvaluated(const model_core::EvalSnapshot& e);
  void onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap);
  /// Draws run `index`'s curves from its metrics log (nothing without a run directory).
  void loadCurves(int index);
  void reloadAllCurves();
  /// Empties the stable rank, spectrum, maps and role clusters (a new session or training run).
  void clearInspectionViews();
  QString trainingRunName() const;

  SessionModel* model_;
  LiveViewWidgets v_;
  std::shared_ptr<const model_core::InspectionSnapshot> last_;
  RoleProjection lastRoles_;  ///< the role picture on show, to align the next one with
};

}  // namespace tensorscope::app
