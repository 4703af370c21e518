#include "gui/design/design_docks.h"

#include <QFile>
#include <QPlainTextEdit>

#include <optional>


#include "diagram_view/diagram_view.h"
#include "gui/design/core_editor.h"
#include "gui/design/design_panel.h"
#include "gui/document/session_model.h"
#include "model_core/learned_lambda.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
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
  connect(model_, &SessionModel::trainingChanged, this, &DesignDocks::refresh);
  connect(model_, &SessionModel::sessionReset, this, [this] {  // another session: no learned C of this one's runs
    last_.reset();
    lastRun_ = 0;
    shownRun_ = 0;
    refresh();
  });
  // Docks -> model (edits become undo commands there).
  connect(design_, &DesignPanel::specChanged, model_,
          [this](const spec::AttentionSpec& s, const QString& what) { model_->editDesign(s, what); });
  connect(core_, &CoreEditor::coreEdited, model_,
          [this](const spec::AttentionSpec& /*before: the model has it*/, const spec::AttentionSpec& after,
                 const QString& what, int stroke) { model_->editCurrentLayer(after, what, stroke); });
  connect(core_, &CoreEditor::layerChosen, model_, &SessionModel::setCurrentLayer);
  connect(design_->headMixing(), &HeadMixingView::valuesEdited, model_,
          [this](const spec::AttentionSpec& after, const QString& what, int stroke) {
            model_->editCurrentLayer(after, what, stroke);
          });
  connect(design_, &DesignPanel::positionsEdited, model_, [this](const QString& positions, const QString& what) {
    if (!model_->editPositions(positions, what)) showModelContext();  // refused: the box shows the run's own
  });
}

void DesignDocks::showModelContext() {
  const RunEntry& run = model_->currentRun();
  DesignPanel::ModelContext m;
  m.layers = std::max(1, run.config.model.layers);
  m.positions = QString::fromStdString(run.config.model.positions);
  m.rotaryRefusal = SessionModel::positionsRefusal(run.config, "rotary");
  m.interleavedRefusal = SessionModel::positionsRefusal(run.config, "rotary_interleaved");
  // The learned λ of a differential run from its checkpoint (a run that trains shows its start).
  const bool differential = std::any_of(run.config.model.attention.begin(), run.config.model.attention.end(),
                                        [](const spec::AttentionSpec& s) { return s.slots.differential; });
  if (differential && !run.runDir.isEmpty() && !model_->isTraining(model_->current())) {
    const std::string dir = QFile::encodeName(run.runDir).toStdString();
    try {
      const auto state = model_core::inspectRunDirectory(dir);
      if (state.checkpoint_step >= 0) {
        m.learnedLambda = model_core::learnedDiffLambdas(dir);
        m.lambdaStep = state.checkpoint_step;
      }
    } catch (const std::exception& e) {
      Q_EMIT message(QString("λ of differential attention: ") + e.what());
    }
  }
  m.trainedMixing = trainedMixing();
  design_->setModelContext(m);
}

HeadMixingView::Trained DesignDocks::trainedMixing() const {
  // The trained head mixings and MTA kernels of the shown layer (the spec holds only their starts):
  // while the run trains, its latest inspection's; once it stops, its checkpoint's.
  const RunEntry& run = model_->currentRun();
  const spec::AttentionSpec shown = model_->currentSpec();
  HeadMixingView::Trained t;
  t.run = run.name;
  t.layer = model_->currentLayer();
  const QStringList weights = HeadMixingView::weightsOf(shown);
  if (weights.isEmpty()) return t;
  if (model_->isTraining(model_->current())) {
    const bool inspected = last_ && lastRun_ == run.id && t.layer >= 0 &&
                           t.layer < static_cast<int>(last_->slot_weights.size()) &&
                           !last_->slot_weights[static_cast<size_t>(t.layer)].empty();
    if (!inspected) {
      t.why = "The run is training: its values show here from its first inspection on.";
      return t;
    }
    for (const auto& w : last_->slot_weights[static_cast<size_t>(t.layer)])
      t.tensors.push_back({QString::fromStdString(w.name), w.value.shape,
                           std::vector<double>(w.value.values.begin(), w.value.values.end())});
    t.step = last_->step;
    t.live = true;
    return t;
  }
  if (run.runDir.isEmpty() && !run.initFrom.isEmpty()) {
    // A fork that has not trained: it starts from its snapshot's values (warm start), unless its
    // design draws its own (then the design's, which the warm start takes: training_session.h).
    const std::string snapshot = QFile::encodeName(run.initFrom).toStdString();
    try {
      std::vector<std::string> names;
      for (const auto& w : weights) names.push_back(w.toStdString());
      for (auto& w : model_core::learnedAttentionWeights(snapshot, t.layer, names))
        t.tensors.push_back({QString::fromStdString(w.name), std::move(w.shape), std::move(w.values)});
      t.step = model_core::inspectRunDirectory(snapshot).checkpoint_step;
      t.forkStart = true;
    } catch (const std::exception& e) {
      t.why = QString("The fork's starting snapshot could not be read: ") + e.what();
    }
    return t;
  }
  if (run.runDir.isEmpty() || !model_->hasCheckpoint(model_->current())) {
    t.why = "The run has not trained yet: its trained values show here once it has a checkpoint.";
    return t;
  }
  const std::string dir = QFile::encodeName(run.runDir).toStdString();
  try {
    const auto state = model_core::inspectRunDirectory(dir);
    if (state.checkpoint_step < 0) {
      t.why = "The run has no checkpoint yet: its trained values show here once it has one.";
    } else {
      std::vector<std::string> names;
      for (const auto& w : weights) names.push_back(w.toStdString());
      for (auto& w : model_core::learnedAttentionWeights(dir, t.layer, names))
        t.tensors.push_back({QString::fromStdString(w.name), std::move(w.shape), std::move(w.values)});
      t.step = state.checkpoint_step;
    }
  } catch (const std::exception& e) {
    t.why = QString("The run's checkpoint could not be read: ") + e.what();
  }
  return t;
}

