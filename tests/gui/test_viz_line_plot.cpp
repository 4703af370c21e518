// Offscreen tests of viz::LinePlot (the bottleneck lab's error-against-d_p plot): series drawn
// with markers, the log axis (values <= 0 at the floor, the CSV keeping them), reference lines at
// their x with labels that do not overlap, CSV content, the empty message, an SVG figure.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QMouseEvent>
#include <QTemporaryDir>
#include <cmath>

#include "viz/line_plot.h"
#include "viz_test_util.h"

using namespace tensorscope::viz;
using namespace tensorscope::test;

namespace {

/// settle() and one more replot: the reference labels are placed after a layout.
void settlePlaced(PlotWidget& w, QSize size = QSize(640, 420)) {
  settle(w, size);
  w.replotNow();
}

// An error curve as the bottleneck lab draws it: falling with d_p, exact (0) from d_p = 11.
void fillBottleneck(LinePlot& plot) {
  std::vector<double> x, err, kl;
  for (int d = 1; d <= 13; ++d) {
    x.push_back(d);
    err.push_back(d >= 11 ? (d == 11 ? 3e-9 : 0.0) : 0.3 * std::pow(0.6, d));
    kl.push_back(d >= 11 ? 1e-14 : 0.5 * std::pow(0.5, d));
  }
  plot.setSeries(QStringLiteral("max |P_fit − P|"), x, err);
  plot.setSeries(QStringLiteral("mean KL"), x, kl);
  plot.setAxisTitles(QStringLiteral("head size d_p"), QStringLiteral("error"));
  plot.setIntegerX(true);
}

bool differsFrom(QRgb a, QRgb b) { return std::abs(qGray(a) - qGray(b)) > 30; }

}  // namespace

TEST(VizLinePlot, SeriesAreDrawnWithTheirPoints) {
  LinePlot plot;
  fillBottleneck(plot);
  EXPECT_EQ(plot.seriesNames(), (QStringList{"max |P_fit − P|", "mean KL"}));
  EXPECT_EQ(plot.legendTexts(), plot.seriesNames());
  EXPECT_EQ(plot.pointCount(QStringLiteral("mean KL")), 13);
  EXPECT_EQ(plot.xValues(QStringLiteral("mean KL")).front(), 1.0);
  EXPECT_FALSE(plot.isShowingMessage());
  EXPECT_TRUE(plot.hasFigure());
  EXPECT_EQ(plot.xTitle(), QStringLiteral("head size d_p"));
  settlePlaced(plot);
  // Every point lies inside the x range, and the drawn pixels change where the first point is.
  const auto [xlo, xhi] = plot.xRange();
  EXPECT_LT(xlo, 1.0);
  EXPECT_GT(xhi, 13.0);
  const QImage image = plot.plotArea()->grab().toImage();
  const QPointF first = plot.pointPixel(QStringLiteral("max |P_fit − P|"), 0);
  ASSERT_TRUE(image.rect().contains(first.toPoint()));
  const QRgb background = image.pixel(image.width() - 3, image.height() - 3);
  int coloured = 0;  // the marker's outline is within ±4 px of the point
  for (int dx = -4; dx <= 4; ++dx)
    for (int dy = -4; dy <= 4; ++dy)
      if (differsFrom(image.pixel(first.toPoint() + QPoint(dx, dy)), background)) ++coloured;
  EXPECT_GT(coloured, 10);
  // Replacing a series keeps one series of that name; removing it drops it.
  plot.setSeries(QStringLiteral("mean KL"), {1, 2}, {0.1, 0.05});
  EXPECT_EQ(plot.pointCount(QStringLiteral("mean KL")), 2);
  EXPECT_EQ(plot.seriesNames().size(), 2);
  plot.removeSeries(QStringLiteral("mean KL"));
  EXPECT_EQ(plot.seriesNames(), (QStringList{"max |P_fit − P|"}));
}

TEST(VizLinePlot, LogAxisDrawsZerosAtTheFloor) {
  LinePlot plot;
  fillBottleneck(plot);
  plot.setLogY(true);
  EXPECT_TRUE(plot.logY());
  plot.setLogFloor(1e-12);
  settlePlaced(plot);
  const auto [ylo, yhi] = plot.yRange();
  EXPECT_GT(ylo, 0.0);
  EXPECT_LE(ylo, 1e-12);
  EXPECT_GE(yhi, 0.3 * 0.6);
  // The exact point (0) is drawn at the floor, below the 3e-9 point and on screen.
  const QPointF exact = plot.pointPixel(QStringLiteral("max |P_fit − P|"), 12);
  const QPointF near = plot.pointPixel(QStringLiteral("max |P_fit − P|"), 10);
  EXPECT_GT(exact.y(), near.y());
  EXPECT_TRUE(plot.plotArea()->rect().contains(exact.toPoint()));
  // Equal ratios are equal distances on a log axis.
  const QPointF a = plot.pointPixel(QStringLiteral("mean KL"), 0), b = plot.pointPixel(QStringLiteral("mean KL"), 1),
                c = plot.pointPixel(QStringLiteral("mean KL"), 2);
  EXPECT_NEAR(b.y() - a.y(), c.y() - b.y(), 1.0);
  // The CSV keeps the true value 0.
  EXPECT_TRUE(plot.csvText().contains(QStringLiteral("max |P_fit − P|,13,0\n")));
  plot.setLogY(false);
  EXPECT_FALSE(plot.logY());
  EXPECT_LT(plot.yRange().first, 0.0 + 1e-9);
}

