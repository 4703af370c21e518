// Offscreen tests of the analysis views: StableRankPlot, SpectrumPlot, AttentionMapGrid (per-head
// mean numerically, aggregation switch, hover, click-to-enlarge, cheap re-updates) and
// RoleClusterPlot (grouping, k spin box, hover).
#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFontMetrics>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <cmath>

#include "viz/attention_map_grid.h"
#include "viz/figure_options.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

using namespace tensorscope::viz;

namespace {

void settle(PlotWidget& w, QSize size = QSize(720, 480)) {
  w.resize(size);
  w.show();
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
  w.replotNow();
}

void mouse(QWidget* target, QEvent::Type type, QPointF pos, Qt::MouseButton button = Qt::NoButton,
           Qt::MouseButtons buttons = Qt::NoButton) {
  QMouseEvent event(type, pos, target->mapToGlobal(pos), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(target, &event);
}

MatrixData constantMap(int n, float value) {
  return MatrixData{n, n, std::vector<float>(static_cast<std::size_t>(n) * n, value)};
}

// maps[l][c](q, k) = l + c / 100 + q / 10 + k / 1000: every entry identifies where it came from.
std::vector<std::vector<MatrixData>> taggedMaps(int layers, int channels, int n) {
  std::vector<std::vector<MatrixData>> maps(layers);
  for (int l = 0; l < layers; ++l)
    for (int c = 0; c < channels; ++c) {
      MatrixData m = constantMap(n, 0);
      for (int q = 0; q < n; ++q)
        for (int k = 0; k < n; ++k) m.values[q * n + k] = static_cast<float>(l + c / 100.0 + q / 10.0 + k / 1000.0);
      maps[l].push_back(std::move(m));
    }
  return maps;
}

}  // namespace

TEST(VizStableRank, LinesPerLayerAndReferenceInRange) {
  StableRankPlot plot;
  plot.appendSnapshot(0, {0, 2}, {7.5, 3.0});
  plot.appendSnapshot(50, {0, 2}, {6.0, 3.5});
  plot.appendSnapshot(100, {0}, {5.0});
  EXPECT_EQ(plot.layers(), (std::vector<int>{0, 2}));
  EXPECT_EQ(plot.pointCount(0), 3);
  EXPECT_EQ(plot.pointCount(2), 2);
  plot.setHeadsReference(8);
  const auto [y0, y1] = plot.yRange();
  EXPECT_EQ(y0, 0.0);
  EXPECT_GT(y1, 8.0);  // the reference stays visible
  const auto [x0, x1] = plot.xRange();
  EXPECT_LE(x0, 0.0);
  EXPECT_GE(x1, 100.0);
  plot.appendSnapshot(50, {0}, {9.0});  // resumed from step 50
  EXPECT_EQ(plot.pointCount(0), 2);
  EXPECT_EQ(plot.csvText().split('\n', Qt::SkipEmptyParts),
            (QStringList{"layer,step,stable_rank", "0,0,7.5", "0,50,9", "2,0,3", "2,50,3.5"}));
}

TEST(VizStableRank, TheChosenLayerStandsOut) {
  StableRankPlot plot;
  plot.appendSnapshot(0, {0, 1, 2}, {3.0, 2.0, 1.5});
  EXPECT_EQ(plot.highlightedLayer(), -1);
  EXPECT_EQ(plot.lineWidth(0), plot.lineWidth(1)) << "no choice: every line alike";
  plot.setHighlightedLayer(1);
  EXPECT_GT(plot.lineWidth(1), plot.lineWidth(0));
  EXPECT_EQ(plot.lineWidth(0), plot.lineWidth(2));
  plot.appendSnapshot(25, {0, 1, 2}, {2.5, 2.0, 1.5});  // new points keep the choice
  EXPECT_GT(plot.lineWidth(1), plot.lineWidth(2));
  plot.setDarkTheme(true);
  EXPECT_GT(plot.lineWidth(1), plot.lineWidth(2)) << "a theme change keeps the choice";
  EXPECT_EQ(plot.lineWidth(7), 0.0);
}

TEST(VizSpectrum, SortedBarsLayerChoiceAndAnnotation) {
  SpectrumPlot plot;
  EXPECT_TRUE(plot.isShowingMessage());
  plot.setSpectra({{0, {0.5, 2.0, 1.0}, 1.3125}, {3, {4.0, 1.0}, 1.0625}}, 500);
  EXPECT_FALSE(plot.isShowingMessage());
  EXPECT_EQ(plot.currentLayer(), 0);
  EXPECT_EQ(plot.displayedValues(), (std::vector<double>{2.0, 1.0, 0.5}));
  EXPECT_TRUE(plot.annotation().contains(QStringLiteral("layer 0 · step 500")));
  EXPECT_TRUE(plot.annotation().contains(QStringLiteral("Σσ² / σ₁² = 1.31"))) << plot.annotation().toStdString();
  QSignalSpy changed(&plot, &SpectrumPlot::layerChanged);
  plot.setCurrentLayer(3);
  ASSERT_EQ(changed.count(), 1);
  EXPECT_EQ(changed[0][0].toInt(), 3);
  EXPECT_EQ(plot.displayedValues(), (std::vector<double>{4.0, 1.0}));
  plot.setHeads(1);
  EXPECT_TRUE(plot.annotation().contains(QStringLiteral("top-1 energy 94.1 %")));  // 16 / 17
  EXPECT_GT(plot.yRange().second, 4.0);
  plot.setSpectra({{3, {1.0}, 1.0}});  // the chosen layer survives a new snapshot
  EXPECT_EQ(plot.currentLayer(), 3);
  EXPECT_EQ(plot.csvText(), QStringLiteral("layer,index,singular_value,stable_rank\n3,1,1,1\n"));
}

TEST(VizAttention, PerHeadMeanIsTheGroupMean) {
  std::vector<MatrixData> channels;
  for (int c = 0; c < 5; ++c) channels.push_back(MatrixData{1, 2, {static_cast<float>(c), static_cast<float>(10 * c)}});
  const auto heads = perHeadMean(channels, 2);  // {0,1} {2,3} {4}
  ASSERT_EQ(heads.size(), 3u);
  EXPECT_FLOAT_EQ(heads[0].values[0], 0.5f);
  EXPECT_FLOAT_EQ(heads[0].values[1], 5.0f);
  EXPECT_FLOAT_EQ(heads[1].values[0], 2.5f);
  EXPECT_FLOAT_EQ(heads[1].values[1], 25.0f);
  EXPECT_FLOAT_EQ(heads[2].values[0], 4.0f);
  EXPECT_EQ(perHeadMean(channels, 1).size(), 5u);
}

TEST(VizAttention, AggregationSwitchAndTitles) {
  AttentionMapGrid grid;
  grid.setMaps(taggedMaps(2, 8, 3), {"a", "b", "c"});
  EXPECT_EQ(grid.aggregation(), AttentionMapGrid::Aggregation::PerChannel);  // group size 1
  EXPECT_EQ(grid.mapCount(0), 8);
  EXPECT_EQ(grid.mapTitle(0, 5), QStringLiteral("h5"));
  grid.setGroupSize(4);
  EXPECT_EQ(grid.aggregation(), AttentionMapGrid::Aggregation::PerHeadMean);
  ASSERT_EQ(grid.mapCount(1), 2);
  // Head 1 of layer 1 averages channels 4..7: 1 + 5.5/100 + q/10 + k/1000.
  EXPECT_NEAR(grid.displayedMap(1, 1).at(2, 1), 1 + 0.055 + 0.2 + 0.001, 1e-6);
  EXPECT_EQ(grid.mapTitle(1, 1), QStringLiteral("h1"));
  auto* combo = grid.findChild<QComboBox*>();
  ASSERT_NE(combo, nullptr);
  EXPECT_TRUE(combo->isEnabled());
  combo->setCurrentIndex(combo->findText(QStringLiteral("Per channel")));
  EXPECT_EQ(grid.aggregation(), AttentionMapGrid::Aggregation::PerChannel);
  EXPECT_EQ(grid.mapCount(1), 8);
  EXPECT_EQ(grid.mapTitle(1, 6), QStringLiteral("c6"));
  EXPECT_NEAR(grid.displayedMap(1, 6).at(0, 2), 1.062, 1e-6);
  const QStringList csv = grid.csvText().split('\n', Qt::SkipEmptyParts);
  EXPECT_EQ(csv.size(), 1 + 2 * 8 * 9);
  EXPECT_EQ(csv[0], QStringLiteral("layer,map,query,key,query_token,key_token,value"));
  EXPECT_EQ(csv[1 + 9 + 5], QStringLiteral("0,c1,1,2,b,c,0.112"));
}

TEST(VizAttention, HoverClickAndEnlargedView) {
  AttentionMapGrid grid;
  grid.setMaps(taggedMaps(2, 4, 5), {"t0", "t1", "t2", "t3", "t4"}, {3, 5}, 100);
  settle(grid, QSize(800, 600));
  EXPECT_GE(grid.gridColumns(), 4);
  EXPECT_GE(grid.cellSide(), 64);
  const QPointF p = grid.cellCentre(1, 2, 3, 4);
  mouse(grid.plotArea(), QEvent::MouseMove, p);
  EXPECT_EQ(grid.hoverText(), QStringLiteral("layer 5 · h2\nquery 3 “t3” → key 4 “t4”: 1.324"));
  QSignalSpy clicked(&grid, &AttentionMapGrid::mapClicked);
  mouse(grid.plotArea(), QEvent::MouseButtonPress, p, Qt::LeftButton, Qt::LeftButton);
  mouse(grid.plotArea(), QEvent::MouseButtonRelease, p, Qt::LeftButton, Qt::NoButton);
  ASSERT_EQ(clicked.count(), 1);
  EXPECT_EQ(clicked[0][0].toInt(), 1);
  EXPECT_EQ(clicked[0][1].toInt(), 2);
  MatrixHeatmap* big = grid.enlargedView();
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->rows(), 5);
  EXPECT_FLOAT_EQ(static_cast<float>(big->value(3, 4)), grid.displayedMap(1, 2).at(3, 4));
  EXPECT_EQ(big->colourScale(), MatrixHeatmap::ColourScale::Sequential);
  // The enlarged view follows new snapshots.
  auto next = taggedMaps(2, 4, 5);
  next[1][2].values[3 * 5 + 4] = 0.25f;
  grid.setMaps(next, {"t0", "t1", "t2", "t3", "t4"}, {3, 5}, 150);
  EXPECT_FLOAT_EQ(static_cast<float>(big->value(3, 4)), 0.25f);
}

