// tensorscope: headless sub-commands, or the explorer window when none is given.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "model_core/blas_kernels.h"
#include "model_core/runtime.h"
#if TENSORSCOPE_WITH_GUI
#include <QApplication>
#include <QFileInfo>
#include <QTimer>

#include "gui/shell/demo_runner.h"
#include "gui/figures/image_file.h"
#include "gui/shell/main_window.h"
#include "gui/document/app_paths.h"
#include "gui/shell/session_files.h"
#endif

using namespace tensorscope;

namespace {

#if TENSORSCOPE_WITH_GUI
int runGui(int argc, char** argv, std::vector<std::string> words) {
  app::Args args(std::move(words));
  std::optional<std::string> screenshot, demo, file;
  QSize size(1600, 1000);  // of reproducible pictures, whatever the screen (offscreen's is 800 x 600)
  try {
    screenshot = args.takeOption("--screenshot");
    demo = args.takeOption("--demo");
    if (const auto s = args.takeOption("--size")) {
      const auto x = s->find('x');
      int w = 0, h = 0;
      try {
        if (x != std::string::npos) w = std::stoi(s->substr(0, x)), h = std::stoi(s->substr(x + 1));
      } catch (const std::exception&) {
      }
      if (w < 640 || h < 480 || w > 7680 || h > 4320)
        throw app::UsageError("--size takes WIDTHxHEIGHT between 640x480 and 7680x4320, e.g. 1280x800; got '" + *s + "'");
      size = QSize(w, h);
    }
    const auto threads = args.takeInt("--threads", 1, 4096);
    if (threads) model_core::setThreadsOverride(static_cast<int>(*threads));  // runs started here honour it too
    else model_core::configureThreads(0);
    // `tensorscope FILE` (the file manager's "Open with"): a session file or a run directory.
    if (const auto word = args.takeCommand()) {
      std::error_code ec;
      if (!std::filesystem::exists(*word, ec))
        throw app::UsageError("unknown command '" + *word + "' (and no session file or run directory of that name); see tensorscope --help");
      file = *word;
    }
    args.positionals(0, 0, "tensorscope [--threads T] [--demo SCRIPT] [--screenshot PNG] [--size WxH] [SESSION | RUN_DIR]");
  } catch (const std::exception& e) {
    std::cerr << "tensorscope: " << e.what() << "\n";
    return app::kExitUsage;
  }
  QApplication qapp(argc, argv);
  QApplication::setApplicationName("Tensorscope");
  QApplication::setOrganizationName("Tensorscope");
  QApplication::setApplicationVersion(TENSORSCOPE_VERSION);
  app::MainWindow::Options options;
  if (screenshot || demo) {  // reproducible pictures: default layout, no recovery prompt
    options.restoreLayout = false;
    options.offerRecovery = false;
    options.reopenLastSession = false;
    options.rememberedTheme = false;
  }
  app::MainWindow window(options);
  if (screenshot || demo) {  // exactly --size, not maximised
    window.setWindowState(Qt::WindowNoState);
    window.resize(size);
  }
  window.show();
  if (file) {  // as File > Open (or Open run…): a file that does not read gets the same message
    const QString path = QString::fromStdString(*file);
    const bool opened = QFileInfo(path).isDir() ? window.openRunDirectory(path)
                        : app::isExampleSession(path) ? window.files().openExample(path)
                                                      : window.files().open(path);
    if (!opened) std::cerr << "tensorscope: cannot open " << *file << " (the window says why)\n";
  }
  int rc = app::kExitOk;
  std::unique_ptr<app::DemoRunner> runner;
  if (demo) {
    try {
      runner = std::make_unique<app::DemoRunner>(window.demoParts(), app::readDemoScript(*demo));
    } catch (const std::exception& e) {
      std::cerr << "tensorscope: " << e.what() << "\n";
      return app::kExitFailure;
    }
    QObject::connect(runner.get(), &app::DemoRunner::finished, &qapp, [&](int code) {
      rc = code;
      if (screenshot && code == 0) {
        try {
          app::savePngAtomically(window.grab().toImage(), QString::fromStdString(*screenshot));
          std::cout << "screenshot " << *screenshot << "\n";
        } catch (const std::exception& e) {
          std::cerr << "tensorscope: cannot write the screenshot: " << e.what() << "\n";
          rc = app::kExitFailure;
        }
      }
      qapp.quit();
    });
    QTimer::singleShot(300, runner.get(), &app::DemoRunner::start);
  } else if (screenshot) {
    // Let layouts and queued replots settle, then render the whole window.
    QTimer::singleShot(400, &window, [&] {
      const QPixmap shot = window.grab();
      try {
        app::savePngAtomically(shot.toImage(), QString::fromStdString(*screenshot));
        std::cout << "screenshot " << *screenshot << " (" << shot.width() << "x" << shot.height() << ")\n";
      } catch (const std::exception& e) {
        std::cerr << "tensorscope: cannot write the screenshot: " << e.what() << "\n";
        rc = app::kExitFailure;
      }
      qapp.quit();
    });
  }
  const int loop = qapp.exec();
  return rc != app::kExitOk ? rc : loop;
}
#else
int runGui(int, char**, std::vector<std::string> words) {
  app::Args args(std::move(words));
  try {
    args.takeOption("--screenshot");
    args.takeOption("--demo");
    args.takeInt("--threads", 1, 4096);
    if (const auto cmd = args.takeCommand())
      throw app::UsageError("unknown command '" + *cmd + "'; see tensorscope --help");
  } catch (const std::exception& e) {
    std::cerr << "tensorscope: " << e.what() << "\n";
    return app::kExitUsage;
  }
  std::cerr << "tensorscope: this is a headless build (TENSORSCOPE_BUILD_GUI=OFF) without the explorer window; "
               "see tensorscope --help for the commands\n";
  return app::kExitUsage;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  // Every invocation runs on the best OpenBLAS kernels the CPU can execute (issue 40): when the user
  // has not set OPENBLAS_CORETYPE and OpenBLAS fell back to older ones, the program starts itself
  // again with the variable set (docs/cpu-kernels.md).
  //
  // The explorer also trains beside its own GUI thread. OpenMP threads that spin at barriers
  // (libgomp's default) then wait on a thread the GUI or another process has preempted: on 2 cores,
  // beside one busy process, 300 Fashion-MNIST steps in the window took 18.8 s with libgomp's
  // default waits and 3.2 s with sleeping ones; on an idle machine sleeping waits cost 1.6x
  // (bench/README.md, docs/decisions.md). libgomp reads OMP_WAIT_POLICY once, when it is loaded, so
  // the window process asks for PASSIVE in the same restart; a policy the user set is kept.
  std::vector<std::string> words(argv + 1, argv + argc);
  const bool headless = app::isHeadlessInvocation(words);
  std::vector<std::pair<std::string, std::string>> alsoSet;
#if TENSORSCOPE_WITH_GUI
  if (!headless) alsoSet.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
#endif
  model_core::startWithBestBlasKernels(argv, alsoSet);
  if (headless) {
    app::stopsignals::install();  // before any thread starts: why in cli/stop_signals.h
    return app::runCli(words, std::cout, std::cerr);
  }
  return runGui(argc, argv, std::move(words));
}
