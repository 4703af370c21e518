// Figures fit for a paper (issue 13): every plot exports at a physical size independent of its
// widget (PNG pixels from mm and DPI, SVG width/height in mm, the PDF's MediaBox), fonts in points,
// legends placed where asked and wrapped inside the figure, titles never clipped, the widget put
// back as it was; empty views export nothing and say why; the heatmap's 1×1 cell and frozen-cell
// rule. With TS_FIGURE_DIR set, the figures are also written there to be looked at.
#include <gtest/gtest.h>

#include <QApplication>
#include <QColor>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>

#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"
#include "viz_test_util.h"

using namespace tensorscope::viz;
using namespace tensorscope::test;

namespace {

// Where figures go: TS_FIGURE_DIR (kept, to be looked at) or a temporary folder.
QString figurePath(const QTemporaryDir& tmp, const QString& name) {
  const QString keep = qEnvironmentVariable("TS_FIGURE_DIR");
  if (keep.isEmpty()) return tmp.filePath(name);
  QDir().mkpath(keep);
  return QDir(keep).filePath(name);
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Two runs, three metrics each: the curves of a typical comparison.
void fillCurves(CurvesPlot& plot) {
  for (const QString run : {QStringLiteral("thsa_dense"), QStringLiteral("mhsa_baseline")})
    for (int i = 0; i <= 50; ++i) {
      const double decay = std::exp(-i / 15.0);
      plot.appendPoint(QStringLiteral("train loss"), i * 20, 2.5 * decay + 0.2, run);
      plot.appendPoint(QStringLiteral("eval loss (interpolation)"), i * 20, 2.6 * decay + 0.3, run);
      plot.appendPoint(QStringLiteral("token accuracy"), i * 20, 1 - 0.8 * decay, run);
    }
}

// One unit of slack for layout rounding.
bool inside(const QRectF& outer, const QRectF& inner) { return outer.adjusted(-1.5, -1.5, 1.5, 1.5).contains(inner); }

void expectNothingClipped(const FigureLayout& f, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_FALSE(f.figure.isEmpty());
  if (!f.legend.isEmpty()) EXPECT_TRUE(inside(f.figure, f.legend)) << "legend outside the figure";
  for (const QRectF& t : f.titles) EXPECT_TRUE(inside(f.figure, t)) << "title outside the figure";
  for (const QRectF& r : f.axisOuterRects)
    EXPECT_TRUE(inside(f.figure, r)) << "axis labels outside the figure: " << r.x() << "," << r.y() << " " << r.width()
                                     << "x" << r.height() << " in " << f.figure.width() << "x" << f.figure.height();
  for (const QRectF& r : f.axisRects) EXPECT_GT(r.width(), 20) << "the plotting area collapsed";
}

}  // namespace

TEST(VizFigure, PresetsAndNames) {
  EXPECT_EQ(FigureOptions::forColumn(ColumnPreset::Single).widthMm, 88);
  EXPECT_EQ(FigureOptions::forColumn(ColumnPreset::OneAndHalf).widthMm, 120);
  EXPECT_EQ(FigureOptions::forColumn(ColumnPreset::Double).widthMm, 180);
  EXPECT_EQ(FigureOptions::forColumn(ColumnPreset::Double).column(), ColumnPreset::Double);
  FigureOptions o;
  o.widthMm = 100;
  EXPECT_EQ(o.column(), ColumnPreset::Custom);
  for (auto p : {LegendPosition::Top, LegendPosition::Right, LegendPosition::Bottom, LegendPosition::Inside, LegendPosition::None})
    EXPECT_EQ(parseLegendPosition(toString(p)), p);
  EXPECT_FALSE(parseLegendPosition(QStringLiteral("left")).has_value());
  EXPECT_EQ(parseFigureTheme(QStringLiteral("as_shown")), FigureTheme::AsShown);
}

TEST(VizFigure, PngHasThePhysicalSizeAtTheDpiWhateverTheWidgetSize) {
  QTemporaryDir tmp;
  CurvesPlot plot;
  fillCurves(plot);
  settle(plot, QSize(1400, 180));  // a long thin dock strip
  FigureOptions o = FigureOptions::forColumn(ColumnPreset::Single);
  o.dpi = 300;
  const QString path = figurePath(tmp, QStringLiteral("curves_88mm.png"));
  ASSERT_TRUE(plot.exportPng(path, o)) << plot.exportError().toStdString();
  const QImage image(path);
  EXPECT_EQ(image.width(), 1039);  // 88 mm / 25.4 * 300
  EXPECT_EQ(image.height(), 780);  // 66 mm
  EXPECT_NEAR(image.dotsPerMeterX(), 300 / 0.0254, 2);
  expectNothingClipped(plot.lastFigureLayout(), "curves 88 mm");
  // The widget is left as it was: its size and the old API's on-screen export.
  EXPECT_EQ(plot.plotArea()->size().width(), 1400);
  const QString screen = tmp.filePath(QStringLiteral("screen.png"));
  ASSERT_TRUE(plot.exportPng(screen, 96));
  EXPECT_EQ(QImage(screen).size(), plot.plotArea()->size());

  o = FigureOptions::forColumn(ColumnPreset::Double);
  ASSERT_TRUE(plot.exportPng(figurePath(tmp, QStringLiteral("curves_180mm.png")), o));
  EXPECT_EQ(QImage(figurePath(tmp, QStringLiteral("curves_180mm.png"))).width(), 2126);  // 180 mm at 300 dpi
  expectNothingClipped(plot.lastFigureLayout(), "curves 180 mm");
}

TEST(VizFigure, SvgAndPdfStateThePhysicalSize) {
  QTemporaryDir tmp;
  CurvesPlot plot;
  fillCurves(plot);
  settle(plot, QSize(500, 200));
  const FigureOptions o = FigureOptions::forColumn(ColumnPreset::Single);
  const QString svg = figurePath(tmp, QStringLiteral("curves_88mm.svg"));
  ASSERT_TRUE(plot.exportSvg(svg, o)) << plot.exportError().toStdString();
  const QString text = QString::fromUtf8(readAll(svg));
  const auto w = QRegularExpression(QStringLiteral("<svg[^>]*\\bwidth=\"([0-9.]+)mm\"")).match(text);
  const auto h = QRegularExpression(QStringLiteral("<svg[^>]*\\bheight=\"([0-9.]+)mm\"")).match(text);
  ASSERT_TRUE(w.hasMatch() && h.hasMatch()) << text.left(400).toStdString();
  EXPECT_DOUBLE_EQ(w.captured(1).toDouble(), 88.0);
  EXPECT_DOUBLE_EQ(h.captured(1).toDouble(), 66.0);
  EXPECT_TRUE(text.contains(QLatin1String("<text")) || text.contains(QLatin1String("<path"))) << "vector content";

  const QString pdf = figurePath(tmp, QStringLiteral("curves_88mm.pdf"));
  ASSERT_TRUE(plot.exportPdf(pdf, o)) << plot.exportError().toStdString();
  const QByteArray bytes = readAll(pdf);
  ASSERT_TRUE(bytes.startsWith("%PDF"));
  const auto box = QRegularExpression(QStringLiteral("/MediaBox\\s*\\[\\s*0\\s+0\\s+([0-9.]+)\\s+([0-9.]+)\\s*\\]"))
                       .match(QString::fromLatin1(bytes));
  ASSERT_TRUE(box.hasMatch());
  EXPECT_NEAR(box.captured(1).toDouble(), 88 / 25.4 * 72, 0.6);  // 249.4 pt
  EXPECT_NEAR(box.captured(2).toDouble(), 66 / 25.4 * 72, 0.6);  // 187.1 pt
  EXPECT_FALSE(plot.exportFigure(tmp.filePath(QStringLiteral("x.jpg")), o));
  EXPECT_TRUE(plot.exportError().contains(QLatin1String("jpg")));
}

// Role vectors with a dozen structural labels: a legend of twelve entries.
void fillRoles(RoleClusterPlot& plot) {
  std::vector<double> xs, ys;
  QStringList tokens, contexts, labels;
  for (int i = 0; i < 120; ++i) {
    const int g = i % 12;
    xs.push_back(std::cos(g * 0.52) * 3 + 0.3 * std::sin(i));
    ys.push_back(std::sin(g * 0.52) * 3 + 0.3 * std::cos(i * 1.3));
    tokens << QString::number(i % 10);
    contexts << QStringLiteral("12+34=46");
    labels << QStringLiteral("digit %1").arg(g);
  }
  plot.setPoints(xs, ys, tokens, contexts, labels);
  plot.setColourBy(RoleClusterPlot::ColourBy::Label);
}

TEST(VizFigure, LegendGoesWhereAskedAndWrapsInsideTheFigure) {
  QTemporaryDir tmp;
  RoleClusterPlot plot;
  fillRoles(plot);
  settle(plot, QSize(900, 160));
  ASSERT_EQ(plot.groupNames().size(), 12);
  FigureOptions o = FigureOptions::forColumn(ColumnPreset::Single);
  for (auto position : {LegendPosition::Top, LegendPosition::Bottom, LegendPosition::Right}) {
    o.legend = position;
    ASSERT_TRUE(plot.exportPng(figurePath(tmp, "roles_legend_" + toString(position) + ".png"), o));
    const FigureLayout& f = plot.lastFigureLayout();
    expectNothingClipped(f, qPrintable(toString(position)));
    ASSERT_FALSE(f.legend.isEmpty()) << toString(position).toStdString();
    EXPECT_EQ(f.legendItems, 12);
    const QRectF plotArea = f.axisRects.front();
    switch (position) {
      case LegendPosition::Top: EXPECT_LE(f.legend.bottom(), plotArea.top() + 1); break;
      case LegendPosition::Bottom: EXPECT_GE(f.legend.top(), plotArea.bottom()); break;
      case LegendPosition::Right: EXPECT_GE(f.legend.left(), plotArea.right()); break;
      default: EXPECT_TRUE(inside(plotArea, f.legend)); break;
    }
    if (position == LegendPosition::Top || position == LegendPosition::Bottom) {
      EXPECT_GT(f.legendColumns, 1) << "wrapped into columns that fit the width; legend " << f.legend.width() << " wide";
      EXPECT_LT(f.legend.height(), f.figure.height() / 2) << "the legend is not half the figure";
    }
    if (position == LegendPosition::Right) {
      EXPECT_LE(f.legend.height(), f.figure.height());
      EXPECT_GT(plotArea.width(), f.figure.width() / 4) << "legend " << f.legend.x() << "+" << f.legend.width();
    }
  }
  // Inside the plotting area: fits there when the legend is small (four clusters).
  RoleClusterPlot clusters;
  fillRoles(clusters);
  clusters.setColourBy(RoleClusterPlot::ColourBy::Cluster);
  std::vector<int> k(120);
  for (int i = 0; i < 120; ++i) k[i] = (i % 12) / 3;
  clusters.setClusters(k);
  settle(clusters);
  o.legend = LegendPosition::Inside;
  ASSERT_TRUE(clusters.exportPng(figurePath(tmp, QStringLiteral("roles_legend_inside.png")), o));
  expectNothingClipped(clusters.lastFigureLayout(), "inside");
  EXPECT_TRUE(inside(clusters.lastFigureLayout().axisRects.front(), clusters.lastFigureLayout().legend));
  o.legend = LegendPosition::None;
  ASSERT_TRUE(plot.exportPng(tmp.filePath(QStringLiteral("none.png")), o));
  EXPECT_TRUE(plot.lastFigureLayout().legend.isEmpty());
  // Afterwards the dock's legend is back, whole: the next figure finds all twelve entries again.
  o.legend = LegendPosition::Top;
  ASSERT_TRUE(plot.exportPng(tmp.filePath(QStringLiteral("again.png")), o));
  EXPECT_EQ(plot.lastFigureLayout().legendItems, 12);
  EXPECT_EQ(plot.groupNames().size(), 12);
}

TEST(VizFigure, FontSizeIsInPoints) {
  QTemporaryDir tmp;
  RoleClusterPlot plot;
  fillRoles(plot);
  settle(plot);
  FigureOptions o;
  o.fontPt = 7;
  ASSERT_TRUE(plot.exportSvg(tmp.filePath(QStringLiteral("a.svg")), o));
  const FigureLayout small = plot.lastFigureLayout();
  o.fontPt = 12;
  ASSERT_TRUE(plot.exportSvg(tmp.filePath(QStringLiteral("b.svg")), o));
  const FigureLayout large = plot.lastFigureLayout();
  // Larger type takes more room for the tick and axis labels, out of the same figure.
  const auto margin = [](const FigureLayout& f) { return f.axisOuterRects.front().bottom() - f.axisRects.front().bottom(); };
  EXPECT_GT(margin(large), margin(small) * 1.4);
  EXPECT_EQ(large.figure, small.figure);
  expectNothingClipped(large, "12 pt");
  // The SVG states its fonts in points of the figure.
  const QString text = QString::fromUtf8(readAll(tmp.filePath(QStringLiteral("b.svg"))));
  EXPECT_TRUE(text.contains(QLatin1String("font-size=\"12\""))) << "12 pt text in the SVG";
}

TEST(VizFigure, RunAndMetricSelectionLeavesTheRestOut) {
  QTemporaryDir tmp;
  CurvesPlot plot;
  fillCurves(plot);
  settle(plot);
  FigureOptions o;
  ASSERT_TRUE(plot.exportPng(tmp.filePath(QStringLiteral("all.png")), o));
  const int all = plot.lastFigureLayout().plottablesDrawn;
  ASSERT_GE(all, 6);
  o.runs = {QStringLiteral("thsa_dense")};
  ASSERT_TRUE(plot.exportPng(figurePath(tmp, QStringLiteral("curves_one_run.png")), o));
  EXPECT_EQ(plot.lastFigureLayout().plottablesDrawn, all / 2);
  o.metrics = {QStringLiteral("train loss")};
  ASSERT_TRUE(plot.exportPng(tmp.filePath(QStringLiteral("one.png")), o));
  EXPECT_EQ(plot.lastFigureLayout().plottablesDrawn, all / 6);
  o.runs = {QStringLiteral("no such run")};
  EXPECT_FALSE(plot.exportPng(tmp.filePath(QStringLiteral("none.png")), o));
  EXPECT_TRUE(plot.exportError().contains(QLatin1String("nothing to export")));
  ASSERT_TRUE(plot.exportPng(tmp.filePath(QStringLiteral("again.png")), FigureOptions()));
  EXPECT_EQ(plot.lastFigureLayout().plottablesDrawn, all) << "the selection was undone";
}

TEST(VizFigure, EmptyViewsExportNothingAndSayWhy) {
  QTemporaryDir tmp;
  RoleClusterPlot roles;
  roles.showMessage(QStringLiteral("Role vectors appear here while a TP-attention model trains (variant tp)."));
  settle(roles);
  EXPECT_FALSE(roles.hasFigure());
  const QString path = tmp.filePath(QStringLiteral("roles.png"));
  EXPECT_FALSE(roles.exportPng(path, FigureOptions()));
  EXPECT_TRUE(roles.exportError().contains(QLatin1String("TP-attention"))) << roles.exportError().toStdString();
  EXPECT_FALSE(roles.exportPng(path, 300));  // the on-screen export too
  EXPECT_FALSE(QFile::exists(path));
  CurvesPlot curves;
  settle(curves);
  EXPECT_FALSE(curves.hasFigure());
  EXPECT_FALSE(curves.exportSvg(tmp.filePath(QStringLiteral("c.svg")), FigureOptions()));
  MatrixHeatmap heatmap;
  EXPECT_FALSE(heatmap.hasFigure());
  EXPECT_EQ(heatmap.emptyReason(), QStringLiteral("No matrix to show"));
  AttentionMapGrid maps;
  maps.clear(QStringLiteral("No attention maps yet: they are drawn while a model trains"));
  EXPECT_TRUE(maps.emptyReason().startsWith(QLatin1String("No attention maps yet")));
}

TEST(VizFigure, HeatmapAtFigureSizeWithTitleAndScaleInside) {
  QTemporaryDir tmp;
  MatrixHeatmap heatmap;
  std::vector<double> values(16 * 16);
  for (int i = 0; i < 16 * 16; ++i) values[i] = std::sin(i * 0.37);
  heatmap.setMatrix(values, 16, 16, QStringLiteral("learned C at step 2000 of run thsa_dense_with_a_long_name (layer 0)"));
  settle(heatmap, QSize(300, 260));
  QApplication::processEvents();
  heatmap.replotNow();
  const QPointF before = heatmap.cellCentre(3, 4);
  FigureOptions o = FigureOptions::forColumn(ColumnPreset::Single);
  o.heightMm = 80;
  ASSERT_TRUE(heatmap.exportPng(figurePath(tmp, QStringLiteral("core_88mm.png")), o));
  expectNothingClipped(heatmap.lastFigureLayout(), "heatmap");
  ASSERT_EQ(heatmap.lastFigureLayout().titles.size(), 1);
  ASSERT_TRUE(heatmap.exportPdf(figurePath(tmp, QStringLiteral("core_88mm.pdf")), o));
  QApplication::processEvents();
  heatmap.replotNow();
  EXPECT_EQ(heatmap.cellCentre(3, 4), before) << "the widget's layout is back";
}

TEST(VizFigure, OneByOneMatrixDrawsItsCell) {
  QTemporaryDir tmp;
  MatrixHeatmap heatmap;
  heatmap.setMatrix({2.0}, 1, 1, QStringLiteral("A (1×1)"));
  settle(heatmap, QSize(300, 260));
  FigureOptions o;
  o.dpi = 96;
  const QString path = figurePath(tmp, QStringLiteral("factor_1x1.png"));
  ASSERT_TRUE(heatmap.exportPng(path, o));
  const QImage image(path);
  const QRectF cell = heatmap.lastFigureLayout().axisRects.front();
  const double sx = image.width() / heatmap.lastFigureLayout().figure.width();
  const QColor centre = image.pixelColor((cell.center() * sx).toPoint());
  // The single positive value is the diverging map's strongest red, not the white background.
  EXPECT_GT(centre.red(), 120);
  EXPECT_LT(centre.blue(), 100) << centre.name().toStdString();
  // On screen too.
  const QImage screen = heatmap.plotArea()->grab().toImage();
  const QColor shown = screen.pixelColor(heatmap.cellCentre(0, 0).toPoint());
  EXPECT_LT(shown.blue(), 100) << shown.name().toStdString();
}

// "Dark theme leaves the C heatmaps white": in the dark theme zero is the dark page, and the
// signs keep their hues.
TEST(VizFigure, TheDarkThemesDivergingScaleCentresOnDark) {
  MatrixHeatmap heatmap;
  heatmap.setMatrix({-1.0, 0.0, 1.0}, 1, 3, QStringLiteral("C"));
  heatmap.setDarkTheme(true);
  settle(heatmap, QSize(360, 200));
  const QImage dark = heatmap.plotArea()->grab().toImage();
  const QColor zero = dark.pixelColor(heatmap.cellCentre(0, 1).toPoint());
  EXPECT_LT(zero.lightness(), 80) << zero.name().toStdString();
  const QColor negative = dark.pixelColor(heatmap.cellCentre(0, 0).toPoint());
  const QColor positive = dark.pixelColor(heatmap.cellCentre(0, 2).toPoint());
  EXPECT_GT(negative.blue(), negative.red()) << negative.name().toStdString();
  EXPECT_GT(positive.red(), positive.blue()) << positive.name().toStdString();
  heatmap.setDarkTheme(false);
  heatmap.replotNow();
  const QColor light = heatmap.plotArea()->grab().toImage().pixelColor(heatmap.cellCentre(0, 1).toPoint());
  EXPECT_GT(light.lightness(), 220) << "light: zero is white, as in print";
}

TEST(VizFigure, FrozenCellsAreStrokedOnlyWhenLargeAndAlwaysDesaturated) {
  MatrixHeatmap big;
  const int n = 52;
  std::vector<double> values(n * n, 1.0);
  std::vector<unsigned char> mask(n * n, 0);
  for (int i = 0; i < n * n; i += 2) mask[i] = 1;
  big.setMatrix(values, n, n, QStringLiteral("C (kronecker, 52×52)"));
  big.setMask(mask);
  settle(big, QSize(420, 380));
  EXPECT_FALSE(big.frozenCellsStroked()) << "52×52 cells of a few pixels are not hatched";
  // Frozen cells stay distinguishable: paler than their trainable neighbours of the same value.
  const QImage shot = big.plotArea()->grab().toImage();
  const QColor frozen = shot.pixelColor(big.cellCentre(10, 10).toPoint());   // (10*52+10) even: frozen
  const QColor trainable = shot.pixelColor(big.cellCentre(10, 11).toPoint());
  EXPECT_LT(frozen.hsvSaturation() + 30, trainable.hsvSaturation())
      << frozen.name().toStdString() << " vs " << trainable.name().toStdString();

  MatrixHeatmap small;
  small.setMatrix(std::vector<double>(16, 1.0), 4, 4, QStringLiteral("C"));
  small.setMask({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  settle(small, QSize(420, 380));
  EXPECT_TRUE(small.frozenCellsStroked());
}

TEST(VizFigure, AttentionMapsFillTheColumnWidth) {
  QTemporaryDir tmp;
  AttentionMapGrid grid;
  std::vector<std::vector<MatrixData>> maps(2);
  const int n = 12;
  for (auto& layer : maps)
    for (int h = 0; h < 4; ++h) {
      MatrixData m{n, n, std::vector<float>(n * n)};
      for (int r = 0; r < n; ++r)
        for (int c = 0; c <= r; ++c) m.values[r * n + c] = 1.0f / (r + 1) + 0.1f * (c == (r + h) % n);
      layer.push_back(m);
    }
  QStringList tokens;
  for (const char* t : {"1", "2", "+", "3", "4", "=", "4", "6", "<e>", "_", "_", "_"}) tokens << QString::fromLatin1(t);
  grid.setMaps(maps, tokens, {0, 1}, 2000);
  settle(grid, QSize(500, 200));
  const QSize before = grid.plotArea()->size();
  FigureOptions o = FigureOptions::forColumn(ColumnPreset::Double);
  const QString path = figurePath(tmp, QStringLiteral("maps_180mm.png"));
  ASSERT_TRUE(grid.exportPng(path, o)) << grid.exportError().toStdString();
  const QImage image(path);
  EXPECT_EQ(image.width(), 2126);
  EXPECT_GT(image.height(), 300);
  expectNothingClipped(grid.lastFigureLayout(), "maps");
  EXPECT_EQ(grid.lastFigureLayout().axisRects.size(), 8);
  EXPECT_EQ(grid.plotArea()->size(), before) << "the dock's grid is back";
  EXPECT_EQ(grid.layerId(1), 1);
  EXPECT_EQ(grid.step(), 2000);
}