// Issue 13: the user picks a layer and a head; titles keep the model's numbers.
TEST(VizAttention, LayerAndHeadFilters) {
  AttentionMapGrid grid;
  grid.setMaps(taggedMaps(2, 8, 3), {"a", "b", "c"}, {3, 5}, 10);
  grid.setGroupSize(2);  // 4 heads of 2 channels
  EXPECT_EQ(grid.headCount(), 4);
  grid.setLayerFilter(5);
  ASSERT_EQ(grid.layerCount(), 1);
  EXPECT_EQ(grid.layerId(0), 5);
  EXPECT_EQ(grid.mapCount(0), 4);  // head means
  grid.setHeadFilter(2);
  ASSERT_EQ(grid.mapCount(0), 1);
  EXPECT_EQ(grid.mapTitle(0, 0), QStringLiteral("h2"));
  // Head 2 of layer 5 (its index 1) averages channels 4 and 5: 1 + 4.5/100 + q/10 + k/1000.
  EXPECT_NEAR(grid.displayedMap(0, 0).at(1, 2), 1 + 0.045 + 0.1 + 0.002, 1e-6);
  grid.setAggregation(AttentionMapGrid::Aggregation::PerChannel);
  ASSERT_EQ(grid.mapCount(0), 2);  // the head's two channels
  EXPECT_EQ(grid.mapTitle(0, 0), QStringLiteral("c4"));
  EXPECT_EQ(grid.mapTitle(0, 1), QStringLiteral("c5"));
  EXPECT_TRUE(grid.csvText().contains(QStringLiteral("\n5,c5,0,0,a,a,")));
  // The boxes say the same and set it: "All layers" brings both layers back.
  QComboBox* layers = nullptr;
  for (auto* box : grid.findChildren<QComboBox*>())
    if (box->findText(QStringLiteral("All layers")) >= 0) layers = box;
  ASSERT_NE(layers, nullptr);
  EXPECT_EQ(layers->currentText(), QStringLiteral("layer 5"));
  layers->setCurrentIndex(layers->findText(QStringLiteral("All layers")));
  EXPECT_EQ(grid.layerFilter(), -1);
  EXPECT_EQ(grid.layerCount(), 2);
  // New maps keep the choice where it still exists, and drop it where it does not.
  grid.setMaps(taggedMaps(2, 2, 3), {"a", "b", "c"}, {3, 5}, 20);  // one head of two channels
  EXPECT_EQ(grid.headFilter(), -1);
}

