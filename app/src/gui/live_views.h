#pragma once
/// The training curves as an observer of training and of the document: the training run's metrics
/// as they come, every other run's from its metrics log, overlaid or not. (The views of the model's
/// insides are InspectionViews'.)

#include <QObject>
#include <QVector>

namespace tensorscope::viz {
class CurvesPlot;
}  // namespace tensorscope::viz
namespace tensorscope::model_core {
struct EvalSnapshot;
struct MetricsSnapshot;
}  // namespace tensorscope::model_core

namespace tensorscope::app {

class SessionModel;
class TrainingController;

class LiveViews : public QObject {
  Q_OBJECT
 public:
  LiveViews(SessionModel* model, TrainingController* controller, viz::CurvesPlot* curves, QObject* parent = nullptr);

 Q_SIGNALS:
  /// Something the user should read in the status bar (damaged lines of a metrics log).
  void message(const QString& text, int timeoutMs);

 private:
  void onMetrics(const QVector<model_core::MetricsSnapshot>& batch);
  void onEvaluated(const model_core::EvalSnapshot& e);
  /// Draws run `index`'s curves from its metrics log (nothing without a run directory).
  void loadCurves(int index);
  void reloadAllCurves();
  QString trainingRunName() const;

  SessionModel* model_;
  viz::CurvesPlot* curves_;
};

}  // namespace tensorscope::app
