// Offscreen tests of the viz widgets, data in -> plot state out: CurvesPlot (counts, ranges, log
// axis, EMA smoothing, right axis, runs), the shared exports (CSV, PNG at 2x DPI, SVG as XML, PDF)
// and MatrixHeatmap (pixel <-> cell mapping, hover read-out, mask, click/drag signals).
#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <cmath>
#include <limits>

#include "viz/curves_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz_test_util.h"

using namespace tensorscope::viz;
using namespace tensorscope::test;

namespace {

void mouse(QWidget* target, QEvent::Type type, QPointF pos, Qt::MouseButton button = Qt::NoButton,
           Qt::MouseButtons buttons = Qt::NoButton) {
  QMouseEvent event(type, pos, target->mapToGlobal(pos), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(target, &event);
}

}  // namespace

TEST(VizCurves, CountsAndRescaledRanges) {
  CurvesPlot plot;
  for (int i = 0; i < 100; ++i) plot.appendPoint(QStringLiteral("train loss"), i, 1.0 + 0.04 * i);
  EXPECT_EQ(plot.pointCount(QStringLiteral("train loss")), 100);
  EXPECT_EQ(plot.pointCount(QStringLiteral("missing")), 0);
  const auto [x0, x1] = plot.xRange();
  EXPECT_LE(x0, 0.0);
  EXPECT_GE(x0, -5.0);
  EXPECT_GE(x1, 99.0);
  EXPECT_LE(x1, 104.0);
  const auto [y0, y1] = plot.yRange();
  EXPECT_LT(y0, 1.0);
  EXPECT_GT(y0, 1.0 - 0.1 * 3.96);  // 5 % padding of the 3.96 span
  EXPECT_GT(y1, 4.96);
  EXPECT_LT(y1, 4.96 + 0.1 * 3.96);
  EXPECT_FALSE(plot.hasRightAxis());
}

TEST(VizCurves, ResumedRunReplacesTail) {
  CurvesPlot plot;
  for (int s = 0; s <= 10; ++s) plot.appendPoint(QStringLiteral("loss"), s, s);
  plot.appendPoint(QStringLiteral("loss"), 5, 50.0);  // resumed from step 5
  EXPECT_EQ(plot.pointCount(QStringLiteral("loss")), 6);
  EXPECT_EQ(plot.displayedValues(QStringLiteral("loss")).back(), 50.0);
}

TEST(VizCurves, SmoothingIsTheDocumentedEma) {
  CurvesPlot plot;
  const QString s = QStringLiteral("train loss");
  plot.setSeries(s, {0, 1, 2, 3, 4}, {1, 3, 2, 6, 4});
  plot.setSmoothing(0.5);
  EXPECT_DOUBLE_EQ(plot.smoothing(), 0.5);
  // s0 = 1; s1 = .5*1 + .5*3 = 2; s2 = .5*2 + .5*2 = 2; s3 = .5*2 + .5*6 = 4; s4 = .5*4 + .5*4 = 4
  const std::vector<double> expected{1, 2, 2, 4, 4};
  EXPECT_EQ(plot.displayedValues(s), expected);
  plot.appendPoint(s, 5, 8);  // continues incrementally: .5*4 + .5*8
  EXPECT_DOUBLE_EQ(plot.displayedValues(s).back(), 6.0);
  plot.appendPoint(s, 6, std::numeric_limits<double>::quiet_NaN());  // a gap, EMA state kept
  plot.appendPoint(s, 7, 10);
  EXPECT_TRUE(std::isnan(plot.displayedValues(s)[6]));
  EXPECT_DOUBLE_EQ(plot.displayedValues(s)[7], 8.0);
  // Display only: the raw values are still exported, and smoothing 0 shows them again.
  EXPECT_TRUE(plot.csvText().contains(QStringLiteral(",train loss,3,3,,6,4\n")));
  plot.setSmoothing(0.0);
  EXPECT_EQ(plot.displayedValues(s)[3], 6.0);
  plot.setSmoothing(5.0);  // clamped
  EXPECT_DOUBLE_EQ(plot.smoothing(), 0.99);
}

TEST(VizCurves, LogAxisAndLearningRateAxis) {
  CurvesPlot plot;
  plot.setSeries(QStringLiteral("train loss"), {0, 1, 2, 3}, {0.0, 10.0, 1.0, 0.01});
  plot.setSeries(QStringLiteral("lr"), {0, 1, 2, 3}, {1e-4, 1e-3, 5e-4, 1e-4});
  EXPECT_TRUE(plot.hasRightAxis());
  EXPECT_FALSE(plot.logY());
  plot.setLogY(true);
  EXPECT_TRUE(plot.logY());
  const auto [y0, y1] = plot.yRange();
  EXPECT_GT(y0, 0.0);  // the zero is skipped on a log axis
  EXPECT_LT(y0, 0.01);
  EXPECT_GT(y1, 10.0);
  EXPECT_LT(y1, 20.0);
  const auto [r0, r1] = plot.axisRange(CurvesPlot::Axis::Rate);  // the learning rate has its own axis
  EXPECT_LT(r0, 1e-4);
  EXPECT_GT(r1, 1e-3);
  EXPECT_LT(r1, 2e-3);
  plot.setLogY(false);
  EXPECT_FALSE(plot.logY());
}

TEST(VizCurves, RunsAreOverlaidWithRunNames) {
  CurvesPlot plot;
  plot.appendPoint(QStringLiteral("train loss"), 0, 1.0, QStringLiteral("a"));
  EXPECT_EQ(plot.legendName(QStringLiteral("train loss"), QStringLiteral("a")), QStringLiteral("a · train loss"));
  plot.appendPoint(QStringLiteral("train loss"), 0, 2.0, QStringLiteral("b"));
  plot.appendPoint(QStringLiteral("exact match"), 0, 0.5, QStringLiteral("b"));
  EXPECT_EQ(plot.runs(), (QStringList{"a", "b"}));
  EXPECT_EQ(plot.seriesNames(), (QStringList{"train loss", "exact match"}));
  EXPECT_EQ(plot.legendName(QStringLiteral("train loss"), QStringLiteral("a")), QStringLiteral("a · train loss"));
  plot.removeRun(QStringLiteral("b"));
  EXPECT_EQ(plot.runs(), QStringList{"a"});
  EXPECT_EQ(plot.seriesNames(), QStringList{"train loss"});
  EXPECT_EQ(plot.pointCount(QStringLiteral("exact match"), QStringLiteral("b")), 0);
}

TEST(VizCurves, HoverReadsTheNearestPoint) {
  CurvesPlot plot;
  std::vector<double> xs, ys;
  for (int i = 0; i <= 100; ++i) {
    xs.push_back(i);
    ys.push_back(2.0);
  }
  plot.setSeries(QStringLiteral("train loss"), xs, ys);
  settle(plot);
  QWidget* area = plot.plotArea();
  // Walk down the middle of the plot until the flat line is under the cursor.
  QString text;
  for (int y = 0; y < area->height() && text.isEmpty(); y += 2) {
    mouse(area, QEvent::MouseMove, QPointF(area->width() / 2.0, y));
    text = plot.hoverText();
  }
  ASSERT_FALSE(text.isEmpty());
  EXPECT_TRUE(text.startsWith(QStringLiteral("train loss\nstep "))) << text.toStdString();
  EXPECT_TRUE(text.endsWith(QStringLiteral(": 2"))) << text.toStdString();
}

TEST(VizCurves, HundredThousandPointsStayCheap) {
  CurvesPlot plot;
  settle(plot, QSize(900, 500));
  QElapsedTimer timer;
  timer.start();
  for (int i = 0; i < 100000; ++i) plot.appendPoint(QStringLiteral("train loss"), i, 1.0 / (1.0 + 0.001 * i));
  const double appendMs = timer.nsecsElapsed() / 1e6;
  timer.restart();
  plot.replotNow();
  const double replotMs = timer.nsecsElapsed() / 1e6;
  timer.restart();
  for (int i = 0; i < 10; ++i) plot.appendPoint(QStringLiteral("train loss"), 100000 + i, 0.01);  // one 40 ms drain
  plot.replotNow();
  const double drainMs = timer.nsecsElapsed() / 1e6;
  timer.restart();
  plot.setSmoothing(0.9);
  const double smoothMs = timer.nsecsElapsed() / 1e6;
  plot.replotNow();
  QWidget* area = plot.plotArea();
  timer.restart();
  for (int x = 100; x < 600; x += 10) mouse(area, QEvent::MouseMove, QPointF(x, area->height() / 2.0));
  const double hoverMs = timer.nsecsElapsed() / 1e6 / 50;
  std::printf("[   perf   ] CurvesPlot: 100k appends %.1f ms, replot %.1f ms, drain+replot %.1f ms, "
              "re-smooth %.1f ms, hover %.2f ms/move\n", appendMs, replotMs, drainMs, smoothMs, hoverMs);
  EXPECT_EQ(plot.pointCount(QStringLiteral("train loss")), 100010);
}

TEST(VizExport, CsvPngSvgPdf) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  CurvesPlot plot;
  plot.setSeries(QStringLiteral("eval loss"), {100, 200}, {0.5, 0.25}, QStringLiteral("run, 1"));
  settle(plot);
  const QString csv = dir.filePath(QStringLiteral("c.csv"));
  ASSERT_TRUE(plot.exportCsv(csv));
  QFile file(csv);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QStringList lines = csvLines(QString::fromUtf8(file.readAll()));
  EXPECT_EQ(lines, (QStringList{"run,metric,step,run_step,time_s,value,displayed", "\"run, 1\",eval loss,100,100,,0.5,0.5",
                                "\"run, 1\",eval loss,200,200,,0.25,0.25"}));