// Issue 13, "title cut": a long probe caption is elided to the grid's width, never pushed off both sides.
TEST(VizAttention, ALongTitleIsElidedToTheWidth) {
  AttentionMapGrid grid;
  grid.setMaps(taggedMaps(1, 2, 3), {"a", "b", "c"}, {0}, 10);
  grid.setProbeName(QStringLiteral("“%1” → “%2”").arg(QString(60, QChar('7')), QString(60, QChar('1'))));
  settle(grid, QSize(420, 300));
  grid.setMaps(taggedMaps(1, 2, 3), {"a", "b", "c"}, {0}, 11);
  EXPECT_TRUE(grid.title().startsWith(QStringLiteral("Probe “777"))) << grid.title().toStdString();
  const QString drawn = grid.drawnTitle();
  EXPECT_TRUE(drawn.endsWith(QChar(0x2026))) << drawn.toStdString();
  EXPECT_TRUE(drawn.startsWith(QStringLiteral("Probe “777"))) << drawn.toStdString();
  EXPECT_LT(drawn.size(), grid.title().size());
  // It fits over the maps (the colour scale has its own column), which can be narrower than the dock.
  EXPECT_LE(QFontMetrics(QFont(QFont().family(), 10, QFont::Bold)).horizontalAdvance(drawn), grid.plotArea()->width() - 40);
}

