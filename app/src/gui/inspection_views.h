#pragma once
/// The views of a model's insides as observers of training and of the document: the stable rank
/// and spectrum of each layer's C (following the layer chosen in the core editor), the attention
/// maps and the TP role clusters. Inspections are read with the design the run trains, never with
/// the selected run's. (The curves are LiveViews'.)

#include <QObject>
#include <memory>

#include "gui/run_features.h"

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

struct InspectionViewWidgets {
  viz::StableRankPlot* stableRank = nullptr;
  viz::SpectrumPlot* spectrum = nullptr;
  viz::AttentionMapGrid* maps = nullptr;
  viz::RoleClusterPlot* roles = nullptr;
};

class InspectionViews : public QObject {
  Q_OBJECT
 public:
  InspectionViews(SessionModel* model, TrainingController* controller, const InspectionViewWidgets& views,
                  QObject* parent = nullptr);
  /// Redraws the role clusters of the last inspection with k clusters.
  void reclusterRoles(int k);

 Q_SIGNALS:
  /// Something the user should read in the status bar.
  void message(const QString& text, int timeoutMs);
  /// A new inspection of the training run (after the views drew it).
  void inspected(std::shared_ptr<const tensorscope::model_core::InspectionSnapshot> snapshot);

 private:
  void onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap);
  /// Empties the stable rank, spectrum, maps and role clusters (a new session or training run).
  void clearInspectionViews();

  SessionModel* model_;
  InspectionViewWidgets v_;
  std::shared_ptr<const model_core::InspectionSnapshot> last_;
  RoleProjection lastRoles_;  ///< the role picture on show, to align the next one with
};

}  // namespace tensorscope::app
