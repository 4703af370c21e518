// GoogleTest main for the widget tests (viz_tests, diagram_view_tests, app_tests): one QApplication for the process (offscreen platform via ctest).
// A trailing non-flag argument names a screenshot PNG for the ScreenshotFile tests.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QSettings>
#include <QStandardPaths>
#include <string>

std::string g_screenshotPath;

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // removes the gtest flags it knows
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') g_screenshotPath = argv[i];
  // Widget tests render offscreen unless a platform is chosen explicitly.
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  // Settings, autosaves and run directories go to a test location, never the user's, and one of
  // its own for each test process: ctest runs tests in parallel processes, which would otherwise
  // share one settings file and one autosave (a test's "crash" seen by another's clean exit).
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName("TensorscopeTests");
  QApplication::setApplicationName(QString(TS_TEST_APP_NAME) + "-" + QString::number(QCoreApplication::applicationPid()));
  const int failed = RUN_ALL_TESTS();
  QFile::remove(QSettings().fileName());
  QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
  return failed;
}
