// The window's keys, frame and dark theme (user test, issues N17-N20, N31, N32): Save as bound to
// Ctrl+Shift+S, the F1 sheet made from the bound actions, the "Save changes?" question's mnemonics
// and default, the View menu's dock names, palette-coloured toolbar icons and banner, the first
// start's size, the training progress in the status bar, and a run's cost before it trains.
#include <QAction>
#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStatusBar>
#include <QTest>
#include <QToolBar>

#include "gui/design/core_editor.h"
#include "gui/shell/main_menus.h"
#include "gui/shell/status_progress.h"
#include "gui/training/run_cost.h"
#include "gui/training/runs_panel.h"
#include "viz/curves_plot.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

QList<QAction*> menuActions(const QList<QAction*>& actions) {
  QList<QAction*> all;
  for (QAction* a : actions) {
    if (a->menu()) all += menuActions(a->menu()->actions());
    else if (!a->isSeparator()) all << a;
  }
  return all;
}

QAction* menuAction(const app::MainWindow& w, const QString& text) {
  for (QAction* a : menuActions(w.menuBar()->actions()))
    if (a->text() == text) return a;
  return nullptr;
}

double meanOpaqueLightness(const QIcon& icon) {
  const QImage image = icon.pixmap(16, 16).toImage().convertToFormat(QImage::Format_ARGB32);
  double sum = 0;
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x)
      if (const QColor c = image.pixelColor(x, y); c.alpha() > 128) sum += c.lightness(), ++n;
  return n ? sum / n : -1;
}

}  // namespace

TEST(WindowKeys, SaveAsIsCtrlShiftSAndNoKeyIsBoundTwice) {
  app::MainWindow w(testOptions());
  QAction* saveAs = menuAction(w, "Save session &as…");
  ASSERT_NE(saveAs, nullptr);
  EXPECT_TRUE(saveAs->shortcuts().contains(QKeySequence("Ctrl+Shift+S")));
  QMap<QString, QString> owner;
  for (QAction* a : menuActions(w.menuBar()->actions()))
    for (const QKeySequence& k : a->shortcuts()) {
      EXPECT_FALSE(owner.contains(k.toString())) << k.toString().toStdString() << " is bound to " << owner[k.toString()].toStdString()
                                                 << " and " << a->text().toStdString() << " (ambiguous: dead)";
      owner[k.toString()] = a->text();
    }
}

TEST(WindowKeys, TheShortcutSheetListsExactlyTheBoundKeys) {
  app::MainWindow w(testOptions());
  const QString sheet = app::shortcutSheet(w);
  int bound = 0;
  for (QAction* a : menuActions(w.menuBar()->actions())) {
    if (a->shortcuts().isEmpty()) continue;
    ++bound;
    for (const QKeySequence& k : a->shortcuts())
      EXPECT_TRUE(sheet.contains(k.toString(QKeySequence::NativeText).toHtmlEscaped())) << k.toString().toStdString();
  }
  EXPECT_GE(bound, 10);
  EXPECT_TRUE(sheet.contains("Ctrl+Shift+S"));
  // Every key row but the mouse and presenter rows comes from an action.
  EXPECT_EQ(sheet.count("<tr>"), bound + 6) << sheet.toStdString();
}

TEST(WindowKeys, SaveChangesHasMnemonicsAndReturnCancels) {
  const auto box = app::saveChangesBox(nullptr);
  QStringList texts;
  for (QAbstractButton* b : box->buttons()) texts << b->text();
  EXPECT_TRUE(texts.contains("&Save")) << texts.join(", ").toStdString();
  EXPECT_TRUE(texts.contains("&Don't save")) << texts.join(", ").toStdString();
  ASSERT_NE(box->defaultButton(), nullptr);
  EXPECT_EQ(box->standardButton(box->defaultButton()), QMessageBox::Cancel);
  EXPECT_EQ(box->standardButton(box->escapeButton()), QMessageBox::Cancel);
  box->show();
  QTest::keyClick(box.get(), Qt::Key_Return);
  EXPECT_EQ(box->standardButton(box->clickedButton()), QMessageBox::Cancel) << "Return must not save";
}

