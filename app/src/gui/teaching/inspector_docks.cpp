#include "gui/teaching/inspector_docks.h"

#include <QDockWidget>
#include <QFile>
#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>

#include "diagram_view/diagram_view.h"
#include "gui/training/snapshot_docks.h"
#include "gui/document/session_model.h"
#include "gui/teaching/tensor_inspector.h"
#include "gui/training/training_controller.h"
#include "model_core/network_values.h"
#include "model_core/run_directory.h"
#include "model_core/snapshots.h"
#include "spec/design_names.h"
#include "spec/validation.h"

namespace tensorscope::app {
namespace {

struct Computed {
  std::shared_ptr<const model_core::NetworkValues> values;
  QString error;
};

}  // namespace

QString InspectorDocks::whose(const QString& runName, const spec::AttentionSpec& design) {
  if (!spec::validate(design).empty()) return runName;
  return runName + " · " + QString::fromStdString(spec::nameDesigns(design).front().name);
}

InspectorDocks::InspectorDocks(SessionModel* model, TrainingController* controller, SnapshotDocks* inspections,
                             diagram_view::DiagramView* diagram, TensorInspector* inspector, QObject* parent)
    : QObject(parent), model_(model), controller_(controller), inspections_(inspections), diagram_(diagram),
      inspector_(inspector) {
  connect(diagram_, &diagram_view::DiagramView::elementClicked, inspector_,
          [this](diagram_view::DiagramScene::Element kind, const QString& id) { inspector_->showElement(kind, id); });
  connect(inspector_, &TensorInspector::highlightRequested, diagram_, &diagram_view::DiagramView::setHighlight);
  connect(inspections_, &SnapshotDocks::inspected, this, &InspectorDocks::onInspected);
  for (auto signal : {&SessionModel::currentChanged, &SessionModel::designChanged, &SessionModel::statusChanged})
    connect(model_, signal, this, [this](quint64) { refresh(); });
  connect(model_, &SessionModel::currentLayerChanged, this, [this](int) { refresh(); });
  connect(model_, &SessionModel::sessionReset, this, &InspectorDocks::refresh);
  refresh();
}

void InspectorDocks::setActive(bool active) {
  if (active == active_) return;
  active_ = active;
  if (!active_) {
    controller_->setNetworkLayer(-1);
    diagram_->setHighlight({});
    return;
  }
  refresh();
}

void InspectorDocks::refresh() {
  if (pending_) return;
  pending_ = true;
  QTimer::singleShot(0, this, [this] {
    pending_ = false;
    refreshNow();
  });
}

void InspectorDocks::show(std::shared_ptr<const model_core::NetworkValues> values, const QString& caption) {
  shownRun_ = values && model_->count() ? model_->currentRun().id : 0;
  if (values) inspector_->setValues(std::move(values), caption);
  else inspector_->clear(caption);
  Q_EMIT valuesShown();
}

void InspectorDocks::refreshNow() {
  if (model_->count() == 0) return;
  const spec::AttentionSpec design = model_->currentSpec();
  inspector_->setDesign(design, diagram_->network());  // the plan steps without values too
  if (!active_) return;
  const quint64 ticket = ++ticket_;
  computing_ = false;
  const RunEntry& run = model_->currentRun();
  const int layer = model_->currentLayer();
  lastProbe_ = inspections_->probe();
  if (model_->isTraining(model_->current())) {
    controller_->setNetworkLayer(layer);
    controller_->requestInspection(lastProbe_);  // values at the next step boundary, also while paused
    // Never another run's values (or another layer's) while this one's are on their way.
    if (!inspector_->values() || shownRun_ != run.id || inspector_->values()->layer != layer)
      show(nullptr, QString("%1 is training: the values of layer %2 arrive with its next inspection.").arg(whose(run.name, design)).arg(layer));
    return;
  }
  controller_->setNetworkLayer(-1);
  const bool trained = !run.runDir.isEmpty() &&
                       model_core::inspectRunDirectory(QFile::encodeName(run.runDir).toStdString()).checkpoint_step >= 0;
  computing_ = true;
  const QString name = whose(run.name, design);
  show(nullptr, trained ? QString("computing the values of %1, layer %2, at its checkpoint…").arg(name).arg(layer)
                        : QString("computing the values of %1 on a random input…").arg(name));
  auto* watcher = new QFutureWatcher<Computed>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, ticket, runId = run.id, trained, name] {
    watcher->deleteLater();
    if (ticket != ticket_ || model_->count() == 0 || runId != model_->currentRun().id) return;  // superseded
    computing_ = false;
    const Computed c = watcher->result();
    if (!c.values) {
      show(nullptr, QString("No values for %1: %2").arg(name, c.error));
      return;
    }
    const QString caption =
        trained ? QString("%1 · layer %2 · step %3 · %4").arg(name).arg(c.values->layer).arg(c.values->step).arg(QString::fromStdString(c.values->probe))
                : QString("%1 (not trained) · %2").arg(name, QString::fromStdString(c.values->probe));
    show(c.values, caption);
  });
  const std::string dir = QFile::encodeName(run.runDir).toStdString();
  const std::string probe = lastProbe_.toStdString();
  const std::int64_t tokens = std::min<std::int64_t>(design.sizes.seq_len, kDesignTokens);
  watcher->setFuture(QtConcurrent::run([trained, dir, layer, probe, design, tokens] {
    Computed c;
    try {
      c.values = std::make_shared<const model_core::NetworkValues>(
          trained ? model_core::runNetworkValues(dir, layer, probe) : model_core::designNetworkValues(design, tokens, 1));
    } catch (const std::exception& e) {
      c.error = QString::fromUtf8(e.what());
    }
    return c;
  }));
}

void InspectorDocks::onInspected(quint64 runId, std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  if (!active_ || model_->count() == 0 || runId != model_->currentRun().id) return;
  if (snap && snap->network && snap->network->layer == model_->currentLayer()) {
    show(snap->network, QString("%1 · layer %2 · step %3 · %4 (live)")
                            .arg(whose(model_->currentRun().name, model_->currentSpec()))
                            .arg(snap->network->layer)
                            .arg(snap->network->step)
                            .arg(QString::fromStdString(snap->network->probe)));
    return;
  }
  // A stopped run probed on another input: its values follow the new probe.
  if (!model_->isTraining(model_->current()) && inspections_->probe() != lastProbe_) refresh();
}

}  // namespace tensorscope::app

namespace tensorscope::app {

}  // namespace tensorscope::app