// A figure keeps the probe whole where it can: two title lines instead of an elided one.
TEST(VizAttention, AFigureTitleTakesTwoLinesRatherThanLoseTheProbe) {
  QTemporaryDir tmp;
  AttentionMapGrid grid;
  grid.setProbeName(QStringLiteral("“What is the value of 5 - 15*8?” → “-115”"));
  grid.setMaps(taggedMaps(1, 2, 6), {"a", "b", "c", "d", "e", "f"}, {0}, 1234);
  grid.setGroupSize(1);
  settle(grid, QSize(300, 300));
  FigureOptions o;
  o.widthMm = 60;
  o.dpi = 100;
  ASSERT_TRUE(grid.exportPng(tmp.filePath(QStringLiteral("maps.png")), o)) << grid.exportError().toStdString();
  const QStringList lines = grid.lastFigureTitle().split(QLatin1Char('\n'));
  ASSERT_EQ(lines.size(), 2) << grid.lastFigureTitle().toStdString();
  EXPECT_TRUE(lines[0].startsWith(QStringLiteral("Probe “What is"))) << lines[0].toStdString();
  EXPECT_EQ(lines[1], QStringLiteral("step 1234"));
  // Too long for two lines at 60 mm: elided there, whole in the caption under the maps.
  EXPECT_TRUE(grid.lastFigureCaption().simplified().startsWith(
      QStringLiteral("Probe: “What is the value of 5 - 15*8?” → “-115”.")))
      << grid.lastFigureCaption().toStdString();
  // Wide enough, one line, whole.
  o.widthMm = 200;
  ASSERT_TRUE(grid.exportPng(tmp.filePath(QStringLiteral("wide.png")), o));
  EXPECT_EQ(grid.lastFigureTitle(), grid.title());
}