void DesignDocks::refresh() {
  const int current = model_->current();
  const bool editable = !model_->isTraining(current);
  const auto s = model_->currentSpec();
  core_->setLayers(model_->layerCount(current), model_->currentLayer(), model_->perLayer(current));
  design_->setSpec(s);
  design_->setEditable(editable);
  showModelContext();
  core_->setSpec(s);
  // setEditable(true) clears the banner and redraws C: on another run, or when the lock changes.
  const quint64 shown = model_->currentRun().id;
  if (core_->editable() != editable || shown != shownRun_) core_->setEditable(editable);
  shownRun_ = shown;
  showLearnedCore();  // a run with an inspection (training, or trained): its learned C
  specText_->setPlainText(QString::fromStdString(spec::toJson(s)));
  // An invalid design keeps the last valid diagram, dimmed, under a notice that says why (the
  // Design dock lists every problem at its field).
  // The caption says what the drawn network is, as the Design dock does (spec::nameDesigns).
  diagram_->setCaption(DesignPanel::describeDesigns(s));
  if (const auto problems = spec::validate(s); !problems.empty()) {
    QString first = QString::fromStdString(problems.front().field + ": " + problems.front().message);
    if (problems.size() > 1) first += QString(" (and %1 more problem(s), listed in the Design dock)").arg(problems.size() - 1);
    diagram_->setNotice("This design is invalid, so the diagram shows the last valid one. " + first);
    return;
  }
  try {
    diagram_->setNetwork(spec::buildTensorNetwork(s, std::min(s.sizes.seq_len, 64)));
    diagram_->setNotice({});
  } catch (const std::exception& e) {
    diagram_->setNotice(QString("No diagram for this design: ") + e.what());
    Q_EMIT message(QString("diagram: ") + e.what());
  }
}

void DesignDocks::showInspection(quint64 runId, std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  const bool wasLearned = last_ && lastRun_ == runId;
  last_ = std::move(snap);
  lastRun_ = runId;
  if (runId != model_->currentRun().id) return;
  // C′ and the MTA kernels follow the training run at each inspection, as C does.
  if (last_ && model_->isTraining(model_->current()) && !HeadMixingView::weightsOf(model_->currentSpec()).isEmpty())
    design_->headMixing()->setTrained(trainedMixing());
  if (last_) showLearnedCore();
  else if (wasLearned && !model_->isTraining(model_->current())) core_->setEditable(true);  // back to the design
}

void DesignDocks::showLearnedCore() {
  if (!last_ || lastRun_ != model_->currentRun().id) return;
  // cores[i] belongs to layer core_layers[i] (layers without a core have none).
  const auto& snap = *last_;
  for (size_t i = 0; i < snap.cores.size() && i < snap.core_layers.size(); ++i)
    if (snap.core_layers[i] == model_->currentLayer()) {
      const QString name = model_->currentRun().name;
      const QString whose =
          model_->isTraining(model_->current())
              ? QString("Showing the learned C of %1, which is training (read-only). Editing forks a new run from "
                        "its latest checkpoint.").arg(name)
              : QString("Showing the learned C of %1 at step %2 (read-only): the run stays as trained. Editing "
                        "forks a new run from its checkpoint with the edited C.").arg(name).arg(snap.step);
      // A stopped run's factors come from its checkpoint when that is the inspection's step.
      std::optional<spec::CoreSpec> factors;
      const auto& run = model_->currentRun();
      if (!model_->isTraining(model_->current()) && !run.runDir.isEmpty()) {
        const std::string dir = QFile::encodeName(run.runDir).toStdString();
        try {
          if (model_core::inspectRunDirectory(dir).checkpoint_step == snap.step)
            factors = model_core::learnedCoreSpec(dir, model_->currentLayer());
        } catch (const std::exception&) {  // no factors then: the panels say where they come from
        }
      }
      core_->showLearnedCore(snap.cores[i].values, snap.cores[i].rows(), snap.step, whose, factors ? &*factors : nullptr);
      return;
    }
}

}  // namespace tensorscope::app
