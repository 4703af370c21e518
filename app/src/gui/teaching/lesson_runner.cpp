#include "gui/teaching/lesson_runner.h"

#include <QDockWidget>
#include <QFile>
#include <QTimer>
#include <algorithm>

#include "diagram_view/diagram_view.h"
#include "gui/design/core_editor.h"
#include "gui/document/session_model.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/tensor_inspector.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_driver.h"
#include "model_core/intervention.h"
#include "model_core/run_directory.h"
#include "spec/tensor_network.h"

namespace tensorscope::app {

LessonRunner::LessonRunner(LessonParts parts, LessonPanel* panel, QObject* parent)
    : QObject(parent), parts_(std::move(parts)), panel_(panel) {
  connect(panel_, &LessonPanel::stepEntered, this, &LessonRunner::enter);
  connect(panel_, &LessonPanel::showMeRequested, this, [this] { performAction(); });
  timer_ = new QTimer(this);
  timer_->setInterval(250);
  connect(timer_, &QTimer::timeout, this, &LessonRunner::refreshState);
  connect(parts_.controller, &TrainingController::metrics, this,
          [this](const QVector<model_core::MetricsSnapshot>& batch) {
            if (!batch.isEmpty()) trainingStep_ = batch.back().step;
          });
  connect(parts_.model, &SessionModel::statusChanged, this, [this](quint64 runId) { checkpointSteps_.erase(runId); });
  // A design edit of the lesson's trained run forks it (findings N7, N8): the lesson goes on in the
  // fork, beside the run it trained, whether Show me or the learner made the edit.
  connect(parts_.training, &TrainingDriver::forked, this, [this](quint64 id) {
    const int index = parts_.model->indexOf(id);
    if (run_ && index >= 0 && parts_.model->run(index).forkParent == run_) run_ = id;
  });
  connect(parts_.controller, &TrainingController::evaluated, this, [this](const model_core::EvalSnapshot& e) {
    evalLoss_[(*parts_.model).trainingRunId()] = e.loss;
  });
}

void LessonRunner::labDone(spec::LessonLab lab) {
  if (std::find(labsDone_.begin(), labsDone_.end(), lab) == labsDone_.end()) labsDone_.push_back(lab);
  refreshState();
}

void LessonRunner::enter(int lesson, int step) {
  const spec::Lesson& l = panel_->lessons().at(static_cast<size_t>(lesson));
  const spec::LessonStep& s = l.steps.at(static_cast<size_t>(step));
  auto& model = (*parts_.model);
  labsDone_.clear();  // a step's lab check asks for a run made in that step
  // Each lesson works in a run of its own (docs/teaching.md): another lesson never trains in the
  // run of the one before (finding N11).
  // By id, not position: Add lessons… may insert lessons before the one on show.
  if (l.id != lesson_) run_ = 0;
  lesson_ = l.id;
  // The lesson's own run: added at its first design; a run that has trained keeps what it learnt,
  // and a new design then goes into a new run.
  const bool needsDesign = s.design.has_value() || (step == 0 && s.has_design);
  if (needsDesign) {
    const spec::AttentionSpec design = s.design ? *s.design : s.effective_design;
    const int index = run_ ? model.indexOf(run_) : -1;
    const bool trained = index >= 0 && !model.run(index).runDir.isEmpty();
    if (index < 0 || trained || model.isTraining(index)) {
      RunEntry entry;
      entry.name = QString("Lesson · %1").arg(QString::fromStdString(l.title));
      entry.config = lessonRunConfig(design, l.task);
      run_ = model.addRun(entry, "not trained");
    } else {
      model.select(index);
      model.setCurrentConfig(lessonRunConfig(design, l.task));
    }
  } else if (run_ && model.indexOf(run_) >= 0) {
    model.select(model.indexOf(run_));
  }
  // A lesson step's highlight replaces any stepping highlight: the plan's stepping stops, so new
  // values do not bring its rings back. Highlights need the diagram of the design now shown (it
  // follows the design on this turn).
  parts_.inspector->stopStepping();
  const auto ids = s.highlight;
  QTimer::singleShot(0, this, [this, ids] {
    parts_.diagram->setHighlight(ids.empty() ? diagram_view::DiagramScene::Highlight{}
                                                 : lessonHighlight(ids, parts_.diagram->network()));
  });
  if (s.action.kind == spec::LessonActionKind::OpenLab && openLab_) openLab_(s.action.lab);
  timer_->start();
  refreshState();
}

spec::LessonState LessonRunner::state() const {
  spec::LessonState st;
  const auto& model = (*parts_.model);
  if (model.count() == 0) return st;
  const auto& run = model.currentRun();
  st.design = model.currentSpec();
  if (st.design->core) st.stable_rank = parts_.core->stableRank();
  if (model.isTraining(model.current())) {
    st.trained_steps = trainingStep_;
  } else if (!run.runDir.isEmpty()) {
    // Verifying a checkpoint reads its files: once per run and status, not four times a second.
    auto it = checkpointSteps_.find(run.id);
    if (it == checkpointSteps_.end())
      it = checkpointSteps_
               .emplace(run.id, model_core::inspectRunDirectory(QFile::encodeName(run.runDir).toStdString()).checkpoint_step)
               .first;
    st.trained_steps = std::max<std::int64_t>(0, it->second);
  }
  auto* inspector = parts_.inspector;
  st.inspected = inspector->lastElement().toStdString();
  st.plan_step = inspector->currentStep();
  st.plan_length = inspector->stepCount();
  st.labs_done = labsDone_;
  if (const auto it = evalLoss_.find(run.id); it != evalLoss_.end()) st.last_eval_loss = it->second;
  // The weights a fork starts from, read from its starting snapshot (once per run and intervention).
  if (!run.initFrom.isEmpty()) {
    auto it = zeroedRows_.find(run.id);
    if (it == zeroedRows_.end()) {
      std::vector<std::string> rows;
      try {
        rows = model_core::zeroMixingRows(QFile::encodeName(run.initFrom).toStdString(), 0);
      } catch (const std::exception&) {
        // An unreadable snapshot starts no fork; the check stays unmet and the fork's training says why.
      }
      it = zeroedRows_.emplace(run.id, std::move(rows)).first;
    }
    st.zeroed_rows = it->second;
  }
  return st;
}

void LessonRunner::refreshState() {
  if (!panel_->step()) {
    timer_->stop();
    return;
  }
  panel_->setState(state());
}

bool LessonRunner::editDesign(const spec::AttentionSpec& next, const QString& what) {
  auto& model = (*parts_.model);
  const int index = model.current();
  // A run that has trained keeps the design its checkpoint holds: Show me's edit goes to a fork
  // beside it, at once (the step's text says so; an edit by hand asks first, as any design edit of a
  // trained run does).
  if (!model.isTraining(index) && model.hasCheckpoint(index) && !(model.currentSpec() == next))
    return (*parts_.training).forkWithDesign(model.run(index).id, {next}, what);
  model.editDesign(next, what);
  return true;
}

bool LessonRunner::zeroRow(const std::string& parameter, int row) {
  auto& model = (*parts_.model);
  const int index = model.current();
  if (index < 0) return false;
  if (model.isTraining(index)) {
    parts_.showError("Zero a row", "The run is training: let it finish (or stop it) first; the row is zeroed in a fork of its checkpoint.");
    return false;
  }
  // A fork that has not trained yet is edited where it starts; any other run is forked from its
  // checkpoint first, so its own history stays as it trained (model_core/intervention.h).
  const RunEntry& current = model.run(index);
  if (current.initFrom.isEmpty() || !current.runDir.isEmpty()) {
    if (!model.hasCheckpoint(index)) {
      parts_.showError("Zero a row", "The run has no checkpoint yet: train it first.");
      return false;
    }
    if (!(*parts_.training).fork()) return false;
  }
  const RunEntry& fork = model.currentRun();
  if (fork.initFrom.isEmpty()) return false;
  model_core::zeroMixingRow(QFile::encodeName(fork.initFrom).toStdString(), 0, parameter, row);
  const quint64 forkId = fork.id;
  // A mixing the fork's design draws starts from the design, not the snapshot (the warm start takes
  // it from the config): its drawn row is zeroed too, or the intervention would not reach training.
  const auto before = SessionModel::layerDesigns(fork.config);
  auto after = before;
  auto& drawn = parameter == "mix_post" ? after.front().slots.post_mixing : after.front().slots.pre_mixing;
  const auto H = static_cast<size_t>(after.front().sizes.H);
  if (!drawn.isDefault() && drawn.values.size() == H * H) {
    std::fill_n(drawn.values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row) * H), H, 0.0);
    model.carryDesignEdit(before, after, QString("zero row %1 of %2").arg(row).arg(QString::fromStdString(parameter)));
  }
  zeroedRows_.erase(forkId);
  return true;
}