TEST(WindowKeys, TheViewMenuNamesDocksByTheirShortNames) {
  app::MainWindow w(testOptions());
  QDockWidget* maps = w.dock("Attention maps");
  ASSERT_NE(maps, nullptr);
  maps->setWindowTitle("Attention maps · Lesson · TP-attention: fillers, roles and their clusters · step 600");
  QMenu* view = nullptr;
  for (QAction* a : w.menuBar()->actions())
    if (a->text() == "&View") view = a->menu();
  ASSERT_NE(view, nullptr);
  QAction* entry = nullptr;
  for (QAction* a : view->actions()) {
    EXPECT_FALSE(a->text().contains("Lesson ·")) << a->text().toStdString();
    if (a->text() == "Attention maps") entry = a;
  }
  ASSERT_NE(entry, nullptr);
  const bool before = maps->toggleViewAction()->isChecked();
  EXPECT_EQ(entry->isChecked(), before);
  entry->trigger();
  EXPECT_NE(maps->toggleViewAction()->isChecked(), before) << "the entry shows and hides its dock";
  EXPECT_EQ(maps->isHidden(), before);
  EXPECT_EQ(entry->isChecked(), maps->toggleViewAction()->isChecked());
  maps->toggleViewAction()->trigger();
  EXPECT_EQ(entry->isChecked(), maps->toggleViewAction()->isChecked()) << "and follows it";
}

TEST(WindowKeys, TrainingIconsBannerAndLogYFollowTheDarkTheme) {
  app::MainWindow w(testOptions());
  auto* bar = w.findChild<QToolBar*>("TrainingToolbar");
  ASSERT_NE(bar, nullptr);
  w.setDarkTheme(true);
  QApplication::processEvents();
  for (QAction* a : bar->actions().mid(0, 4))
    EXPECT_GT(meanOpaqueLightness(a->icon()), 170) << a->text().toStdString() << ": a light icon on the dark toolbar";
  // The core editor's banner: palette colours, legible on dark.
  QLabel* banner = nullptr;
  for (auto* l : w.coreEditor()->findChildren<QLabel*>())
    if (l->styleSheet().contains("padding: 4px")) banner = l;
  ASSERT_NE(banner, nullptr);
  const auto m = QRegularExpression("background: (#\\w+); color: (#\\w+)").match(banner->styleSheet());
  ASSERT_TRUE(m.hasMatch()) << banner->styleSheet().toStdString();
  EXPECT_LT(QColor(m.captured(1)).lightness(), 110) << "no cream box on the dark theme";
  EXPECT_GT(QColor(m.captured(2)).lightness() - QColor(m.captured(1)).lightness(), 100) << "readable text";
  // Log y: its frame (Fusion: the window colour darkened) stands out from the dark plot.
  QCheckBox* logY = nullptr;
  for (auto* c : w.curves()->findChildren<QCheckBox*>())
    if (c->text() == "Log y") logY = c;
  ASSERT_NE(logY, nullptr);
  const int frame = logY->palette().color(QPalette::Window).darker(140).lightness();
  EXPECT_GT(frame - w.curves()->palette().color(QPalette::Window).lightness(), 40);
  w.setDarkTheme(false);
  QApplication::processEvents();
  for (QAction* a : bar->actions().mid(0, 4)) EXPECT_LT(meanOpaqueLightness(a->icon()), 90) << a->text().toStdString();
  const auto light = QRegularExpression("background: (#\\w+); color: (#\\w+)").match(banner->styleSheet());
  EXPECT_GT(QColor(light.captured(1)).lightness(), 180);
  EXPECT_LT(QColor(light.captured(2)).lightness(), 80);
}

TEST(WindowKeys, TheFirstStartFitsTheScreenWithItsFrame) {
  // 1600 × 1000 plus a title bar does not fit a 1600 × 1000 or 1280 × 800 screen: maximised.
  EXPECT_TRUE(app::firstStartMaximised(QSize(1600, 1000), QSize(1600, 1000)));
  EXPECT_TRUE(app::firstStartMaximised(QSize(1280, 770), QSize(1600, 1000)));
  EXPECT_TRUE(app::firstStartMaximised(QSize(1920, 1040), QSize(1600, 1000)));
  EXPECT_FALSE(app::firstStartMaximised(QSize(2560, 1400), QSize(1600, 1000)));
  app::MainWindow w(testOptions());  // the offscreen screen is smaller than 1600 × 1000
  EXPECT_LE(w.height(), w.screen()->availableGeometry().height() - 64) << "its normal size fits with a frame";
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  EXPECT_TRUE(w.windowState() & Qt::WindowMaximized);
  EXPECT_TRUE(w.screen()->availableGeometry().contains(w.frameGeometry())) << "the status bar on the screen";
  app::MainWindow sized(testOptions());  // --size and tests: a size given before show() wins
  sized.resize(1280, 800);
  sized.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&sized));
  EXPECT_FALSE(sized.windowState() & Qt::WindowMaximized);
  EXPECT_EQ(sized.size(), QSize(1280, 800));
}

