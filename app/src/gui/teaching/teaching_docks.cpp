#include "gui/teaching/teaching_docks.h"

#include <QDockWidget>
#include <QStringList>
#include <algorithm>
#include <memory>
#include <vector>

#include "diagram_view/diagram_view.h"
#include "gui/design/core_editor.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_model.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/training/snapshot_docks.h"
#include "model_core/snapshots.h"
#include "spec/core_spec.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"

namespace tensorscope::app {

TeachingDocks::TeachingDocks(const LessonParts& parts, SnapshotDocks* inspections, const TeachingWidgets& widgets,
                             std::function<void(const QString&)> openLab, QObject* parent)
    : QObject(parent), parts_(parts), widgets_(widgets), openLab_(std::move(openLab)) {
  views_ = new InspectorDocks(parts_.model, parts_.controller, inspections, parts_.diagram, parts_.inspector, this);
  QString problems;
  // The shipped lessons and the user's own (Add lessons… copies them to the user's folder).
  widgets_.lessons->setUserLessonDirectory(userLessonDirectory());
  widgets_.lessons->setLessons(availableLessons(&problems, userLessonDirectory()), problems);
  runner_ = new LessonRunner(parts_, widgets_.lessons, this);
  runner_->setLabOpener([this](spec::LessonLab lab) {
    openLab_(lab == spec::LessonLab::Bottleneck ? "Bottleneck lab" : "Stable-rank lab");
  });
  runner_->setLabRunner([this](spec::LessonLab lab) {
    return lab == spec::LessonLab::Bottleneck ? widgets_.bottleneck->fit()
                                              : widgets_.stableRank->useDesignCore() || widgets_.stableRank->generate();
  });
  connectLabs(inspections);
  connectInspectorClicks();
}

void TeachingDocks::connectLabs(SnapshotDocks* inspections) {
  connect(widgets_.bottleneck, &BottleneckLab::labDone, runner_, [this] { runner_->labDone(spec::LessonLab::Bottleneck); });
  connect(widgets_.stableRank, &StableRankLab::labDone, runner_, [this] { runner_->labDone(spec::LessonLab::StableRank); });
  // The bottleneck lab can fit a trained run's maps; the stable-rank lab can take the design's C.
  connect(inspections, &SnapshotDocks::inspected, this,
          [this](quint64, std::shared_ptr<const model_core::InspectionSnapshot> snap) {
            QStringList names;
            std::vector<model_core::HostTensor> maps;
            if (snap)
              for (size_t l = 0; l < snap->maps.size(); ++l)
                for (size_t h = 0; h < snap->maps[l].size(); ++h)
                  if (snap->maps[l][h].rows() > 0 && snap->maps[l][h].rows() == snap->maps[l][h].cols()) {
                    names << QString("%1 · layer %2 · map %3").arg(parts_.model->currentRun().name).arg(l).arg(h);
                    maps.push_back(snap->maps[l][h]);
                  }
            widgets_.bottleneck->setRunMaps(names, std::move(maps));
          });
  connect(parts_.model, &SessionModel::designChanged, this, &TeachingDocks::coreToLab);
  connect(parts_.model, &SessionModel::currentChanged, this, &TeachingDocks::coreToLab);
  connect(parts_.model, &SessionModel::sessionReset, this, &TeachingDocks::coreToLab);
  coreToLab();
}

void TeachingDocks::coreToLab() {
  if (parts_.model->count() == 0) return;
  const auto s = parts_.model->currentSpec();
  const auto& z = s.sizes;
  if (!s.core || !spec::validate(s).empty() || z.R > CoreEditor::kMaxDrawnCoreWidth) {
    widgets_.stableRank->setCore({}, 0, 0);
    return;
  }
  const auto C = spec::materializeCore(*s.core, z.H, z.D, z.R);
  widgets_.stableRank->setCore({{z.R, z.R}, std::vector<float>(C.begin(), C.end())}, z.H, z.D);
}

void TeachingDocks::connectInspectorClicks() {
  QDockWidget* inspectorDock = parts_.dock ? parts_.dock("Inspector") : nullptr;
  if (!inspectorDock) return;
  // Only a visible inspector costs anything; a click on a tensor (not C: the core editor) shows it.
  connect(inspectorDock, &QDockWidget::visibilityChanged, views_, &InspectorDocks::setActive);
  connect(parts_.diagram, &diagram_view::DiagramView::elementClicked, this,
          [this, inspectorDock](diagram_view::DiagramScene::Element kind, const QString& id) {
            const auto& nodes = parts_.diagram->network().nodes;
            const bool core = kind == diagram_view::DiagramScene::Element::Tensor &&
                              std::any_of(nodes.begin(), nodes.end(), [&](const auto& n) {
                                return n.kind == spec::NodeKind::Core && QString::fromStdString(n.id) == id;
                              });
            if (core) return;
            inspectorDock->show();
            inspectorDock->raise();
          });
}

}  // namespace tensorscope::app
