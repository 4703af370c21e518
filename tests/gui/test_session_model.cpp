// The explorer's document on its own (issue 12): stable run ids, undo that names its run, the
// training lock, per-layer designs and the signals the docks observe. No window.
#include <gtest/gtest.h>

#include <QSignalSpy>
#include <QUndoStack>

#include "gui/document/session.h"
#include "gui/document/default_session.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_model.h"
#include "spec/attention_spec.h"

namespace {

using namespace tensorscope;

/// The default session (MHSA, THSA, dense THSA at the reference size) with run 1 (THSA) current.
/// The default session's first three runs (MHSA, THSA, heads-only THSA).
app::Session threeRuns() {
  auto s = app::defaultSession();
  s.runs.resize(3);
  s.current = 1;
  return s;
}

spec::AttentionSpec withBias(spec::AttentionSpec s, bool bias) {
  s.bias = bias;
  return s;
}

TEST(SessionModel, RunsKeepTheirIdsWhenOthersAreRemoved) {
  app::SessionModel m;
  QSignalSpy reset(&m, &app::SessionModel::sessionReset);
  m.reset(threeRuns());
  EXPECT_EQ(reset.count(), 1);
  ASSERT_EQ(m.count(), 3);
  const quint64 thsa = m.run(1).id, dense = m.run(2).id;
  EXPECT_NE(thsa, dense);
  EXPECT_EQ(m.status(1), "not trained");
  EXPECT_TRUE(m.overlaid(1));
  QSignalSpy removed(&m, &app::SessionModel::runRemoved);
  QString why;
  ASSERT_TRUE(m.removeRun(0, &why)) << why.toStdString();
  ASSERT_EQ(removed.count(), 1);
  EXPECT_EQ(removed.at(0).at(1).toString(), "MHSA");
  EXPECT_EQ(m.indexOf(thsa), 0);
  EXPECT_EQ(m.indexOf(dense), 1);
  EXPECT_EQ(m.run(m.current()).id, thsa) << "the selection stays on a run next to the removed one";
  const quint64 added = m.addRun(m.run(0), "copy");
  EXPECT_EQ(m.current(), 2);
  EXPECT_NE(added, thsa) << "an added run gets a new id even when copied";
  ASSERT_TRUE(m.removeRun(0, &why));
  ASSERT_TRUE(m.removeRun(0, &why));
  EXPECT_FALSE(m.removeRun(0, &why));
  EXPECT_EQ(why, "A session keeps at least one run.");
  EXPECT_FALSE(m.removeRun(5, &why));
}

TEST(SessionModel, AnEditIsUndoneOnItsOwnRunWhicheverIsSelected) {
  app::SessionModel m;
  m.reset(threeRuns());
  const auto original = m.currentSpec();
  QSignalSpy designs(&m, &app::SessionModel::designChanged);
  m.editDesign(withBias(original, !original.bias), "bias");
  ASSERT_EQ(m.undoStack()->count(), 1);
  ASSERT_EQ(designs.count(), 1);
  EXPECT_EQ(designs.at(0).at(0).toULongLong(), m.run(1).id);
  const auto mhsa = m.run(0).config.model.attention;
  m.select(0);
  m.undoStack()->undo();
  EXPECT_EQ(m.run(0).config.model.attention, mhsa) << "undo wrote into the selected run";
  EXPECT_EQ(m.run(1).config.model.attention.front(), original);
  EXPECT_EQ(m.current(), 1) << "undo shows the run it changes";
  // An unchanged design is no edit.
  m.editDesign(m.currentSpec(), "nothing");
  EXPECT_EQ(m.undoStack()->count(), 1);
}

TEST(SessionModel, ATrainingRunTakesNoEditAndItsPendingUndoIsDropped) {
  app::SessionModel m;
  m.reset(threeRuns());
  const auto original = m.currentSpec();
  m.editDesign(withBias(original, !original.bias), "bias");
  const auto edited = m.currentSpec();
  QSignalSpy training(&m, &app::SessionModel::trainingChanged);
  QSignalSpy refused(&m, &app::SessionModel::refused);
  m.setTrainingRun(m.run(1).id);
  ASSERT_EQ(training.count(), 1);
  EXPECT_TRUE(m.isTraining(1));
  EXPECT_EQ(m.trainingSpec(), edited) << "inspections are read with the design that trains";
  m.editDesign(original, "while training");
  EXPECT_EQ(m.currentSpec(), edited);
  EXPECT_EQ(refused.count(), 1);
  m.undoStack()->undo();  // refused: the command leaves the stack
  EXPECT_EQ(m.currentSpec(), edited);
  EXPECT_EQ(m.undoStack()->count(), 0);
  QString why;
  EXPECT_FALSE(m.removeRun(1, &why));
  EXPECT_EQ(why, "It is training; stop it first.");
  auto settings = m.currentRun().config;
  settings.train.steps = 7;
  m.setCurrentConfig(settings);
  EXPECT_NE(m.currentRun().config.train.steps, 7) << "what trains stays what is shown";
  m.setTrainingRun(0);
  EXPECT_FALSE(m.isTraining(1));
  m.setCurrentConfig(settings);
  EXPECT_EQ(m.currentRun().config.train.steps, 7);
}

TEST(SessionModel, PerLayerDesignsAreEditedLayerByLayer) {
  app::SessionModel m;
  auto s = threeRuns();
  auto& model = s.runs[1].config.model;
  ASSERT_EQ(model.layers, 2);
  auto layer1 = model.attention.front();
  layer1.core->dense_values[0] += 0.5;
  model.attention = {model.attention.front(), layer1};
  m.reset(std::move(s));
  EXPECT_TRUE(m.perLayer(1));
  EXPECT_EQ(m.layerCount(1), 2);
  QSignalSpy layerSpy(&m, &app::SessionModel::currentLayerChanged);
  m.setCurrentLayer(5);
  EXPECT_EQ(m.currentLayer(), 1) << "clamped to the run's layers";
  EXPECT_EQ(layerSpy.count(), 1);
  EXPECT_EQ(m.currentSpec(), layer1);
  auto edited = layer1;
  edited.core->dense_values[1] = -2;
  m.editCurrentLayer(edited, "cell", /*stroke=*/3);
  auto again = edited;
  again.core->dense_values[2] = -3;
  m.editCurrentLayer(again, "cell", /*stroke=*/3);
  EXPECT_EQ(m.undoStack()->count(), 1) << "the cells of one stroke merge";
  EXPECT_EQ(m.currentRun().config.model.attention.at(1), again);
  EXPECT_EQ(m.currentRun().config.model.attention.at(0), threeRuns().runs[1].config.model.attention.front());
  // Making the layers equal again collapses them to one shared spec.
  m.editCurrentLayer(m.currentRun().config.model.attention.at(0), "same as layer 0");
  EXPECT_EQ(m.currentRun().config.model.attention.size(), 1u);
  EXPECT_FALSE(m.perLayer(1));
  m.undoStack()->undo();
  EXPECT_EQ(m.currentRun().config.model.attention.size(), 2u);
}

TEST(SessionModel, AnUndoOfARemovedRunChangesNothing) {
  app::SessionModel m;
  m.reset(threeRuns());
  m.editDesign(withBias(m.currentSpec(), !m.currentSpec().bias), "bias");
  const auto others = std::make_pair(m.run(0).config.model.attention, m.run(2).config.model.attention);
  QString why;
  ASSERT_TRUE(m.removeRun(1, &why));
  QSignalSpy refused(&m, &app::SessionModel::refused);
  m.undoStack()->undo();
  ASSERT_EQ(refused.count(), 1);
  EXPECT_TRUE(refused.at(0).at(0).toString().contains("removed"));
  EXPECT_EQ(m.run(0).config.model.attention, others.first);
  EXPECT_EQ(m.run(1).config.model.attention, others.second);
}

TEST(SessionModel, ANewSessionIsRefusedWhileARunTrains) {
  app::SessionModel m;
  m.reset(threeRuns());
  m.setTrainingRun(m.run(2).id);
  const quint64 first = m.run(0).id;
  QSignalSpy refused(&m, &app::SessionModel::refused);
  m.reset(app::defaultSession());
  EXPECT_EQ(refused.count(), 1);
  EXPECT_EQ(m.run(0).id, first) << "the document was kept";
  EXPECT_TRUE(m.isTraining(2));
  EXPECT_THROW(m.open("/nonexistent/session.json"), std::runtime_error);
  m.setTrainingRun(0);
  m.reset(app::Session{});
  EXPECT_EQ(refused.count(), 2) << "a session without runs is refused";
  EXPECT_EQ(m.run(0).id, first);
}

}  // namespace

// Issue 20: session files are NAME.tensorscope.json (their own MIME type by the longer glob), and a
// name typed without .json gets that suffix; any .json name is kept.
TEST(SessionFileNames, ANameWithoutJsonGetsTheSessionSuffix) {
  EXPECT_EQ(tensorscope::app::withSessionSuffix("/tmp/study"), "/tmp/study.tensorscope.json");
  EXPECT_EQ(tensorscope::app::withSessionSuffix("/tmp/study.json"), "/tmp/study.json");
  EXPECT_EQ(tensorscope::app::withSessionSuffix("/tmp/study.tensorscope.json"), "/tmp/study.tensorscope.json");
  EXPECT_EQ(tensorscope::app::withSessionSuffix(""), "");
}