// Issue 13: enlarged, every token of the probe is labelled (the view scrolls when it must).
TEST(VizAttention, TheEnlargedMapLabelsEveryToken) {
  AttentionMapGrid grid;
  QStringList tokens;
  for (int i = 0; i < 48; ++i) tokens << QStringLiteral("<tok%1>").arg(i);
  grid.setMaps(taggedMaps(1, 2, 48), tokens, {0}, 10);
  settle(grid, QSize(600, 400));
  grid.showEnlarged(0, 1);
  MatrixHeatmap* big = grid.enlargedView();
  ASSERT_NE(big, nullptr);
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
  big->replotNow();
  big->replotNow();  // a second layout with the final thinning
  EXPECT_EQ(big->labelStep(Qt::Horizontal), 1);
  EXPECT_EQ(big->labelStep(Qt::Vertical), 1);
}

TEST(VizAttention, UpdateCostPerSnapshot) {
  AttentionMapGrid grid;
  grid.setGroupSize(8);
  settle(grid, QSize(1000, 700));
  const auto maps = taggedMaps(2, 128, 16);
  QElapsedTimer timer;
  timer.start();
  grid.setMaps(maps, {}, {}, 0);
  grid.replotNow();
  const double first = timer.nsecsElapsed() / 1e6;
  timer.restart();
  grid.setMaps(maps, {}, {}, 50);
  grid.replotNow();
  const double again = timer.nsecsElapsed() / 1e6;
  grid.setAggregation(AttentionMapGrid::Aggregation::PerChannel);
  timer.restart();
  grid.setMaps(maps, {}, {}, 100);
  grid.replotNow();
  const double channels = timer.nsecsElapsed() / 1e6;
  std::printf("[   perf   ] AttentionMapGrid 2x128 maps 16x16: first %.1f ms, head-mean update %.1f ms, "
              "per-channel update (256 maps) %.1f ms\n", first, again, channels);
  EXPECT_EQ(grid.mapCount(0), 128);
}

TEST(VizRoles, GroupsKAndHover) {
  RoleClusterPlot plot;
  EXPECT_TRUE(plot.isShowingMessage());
  plot.setPoints({0, 1, 2, 3, 4}, {0, 1, 0, 1, 0}, {"the", "cat", "sat", "on", "mat"},
                 {"the cat sat", "the cat sat", "the cat sat", "on the mat", "on the mat"},
                 {"det", "noun", "verb", "prep", "noun"});
  EXPECT_EQ(plot.groupNames(), QStringList{"not clustered"});
  plot.setClusters({1, 0, 1, 0, 1});
  EXPECT_EQ(plot.groupNames(), (QStringList{"cluster 0", "cluster 1"}));
  EXPECT_EQ(plot.groupPointCount(1), 3);
  plot.setColourBy(RoleClusterPlot::ColourBy::Label);
  EXPECT_EQ(plot.groupNames(), (QStringList{"det", "noun", "prep", "verb"}));
  EXPECT_EQ(plot.groupPointCount(1), 2);

  QSignalSpy k(&plot, &RoleClusterPlot::kChanged);
  plot.setK(6);  // programmatic: no signal
  EXPECT_EQ(plot.k(), 6);
  EXPECT_EQ(k.count(), 0);
  plot.findChild<QSpinBox*>()->setValue(3);
  ASSERT_EQ(k.count(), 1);
  EXPECT_EQ(k[0][0].toInt(), 3);

  settle(plot);
  mouse(plot.plotArea(), QEvent::MouseMove, plot.pointPosition(4) + QPointF(2, 1));
  EXPECT_EQ(plot.hoverText(), QStringLiteral("“mat” · noun · cluster 1\non the mat"));
  EXPECT_EQ(plot.csvText().split('\n', Qt::SkipEmptyParts).at(5), QStringLiteral("4,4,0,mat,noun,1,on the mat"));
}