  const QString png1 = dir.filePath(QStringLiteral("a.png")), png2 = dir.filePath(QStringLiteral("b.png"));
  ASSERT_TRUE(plot.exportPng(png1, 96));
  ASSERT_TRUE(plot.exportPng(png2, 192));
  const QImage a(png1), b(png2);
  EXPECT_EQ(a.size(), plot.plotArea()->size());
  EXPECT_EQ(b.size(), 2 * plot.plotArea()->size());
  EXPECT_NEAR(b.dotsPerMeterX(), 192 / 0.0254, 2);

  const QString svg = dir.filePath(QStringLiteral("c.svg"));
  ASSERT_TRUE(plot.exportSvg(svg));
  QFile svgFile(svg);
  ASSERT_TRUE(svgFile.open(QIODevice::ReadOnly));
  expectSvgDocument(svgFile.readAll());

  const QString pdf = dir.filePath(QStringLiteral("c.pdf"));
  ASSERT_TRUE(plot.exportPdf(pdf));
  QFile pdfFile(pdf);
  ASSERT_TRUE(pdfFile.open(QIODevice::ReadOnly));
  EXPECT_TRUE(pdfFile.read(5).startsWith("%PDF"));
}

TEST(VizExport, DarkThemeReachesTheExport) {
  QTemporaryDir dir;
  MatrixHeatmap heatmap;
  heatmap.setMatrix({1, -1, 0.5, 0}, 2, 2, QStringLiteral("C"));
  settle(heatmap);
  heatmap.setDarkTheme(true);
  EXPECT_TRUE(heatmap.isDarkTheme());
  const QString path = dir.filePath(QStringLiteral("dark.png"));
  ASSERT_TRUE(heatmap.exportPng(path, 96));
  EXPECT_LT(qGray(QImage(path).pixel(2, 2)), 60);
  heatmap.setDarkTheme(false);
  ASSERT_TRUE(heatmap.exportPng(path, 96));
  EXPECT_GT(qGray(QImage(path).pixel(2, 2)), 200);
}

