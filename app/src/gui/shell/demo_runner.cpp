#include "gui/shell/demo_runner.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QDockWidget>
#include <QLabel>
#include <QMainWindow>
#include <iostream>

#include "gui/design/design_panel.h"
#include "gui/design/head_mixing_view.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_model.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/figures/image_file.h"
#include "gui/shell/dock_layouts.h"
#include "gui/shell/session_files.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/lesson_runner.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/tensor_inspector.h"
#include "gui/training/snapshot_docks.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_driver.h"
#include "spec/attention_spec.h"
#include "viz/matrix_heatmap.h"
#include "viz/plot_widget.h"
#include "viz/role_cluster_plot.h"

namespace tensorscope::app {

DemoRunner::DemoRunner(DemoParts parts, std::vector<DemoCommand> script, QObject* parent)
    : QObject(parent), parts_(std::move(parts)), script_(std::move(script)) {
  timer_.setInterval(50);
  connect(&timer_, &QTimer::timeout, this, &DemoRunner::next);
  auto* c = parts_.controller;
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

DemoRunner::Step DemoRunner::fail(const QString& why) {
  const int line = pc_ < static_cast<int>(script_.size()) ? script_[size_t(pc_)].line : 0;
  std::cerr << "demo: line " << line << ": " << why.toStdString() << "\n";
  exitCode_ = 1;
  timer_.stop();
  Q_EMIT finished(exitCode_);
  return Step::Failed;
}

const std::map<QString, DemoRunner::Command>& DemoRunner::commands() {
  static const std::map<QString, Command> table{
      {"wait-step", &DemoRunner::waitStep}, {"wait-end", &DemoRunner::waitEnd},
      {"wait-ms", &DemoRunner::waitMs},     {"preset", &DemoRunner::preset},
      {"run", &DemoRunner::run},            {"session", &DemoRunner::session},
      {"sweep", &DemoRunner::sweep},        {"train", &DemoRunner::train},
      {"stop", &DemoRunner::stop},          {"fork", &DemoRunner::fork},
      {"dock", &DemoRunner::dock},          {"inspect", &DemoRunner::inspect},
      {"plan-step", &DemoRunner::planStep}, {"lesson", &DemoRunner::lesson},
      {"lesson-do", &DemoRunner::lessonDo}, {"lesson-next", &DemoRunner::lessonNext},
      {"lab", &DemoRunner::lab},            {"layout", &DemoRunner::layout},
      {"probe", &DemoRunner::probe},        {"theme", &DemoRunner::theme},
      {"screenshot", &DemoRunner::screenshot}, {"figures", &DemoRunner::figures},
      {"presenter", &DemoRunner::presenter},
      {"roles-colour", &DemoRunner::rolesColour}, {"slot", &DemoRunner::slot}, {"mixing", &DemoRunner::mixing},
      {"mixing-draw", &DemoRunner::mixingDraw},
      {"match", &DemoRunner::match},        {"positions", &DemoRunner::positions},
  };
  return table;
}

void DemoRunner::next() {
  while (pc_ < static_cast<int>(script_.size()) && !quit_) {
    const QString cmd = QString::fromStdString(script_[size_t(pc_)].name);
    const QString arg = QString::fromStdString(script_[size_t(pc_)].arg);
    if (cmd == "quit") {
      quit_ = true;
      break;
    }
    const auto it = commands().find(cmd);
    const Step step = it == commands().end() ? fail("unknown command '" + cmd + "'") : (this->*(it->second))(arg);
    if (step != Step::Done) return;  // waiting: the timer calls again; failed: finished was emitted
    ++pc_;
  }
  timer_.stop();
  if (!trainingEnded_) {
    parts_.controller->stop();
    parts_.controller->waitForFinished();
  }
  Q_EMIT finished(exitCode_);
}

DemoRunner::Step DemoRunner::waitStep(const QString& arg) {
  return !trainingEnded_ && lastStep_ < arg.toLongLong() ? Step::Wait : Step::Done;
}

DemoRunner::Step DemoRunner::waitEnd(const QString&) { return trainingEnded_ ? Step::Done : Step::Wait; }

DemoRunner::Step DemoRunner::waitMs(const QString& arg) {
  if (waitUntil_ < 0) {
    waitClock_.start();
    waitUntil_ = arg.toLongLong();
  }
  if (waitClock_.elapsed() < waitUntil_) return Step::Wait;
  waitUntil_ = -1;
  return Step::Done;
}

DemoRunner::Step DemoRunner::preset(const QString& arg) {
  try {
    const auto before = parts_.model->currentSpec();
    auto after = spec::makeSpecPreset(arg.toStdString());
    after.causal = before.causal;
    after.sizes.seq_len = before.sizes.seq_len;
    parts_.model->editDesign(after, "preset " + arg);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return Step::Done;
}

DemoRunner::Step DemoRunner::slot(const QString& arg) {
  const QStringList words = arg.simplified().split(' ');
  const QString field = words.value(0);
  const QString value = words.mid(1).join(' ');
  if (!parts_.design) return fail("no Design dock");
  QWidget* w = parts_.design->slotWidget(field);
  if (!w || !parts_.design->slotsShown())
    return fail(w ? "the current design (" + QString::fromStdString(std::string(spec::toString(parts_.model->currentSpec().variant))) +
                        ") has no slots"
                  : "no slot " + field + " in the Design dock");
  if (!w->isEnabled()) return fail("the Design dock takes no edits now (the run trains)");
  if (auto* box = qobject_cast<QCheckBox*>(w)) {
    if (value != "on" && value != "off") return fail(field + " is on or off; got " + value);
    box->setChecked(value == "on");
  } else if (auto* combo = qobject_cast<QComboBox*>(w)) {
    // The item's text ("absorbed") or its leading number ("1" of "1 (MQA)").
    int i = combo->findText(value);
    for (int k = 0; i < 0 && k < combo->count(); ++k)
      if (combo->itemText(k).startsWith(value + " (")) i = k;
    if (i < 0) {
      QStringList items;
      for (int k = 0; k < combo->count(); ++k) items << combo->itemText(k);
      return fail(field + " has no choice " + value + " (choices: " + items.join(", ") + ")");
    }
    combo->setCurrentIndex(i);
  } else if (auto* spin = qobject_cast<QSpinBox*>(w)) {
    bool ok = false;
    const int v = value.toInt(&ok);
    if (!ok || v < spin->minimum() || v > spin->maximum())
      return fail(QString("%1 takes a whole number from %2 to %3; got %4").arg(field).arg(spin->minimum()).arg(spin->maximum()).arg(value));
    spin->setValue(v);
  } else if (auto* number = qobject_cast<QDoubleSpinBox*>(w)) {
    bool ok = false;
    const double v = value.toDouble(&ok);
    if (!ok || v < number->minimum() || v > number->maximum())
      return fail(QString("%1 takes a number from %2 to %3; got %4").arg(field).arg(number->minimum()).arg(number->maximum()).arg(value));
    number->setValue(v);
  }
  // The spec validator refused the edit (MTA's fields): nothing changed, and the script says why.
  if (const QString refused = parts_.design->slotRefusal(); !refused.isEmpty()) return fail(refused);
  scrollTo(w);
  return Step::Done;
}

void DemoRunner::scrollTo(QWidget* w) {
  // Scrolled to the top of the form's view, with what follows it (the cost), for a screenshot.
  for (QWidget* p = w->parentWidget(); p; p = p->parentWidget())
    if (auto* area = qobject_cast<QScrollArea*>(p); area && area->widget()) {
      area->verticalScrollBar()->setValue(w->mapTo(area->widget(), QPoint(0, 0)).y() - 12);
      break;
    }
}

DemoRunner::Step DemoRunner::mixing(const QString& arg) {
  // mixing WEIGHT [INDEX]: the Design dock's head-mixing view shows WEIGHT (mix_post, mix_pre,
  // mta_kernel, mta_kernel_after_sm, head_kernel), head or group INDEX of a kernel, scrolled into view.
  if (!parts_.design) return fail("no Design dock");
  const QStringList words = arg.simplified().split(' ');
  bool ok = true;
  const int index = words.size() > 1 ? words[1].toInt(&ok) : 0;
  if (!ok || words.size() > 2) return fail("mixing needs a weight and an optional head, e.g. 'mixing mta_kernel 1'; got " + arg);
  HeadMixingView* view = parts_.design->headMixing();
  if (!view->choose(words[0], index)) {
    const QStringList has = view->weights();
    return fail("the design has no " + arg + " to show" +
                (has.isEmpty() ? QString(" (no head mixing or MTA kernel)") : " (it has " + has.join(", ") + ")"));
  }
  scrollTo(view);
  return Step::Done;
}

DemoRunner::Step DemoRunner::mixingDraw(const QString& arg) {
  // mixing-draw preset NAME | value V ROW COL [ROW2 COL2] | frozen ROW COL [ROW2 COL2] |
  // trainable ROW COL [ROW2 COL2]: an edit of the weight the head-mixing view shows (see `mixing`),
  // as a click, a Shift+drag rectangle or the Preset box makes it (one undo step).
  if (!parts_.design) return fail("no Design dock");
  HeadMixingView* view = parts_.design->headMixing();
  const QStringList w = arg.simplified().split(' ');
  const QString usage = "mixing-draw needs 'preset NAME', 'value V ROW COL [ROW2 COL2]', 'frozen ROW COL [ROW2 COL2]' "
                        "or 'trainable ROW COL [ROW2 COL2]'; got " + arg;
  if (view->isHidden()) return fail("the design has no head mixing or MTA kernel to draw");
  if (!view->editsDesign()) return fail("the values on show are a run's trained ones: fork it first");
  if (w.size() == 2 && w[0] == "preset") {
    if (!view->applyPreset(w[1]))
      return fail("no preset " + w[1] + " for " + view->shownWeight() + " (" + view->presetNames().join(", ") + ")");
    return Step::Done;
  }
  const bool value = w.value(0) == "value";
  const int first = value ? 2 : 1;
  if (w.size() != first + 2 && w.size() != first + 4) return fail(usage);
  std::vector<int> cells;
  for (int i = first; i < w.size(); ++i) {
    bool ok = false;
    cells.push_back(w[i].toInt(&ok));
    if (!ok || cells.back() < 0) return fail(usage);
  }
  if (value) {
    bool ok = false;
    view->setPaintValue(w[1].toDouble(&ok));
    if (!ok) return fail(usage);
    view->setTool(HeadMixingView::Tool::SetValue);
  } else if (w[0] == "frozen" || w[0] == "trainable") {
    view->setTool(w[0] == "frozen" ? HeadMixingView::Tool::PaintFrozen : HeadMixingView::Tool::PaintTrainable);
  } else {
    return fail(usage);
  }
  if (cells.size() == 2) view->editCell(cells[0], cells[1]);
  else view->editRectangle(cells[0], cells[1], cells[2], cells[3]);
  return Step::Done;
}

DemoRunner::Step DemoRunner::match(const QString& arg) {
  // match COST BASELINE [SIZE] [apply]: the Cost dock's "Match budget", as a user presses it.
  if (!parts_.design) return fail("no Design dock");
  QStringList words = arg.simplified().split(' ');
  const bool apply = words.size() > 2 && words.last() == "apply";
  if (apply) words.removeLast();
  if (words.size() < 2 || words.size() > 3) return fail("match needs a cost and a baseline, e.g. 'match params mhsa D apply'");
  try {
    const QString said = parts_.design->matchBudget(words[0], words[1], words.value(2));
    if (said.startsWith("Refused") || said.startsWith("No match")) return fail(said);
    if (apply && !parts_.design->applyMatchedBudget()) return fail("nothing to apply: " + said);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return Step::Done;
}

DemoRunner::Step DemoRunner::positions(const QString& arg) {
  if (!parts_.design) return fail("no Design dock");
  QComboBox* box = parts_.design->positionsBox();
  const int i = box->findData(arg.trimmed());
  if (i < 0) return fail("no positions " + arg + " (learned, sinusoidal, rotary, rotary_interleaved)");
  box->setCurrentIndex(i);
  if (box->currentData().toString() != arg.trimmed()) return fail("positions " + arg + " refused for this run");
  return Step::Done;
}

DemoRunner::Step DemoRunner::run(const QString& arg) {
  parts_.model->select(arg.toInt());
  return Step::Done;
}

DemoRunner::Step DemoRunner::session(const QString& arg) {
  // An example session opens as an untitled copy, as from the menu: its runs never go into the
  // (installed, read-only) examples folder.
  if (!(isExampleSession(arg) ? parts_.files->openExample(arg) : parts_.files->open(arg)))
    return fail("cannot open session " + arg);
  return Step::Done;
}

DemoRunner::Step DemoRunner::sweep(const QString& arg) {  // its files read before the next line
  if (!parts_.openSweepDirectory(arg)) return fail("cannot open sweep " + arg);
  parts_.experiments->refresh(true);
  return Step::Done;
}

DemoRunner::Step DemoRunner::train(const QString& arg) {
  trainingEnded_ = false;
  lastStep_ = 0;
  if (!parts_.training->start(arg.isEmpty() ? -1 : arg.toLongLong())) return fail("training refused");
  return Step::Done;
}

DemoRunner::Step DemoRunner::stop(const QString&) {
  parts_.controller->stop();
  return Step::Done;
}

DemoRunner::Step DemoRunner::fork(const QString&) {
  return parts_.training->fork() ? Step::Done : fail("no run is training to fork");
}

DemoRunner::Step DemoRunner::dock(const QString& arg) {
  bool found = false;
  for (auto* d : parts_.window->findChildren<QDockWidget*>())
    if (d->objectName() == arg) {  // the bare title (a header may follow it)
      d->show();
      d->raise();
      found = true;
    }
  return found ? Step::Done : fail("no dock titled " + arg);
}

DemoRunner::Step DemoRunner::inspectorReady() {
  auto* dock = parts_.window->findChild<QDockWidget*>(QStringLiteral("Inspector"));
  if (!dock) return fail("no Inspector dock");
  dock->show();
  dock->raise();
  return !parts_.inspector->values() || parts_.inspectorDocks->computing() ? Step::Wait : Step::Done;
}

DemoRunner::Step DemoRunner::inspect(const QString& arg) {
  if (const Step ready = inspectorReady(); ready != Step::Done) return ready;
  using E = diagram_view::DiagramScene::Element;
  auto* inspector = parts_.inspector;
  const bool ok = arg.startsWith("box:")   ? inspector->showElement(E::SoftmaxBox, arg.mid(4))
                  : arg.startsWith("leg:") ? inspector->showElement(E::Leg, arg.mid(4))
                                           : inspector->showElement(E::Tensor, arg);
  if (!ok) return fail("no element " + arg + " in the layer's diagram");
  inspector->heatmap()->replotNow();  // drawn before a screenshot that follows
  return Step::Done;
}

DemoRunner::Step DemoRunner::planStep(const QString& arg) {
  if (const Step ready = inspectorReady(); ready != Step::Done) return ready;
  auto* inspector = parts_.inspector;
  const int step = arg.toInt();
  if (step > inspector->stepCount()) return fail("the plan has " + QString::number(inspector->stepCount()) + " steps");
  inspector->stepTo(step - 1);
  inspector->heatmap()->replotNow();
  return Step::Done;
}

DemoRunner::Step DemoRunner::rolesColour(const QString& arg) {
  auto* roles = parts_.window->findChild<viz::RoleClusterPlot*>();
  if (!roles) return fail("no Role clusters view");
  roles->setColourBy(arg == "label" ? viz::RoleClusterPlot::ColourBy::Label : viz::RoleClusterPlot::ColourBy::Cluster);
  return Step::Done;
}

DemoRunner::Step DemoRunner::lesson(const QString& arg) {
  return parts_.startLesson(arg) ? Step::Done : fail("no lesson " + arg);
}

DemoRunner::Step DemoRunner::lessonDo(const QString&) {  // Show me, then wait for the check
  auto* panel = parts_.lessonPanel;
  if (!panel->step()) return fail("no lesson step to do");
  if (!actionIssued_) {
    if (!parts_.lessons->performAction()) return fail("the lesson's action could not be done");
    actionIssued_ = true;
  }
  panel->setState(parts_.lessons->state());
  if (parts_.controller->running() || !panel->checkMet()) return Step::Wait;  // training ends first
  actionIssued_ = false;
  return Step::Done;
}

DemoRunner::Step DemoRunner::lessonNext(const QString&) {
  return parts_.lessonPanel->next() ? Step::Done : fail("the lesson cannot go on: " + parts_.lessonPanel->checkText());
}

DemoRunner::Step DemoRunner::lab(const QString& arg) {
  if (arg == "bottleneck") {
    parts_.openLab("Bottleneck lab");
    auto* lab = parts_.bottleneckLab;
    return lab->fit() && lab->waitForResult() ? Step::Done : fail("the bottleneck lab failed");
  }
  if (arg == "stable_rank") {
    parts_.openLab("Stable-rank lab");
    auto* lab = parts_.stableRankLab;
    return lab->generate() && lab->waitForResult() ? Step::Done : fail("the stable-rank lab failed");
  }
  return fail("no lab " + arg + " (bottleneck, stable_rank)");
}

DemoRunner::Step DemoRunner::layout(const QString& arg) {
  for (auto layout : {DockLayout::Default, DockLayout::Design, DockLayout::Train, DockLayout::Present,
                      DockLayout::Experiments, DockLayout::Teach})
    if (dockLayoutName(layout).compare(arg, Qt::CaseInsensitive) == 0) {
      applyDockLayout(*parts_.window, layout, parts_.defaultLayout);
      return Step::Done;
    }
  return fail("no layout " + arg);
}

DemoRunner::Step DemoRunner::presenter(const QString& arg) {
  parts_.setPresenter(arg == "on");
  return Step::Done;
}

DemoRunner::Step DemoRunner::probe(const QString& arg) {  // the maps on a typed probe; waits until shown
  auto* views = parts_.snapshots;
  if (!probeIssued_) {
    views->setProbe(arg);
    probeIssued_ = true;
  }
  if (views->probeRefused()) return fail("probe refused: " + parts_.probeNote->text());
  const auto shown = views->shown();
  const bool done = arg.isEmpty() ? !views->probing()
                                  : shown && QString::fromStdString(shown->probe).startsWith("“" + arg + "”");
  if (!done) return Step::Wait;
  probeIssued_ = false;
  return Step::Done;
}

DemoRunner::Step DemoRunner::theme(const QString& arg) {
  parts_.setDarkTheme(arg == "dark");
  return Step::Done;
}

DemoRunner::Step DemoRunner::screenshot(const QString& arg) {
  // Replots are coalesced onto the next turn of the event loop: draw them now, so a picture taken
  // right after a change (a theme, a probe) shows it.
  for (viz::PlotWidget* plot : parts_.window->findChildren<viz::PlotWidget*>()) plot->replotNow();
  try {
    savePngAtomically(parts_.window->grab().toImage(), arg);
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  std::cout << "screenshot " << arg.toStdString() << std::endl;
  return Step::Done;
}

DemoRunner::Step DemoRunner::figures(const QString& arg) {
  return parts_.exportFigures(arg) ? Step::Done : fail("cannot export figures to " + arg);
}

}  // namespace tensorscope::app
