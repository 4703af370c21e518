#include "gui/design_docks.h"

#include <QPlainTextEdit>

#include "diagram_view/diagram_view.h"
#include "gui/core_editor.h"
#include "gui/design_panel.h"
#include "gui/session_model.h"
#include "model_core/snapshots.h"
#include "spec/spec_json.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"

namespace tensorscope::app {

DesignDocks::DesignDocks(SessionModel* model, DesignPanel* design, CoreEditor* core, QPlainTextEdit* specText,
                         diagram_view::DiagramView* diagram, QObject* parent)
    : QObject(parent), model_(model), design_(design), core_(core), specText_(specText), diagram_(diagram) {
  // Model -> docks.
  connect(model_, &SessionModel::currentChanged, this, &DesignDocks::refresh);
  connect(model_, &SessionModel::currentLayerChanged, this, [this] {
    refresh();
    showLearnedCore();
  });
  connect(model_, &SessionModel::designChanged, this, [this](quint64 runId) {
    if (runId == model_->currentRun().id) refresh();
  });
  connect(model_, &SessionModel::trainingChanged, this, [this](quint64 runId) {
    if (runId == 0) last_.reset();
    refresh();
  });
  // Docks -> model (edits become undo commands there).
  connect(design_, &DesignPanel::specChanged, model_,
          [this](const spec::AttentionSpec& s) { model_->editDesign(s, "edit design"); });
  connect(core_, &CoreEditor::coreEdited, model_,
          [this](const spec::AttentionSpec& /*before: the model has it*/, const spec::AttentionSpec& after,
                 const QString& what, int stroke) { model_->editCurrentLayer(after, what, stroke); });
  connect(core_, &CoreEditor::layerChosen, model_, &SessionModel::setCurrentLayer);
}

void DesignDocks::refresh() {
  const int current = model_->current();
  const bool editable = !model_->isTraining(current);
  const auto s = model_->currentSpec();
  core_->setLayers(model_->layerCount(current), model_->currentLayer(), model_->perLayer(current));
  design_->setSpec(s);
  design_->setEditable(editable);
  core_->setSpec(s);
  // setEditable(true) clears the banner and redraws C: on another run, or when the lock changes.
  const quint64 shown = model_->currentRun().id;
  if (core_->editable() != editable || shown != shownRun_) core_->setEditable(editable);
  shownRun_ = shown;
  if (!editable) showLearnedCore();  // the training run: its learned C once an inspection came
  specText_->setPlainText(QString::fromStdString(spec::toJson(s)));
  if (!spec::validate(s).empty()) return;  // the Design dock lists the problems
  try {
    diagram_->setNetwork(spec::buildTensorNetwork(s, std::min(s.sizes.seq_len, 64)));
  } catch (const std::exception& e) {
    Q_EMIT message(QString("diagram: ") + e.what());
  }
}

void DesignDocks::showInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  last_ = std::move(snap);
  showLearnedCore();
}

void DesignDocks::showLearnedCore() {
  if (!last_ || !model_->isTraining(model_->current())) return;
  // cores[i] belongs to layer core_layers[i] (layers without a core have none).
  const auto& snap = *last_;
  for (size_t i = 0; i < snap.cores.size() && i < snap.core_layers.size(); ++i)
    if (snap.core_layers[i] == model_->currentLayer()) {
      core_->showLearnedCore(snap.cores[i].values, snap.cores[i].rows(), snap.step);
      return;
    }
}

}  // namespace tensorscope::app
