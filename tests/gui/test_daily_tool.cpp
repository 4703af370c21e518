// Issue 13, "the explorer as a daily tool": work is never dropped without a question, the session
// knows when it is modified, examples open as untitled copies, the last session and the theme come
// back at start, training controls are always visible and the shortcuts are unambiguous. Each test
// process starts with settings of its own (gui_test_main.cpp).
#include <gtest/gtest.h>

#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QDoubleSpinBox>
#include "gui/training/training_panel.h"
#include <QStatusBar>
#include <QComboBox>
#include <QDockWidget>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QToolBar>

#include "gui/design/core_editor.h"
#include "gui/design/design_panel.h"
#include "model_core/run_config.h"
#include "gui/document/session.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_history.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_controller.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

QSpinBox* spinLabelled(QWidget* panel, const QString& toolTipStart) {
  for (auto* b : panel->findChildren<QSpinBox*>())
    if (b->toolTip().startsWith(toolTipStart)) return b;
  return nullptr;
}

}  // namespace

TEST(DailyTool, EveryShortcutIsBoundOnceAndRedoWorks) {
  app::MainWindow w(testOptions());
  QMap<QString, QString> owner;
  for (QAction* a : w.findChildren<QAction*>())
    for (const auto& key : a->shortcuts()) {
      const QString k = key.toString();
      EXPECT_FALSE(owner.contains(k) && owner[k] != a->text()) << k.toStdString() << " is bound to \""
                                                               << owner[k].toStdString() << "\" and \"" << a->text().toStdString() << "\"";
      owner[k] = a->text();
    }
  EXPECT_TRUE(owner.contains("Ctrl+Shift+Z"));
}