TEST(VizHeatmap, PixelsMapToCellsAndHoverShowsTheValue) {
  MatrixHeatmap heatmap;
  std::vector<double> values;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) values.push_back(r * 10 + c + 0.5);
  heatmap.setMatrix(values, 3, 4, QStringLiteral("C"));
  EXPECT_DOUBLE_EQ(heatmap.colourRange(), 23.5);  // diverging: max |value|
  settle(heatmap);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      const QPointF centre = heatmap.cellCentre(r, c);
      EXPECT_EQ(heatmap.cellAt(centre), (MatrixHeatmap::Cell{r, c}));
      EXPECT_EQ(heatmap.cellAt(centre + QPointF(6, -6)), (MatrixHeatmap::Cell{r, c}));  // not only the centre
      mouse(heatmap.plotArea(), QEvent::MouseMove, centre);
      EXPECT_EQ(heatmap.hoverText(), QStringLiteral("[%1, %2] = %3").arg(r).arg(c).arg(r * 10 + c + 0.5));
    }
  EXPECT_FALSE(heatmap.cellAt(QPointF(1, 1)).valid());
  mouse(heatmap.plotArea(), QEvent::MouseMove, QPointF(1, 1));
  EXPECT_TRUE(heatmap.hoverText().isEmpty());

  heatmap.setColourScale(MatrixHeatmap::ColourScale::Sequential, 0, 1);
  EXPECT_DOUBLE_EQ(heatmap.colourRange(), 1.0);
  heatmap.setLabels({"a", "b", "c"}, {"w", "x", "y", "z"});
  EXPECT_EQ(heatmap.cellText(2, 1), QStringLiteral("[2, 1] = 21.5\nc → x"));
}

