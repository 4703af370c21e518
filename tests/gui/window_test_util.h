#pragma once
// Helpers of the explorer-window tests (test_main_window.cpp, test_daily_tool.cpp).

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <gtest/gtest.h>

#include <cstdio>

#include "gui/main_window.h"
#include "gui/session_files.h"
#include "gui/session_model.h"
#include "gui/training_controller.h"
#include "gui/training_driver.h"
#include "gui/training_panel.h"

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

/// Puts a light version of run 1 (THSA) in the training panel: batch 4, `layers` layers, a
/// checkpoint every `checkpointInterval` steps (0: the run's own). The machine may be busy.
inline void useLightThsaRun(app::MainWindow& w, int layers, int checkpointInterval = 0) {
  auto small = w.model().session().runs[1].config;
  small.train.batch = 4;
  small.model.layers = layers;
  if (checkpointInterval > 0) small.train.checkpoint_interval = checkpointInterval;
  w.trainingPanel()->setConfig(small);
}

/// Trains the selected run `steps` steps and waits until it has stopped.
inline void trainStopped(app::MainWindow& w, int steps) {
  const int index = w.model().current();
  ASSERT_TRUE(w.training().start(steps));
  w.controller()->waitForFinished();
  ASSERT_TRUE(waitFor([&] { return !w.model().isTraining(index); }, 20000));
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

}  // namespace tensorscope::test
