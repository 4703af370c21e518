#pragma once

#include <functional>
// Helpers of the explorer-window tests (test_main_window.cpp, test_daily_tool*.cpp, test_probes.cpp,
// test_design_*.cpp, …).

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QLabel>
#include <QTest>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gui/design/design_panel.h"
#include "gui/shell/main_window.h"
#include "gui/shell/session_files.h"
#include "gui/document/session_model.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_panel.h"
#include "model_core/run_config.h"
#include "model_core/snapshots.h"
#include "spec/attention_spec.h"

namespace tensorscope::test {

/// A window for tests: default layout, no crash-recovery question, no last session reopened.
inline app::MainWindow::Options testOptions() {
  app::MainWindow::Options o;
  o.restoreLayout = false;
  o.offerRecovery = false;
  o.reopenLastSession = false;
  return o;
}

/// Processes events until `done()` or the timeout; returns done().
template <typename F>
bool waitFor(F done, int ms = 240000) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QApplication::processEvents(QEventLoop::AllEvents, 20);
  return done();
}

/// Processes events `rounds` times with a short wait between (layouts and docks settle).
inline void settle(int rounds = 10) {
  for (int i = 0; i < rounds; ++i) {
    QApplication::processEvents();
    QTest::qWait(5);
  }
}

/// Whether a dock is on screen: a dock behind another of its tab group stays "visible" to Qt but is
/// moved out of the window, with nothing of it exposed.
inline bool onScreen(QDockWidget* d) { return d && d->isVisible() && !d->visibleRegion().isEmpty(); }

/// The Design dock's widget of slot `field` ("slots.kv_groups", …) as a W; a failure if it is none.
template <typename W>
W* slot(app::DesignPanel* p, const char* field) {
  auto* w = qobject_cast<W*>(p->slotWidget(field));
  EXPECT_NE(w, nullptr) << field;
  return w;
}

/// The Design dock's Preset box.
inline QComboBox* presetBox(app::DesignPanel* p) { return p->findChild<QComboBox*>("designPreset"); }

/// Puts a light version of run 1 (THSA) in the training panel: batch 4, `layers` layers, a
/// checkpoint every `checkpointInterval` steps (0: the run's own). The machine may be busy.
inline void useLightThsaRun(app::MainWindow& w, int layers, int checkpointInterval = 0) {
  auto small = w.model().session().runs[1].config;
  small.train.batch = 4;
  small.model.layers = layers;
  if (checkpointInterval > 0) small.train.checkpoint_interval = checkpointInterval;
  w.trainingPanel()->setConfig(small);
}

/// Run 1 becomes a light two-layer TP model (2 heads of 8, batch 4), with `evalExamples`
/// evaluation examples (0: the run's own).
inline void useLightTpRun(app::MainWindow& w, int evalExamples = 0) {
  w.model().select(1);
  auto c = w.model().session().runs[1].config;
  auto s = spec::makeSpecPreset("tp");
  s.sizes.F = c.model.d_model;
  s.sizes.H = 2;
  s.sizes.D = 8;
  s.sizes.R = 16;
  s.sizes.seq_len = c.task.seq_len;
  s.causal = true;
  c.model.attention = {s};
  c.model.layers = 2;
  c.train.batch = 4;
  if (evalExamples > 0) c.train.eval_examples = evalExamples;
  w.model().setCurrentConfig(c);
  w.trainingPanel()->setConfig(c);
}

/// An inspection of a two-layer model with data for every view: stable ranks, spectra, maps of
/// both layers and TP role vectors of six tokens (no learned C, so the core editor keeps showing
/// the design's C and its factors).
inline std::shared_ptr<model_core::InspectionSnapshot> fullSnapshot() {
  auto snap = std::make_shared<model_core::InspectionSnapshot>();
  snap->step = 25;
  snap->core_layers = {0, 1};
  snap->stable_ranks = {3.5, 2.5};
  snap->spectra = {{2.0, 1.0}, {3.0, 1.0}};
  const model_core::HostTensor map{{3, 3}, {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f}};
  snap->maps = {{map, map}, {map}};
  snap->probe_tokens = {"a", "b", "c"};
  snap->probe = "validation example 0";
  model_core::HostTensor roleRows{{6, 2}, {}};
  for (int i = 0; i < 12; ++i) roleRows.values.push_back(static_cast<float>((i * 7) % 5) - 2.0f);
  snap->roles = {{0, 0, roleRows}};
  snap->role_tokens = {"1", "+", "2", "=", "3", "."};
  snap->role_labels = {"digit", "operator", "digit", "equals", "digit", "end"};
  snap->role_contexts = std::vector<std::string>(6, "1+2=3");
  snap->role_probe = "1 validation example";
  return snap;
}