TEST(VizHeatmap, MaskIsShownAndExported) {
  MatrixHeatmap heatmap;
  heatmap.setMatrix({1, 2, 3, 4}, 2, 2, QStringLiteral("C"));
  heatmap.setMask({1, 0, 0});  // wrong size: ignored
  EXPECT_TRUE(heatmap.mask().empty());
  heatmap.setMask({0, 1, 0, 0});
  EXPECT_EQ(heatmap.mask(), (std::vector<unsigned char>{0, 1, 0, 0}));
  EXPECT_TRUE(heatmap.cellText(0, 1).endsWith(QStringLiteral("frozen")));
  EXPECT_FALSE(heatmap.cellText(1, 1).contains(QStringLiteral("frozen")));
  EXPECT_EQ(csvLines(heatmap.csvText()), (QStringList{"row,col,value,frozen", "0,0,1,0", "0,1,2,1", "1,0,3,0", "1,1,4,0"}));
  heatmap.setMatrix({1, 2, 3, 4, 5, 6}, 2, 3, QStringLiteral("C"));  // new shape drops the mask
  EXPECT_TRUE(heatmap.mask().empty());
}

TEST(VizHeatmap, ClicksAndDragsReportCells) {
  MatrixHeatmap heatmap;
  heatmap.setMatrix(std::vector<double>(16, 0.0), 4, 4, QStringLiteral("C"));
  settle(heatmap);
  QSignalSpy clicked(&heatmap, &MatrixHeatmap::cellClicked);
  QSignalSpy dragged(&heatmap, &MatrixHeatmap::cellDragged);
  QWidget* area = heatmap.plotArea();
  mouse(area, QEvent::MouseButtonPress, heatmap.cellCentre(0, 0), Qt::LeftButton, Qt::LeftButton);
  mouse(area, QEvent::MouseMove, heatmap.cellCentre(0, 0) + QPointF(3, 3), Qt::NoButton, Qt::LeftButton);
  mouse(area, QEvent::MouseMove, heatmap.cellCentre(0, 1), Qt::NoButton, Qt::LeftButton);
  mouse(area, QEvent::MouseMove, heatmap.cellCentre(1, 1), Qt::NoButton, Qt::LeftButton);
  mouse(area, QEvent::MouseButtonRelease, heatmap.cellCentre(1, 1), Qt::LeftButton, Qt::NoButton);
  mouse(area, QEvent::MouseMove, heatmap.cellCentre(2, 2), Qt::NoButton, Qt::NoButton);
  ASSERT_EQ(clicked.count(), 1);
  EXPECT_EQ(clicked[0][0].toInt(), 0);
  EXPECT_EQ(clicked[0][1].toInt(), 0);
  EXPECT_EQ(clicked[0][2].value<Qt::MouseButtons>(), Qt::MouseButtons(Qt::LeftButton));
  ASSERT_EQ(dragged.count(), 2);  // (0,1) then (1,1); staying in a cell or hovering emits nothing
  EXPECT_EQ(dragged[0][1].toInt(), 1);
  EXPECT_EQ(dragged[1][0].toInt(), 1);
  mouse(area, QEvent::MouseButtonPress, heatmap.cellCentre(3, 2), Qt::RightButton, Qt::RightButton);
  ASSERT_EQ(clicked.count(), 2);
  EXPECT_EQ(clicked[1][2].value<Qt::MouseButtons>(), Qt::MouseButtons(Qt::RightButton));
}

