// The teaching labs (issue 15), offscreen: the low-rank bottleneck lab fits one head of every
// size to a random, a drawn and a run's pattern on a worker thread (the newest request wins), and
// the stable-rank lab shows a generated core's maps beside MHSA's with both parameter counts.
// With TS_GUI_SCREENSHOT_DIR set, each lab is saved there as a PNG to be looked at.
#include <QApplication>
#include <QDir>
#include <QMouseEvent>
#include <QPushButton>
#include <QSignalSpy>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "gui/shell/app_theme.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/stable_rank_lab.h"
#include "model_core/labs.h"
#include "spec/core_spec.h"
#include "viz/attention_map_grid.h"
#include "viz/line_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/spectrum_plot.h"

namespace tensorscope::test {
namespace {

using app::BottleneckLab;
using app::StableRankLab;

void labScreenshot(QWidget& w, const QString& name, QSize size) {
  const QString dir = qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  QDir().mkpath(dir);
  w.resize(size);
  w.show();
  for (int i = 0; i < 10; ++i) QApplication::processEvents();
  const QString path = QDir(dir).filePath(name + ".png");
  EXPECT_TRUE(w.grab().toImage().save(path)) << path.toStdString();
  std::printf("[ screenshot ] %s\n", qPrintable(path));
}

void click(viz::MatrixHeatmap* view, int row, int col, Qt::MouseButton button = Qt::LeftButton) {
  QWidget* area = view->plotArea();
  const QPointF pos = view->cellCentre(row, col);
  QMouseEvent press(QEvent::MouseButtonPress, pos, area->mapToGlobal(pos), button, button, Qt::NoModifier);
  QApplication::sendEvent(area, &press);
  QMouseEvent release(QEvent::MouseButtonRelease, pos, area->mapToGlobal(pos), button, Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(area, &release);
}

double rowSum(const model_core::HostTensor& p, int row) {
  double s = 0;
  for (int c = 0; c < p.cols(); ++c) s += p.values[static_cast<std::size_t>(row) * p.cols() + c];
  return s;
}

const model_core::BottleneckPoint* pointOf(const model_core::BottleneckCurve& c, int d) {
  for (const auto& p : c.points)
    if (p.head_size == d) return &p;
  return nullptr;
}

/// A causal (lower-triangular, rows summing to 1) n × n map.
model_core::HostTensor causalMap(int n) {
  model_core::HostTensor m;
  m.shape = {n, n};
  m.values.assign(static_cast<std::size_t>(n) * n, 0.0f);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c <= r; ++c) m.values[static_cast<std::size_t>(r) * n + c] = 1.0f / static_cast<float>(r + 1);
  return m;
}

}  // namespace

TEST(LabsBottleneck, RandomTargetHasItsThresholdAtNMinusOne) {
  BottleneckLab lab;
  QSignalSpy fitted(&lab, &BottleneckLab::fitted), done(&lab, &BottleneckLab::labDone);
  lab.setSource(BottleneckLab::Source::Random);
  lab.setN(8);
  lab.setSeed(3);
  EXPECT_EQ(lab.n(), 8);
  EXPECT_EQ(lab.headSizes(), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}));  // 1..N + 1
  ASSERT_TRUE(lab.fit());
  EXPECT_TRUE(lab.busy());
  ASSERT_TRUE(lab.waitForResult());
  EXPECT_FALSE(lab.busy());
  ASSERT_TRUE(lab.curve().has_value()) << lab.errorText().toStdString();
  EXPECT_EQ(fitted.count(), 1);
  EXPECT_EQ(done.count(), 1);
  const auto& curve = *lab.curve();
  EXPECT_EQ(curve.n, 8);
  EXPECT_EQ(curve.required_rank, 7);
  for (int d = 1; d <= 9; ++d) {
    const auto* p = pointOf(curve, d);
    ASSERT_NE(p, nullptr) << d;
    if (d <= 6)
      EXPECT_GE(p->error, 1e-3) << "d_p = " << d;
    else
      EXPECT_LT(p->error, 1e-6) << "d_p = " << d;
  }
  EXPECT_EQ(lab.thresholdFound(), 7);
  EXPECT_TRUE(lab.thresholdText().contains(QStringLiteral("d_p = 7"))) << lab.thresholdText().toStdString();
  EXPECT_TRUE(lab.thresholdText().contains(QStringLiteral("N − 1 = 7"))) << lab.thresholdText().toStdString();
  EXPECT_TRUE(lab.thresholdText().contains(QStringLiteral("sufficient")));
  // The plot: both curves over every d_p, log y, reference lines at N − 1 and N.
  viz::LinePlot* plot = lab.errorPlot();
  EXPECT_TRUE(plot->logY());
  ASSERT_EQ(plot->seriesNames().size(), 2);
  for (const QString& s : plot->seriesNames()) EXPECT_EQ(plot->pointCount(s), 9) << s.toStdString();
  ASSERT_EQ(plot->referenceLines().size(), 2u);
  EXPECT_EQ(plot->referenceLines()[0].x, 7.0);
  EXPECT_EQ(plot->referenceLines()[1].x, 8.0);
  EXPECT_TRUE(plot->referenceLines()[1].label.contains(QStringLiteral("N = 8")));
  // Beside the target: the largest d_p that does not reach it.
  EXPECT_EQ(lab.shownHeadSize(), 6);
  EXPECT_EQ(lab.fittedView()->rows(), 8);
  lab.setShownHeadSize(8);
  EXPECT_TRUE(lab.fittedView()->emptyReason().isEmpty());
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_NEAR(lab.fittedView()->value(r, c), lab.targetView()->value(r, c), 1e-6);
  lab.setShownHeadSize(6);
  labScreenshot(lab, QStringLiteral("lab_bottleneck_random"), QSize(1280, 820));
  if (!qEnvironmentVariableIsEmpty("TS_GUI_SCREENSHOT_DIR")) {  // the dark look, then back
    app::applyApplicationTheme(true);
    lab.setDarkTheme(true);
    labScreenshot(lab, QStringLiteral("lab_bottleneck_random_dark"), QSize(1100, 720));
    app::applyApplicationTheme(false);
  }
}