bool LessonRunner::performAction() {
  const spec::LessonStep* s = panel_->step();
  if (!s) return false;
  auto& model = (*parts_.model);
  const auto& a = s->action;
  const auto showDock = [this](const char* title) {
    if (QDockWidget* d = parts_.dock(title)) {
      d->show();
      d->raise();
    }
  };
  try {
    switch (a.kind) {
      case spec::LessonActionKind::Read: return true;
      case spec::LessonActionKind::EditCore:
        showDock("Core matrix C");
        if (a.paint.empty()) return false;  // the prompt says what to paint
        if (!editDesign(spec::applyCorePaint(model.currentSpec(), a.paint), "lesson: paint C")) return false;
        break;
      case spec::LessonActionKind::ChooseVariant: {
        const auto current = model.currentSpec();
        auto next = spec::makeSpecPreset(a.variant);
        next.sizes = current.sizes;
        next.causal = current.causal;
        if (spec::hasCore(next.variant) && next.core) {
          next.sizes.R = next.sizes.H * next.sizes.D;
          next.core = spec::makeCorePreset(next.core->preset, next.sizes.H, next.sizes.D);
        }
        if (!editDesign(next, "lesson: variant " + QString::fromStdString(a.variant))) return false;
        break;
      }
      case spec::LessonActionKind::ChooseCorePreset:
        if (!editDesign(spec::lessonReferenceDesign(a.preset, model.currentSpec()),
                        "lesson: core " + QString::fromStdString(a.preset)))
          return false;
        break;
      case spec::LessonActionKind::Train:
        showDock("Curves");
        return (*parts_.training).start(a.steps);
      case spec::LessonActionKind::Inspect: {
        showDock("Inspector");
        const QString node = QString::fromStdString(a.node);
        using E = diagram_view::DiagramScene::Element;
        const auto& boxes = parts_.diagram->network().boxes;
        const bool box = std::any_of(boxes.begin(), boxes.end(), [&](const auto& b) { return b.id == a.node; });
        // The inspector shows the element once the layer's values are computed (a click does the
        // same): the action is done when it is asked for.
        if (node.startsWith("leg:")) {
          const auto parts = node.split(':');
          for (const auto& n : parts_.diagram->network().nodes)
            if (parts.size() == 3 && QString::fromStdString(n.id) == parts[1] && parts[2].toInt() < static_cast<int>(n.legs.size())) {
              parts_.inspector->showElement(E::Leg, QString(QChar::fromLatin1(n.legs[static_cast<size_t>(parts[2].toInt())].index)));
              break;
            }
        } else {
          parts_.inspector->showElement(box ? E::SoftmaxBox : E::Tensor, node);
        }
        break;
      }
      case spec::LessonActionKind::StepPlan: {
        showDock("Inspector");
        auto* inspector = parts_.inspector;
        if (!a.to) inspector->next();
        else inspector->stepTo(*a.to == spec::kPlanEnd ? inspector->stepCount() - 1 : *a.to);
        break;
      }
      case spec::LessonActionKind::OpenLab:
        if (openLab_) openLab_(a.lab);
        break;
      case spec::LessonActionKind::RunLab:
        if (openLab_) openLab_(a.lab);
        return runLab_ && runLab_(a.lab);
      case spec::LessonActionKind::SetSlot:
        showDock("Cost");
        if (!editDesign(spec::applyLessonSlot(model.currentSpec(), a.slot, a.value),
                        "lesson: " + QString::fromStdString(a.slot + " " + a.value)))
          return false;
        break;
      case spec::LessonActionKind::ZeroRow:
        showDock("Curves");
        if (!zeroRow(a.parameter, a.row)) return false;
        break;
    }
  } catch (const std::exception& e) {
    parts_.showError("Show me", QString::fromUtf8(e.what()));
    return false;
  }
  refreshState();
  return true;
}

}  // namespace tensorscope::app
