#include "gui/shell/demo_runner.h"

#include "gui/training/snapshot_docks.h"
#include "gui/document/app_paths.h"

#include <QFileInfo>

#include <QApplication>
#include <QLabel>
#include <QDockWidget>
#include <QElapsedTimer>
#include <iostream>

#include "gui/shell/dock_layouts.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/lesson_runner.h"
#include "gui/figures/image_file.h"
#include "gui/shell/main_window.h"
#include "gui/teaching/presenter_mode.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/teaching/tensor_inspector.h"
#include "viz/matrix_heatmap.h"
#include "viz/plot_widget.h"
#include "gui/shell/session_files.h"
#include "gui/document/session_model.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_controller.h"
#include "spec/attention_spec.h"

namespace tensorscope::app {

DemoRunner::DemoRunner(MainWindow* window, std::vector<DemoCommand> script, QObject* parent)
    : QObject(parent), window_(window), script_(std::move(script)) {
  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &DemoRunner::next);
  auto* c = window_->controller();
  connect(c, &TrainingController::metrics, this, [this](const auto& batch) {
    if (!batch.isEmpty()) lastStep_ = batch.back().step;
  });
  connect(c, &TrainingController::finished, this, [this] { trainingEnded_ = true; });
  connect(c, &TrainingController::failed, this, [this](const QString& why) {
    trainingEnded_ = true;
    std::cerr << "demo: training failed: " << why.toStdString() << "\n";
  });
}

void DemoRunner::start() { timer_.start(); }

void DemoRunner::fail(const QString& why) {
  const int line = pc_ < static_cast<int>(script_.size()) ? script_[size_t(pc_)].line : 0;
  std::cerr << "demo: line " << line << ": " << why.toStdString() << "\n";
  exitCode_ = 1;
  timer_.stop();
  Q_EMIT finished(exitCode_);
}