TEST(DailyTool, UndoTakesCtrlZEvenWhileAFieldHasFocus) {
  app::MainWindow w(testOptions());
  w.show();
  w.model().select(0);  // MHSA
  auto* heads = spinLabelled(w.designPanel(), "H");
  ASSERT_TRUE(heads);
  const auto before = w.model().currentSpec();
  heads->setFocus();
  QApplication::processEvents();
  heads->setValue(before.sizes.H == 8 ? 2 : 8);
  ASSERT_NE(w.model().currentSpec(), before);
  QTest::keyClick(heads, Qt::Key_Z, Qt::ControlModifier);
  EXPECT_EQ(w.model().currentSpec(), before) << "Ctrl+Z went to the spin box's text instead of the design";
  QTest::keyClick(heads, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
  EXPECT_NE(w.model().currentSpec(), before) << "redo";
}

TEST(DailyTool, TheSessionKnowsWhenItIsModifiedAndAsksBeforeDroppingIt) {
  QTemporaryDir dir;
  const QString path = dir.filePath("mine.json");
  int asked = 0;
  auto options = testOptions();
  QMessageBox::StandardButton answer = QMessageBox::Cancel;
  options.askToSave = [&] {
    ++asked;
    return answer;
  };
  app::MainWindow w(options);
  ASSERT_TRUE(w.files().save(path));
  EXPECT_FALSE(w.model().isModified());
  EXPECT_FALSE(w.windowTitle().endsWith("*"));
  // Adding a run is a change the undo stack does not hold; so is opening a run directory.
  w.model().addRun(w.model().run(0), "not trained");
  EXPECT_TRUE(w.model().isModified());
  EXPECT_TRUE(w.windowTitle().endsWith("*")) << w.windowTitle().toStdString();
  const int runs = w.model().count();
  // Opening another session asks first; Cancel keeps everything.
  EXPECT_FALSE(w.files().open(path));
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(w.model().count(), runs);
  // Closing asks too; Cancel keeps the window open.
  QCloseEvent close;
  QApplication::sendEvent(&w, &close);
  EXPECT_EQ(asked, 2);
  EXPECT_FALSE(close.isAccepted());
  // Save writes the file and then opens the other one.
  answer = QMessageBox::Save;
  ASSERT_TRUE(w.files().open(path));
  EXPECT_EQ(app::Session::load(path).runs.size(), size_t(runs)) << "the added run was saved first";
  // Discard drops the change.
  w.model().addRun(w.model().run(0), "not trained");
  answer = QMessageBox::Discard;
  ASSERT_TRUE(w.files().open(path));
  EXPECT_EQ(w.model().count(), runs);
  EXPECT_FALSE(w.model().isModified());
  // Training settings changed in the dock are changes too.
  auto config = w.model().currentRun().config;
  config.train.steps += 1;
  w.model().setCurrentConfig(config);
  EXPECT_TRUE(w.model().isModified());
  // Save as feeds Open recent.
  const QString other = dir.filePath("other.json");
  ASSERT_TRUE(w.files().save(other));
  EXPECT_EQ(app::recentSessions().value(0), other);
}

TEST(DailyTool, ExamplesOpenAsUntitledCopies) {
  const auto examples = app::exampleSessionPaths();
  ASSERT_FALSE(examples.isEmpty());
  app::MainWindow w(testOptions());
  ASSERT_TRUE(w.files().openExample(examples.front()));
  EXPECT_TRUE(w.model().path().isEmpty()) << "saving must not write into the examples' folder";
  EXPECT_FALSE(w.model().isModified()) << "an untouched example has nothing to save";
  EXPECT_TRUE(w.windowTitle().contains("unsaved session"));
}

TEST(DailyTool, TheLastSessionAndTheThemeComeBackAtStart) {
  QTemporaryDir dir;
  const QString path = dir.filePath("last.json");
  {
    app::MainWindow a(testOptions());
    a.model().addRun(a.model().run(0), "not trained");
    ASSERT_TRUE(a.files().save(path));
    a.setDarkTheme(true);
  }
  auto options = testOptions();
  options.reopenLastSession = true;
  {
    app::MainWindow b(options);
    EXPECT_EQ(b.model().path(), path);
    EXPECT_EQ(b.model().count(), 5) << "the default session's four runs and the one added";
    EXPECT_FALSE(b.model().isModified());
  }
  QSettings().remove("lastSession");
  {
    app::MainWindow c(options);
    EXPECT_TRUE(c.darkTheme()) << "the theme is remembered";
    bool checked = false;
    for (QAction* act : c.findChildren<QAction*>())
      if (act->text() == "&Dark theme") checked = act->isChecked();
    EXPECT_TRUE(checked) << "the menu shows the theme in use";
    c.setDarkTheme(false);
  }
  // A last session that is gone or damaged: the default session, and the reason.
  QSettings().setValue("lastSession", dir.filePath("missing.json"));
  app::MainWindow d(options);
  EXPECT_EQ(d.model().count(), 4);
}

TEST(DailyTool, TrainingControlsAreAlwaysVisibleAndTheDockShowsTheSelectedRun) {
  app::MainWindow w(testOptions());
  auto* bar = w.findChild<QToolBar*>("TrainingToolbar");
  ASSERT_TRUE(bar);
  QStringList texts;
  for (QAction* a : bar->actions()) texts << a->text();
  for (const char* t : {"&Train", "&Pause / resume", "&Step", "St&op"}) EXPECT_TRUE(texts.contains(t)) << t;
  for (QAction* a : bar->actions())
    if (a->text() == "&Train") EXPECT_TRUE(a->toolTip().contains("F5")) << "the key is shown";
  w.model().select(2);
  EXPECT_TRUE(w.trainingPanel()->statusText().startsWith(w.model().run(2).name)) << w.trainingPanel()->statusText().toStdString();
  EXPECT_TRUE(w.trainingPanel()->statusText().endsWith("not trained"));
}

TEST(DailyTool, TheWindowFitsALaptopScreen) {
  app::MainWindow w(testOptions());
  w.show();
  QApplication::processEvents();
  // The forms scroll: the window shrinks to a 1280 x 800 laptop screen (1366 x 768 less a panel).
  const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
  EXPECT_LE(min.width(), 1260);
  EXPECT_LE(min.height(), 720);
  EXPECT_LE(w.width(), w.screen()->availableGeometry().width()) << "the start size is clamped to the screen";
}

TEST(DailyTool, LayoutPresetsArrangeTheDocksAndResetBringsClosedOnesBack) {
  app::MainWindow w(testOptions());
  w.show();
  QApplication::processEvents();
  ASSERT_FALSE(w.defaultLayout().isEmpty());
  const auto find = [&](const QString& title) { return w.findChild<QDockWidget*>(title); };
  find("Curves")->close();
  QAction* present = nullptr;
  QAction* reset = nullptr;
  for (QAction* a : w.findChildren<QAction*>()) {
    if (a->text() == "&Present") present = a;
    if (a->text() == "&Reset to default") reset = a;
  }
  ASSERT_TRUE(present && reset);
  present->trigger();
  QApplication::processEvents();
  EXPECT_TRUE(find("Design")->isHidden()) << "Present shows no forms";
  EXPECT_FALSE(find("Diagram")->isHidden());
  EXPECT_FALSE(find("Curves")->isHidden()) << "a preset brings closed docks back";
  reset->trigger();
  QApplication::processEvents();
  for (auto* d : w.docks()) EXPECT_FALSE(d->isHidden()) << d->windowTitle().toStdString();
}

// "Panels never show another run's data": what a run drew goes when another session opens, and a
// design without C shows no C of another design.
TEST(DailyTool, PanelsShowNothingOfAnotherSessionOrDesign) {
  app::MainWindow w(testOptions());
  // Maps of both layers and TP role vectors of six tokens, so that every view has data to keep.
  const auto snap = fullSnapshot();
  w.model().setTrainingRun(w.model().currentRun().id);  // the views show the selected run's inspections
  Q_EMIT w.controller()->inspected(snap);
  ASSERT_EQ(w.stableRankPlot()->layers(), (std::vector<int>{0, 1}));
  ASSERT_FALSE(w.spectrumPlot()->isShowingMessage());
  ASSERT_FALSE(w.attentionMaps()->isShowingMessage());
  ASSERT_FALSE(w.roleClusters()->isShowingMessage()) << "the role clusters show the TP roles before the switch";
  w.model().setTrainingRun(0);
  const auto examples = app::exampleSessionPaths();
  ASSERT_FALSE(examples.isEmpty());
  ASSERT_TRUE(w.files().openExample(examples.front()));
  EXPECT_TRUE(w.stableRankPlot()->layers().empty());
  EXPECT_TRUE(w.stableRankPlot()->isShowingMessage());
  EXPECT_EQ(w.stableRankPlot()->headsReference(), 0.0) << "no \"H heads\" line of another design";
  EXPECT_TRUE(w.spectrumPlot()->isShowingMessage());
  EXPECT_TRUE(w.attentionMaps()->isShowingMessage());
  EXPECT_TRUE(w.roleClusters()->isShowingMessage());
  EXPECT_FALSE(w.trainingPanel()->statusText().contains("step")) << w.trainingPanel()->statusText().toStdString();

  // An MHSA run: its own preset in the Design dock, no factor panels or preset of a C.
  app::MainWindow m(testOptions());
  m.model().select(0);
  ASSERT_EQ(m.model().currentSpec().variant, spec::Variant::Mhsa);
  QComboBox* preset = nullptr;
  for (auto* c : m.designPanel()->findChildren<QComboBox*>())
    if (c->toolTip().startsWith("Start from a preset")) preset = c;
  ASSERT_TRUE(preset);
  EXPECT_EQ(preset->currentText(), "mhsa");
  m.model().select(1);
  EXPECT_EQ(preset->currentText(), "thsa");
  m.model().select(0);
  for (auto* heat : m.coreEditor()->findChildren<viz::MatrixHeatmap*>())
    if (heat != m.coreEditor()->heatmap()) EXPECT_TRUE(heat->isHidden()) << "a factor panel of no C";
}

// The Training dock said "stopped at step N" of the previous session's run after another session
// was opened.
TEST(DailyTool, TheTrainingDockForgetsARunOfAnotherSession) {
  app::MainWindow w(testOptions());
  w.model().select(1);
  useLightThsaRun(w, 1);
  trainStopped(w, 3);
  ASSERT_TRUE(w.trainingPanel()->statusText().contains("step")) << w.trainingPanel()->statusText().toStdString();
  // Offscreen, the question whether to save the trained session is answered with Discard.
  const auto examples = app::exampleSessionPaths();
  ASSERT_FALSE(examples.isEmpty());
  ASSERT_TRUE(w.files().openExample(examples.front()));
  EXPECT_FALSE(w.trainingPanel()->statusText().contains("step")) << w.trainingPanel()->statusText().toStdString();
  EXPECT_FALSE(w.trainingPanel()->statusText().contains("stopped")) << w.trainingPanel()->statusText().toStdString();
}

TEST(DailyTool, ADamagedRunDirectoryIsRefusedWithTheReason) {
  QTemporaryDir dir;
  app::MainWindow w(testOptions());
  // A valid config, a damaged trainer state, no weights: it was accepted as a run before.
  QFile config(dir.filePath("config.json"));
  ASSERT_TRUE(config.open(QIODevice::WriteOnly));
  config.write(QByteArray::fromStdString(model_core::runConfigToJson(w.model().run(0).config)));
  config.close();
  QFile state(dir.filePath("trainer_state.json"));
  ASSERT_TRUE(state.open(QIODevice::WriteOnly));
  state.write("{\"format\": \"tensorscope.trainer_state\", \"version\": 1, \"step\": \"seven\"");
  state.close();
  const int runs = w.model().count();
  EXPECT_FALSE(w.openRunDirectory(dir.path()));
  EXPECT_EQ(w.model().count(), runs);
  const QString message = w.statusBar()->currentMessage();
  EXPECT_TRUE(message.contains("trainer_state.json")) << message.toStdString();
  EXPECT_TRUE(message.contains("model.safetensors is missing")) << message.toStdString();
}

TEST(DailyTool, TrainingARunWithHistoryResumesOrStartsAgainAsAnswered) {
  auto options = testOptions();
  app::TrainingDriver::History answer = app::TrainingDriver::History::Resume;
  QList<qint64> askedAt;
  options.askHistory = [&](const QString&, qint64 step) {
    askedAt << step;
    return answer;
  };
  app::MainWindow w(options);
  w.model().select(1);
  useLightThsaRun(w, 1);
  auto* c = w.controller();
  ASSERT_TRUE(w.training().start(/*steps=*/3));
  c->waitForFinished();
  QApplication::processEvents();
  EXPECT_TRUE(askedAt.isEmpty()) << "a run without history is not asked about";
  const QString first = w.model().run(1).runDir;
  ASSERT_TRUE(waitFor([&] { return w.curves()->pointCount("train loss", "THSA") == 3; }, 20000));
  // Train again: asked, resumed in the same directory, the curve goes on from step 3.
  ASSERT_TRUE(w.training().start(/*steps=*/5));
  c->waitForFinished();
  ASSERT_EQ(askedAt, QList<qint64>{3});
  EXPECT_EQ(w.model().run(1).runDir, first);
  EXPECT_TRUE(waitFor([&] { return w.curves()->pointCount("train loss", "THSA") == 5; }, 20000))
      << w.curves()->pointCount("train loss", "THSA") << " points: the history was thrown away";
  // Cancel: nothing starts.
  answer = app::TrainingDriver::History::Cancel;
  EXPECT_FALSE(w.training().start(/*steps=*/6));
  EXPECT_FALSE(c->running());
  // Train again from step 0: a new directory; the old one stays.
  answer = app::TrainingDriver::History::Restart;
  ASSERT_TRUE(w.training().start(/*steps=*/2));
  c->waitForFinished();
  EXPECT_NE(w.model().run(1).runDir, first);
  EXPECT_TRUE(QFileInfo::exists(first + "/config.json"));
  EXPECT_TRUE(w.model().isModified()) << "a new run directory is a change of the session";
}

// "Nonsense typed into the learning rate is clamped to 1.0 without a word": a rate reads in
// scientific notation (a plain spin box took "1e-3" as 1), and what does not read keeps the rate,
// with a note that says what was typed.
TEST(DailyTool, TheLearningRateReadsScientificNotationAndSaysWhatItRefuses) {
  app::MainWindow w(testOptions());
  auto* panel = w.trainingPanel();
  auto* lr = panel->learningRateBox();
  auto* edit = lr->findChild<QLineEdit*>();
  ASSERT_NE(edit, nullptr);
  const auto type = [&](const QString& text) {
    edit->selectAll();
    QTest::keyClicks(edit, text);
    QTest::keyClick(edit, Qt::Key_Return);
  };
  type("3e-4");
  EXPECT_DOUBLE_EQ(lr->value(), 3e-4);
  EXPECT_EQ(lr->text(), "0.0003");
  EXPECT_TRUE(panel->inputNote().isEmpty());
  type("fast");
  EXPECT_DOUBLE_EQ(lr->value(), 3e-4) << "kept, not clamped";
  EXPECT_EQ(panel->inputNote(), "Learning rate: “fast” is not a number from 1e-07 to 10; it stays 0.0003.");
  type("25");
  EXPECT_DOUBLE_EQ(lr->value(), 3e-4);
  EXPECT_TRUE(panel->inputNote().contains("“25”"));
  type("2E-3");
  EXPECT_DOUBLE_EQ(lr->value(), 2e-3);
  EXPECT_TRUE(panel->inputNote().isEmpty()) << "a good rate answers the note";
  lr->stepBy(1);  // the arrows double and halve
  EXPECT_DOUBLE_EQ(lr->value(), 4e-3);
  // The run trains with what the box says.
  model_core::RunConfig c = w.model().currentRun().config;
  panel->applyTo(c);
  EXPECT_DOUBLE_EQ(c.train.lr, 4e-3);
}

// "Throughput alternates 43/940 tokens/s while the ETA implies ~4,500": steps/s, tokens/s and the
// ETA come from one window, so tokens/s is steps/s times the tokens of a step.
TEST(DailyTool, StepsAndTokensPerSecondAgree) {
  app::MainWindow w(testOptions());
  w.model().select(1);
  useLightThsaRun(w, 1);
  const auto config = w.model().currentRun().config;
  ASSERT_TRUE(w.training().start(400));
  QString text;
  ASSERT_TRUE(waitFor([&] {
    text = w.trainingPanel()->statusText();
    return text.contains("steps/s") && !text.contains(" 0.00 steps/s") && text.contains("step 1") ;
  }, 60000));
  ASSERT_TRUE(waitFor([&] {
    text = w.trainingPanel()->statusText();
    const auto parts = text.split(" · ");
    return parts.size() > 3 && parts[0].section(' ', 1, 1).toInt() > 40;
  }, 60000));
  w.controller()->stop();
  w.controller()->waitForFinished();
  // "step S / T · loss L · X steps/s · Y tokens/s · ETA mm:ss"
  const auto parts = text.split(" · ");
  ASSERT_GE(parts.size(), 5) << text.toStdString();
  const double steps = parts[2].section(' ', 0, 0).toDouble();
  const double tokens = parts[3].section(' ', 0, 0).toDouble();
  ASSERT_GT(steps, 0) << text.toStdString();
  const double perStep = 4.0 * double(model_core::modelSequenceLength(config));  // batch 4
  EXPECT_NEAR(tokens / steps, perStep, perStep * 0.01 + 1.0 / steps) << text.toStdString();
}
