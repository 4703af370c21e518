#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QImage>
#include <QLabel>
#include <QSet>
#include <QSpinBox>
#include <QTemporaryDir>

#include "gui/design_panel.h"
#include "gui/main_window.h"
#include "spec/spec_json.h"
#include "viz/matrix_heatmap.h"

using namespace tensorscope;

extern std::string g_screenshotPath;  // set by gui_test_main from a trailing argument

namespace {

QStringList dockTitles(const app::MainWindow& w) {
  QStringList t;
  for (auto* d : w.docks()) t << d->windowTitle();
  t.sort();
  return t;
}
}  // namespace

TEST(MainWindow, HasTheFiveDocks) {
  app::MainWindow w;
  EXPECT_EQ(dockTitles(w), (QStringList{"Core matrix C", "Design", "Diagram", "Plots", "Training"}));
}

TEST(MainWindow, PresetChangeUpdatesCoreView) {
  app::MainWindow w;
  auto* preset = w.designPanel()->findChild<QComboBox*>();
  ASSERT_NE(preset, nullptr);
  preset->setCurrentText("heads_only");
  EXPECT_EQ(w.designPanel()->spec().sizes.D, 1);
  EXPECT_EQ(w.coreView()->rows(), 4);
  EXPECT_NEAR(w.coreView()->colourRange(), 2.0, 1e-12);  // sqrt(H) * I_4
  preset->setCurrentText("mhsa");
  EXPECT_EQ(w.coreView()->rows(), 0);  // MHSA has no C
}

TEST(MainWindow, SpecSaveThenOpenRoundTrips) {
  QTemporaryDir dir;
  app::MainWindow w;
  auto* preset = w.designPanel()->findChild<QComboBox*>();
  preset->setCurrentText("skip_left");
  const QString path = dir.filePath("s.json");
  ASSERT_TRUE(w.saveSpec(path));
  const auto saved = w.designPanel()->spec();
  preset->setCurrentText("dimwise");
  ASSERT_TRUE(w.openSpec(path));
  EXPECT_EQ(w.designPanel()->spec(), saved);
}

TEST(DesignPanel, SizeEditsAreValidatedLive) {
  app::DesignPanel p;
  p.setSpec(spec::makeSpecPreset("mhsa"));
  QSpinBox* F = nullptr;
  for (auto* b : p.findChildren<QSpinBox*>())
    if (b->toolTip().startsWith("F:")) F = b;
  ASSERT_NE(F, nullptr);
  F->setValue(96);
  EXPECT_EQ(p.spec().sizes.F, 96);
  EXPECT_TRUE(p.isValid());
}

// Run by ctest on the PNG that `tensorscope --screenshot` wrote.
TEST(ScreenshotFile, IsARealImageOfTheWindow) {
  if (g_screenshotPath.empty()) GTEST_SKIP() << "no screenshot path given";
  QImage img(QString::fromStdString(g_screenshotPath));
  ASSERT_FALSE(img.isNull()) << "cannot read " << g_screenshotPath;
  EXPECT_GE(img.width(), 1000);
  EXPECT_GE(img.height(), 700);
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
  // Text, widgets and the diverging heatmap give hundreds of colours; a blank frame gives one.
  EXPECT_GT(colours.size(), 100) << "the screenshot looks blank";
  // The C heatmap is on screen: saturated red (C's largest entries) must be present.
  int red = 0;
  for (QRgb c : colours) red += qRed(c) > 150 && qGreen(c) < 60 && qBlue(c) < 70;
  EXPECT_GT(red, 0) << "no heatmap colours found";
}