TEST(LabsBottleneck, DrawnPatternStaysRowStochastic) {
  BottleneckLab lab;
  lab.setN(6);
  lab.setSource(BottleneckLab::Source::Drawn);
  lab.resize(1100, 760);
  lab.show();
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
  lab.targetView()->replotNow();
  lab.waitForResult();  // the fit the first show starts
  const model_core::HostTensor before = lab.target();
  ASSERT_EQ(before.rows(), 6);
  EXPECT_NEAR(before.values[0], 1.0 / 6, 1e-6);  // uniform to start
  QSignalSpy changed(&lab, &BottleneckLab::targetChanged);
  click(lab.targetView(), 2, 3);
  click(lab.targetView(), 2, 3);
  click(lab.targetView(), 4, 0);
  click(lab.targetView(), 1, 1, Qt::RightButton);
  EXPECT_EQ(changed.count(), 4);
  const model_core::HostTensor& p = lab.target();
  EXPECT_GT(p.values[2 * 6 + 3], before.values[2 * 6 + 3] * 1.5);  // raised
  EXPECT_GT(p.values[4 * 6 + 0], before.values[4 * 6 + 0]);
  EXPECT_LT(p.values[1 * 6 + 1], before.values[1 * 6 + 1]);  // lowered
  EXPECT_NE(p.values, before.values);
  for (int r = 0; r < 6; ++r) EXPECT_NEAR(rowSum(p, r), 1.0, 1e-6) << r;
  for (float v : p.values) EXPECT_GT(v, 0.0f);
  // The view shows the drawn P live.
  EXPECT_NEAR(lab.targetView()->value(2, 3), p.values[2 * 6 + 3], 1e-7);
  // Three edited rows: log P centred per row has rank <= 3, so the threshold is at most 3.
  ASSERT_TRUE(lab.fit());
  ASSERT_TRUE(lab.waitForResult());
  ASSERT_TRUE(lab.curve().has_value());
  EXPECT_LE(lab.curve()->required_rank, 3);
  EXPECT_EQ(lab.thresholdFound(), lab.curve()->required_rank);
  EXPECT_TRUE(lab.thresholdText().contains(QStringLiteral("needs only rank"))) << lab.thresholdText().toStdString();
  labScreenshot(lab, QStringLiteral("lab_bottleneck_drawn"), QSize(1100, 760));
  lab.resetDrawing();
  EXPECT_NEAR(lab.target().values[2 * 6 + 3], 1.0 / 6, 1e-6);
  EXPECT_FALSE(lab.curve().has_value());  // a new P clears the old curve
}

