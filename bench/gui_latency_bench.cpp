// GUI responsiveness while training (issue 6): the explorer trains its default THSA run on every
// core while a 10 ms probe timer measures how late the GUI event loop serves it, and the rate at
// which the live curves receive updates is counted. Prints one JSON document.
//
//   gui_latency_bench [--seconds S]        (default 20; runs offscreen)
#include <QApplication>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTimer>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "gui/shell/main_window.h"
#include "gui/document/session_model.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_panel.h"
#include "model_core/blas_kernels.h"
#include "model_core/runtime.h"

using namespace tensorscope;

int main(int argc, char** argv) {
  model_core::startWithBestBlasKernels(argv);  // the best OpenBLAS kernels for this CPU (issue 40)
  double seconds = 20;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atof(argv[++i]);
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  model_core::configureThreads(0);
  QApplication qapp(argc, argv);
  QStandardPaths::setTestModeEnabled(true);  // run directories go to a scratch location
  app::MainWindow::Options options;
  options.restoreLayout = false;
  options.offerRecovery = false;
  options.reopenLastSession = false;
  options.rememberedTheme = false;
  app::MainWindow window(options);
  window.show();
  window.model().select(1);  // THSA of the default session
  // A light configuration: steps come faster than the GUI's 25 Hz drain, so the measured update
  // rate shows what the GUI sustains rather than how fast one step trains.
  auto light = window.model().session().runs[1].config;
  light.train.batch = 8;
  light.model.layers = 1;
  window.trainingPanel()->setConfig(light);

  std::vector<double> lateness;
  int updates = 0;
  qint64 firstUpdate = -1, lastUpdate = -1, lastStep = 0;
  QElapsedTimer clock;
  QObject::connect(window.controller(), &app::TrainingController::metrics, &qapp, [&](const auto& batch) {
    ++updates;
    const qint64 now = clock.elapsed();
    if (firstUpdate < 0) firstUpdate = now;
    lastUpdate = now;
    if (!batch.isEmpty()) lastStep = batch.back().step;
  });
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(10);
  QElapsedTimer sinceLast;
  QObject::connect(&probe, &QTimer::timeout, &qapp, [&] {
    if (sinceLast.isValid()) lateness.push_back(std::max(0.0, sinceLast.nsecsElapsed() / 1e6 - 10.0));
    sinceLast.restart();
  });
  QTimer::singleShot(500, &qapp, [&] {
    clock.start();
    if (!window.training().start(1'000'000)) qapp.exit(1);
    probe.start();
  });
  QTimer::singleShot(int(500 + seconds * 1000), &qapp, [&] {
    probe.stop();
    window.controller()->stop();
    window.controller()->waitForFinished();
    qapp.quit();
  });
  const int rc = qapp.exec();
  if (rc != 0 || lateness.empty()) {
    std::cerr << "gui_latency_bench: training did not start\n";
    return 1;
  }
  std::sort(lateness.begin(), lateness.end());
  auto pct = [&](double p) { return lateness[std::min(lateness.size() - 1, size_t(p * double(lateness.size())))]; };
  const double span = (lastUpdate - firstUpdate) / 1000.0;
  nlohmann::json j;
  j["benchmark"] = "gui_latency_while_training";
  j["threads"] = model_core::runtimeInfo().intra_op_threads;
  j["blas_kernels"] = model_core::runtimeInfo().blas_kernels;
  j["seconds"] = seconds;
  j["steps_trained"] = lastStep;
  j["probe_interval_ms"] = 10;
  j["event_loop_lateness_ms"] = {{"p50", pct(0.50)}, {"p90", pct(0.90)}, {"p99", pct(0.99)}, {"max", lateness.back()},
                                 {"samples", lateness.size()}};
  j["curve_updates_per_second"] = span > 0 ? (updates - 1) / span : 0.0;
  j["targets"] = {{"p99_ms_below", 30}, {"updates_per_second_at_least", 10}};
  j["meets_targets"] = pct(0.99) < 30 && span > 0 && (updates - 1) / span >= 10;
  std::cout << j.dump(2) << std::endl;
  return 0;
}