TEST(VizHeatmap, AFastStrokeReportsEveryCellOnItsWayAndShiftDragChoosesARectangle) {
  // Finding N15: a fast stroke skipped the cells between two mouse events, and there was no fill.
  MatrixHeatmap heatmap;
  heatmap.setMatrix(std::vector<double>(64, 0.0), 8, 8, QStringLiteral("C"));
  settle(heatmap);
  QSignalSpy clicked(&heatmap, &MatrixHeatmap::cellClicked);
  QSignalSpy dragged(&heatmap, &MatrixHeatmap::cellDragged);
  QSignalSpy rectangle(&heatmap, &MatrixHeatmap::rectangleChosen);
  QWidget* area = heatmap.plotArea();
  mouse(area, QEvent::MouseButtonPress, heatmap.cellCentre(0, 0), Qt::LeftButton, Qt::LeftButton);
  mouse(area, QEvent::MouseMove, heatmap.cellCentre(0, 7), Qt::NoButton, Qt::LeftButton);  // one jump over 6 cells
  mouse(area, QEvent::MouseMove, heatmap.cellCentre(3, 4), Qt::NoButton, Qt::LeftButton);  // a diagonal back
  mouse(area, QEvent::MouseButtonRelease, heatmap.cellCentre(3, 4), Qt::LeftButton, Qt::NoButton);
  std::vector<std::pair<int, int>> cells;
  for (const auto& args : dragged) cells.emplace_back(args[0].toInt(), args[1].toInt());
  EXPECT_EQ(cells, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {0, 6}, {0, 7},
                                                     {1, 6}, {2, 5}, {3, 4}}));
  EXPECT_EQ(clicked.count(), 1);
  EXPECT_EQ(rectangle.count(), 0);
  // Shift+drag: no click, no stroke; one rectangle, sorted, on release.
  dragged.clear();
  QMouseEvent press(QEvent::MouseButtonPress, heatmap.cellCentre(5, 6), area->mapToGlobal(heatmap.cellCentre(5, 6)),
                    Qt::LeftButton, Qt::LeftButton, Qt::ShiftModifier);
  QApplication::sendEvent(area, &press);
  QMouseEvent move(QEvent::MouseMove, heatmap.cellCentre(2, 1), area->mapToGlobal(heatmap.cellCentre(2, 1)), Qt::NoButton,
                   Qt::LeftButton, Qt::ShiftModifier);
  QApplication::sendEvent(area, &move);
  QMouseEvent release(QEvent::MouseButtonRelease, heatmap.cellCentre(2, 1), area->mapToGlobal(heatmap.cellCentre(2, 1)),
                      Qt::LeftButton, Qt::NoButton, Qt::ShiftModifier);
  QApplication::sendEvent(area, &release);
  EXPECT_EQ(clicked.count(), 1);
  EXPECT_EQ(dragged.count(), 0);
  ASSERT_EQ(rectangle.count(), 1);
  EXPECT_EQ(rectangle[0][0].toInt(), 2);
  EXPECT_EQ(rectangle[0][1].toInt(), 1);
  EXPECT_EQ(rectangle[0][2].toInt(), 5);
  EXPECT_EQ(rectangle[0][3].toInt(), 6);
}

TEST(VizHeatmap, UpdateCostPerSnapshot) {
  MatrixHeatmap heatmap;
  settle(heatmap);
  std::vector<double> c(64 * 64);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = std::sin(0.1 * static_cast<double>(i));
  QElapsedTimer timer;
  timer.start();
  heatmap.setMatrix(c, 64, 64, QStringLiteral("C"));
  const double setMs = timer.nsecsElapsed() / 1e6;
  timer.restart();
  heatmap.replotNow();
  std::printf("[   perf   ] MatrixHeatmap 64x64: setMatrix %.2f ms, replot %.2f ms\n", setMs,
              timer.nsecsElapsed() / 1e6);
  EXPECT_EQ(heatmap.rows(), 64);
}