void DemoRunner::next() {
  while (pc_ < static_cast<int>(script_.size())) {
    const QString cmd = QString::fromStdString(script_[size_t(pc_)].name);
    const QString arg = QString::fromStdString(script_[size_t(pc_)].arg);
    if (cmd == "wait-step") {
      if (!trainingEnded_ && lastStep_ < arg.toLongLong()) return;
    } else if (cmd == "wait-end") {
      if (!trainingEnded_) return;
    } else if (cmd == "wait-ms") {
      if (waitUntil_ < 0) {
        waitClock_.start();
        waitUntil_ = arg.toLongLong();
      }
      if (waitClock_.elapsed() < waitUntil_) return;
      waitUntil_ = -1;
    } else if (cmd == "preset") {
      try {
        const auto before = window_->model().currentSpec();
        auto after = spec::makeSpecPreset(arg.toStdString());
        after.causal = before.causal;
        after.sizes.seq_len = before.sizes.seq_len;
        window_->model().editDesign(after, "preset " + arg);
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    } else if (cmd == "run") {
      window_->model().select(arg.toInt());
    } else if (cmd == "session") {
      // An example session opens as an untitled copy, as from the menu: its runs never go into
      // the (installed, read-only) examples folder.
      if (!(isExampleSession(arg) ? window_->files().openExample(arg) : window_->files().open(arg)))
        return fail("cannot open session " + arg);
    } else if (cmd == "sweep") {  // a sweep directory in the Experiments dock, its files read
      if (!window_->openSweepDirectory(arg)) return fail("cannot open sweep " + arg);
      window_->experiments()->refresh(true);
    } else if (cmd == "train") {
      trainingEnded_ = false;
      lastStep_ = 0;
      if (!window_->training().start(arg.isEmpty() ? -1 : arg.toLongLong())) return fail("training refused");
    } else if (cmd == "stop") {
      window_->controller()->stop();
    } else if (cmd == "fork") {
      if (!window_->training().fork()) return fail("no run is training to fork");
    } else if (cmd == "dock") {
      bool found = false;
      for (auto* d : window_->docks())
        if (d->objectName() == arg) {  // the bare title (a header may follow it)
          d->show();
          d->raise();
          found = true;
        }
      if (!found) return fail("no dock titled " + arg);
    } else if (cmd == "inspect" || cmd == "plan-step") {  // the diagram's inspector, once its values are there
      QDockWidget* dock = window_->dock("Inspector");
      if (!dock) return fail("no Inspector dock");
      dock->show();
      dock->raise();
      auto* inspector = window_->inspector();
      if (!inspector->values() || window_->teaching()->computing()) return;  // not yet
      if (cmd == "plan-step") {
        const int step = arg.toInt();
        if (step > inspector->stepCount()) return fail("the plan has " + QString::number(inspector->stepCount()) + " steps");
        inspector->stepTo(step - 1);
      } else {
        using E = diagram_view::DiagramScene::Element;
        const bool ok = arg.startsWith("box:")   ? inspector->showElement(E::SoftmaxBox, arg.mid(4))
                        : arg.startsWith("leg:") ? inspector->showElement(E::Leg, arg.mid(4))
                                                 : inspector->showElement(E::Tensor, arg);
        if (!ok) return fail("no element " + arg + " in the layer's diagram");
      }
      inspector->heatmap()->replotNow();  // drawn before a screenshot that follows
    } else if (cmd == "lesson") {
      if (!window_->startLesson(arg)) return fail("no lesson " + arg);
    } else if (cmd == "lesson-do") {  // Show me, then wait for the check (training ends first)
      auto* panel = window_->lessonPanel();
      if (!panel->step()) return fail("no lesson step to do");
      if (!actionIssued_) {
        if (!window_->lessons()->performAction()) return fail("the lesson's action could not be done");
        actionIssued_ = true;
      }
      panel->setState(window_->lessons()->state());
      if (window_->controller()->running() || !panel->checkMet()) return;  // not yet
      actionIssued_ = false;
    } else if (cmd == "lesson-next") {
      if (!window_->lessonPanel()->next()) return fail("the lesson cannot go on: " + window_->lessonPanel()->checkText());
    } else if (cmd == "lab") {
      if (arg == "bottleneck") {
        window_->openLab("Bottleneck lab");
        if (!window_->bottleneckLab()->fit() || !window_->bottleneckLab()->waitForResult()) return fail("the bottleneck lab failed");
      } else if (arg == "stable_rank") {
        window_->openLab("Stable-rank lab");
        if (!window_->stableRankLab()->generate() || !window_->stableRankLab()->waitForResult()) return fail("the stable-rank lab failed");
      } else {
        return fail("no lab " + arg + " (bottleneck, stable_rank)");
      }
    } else if (cmd == "layout") {
      bool found = false;
      for (auto layout : {DockLayout::Default, DockLayout::Design, DockLayout::Train, DockLayout::Present,
                          DockLayout::Experiments, DockLayout::Teach})
        if (dockLayoutName(layout).compare(arg, Qt::CaseInsensitive) == 0) {
          applyDockLayout(*window_, layout, window_->defaultLayout());
          found = true;
        }
      if (!found) return fail("no layout " + arg);
    } else if (cmd == "probe") {  // the maps on a typed probe; waits until they show it
      auto* views = window_->snapshotDocks();
      if (!probeIssued_) {
        views->setProbe(arg);
        probeIssued_ = true;
      }
      if (views->probeRefused()) return fail("probe refused: " + window_->probeNote()->text());
      const auto shown = views->shown();
      const bool done = arg.isEmpty() ? !views->probing()
                                      : shown && QString::fromStdString(shown->probe).startsWith("“" + arg + "”");
      if (!done) return;
      probeIssued_ = false;
    } else if (cmd == "theme") {
      window_->setDarkTheme(arg == "dark");
    } else if (cmd == "screenshot") {
      // Replots are coalesced onto the next turn of the event loop: draw them now, so a picture
      // taken right after a change (a theme, a probe) shows it.
      for (viz::PlotWidget* plot : window_->findChildren<viz::PlotWidget*>()) plot->replotNow();
      try {
        savePngAtomically(window_->grab().toImage(), arg);
      } catch (const std::exception& e) {
        return fail(QString::fromUtf8(e.what()));
      }
      std::cout << "screenshot " << arg.toStdString() << std::endl;
    } else if (cmd == "figures") {
      if (!window_->exportFigures(arg)) return fail("cannot export figures to " + arg);
    } else if (cmd == "quit") {
      pc_ = static_cast<int>(script_.size());
      break;
    } else {
      return fail("unknown command '" + cmd + "'");
    }
    ++pc_;
  }
  timer_.stop();
  if (!trainingEnded_) {
    window_->controller()->stop();
    window_->controller()->waitForFinished();
  }
  Q_EMIT finished(exitCode_);
}

}  // namespace tensorscope::app