TEST(LabsBottleneck, RunMapWithZerosIsRefusedUnlessSmoothed) {
  BottleneckLab lab;
  EXPECT_EQ(lab.runMapCount(), 0);
  lab.setSource(BottleneckLab::Source::Run);
  EXPECT_FALSE(lab.targetProblem().isEmpty());  // no maps yet
  EXPECT_FALSE(lab.fit());
  EXPECT_FALSE(lab.errorText().isEmpty());

  model_core::HostTensor dense = model_core::randomAttentionPattern(5, 9, 1.0);
  lab.setRunMaps({QStringLiteral("layer 0 · head 0 (causal)"), QStringLiteral("layer 0 · head 1")}, {causalMap(6), dense});
  EXPECT_EQ(lab.runMapCount(), 2);
  lab.setRunMap(0);
  EXPECT_EQ(lab.n(), 6);
  EXPECT_TRUE(lab.targetProblem().contains(QStringLiteral("zero entries"))) << lab.targetProblem().toStdString();
  EXPECT_TRUE(lab.targetProblem().contains(QStringLiteral("Smooth")));
  EXPECT_TRUE(lab.errorText().contains(QStringLiteral("causal")));
  EXPECT_FALSE(lab.fit());
  EXPECT_FALSE(lab.busy());

  // The dense map of a run is fitted as it is.
  lab.setRunMap(1);
  EXPECT_TRUE(lab.targetProblem().isEmpty());
  EXPECT_EQ(lab.n(), 5);
  EXPECT_TRUE(lab.errorText().isEmpty());

  // Smoothing: (1 − ε)·P + ε/N, rows still sum to 1, every entry ≥ ε/N.
  lab.setRunMap(0);
  lab.setSmoothing(true, 1e-2);
  EXPECT_TRUE(lab.targetProblem().isEmpty()) << lab.targetProblem().toStdString();
  const model_core::HostTensor& p = lab.target();
  ASSERT_EQ(p.rows(), 6);
  for (int r = 0; r < 6; ++r) EXPECT_NEAR(rowSum(p, r), 1.0, 1e-6);
  for (float v : p.values) EXPECT_GE(v, 1e-2 / 6 * 0.999);
  EXPECT_NEAR(p.values[0], 0.99 * 1.0 + 0.01 / 6, 1e-6);
  lab.setHeadSizeRange(1, 6);
  ASSERT_TRUE(lab.fit());
  ASSERT_TRUE(lab.waitForResult());
  ASSERT_TRUE(lab.curve().has_value()) << lab.errorText().toStdString();
  EXPECT_EQ(lab.curve()->n, 6);
  EXPECT_EQ(lab.thresholdFound(), lab.curve()->required_rank);
  EXPECT_LT(pointOf(*lab.curve(), 6)->error, 1e-6);
  labScreenshot(lab, QStringLiteral("lab_bottleneck_run_smoothed"), QSize(900, 640));  // dock-sized

  // New maps from the window replace the old (the choice kept by name).
  lab.setRunMaps({QStringLiteral("only")}, {dense});
  EXPECT_EQ(lab.runMapCount(), 1);
  EXPECT_EQ(lab.n(), 5);
}

TEST(LabsBottleneck, NewerFitSupersedesTheRunningOne) {
  BottleneckLab lab;
  QSignalSpy fitted(&lab, &BottleneckLab::fitted);
  lab.setN(10);
  ASSERT_TRUE(lab.fit());
  lab.setN(6);  // a new target drops the running fit
  EXPECT_FALSE(lab.busy());
  ASSERT_TRUE(lab.fit());
  ASSERT_TRUE(lab.fit());  // the same target again: the newest request wins
  ASSERT_TRUE(lab.waitForResult());
  for (int i = 0; i < 20; ++i) QApplication::processEvents();  // any stale answer arrives and is dropped
  ASSERT_TRUE(lab.curve().has_value());
  EXPECT_EQ(lab.curve()->n, 6);
  EXPECT_EQ(lab.curve()->points.size(), 7u);
  EXPECT_EQ(fitted.count(), 1);

  ASSERT_TRUE(lab.fit());
  lab.cancel();
  EXPECT_FALSE(lab.busy());
  EXPECT_TRUE(lab.statusText().contains(QStringLiteral("Cancelled")));
  QApplication::processEvents();
  EXPECT_EQ(fitted.count(), 1);
}

TEST(LabsBottleneck, InvalidInputSaysWhy) {
  BottleneckLab lab;
  lab.setSource(BottleneckLab::Source::Run);
  model_core::HostTensor notSquare;
  notSquare.shape = {2, 3};
  notSquare.values.assign(6, 0.5f);
  model_core::HostTensor badRows;
  badRows.shape = {3, 3};
  badRows.values.assign(9, 0.5f);
  lab.setRunMaps({QStringLiteral("wide"), QStringLiteral("bad rows")}, {notSquare, badRows});
  EXPECT_TRUE(lab.targetProblem().contains(QStringLiteral("not a square"))) << lab.targetProblem().toStdString();
  lab.setRunMap(1);
  EXPECT_TRUE(lab.targetProblem().contains(QStringLiteral("sums to 1.5"))) << lab.targetProblem().toStdString();
  EXPECT_FALSE(lab.fit());
}