// Issue 13: the role vector set (layer and head) is picked in the plot, and a caption says what is shown.
TEST(VizRoles, SourcesAndCaption) {
  RoleClusterPlot plot;
  QComboBox* sources = nullptr;
  plot.setSources({QStringLiteral("layer 0 · head 0"), QStringLiteral("layer 0 · head 1")}, 1);
  for (auto* box : plot.findChildren<QComboBox*>())
    if (box->findText(QStringLiteral("layer 0 · head 1")) >= 0) sources = box;
  ASSERT_NE(sources, nullptr);
  EXPECT_EQ(plot.source(), 1);
  QSignalSpy picked(&plot, &RoleClusterPlot::sourceChanged);
  sources->setCurrentIndex(0);
  ASSERT_EQ(picked.count(), 1);
  EXPECT_EQ(picked[0][0].toInt(), 0);
  plot.setSources({QStringLiteral("layer 0 · head 0"), QStringLiteral("layer 0 · head 1")}, 1);
  EXPECT_EQ(picked.count(), 1) << "setting the sources is not a pick";
  plot.setCaption(QStringLiteral("Role vectors of layer 0, head 1"));
  EXPECT_EQ(plot.caption(), QStringLiteral("Role vectors of layer 0, head 1"));
}

TEST(VizRoles, UpdateCostPerSnapshot) {
  RoleClusterPlot plot;
  settle(plot);
  std::vector<double> xs, ys;
  std::vector<int> clusters;
  QStringList tokens, contexts, labels;
  for (int i = 0; i < 4096; ++i) {
    xs.push_back(std::cos(i * 0.37) * (i % 7));
    ys.push_back(std::sin(i * 0.37) * (i % 5));
    clusters.push_back(i % 6);
    tokens << QStringLiteral("t%1").arg(i % 50);
    contexts << QStringLiteral("context %1").arg(i);
    labels << QStringLiteral("label %1").arg(i % 9);
  }
  QElapsedTimer timer;
  timer.start();
  plot.setPoints(xs, ys, tokens, contexts, labels);
  plot.setClusters(clusters);
  plot.replotNow();
  std::printf("[   perf   ] RoleClusterPlot 4096 points: update + replot %.1f ms\n", timer.nsecsElapsed() / 1e6);
  EXPECT_EQ(plot.groupNames().size(), 6);
}

// At a laptop's dock width the step labels of the stable rank plot do not run into each other.
TEST(VizStableRank, ANarrowPlotGetsFewerStepLabels) {
  StableRankPlot plot;
  plot.setLayerHistory(0, {25, 50, 75, 100, 125, 150, 175, 200, 225, 250, 275, 300, 325}, std::vector<double>(13, 3.9));
  plot.setHeadsReference(4);
  settle(plot, QSize(200, 220));
  EXPECT_LE(plot.stepLabelCount(), 3);
  EXPECT_GE(plot.stepLabelCount(), 2) << "one step label says nothing of the scale";
  settle(plot, QSize(700, 300));
  EXPECT_GE(plot.stepLabelCount(), 4);
  // The "H = 4 heads" label sits above its line, not on the curve just below it.
  const QRectF label = plot.headsLabelRect();
  ASSERT_FALSE(label.isEmpty());
  EXPECT_LE(label.bottom(), plot.pixelOf(4.0) + 1);
  EXPECT_GE(label.top(), plot.pixelOf(4.0 * 1.2) - 1) << "inside the plot (its range ends at 1.2 × the top line)";
}

// N30: a fork's history starts at its first step, not at a range centred on the previous run's.
TEST(VizStableRank, AForkAxisStartsAtItsFirstStep) {
  StableRankPlot plot;
  plot.setLayerHistory(0, {0, 100, 200, 300, 400}, {3.0, 3.5, 4.0, 4.5, 5.0});  // the parent, shown before
  plot.clear();
  plot.setLayerHistory(0, {100}, {4.2});  // the fork: one inspection, at its first step
  const auto [x0, x1] = plot.xRange();
  EXPECT_GE(x0, 0.0) << "no negative steps";
  EXPECT_LE(x0, 100.0);
  EXPECT_GE(x1, 100.0);
  EXPECT_LE(x1 - x0, 20.0) << "the axis is about the fork's own step, not the parent's 400 steps";
  plot.setLayerHistory(0, {100, 150, 200}, {4.2, 4.0, 3.9});
  EXPECT_GE(plot.xRange().first, 90.0) << "from the fork's first step";
}