TEST(VizLinePlot, ReferenceLinesSitAtTheirXWithSeparateLabels) {
  LinePlot plot;
  fillBottleneck(plot);
  plot.setLogY(true);
  plot.addReferenceLine(11, QStringLiteral("N − 1 = 11"));
  plot.addReferenceLine(12, QStringLiteral("N = 12"));
  ASSERT_EQ(plot.referenceLines().size(), 2u);
  EXPECT_EQ(plot.referenceLines()[1].label, QStringLiteral("N = 12"));
  settlePlaced(plot, QSize(520, 360));
  // The line at x = 11 passes through the point at d_p = 11.
  EXPECT_NEAR(plot.referencePixelX(0), plot.pointPixel(QStringLiteral("mean KL"), 10).x(), 0.6);
  EXPECT_NEAR(plot.referencePixelX(1), plot.pointPixel(QStringLiteral("mean KL"), 11).x(), 0.6);
  // It is drawn: the column under the line differs from the background somewhere in the middle.
  const QImage image = plot.plotArea()->grab().toImage();
  const int x = static_cast<int>(std::lround(plot.referencePixelX(1)));
  int marked = 0;
  for (int y = image.height() / 3; y < 2 * image.height() / 3; ++y)
    if (qGray(image.pixel(x, y)) < 200) ++marked;
  EXPECT_GT(marked, 5);
  // The two labels are both inside the plot and do not overlap.
  const QRectF l0 = plot.referenceLabelRect(0), l1 = plot.referenceLabelRect(1);
  ASSERT_FALSE(l0.isEmpty());
  ASSERT_FALSE(l1.isEmpty());
  EXPECT_FALSE(l0.intersects(l1)) << l0.x() << "," << l0.y() << " / " << l1.x() << "," << l1.y();
  const QRectF area(QPointF(0, 0), QSizeF(plot.plotArea()->size()));
  EXPECT_TRUE(area.contains(l0));
  EXPECT_TRUE(area.contains(l1));
  plot.clearReferenceLines();
  EXPECT_TRUE(plot.referenceLines().empty());
  EXPECT_TRUE(std::isnan(plot.referencePixelX(0)));
}

TEST(VizLinePlot, CsvExport) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  LinePlot plot;
  plot.setSeries(QStringLiteral("error, max"), {1, 2, 3}, {0.5, 0.25, 0});
  plot.setSeries(QStringLiteral("kl"), {1, 2}, {1.5, 1e-7});
  EXPECT_EQ(csvLines(plot.csvText()), (QStringList{"series,x,y", "\"error, max\",1,0.5", "\"error, max\",2,0.25",
                                                     "\"error, max\",3,0", "kl,1,1.5", "kl,2,1e-07"}));
  const QString path = dir.filePath(QStringLiteral("line.csv"));
  ASSERT_TRUE(plot.exportCsv(path));
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(file.readAll()), plot.csvText());
}

TEST(VizLinePlot, EmptyMessage) {
  LinePlot plot;
  EXPECT_TRUE(plot.isShowingMessage());
  EXPECT_FALSE(plot.hasFigure());
  plot.setEmptyMessage(QStringLiteral("Press Fit to draw the curve"));
  EXPECT_EQ(plot.emptyReason(), QStringLiteral("Press Fit to draw the curve"));
  QTemporaryDir dir;
  EXPECT_FALSE(plot.exportPng(dir.filePath(QStringLiteral("x.png")), 96));
  EXPECT_TRUE(plot.exportError().contains(QStringLiteral("Press Fit")));
  plot.setSeries(QStringLiteral("a"), {1}, {2});
  EXPECT_FALSE(plot.isShowingMessage());
  EXPECT_TRUE(plot.emptyReason().isEmpty());
  plot.clear();
  EXPECT_TRUE(plot.isShowingMessage());
  EXPECT_TRUE(plot.seriesNames().isEmpty());
}

TEST(VizLinePlot, FigureExportWritesAnSvg) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  LinePlot plot;
  fillBottleneck(plot);
  plot.setLogY(true);
  plot.addReferenceLine(11, QStringLiteral("N − 1"));
  plot.addReferenceLine(12, QStringLiteral("N = 12"));
  settlePlaced(plot);
  const QString keep = qEnvironmentVariable("TS_FIGURE_DIR");
  if (!keep.isEmpty()) QDir().mkpath(keep);
  const QString svg = keep.isEmpty() ? dir.filePath(QStringLiteral("line.svg")) : QDir(keep).filePath("line_plot.svg");
  FigureOptions options;
  ASSERT_TRUE(plot.exportFigure(svg, options)) << plot.exportError().toStdString();
  QFile file(svg);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QByteArray bytes = file.readAll();
  expectSvgDocument(bytes);
  EXPECT_TRUE(bytes.contains("mm\"")) << "width/height in millimetres";
  if (!keep.isEmpty()) {
    ASSERT_TRUE(plot.exportFigure(QDir(keep).filePath("line_plot.png"), options));
    plot.setDarkTheme(true);
    ASSERT_TRUE(plot.exportPng(QDir(keep).filePath("line_plot_dark.png"), 96));
  }
}