TEST(LabsStableRank, GeneratedCoreOfStableRankTwo) {
  StableRankLab lab;
  QSignalSpy done(&lab, &StableRankLab::labDone);
  lab.setSizes(32, 4, 4, 8);
  EXPECT_EQ(lab.R(), 16);
  lab.setTargetStableRank(2.0);
  lab.setSeed(5);
  ASSERT_TRUE(lab.generate());
  ASSERT_TRUE(lab.waitForResult());
  ASSERT_TRUE(lab.result().has_value()) << lab.errorText().toStdString();
  EXPECT_EQ(done.count(), 1);
  const auto& r = *lab.result();
  EXPECT_NEAR(r.stable_rank, 2.0, 1e-4);
  EXPECT_EQ(r.mhsa_heads, 2);
  // R THSA channel maps beside H′ = 2 MHSA head maps.
  ASSERT_EQ(lab.thsaMaps()->layerCount(), 1);
  EXPECT_EQ(lab.thsaMaps()->mapCount(0), 16);
  ASSERT_EQ(lab.mhsaMaps()->layerCount(), 1);
  EXPECT_EQ(lab.mhsaMaps()->mapCount(0), 2);
  EXPECT_EQ(lab.coreView()->rows(), 16);
  EXPECT_EQ(lab.spectrumView()->displayedValues().size(), 16u);
  EXPECT_EQ(lab.spectrumView()->heads(), 2);
  // Both parameter counts and their ratio: 4·32·16 + 16² = 2304 and 4·32·2·4 = 1024.
  const QString readout = lab.readoutText();
  EXPECT_TRUE(readout.contains(QStringLiteral("2.000"))) << readout.toStdString();
  EXPECT_TRUE(readout.contains(QStringLiteral("H′ = round(2.000) = 2"))) << readout.toStdString();
  EXPECT_TRUE(readout.contains(QStringLiteral("4·32·16 + 16² = 2,304"))) << readout.toStdString();
  EXPECT_TRUE(readout.contains(QStringLiteral("1,024"))) << readout.toStdString();
  EXPECT_TRUE(readout.contains(QStringLiteral("2.25×"))) << readout.toStdString();
  EXPECT_EQ(r.thsa_parameters, 2304);
  EXPECT_EQ(r.mhsa_parameters, 1024);
  labScreenshot(lab, QStringLiteral("lab_stable_rank_generated"), QSize(1280, 860));

  // Out of range: R = H·D above 256 is refused with the reason.
  lab.setSizes(32, 32, 16, 8);
  EXPECT_FALSE(lab.generate());
  EXPECT_TRUE(lab.errorText().contains(QStringLiteral("256"))) << lab.errorText().toStdString();
}

TEST(LabsStableRank, TheMhsaPresetCoreHasStableRankH) {
  StableRankLab lab;
  EXPECT_FALSE(lab.hasDesignCore());
  EXPECT_FALSE(lab.useDesignCore());
  const int H = 4, D = 4, R = H * D;
  const std::vector<double> c = spec::materializeCore(spec::makeCorePreset("mhsa", H, D), H, D, R);
  model_core::HostTensor core;
  core.shape = {R, R};
  core.values.assign(c.begin(), c.end());
  lab.setSizes(32, 2, 3, 8);  // the design's H and D take over
  lab.setCore(core, H, D);
  EXPECT_TRUE(lab.hasDesignCore());
  ASSERT_TRUE(lab.useDesignCore());
  EXPECT_EQ(lab.H(), H);
  EXPECT_EQ(lab.D(), D);
  ASSERT_TRUE(lab.waitForResult());
  ASSERT_TRUE(lab.result().has_value()) << lab.errorText().toStdString();
  EXPECT_EQ(lab.coreSource(), StableRankLab::CoreSource::Design);
  EXPECT_NEAR(lab.result()->stable_rank, 4.0, 1e-4);
  EXPECT_EQ(lab.result()->mhsa_heads, 4);
  EXPECT_TRUE(lab.readoutText().contains(QStringLiteral("= 4.000"))) << lab.readoutText().toStdString();
  EXPECT_TRUE(lab.readoutText().contains(QStringLiteral("the design's C")));
  EXPECT_EQ(lab.mhsaMaps()->mapCount(0), 4);
  // Head h of MHSA is channel block h of THSA: the maps agree.
  const auto& res = *lab.result();
  const std::size_t nn = 8 * 8;
  for (int h = 0; h < H; ++h)
    for (std::size_t i = 0; i < nn; ++i)
      EXPECT_NEAR(res.thsa_maps.values[(h * D) * nn + i], res.mhsa_maps.values[h * nn + i], 1e-5);
  labScreenshot(lab, QStringLiteral("lab_stable_rank_mhsa_preset"), QSize(1280, 860));
}

}  // namespace tensorscope::test