TEST(WindowKeys, TheStatusBarShowsProgressAndAPausedRunSaysSo) {
  app::MainWindow w(testOptions());
  w.model().select(1);
  useLightThsaRun(w, 1);
  auto* progress = w.statusBar()->findChild<QLabel*>("StatusProgress");
  ASSERT_NE(progress, nullptr);
  EXPECT_TRUE(progress->isHidden()) << "nothing trains";
  ASSERT_TRUE(w.training().start(/*steps=*/400));
  ASSERT_TRUE(waitFor([&] { return progress->text().contains("ETA") || !w.controller()->running(); }));
  EXPECT_FALSE(progress->isHidden());
  EXPECT_TRUE(progress->text().contains("tokens/s")) << progress->text().toStdString();
  w.training().togglePause();
  ASSERT_TRUE(w.controller()->paused());
  const int row = w.model().current();
  EXPECT_TRUE(progress->text().startsWith("Paused at step")) << progress->text().toStdString();
  EXPECT_TRUE(w.model().statusLine(row).contains("paused at step")) << w.model().statusLine(row).toStdString();
  EXPECT_FALSE(w.model().statusLine(row).contains("training…"));
  w.training().togglePause();
  EXPECT_TRUE(w.model().statusLine(row).contains("training")) << w.model().statusLine(row).toStdString();
  w.controller()->stop();
  w.controller()->waitForFinished();
  ASSERT_TRUE(waitFor([&] { return progress->isHidden(); }, 10000));
}

TEST(WindowKeys, TheReferenceRunSaysWhatItIsAndWhatItCosts) {
  app::MainWindow w(testOptions());
  const auto& runs = w.model().session().runs;
  ASSERT_EQ(runs.size(), 4u);
  const QString text = app::runCostText(runs[3].config);
  for (const char* part : {"King James Bible", "4 layers", "2000 steps", "32 × 128 tokens", "min"})
    EXPECT_TRUE(text.contains(part)) << part << " in " << text.toStdString();
  const double reference = app::estimateRunCost(runs[3].config).seconds;
  EXPECT_GT(reference, 10 * 60) << "the reference run is a long one";
  EXPECT_GT(reference, 20 * app::estimateRunCost(runs[0].config).seconds);
  EXPECT_LT(app::estimateRunCost(runs[0].config).seconds, 120) << "the default runs learn within a minute or two";
  // Shown before training: in the runs list's tooltip and under the Training dock's status.
  EXPECT_TRUE(w.runsPanel()->list()->item(3)->toolTip().contains("2000 steps"));
  EXPECT_TRUE(w.runsPanel()->list()->item(3)->text().contains(" min to train")) << w.runsPanel()->list()->item(3)->text().toStdString();
  w.model().select(3);
  bool shown = false;
  for (auto* l : w.trainingPanel()->findChildren<QLabel*>()) shown |= l->text().contains("King James Bible");
  EXPECT_TRUE(shown);
}

// Ctrl+E (Export figures) is not forced over text fields: where the platform binds it to "end of
// line" (Linux), a focused field uses it, and the F1 sheet says so.
TEST(WindowKeys, ATextFieldKeepsItsPlatformsCtrlEAndTheSheetSaysSo) {
  const bool bound = QKeySequence::keyBindings(QKeySequence::MoveToEndOfLine).contains(QKeySequence("Ctrl+E"));
  QLineEdit field("abcdef");
  field.setCursorPosition(0);
  QTest::keyClick(&field, Qt::Key_E, Qt::ControlModifier);
  EXPECT_EQ(field.cursorPosition() == 6, bound);
  app::MainWindow w(testOptions());
  EXPECT_EQ(app::shortcutSheet(w).contains("Ctrl+E moves to the end of the line"), bound);
}