/// Trains the selected run `steps` steps and waits until it has stopped.
inline void trainStopped(app::MainWindow& w, int steps) {
  const int index = w.model().current();
  ASSERT_TRUE(w.training().start(steps));
  w.controller()->waitForFinished();
  ASSERT_TRUE(waitFor([&] { return !w.model().isTraining(index); }, 20000));
}

/// Window options whose questions (fork a trained run? …) are answered `answer` and recorded in `asked`.
inline app::MainWindow::Options answeringOptions(QStringList& asked, bool answer) {
  auto o = testOptions();
  o.confirm = [&asked, answer](const QString& title) {
    asked << title;
    return answer;
  };
  return o;
}

/// Run 0 (MHSA) selected and made light: batch 4, one layer, one thread.
inline void lightRun0(app::MainWindow& w) {
  w.model().select(0);
  auto light = w.model().session().runs[0].config;
  light.train.batch = 4;
  light.model.layers = 1;
  light.train.threads = 1;
  w.trainingPanel()->setConfig(light);
}

/// Design preset `name` at the current run's causality and sequence length (what the Preset box
/// gives), optionally with `edit` applied, set as the current run's design (one undo step).
inline spec::AttentionSpec setPresetDesign(app::MainWindow& w, const char* name,
                                           const std::function<void(spec::AttentionSpec&)>& edit = {}) {
  auto s = spec::makeSpecPreset(name);
  s.causal = w.model().currentSpec().causal;
  s.sizes.seq_len = w.model().currentSpec().sizes.seq_len;
  if (edit) edit(s);
  w.model().editDesign(s, QString("preset ") + name);
  return s;
}

/// Whether a label of `view` (its message) contains `text`.
inline bool labelSays(QWidget* view, const QString& text) {
  for (auto* l : view->findChildren<QLabel*>())
    if (l->text().contains(text)) return true;
  return false;
}

/// For looking at what users see: with $TS_GUI_SCREENSHOT_DIR set, shows the window at 1500 x 950
/// and saves it as NAME.png there (the test's assertions do not depend on it).
inline void screenshotIfAsked(QWidget& w, const QString& name) {
  const QString dir = qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  QDir().mkpath(dir);
  w.resize(1500, 950);
  w.show();
  for (int i = 0; i < 8; ++i) QApplication::processEvents();
  const QString path = QDir(dir).filePath(name + ".png");
  EXPECT_TRUE(w.grab().toImage().save(path)) << path.toStdString();
  std::printf("[ screenshot ] %s\n", qPrintable(path));
}

/// A tiny copy-task decoder of one design preset (trains in about a second): F = 16, H = 2, D = 8,
/// R = 16, N = 24, causal.
inline model_core::RunConfig tinyCopy(int steps, const std::string& preset = "mhsa") {
  model_core::RunConfig c;
  c.task.name = "copy";
  c.task.seq_len = 24;
  c.task.algorithmic_length = 5;
  c.model.layers = 2;
  c.model.d_model = 16;
  c.model.ffn_multiplier = 2;
  auto s = spec::makeSpecPreset(preset);
  s.sizes.F = 16;
  s.sizes.H = 2;
  s.sizes.D = 8;
  s.sizes.R = 16;
  s.sizes.seq_len = 24;
  s.causal = true;
  c.model.attention = {s};
  c.train.steps = steps;
  c.train.batch = 4;
  c.train.warmup = 2;
  c.train.eval_interval = 10;
  c.train.eval_examples = 8;
  c.train.checkpoint_interval = 10;
  c.train.inspect_interval = 10;
  return c;
}

}  // namespace tensorscope::test