// N30: a design without a core C says why the plot stays empty, not "No stable rank yet".
TEST(VizStableRank, ADesignWithoutCoreSaysWhy) {
  StableRankPlot plot;
  EXPECT_TRUE(plot.emptyReason().contains("No stable rank yet"));
  plot.setEmptyText("MHSA has no core matrix C, so no stable rank");
  EXPECT_TRUE(plot.isShowingMessage());
  EXPECT_EQ(plot.emptyReason(), QString("MHSA has no core matrix C, so no stable rank"));
  plot.setEmptyText({});
  EXPECT_TRUE(plot.emptyReason().contains("No stable rank yet"));
}

// N30: a long title (the core editor's "learned factor B of C = s·(A ⊗ B) (16×16, trainable)")
// made the heatmap, and the Core matrix C dock beside another, wider than its room: it wraps instead.
TEST(VizHeatmap, ALongTitleWrapsInsteadOfWideningTheView) {
  MatrixHeatmap heatmap;
  const QString title = "Showing the learned factor B of C = s·(A ⊗ B) (16×16, trainable) of THSA at step 600";
  heatmap.setMatrix(std::vector<double>(16 * 16, 0.5), 16, 16, title);
  settle(heatmap, QSize(220, 240));
  EXPECT_EQ(heatmap.title(), title);
  EXPECT_LE(heatmap.minimumSizeHint().width(), 220) << "the title asks for no width of its own";
  EXPECT_GT(heatmap.shownTitle().count('\n'), 0) << heatmap.shownTitle().toStdString();
  const QFontMetrics metrics(QFont(heatmap.font().family(), 10, QFont::Bold));
  for (const QString& line : heatmap.shownTitle().split('\n'))
    EXPECT_LE(metrics.horizontalAdvance(line), 220) << line.toStdString();
  settle(heatmap, QSize(1400, 400));
  EXPECT_EQ(heatmap.shownTitle(), title) << "one line where it fits";
}

// Finding N4 (presenter mode): the heatmap's tick labels stayed ~9 px on a projector. The font scale
// enlarges the tick labels and the title, the view re-wraps its title for the larger type, and
// scale 1 puts every font back exactly.
TEST(VizHeatmap, AFontScaleEnlargesTickLabelsAndTitleAndComesBackExactly) {
  MatrixHeatmap heatmap;
  const QString title = "Showing the learned factor B of C = s·(A ⊗ B) (16×16, trainable) of THSA at step 600";
  heatmap.setMatrix(std::vector<double>(16 * 16, 0.5), 16, 16, title);
  settle(heatmap, QSize(900, 400));
  const QFont ticks = heatmap.tickLabelFont();
  const QString shown = heatmap.shownTitle();
  ASSERT_GT(ticks.pointSizeF(), 0);
  heatmap.setFontScale(1.6);
  settle(heatmap, QSize(900, 400));
  EXPECT_DOUBLE_EQ(heatmap.fontScale(), 1.6);
  EXPECT_NEAR(heatmap.tickLabelFont().pointSizeF(), ticks.pointSizeF() * 1.6, 0.01);
  EXPECT_GT(heatmap.shownTitle().count('\n'), shown.count('\n')) << "the larger title is wrapped again";
  heatmap.setFontScale(1.6);  // twice is once
  EXPECT_NEAR(heatmap.tickLabelFont().pointSizeF(), ticks.pointSizeF() * 1.6, 0.01);
  heatmap.setFontScale(1.0);
  settle(heatmap, QSize(900, 400));
  EXPECT_EQ(heatmap.tickLabelFont(), ticks);
  EXPECT_EQ(heatmap.shownTitle(), shown);
}

