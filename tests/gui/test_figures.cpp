// The explorer's figure export (issue 13): C as a vector figure at the chosen physical size, the
// learned C after an inspection (not the design's), factors as their own figures, C and its factors
// as CSV and safetensors that read back to the values shown, empty views skipped with the reason;
// and the export dialog's remembered options; every figure of an export at the dialog's width
// (finding N13: curves without an unticked axis and with a legend sized to the figure, the
// diagram and the attention maps at the column width, the maps' title whole).
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>

#include "gui/design/core_editor.h"
#include "gui/figures/figure_dialog.h"
#include "gui/figures/figure_export.h"
#include "model_core/safetensors.h"
#include "spec/attention_spec.h"
#include "spec/core_spec.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"

using namespace tensorscope;

namespace {

spec::AttentionSpec kronecker() {
  auto s = spec::makeSpecPreset("thsa");
  s.core = spec::makeCorePreset("skip_left", s.sizes.H, s.sizes.D);
  s.core->structure = spec::CoreStructure::Kronecker;
  return s;
}

model_core::SafetensorsFile readBack(const QString& path) {
  return model_core::readSafetensors(QFile::encodeName(path).toStdString());
}

QString keepDir(const QTemporaryDir& tmp) {
  const QString keep = qEnvironmentVariable("TS_FIGURE_DIR");
  return keep.isEmpty() ? tmp.path() : keep + "/app";
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// Width and height in mm of each format: the PNG's pixels at its DPI, the SVG's width and height
// attributes, the PDF's MediaBox (points).
QSizeF pngMm(const QString& path) {
  const QImage image(path);
  if (image.isNull() || image.dotsPerMeterX() <= 0) return {};
  return {image.width() * 1000.0 / image.dotsPerMeterX(), image.height() * 1000.0 / image.dotsPerMeterY()};
}
QSizeF svgMm(const QString& path) {
  const auto m = QRegularExpression(R"(<svg[^>]*\bwidth="([0-9.]+)mm"[^>]*\bheight="([0-9.]+)mm")").match(readText(path));
  return m.hasMatch() ? QSizeF(m.captured(1).toDouble(), m.captured(2).toDouble()) : QSizeF();
}
QSizeF pdfMm(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const auto m = QRegularExpression(R"(/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+))").match(QString::fromLatin1(f.readAll()));
  return m.hasMatch() ? QSizeF(m.captured(1).toDouble() * 25.4 / 72, m.captured(2).toDouble() * 25.4 / 72) : QSizeF();
}

// Three runs of a comparison: losses, an evaluation split, accuracy and the learning rate.
void fillCurves(viz::CurvesPlot& plot) {
  const QString runs[] = {"thsa_dense", "thsa_kron", "mhsa_baseline"};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i <= 60; ++i) {
      const QString& run = runs[k];
      const double decay = std::exp(-i / (12.0 + 4 * k));
      plot.appendPoint("train loss", i * 50, 2.5 * decay + 0.2, run);
      plot.appendPoint("eval loss (interpolation)", i * 50, 2.6 * decay + 0.3, run);
      plot.appendPoint("accuracy", i * 50, 1 - 0.8 * decay, run);
      plot.appendPoint("lr", i * 50, 0.002 * std::min(1.0, i / 10.0), run);
    }
}

// Two layers of four heads on a 43-token probe, as the explorer shows them.
void fillMaps(viz::AttentionMapGrid& maps) {
  QStringList tokens;
  for (const QChar c : QStringLiteral("4381+2975=7356<e>")) tokens << QString(c);
  while (tokens.size() < 43) tokens << "_";
  const int n = static_cast<int>(tokens.size());
  std::vector<std::vector<viz::MatrixData>> layers(2);
  for (auto& layer : layers)
    for (int h = 0; h < 4; ++h) {
      viz::MatrixData m{n, n, std::vector<float>(static_cast<size_t>(n) * n)};
      for (int r = 0; r < n; ++r)
        for (int c = 0; c <= r; ++c) m.values[r * n + c] = 1.0f / (r + 1) + 0.3f * (c == (r + h) % n);
      layer.push_back(m);
    }
  maps.setProbeName(QStringLiteral("validation example 0 \"4381+2975=7356\""));
  maps.setMaps(layers, tokens, {0, 1}, 3000);
}

}  // namespace

// Finding N13: every figure of an export is as wide as the dialog says, in every format; the
// curves leave out the axis of a metric not ticked and keep the legend to a fifth of the figure;
// the maps' title is drawn whole.
TEST(Figures, ExportHonoursTheColumnWidthInEveryFigure) {
  QTemporaryDir tmp;
  viz::CurvesPlot curves;
  curves.setExportName("curves");
  fillCurves(curves);
  curves.resize(900, 500);
  curves.show();
  viz::AttentionMapGrid maps;
  maps.setExportName("attention_maps");
  fillMaps(maps);
  maps.resize(900, 600);
  maps.show();
  QApplication::processEvents();
  const QString keep = qEnvironmentVariable("TS_FIGURE_DIR");
  for (const auto preset : {viz::ColumnPreset::Single, viz::ColumnPreset::Double}) {
    SCOPED_TRACE(viz::toString(preset).toStdString());
    app::FigureExportOptions options;
    options.figure = viz::FigureOptions::forColumn(preset);
    options.figure.metrics = {"train loss", "eval loss (interpolation)", "accuracy"};  // lr unticked
    options.views = {"curves", "attention_maps", "diagram"};
    options.data = false;
    const QString dir = keep.isEmpty() ? tmp.filePath(viz::toString(preset)) : keep + "/n13_" + viz::toString(preset);
    const auto report = app::exportFigures(dir, {{&curves, &maps}, nullptr, kronecker(), false, "run"}, options);
    ASSERT_TRUE(report.ok()) << report.failures.join('\n').toStdString();
    const double width = options.figure.widthMm;
    for (const char* stem : {"curves", "attention_maps", "diagram"}) {
      SCOPED_TRACE(stem);
      const QString base = dir + "/" + stem;
      const QSizeF png = pngMm(base + ".png"), svg = svgMm(base + ".svg"), pdf = pdfMm(base + ".pdf");
      EXPECT_NEAR(png.width(), width, 0.2);
      EXPECT_NEAR(svg.width(), width, 0.2);
      EXPECT_NEAR(pdf.width(), width, 0.2);
      EXPECT_NEAR(svg.height(), pdf.height(), 0.2) << "one height in every format";
      EXPECT_NEAR(png.height(), pdf.height(), 0.3);
      EXPECT_GT(pdf.height(), width / 4);
      EXPECT_LT(pdf.height(), width * 1.25) << "a figure of a column's proportions";
    }
    // The curves: no learning-rate axis (only the accuracy's on the right), the plotting area most
    // of the figure, a legend of at most a fifth of its height.
    const viz::FigureLayout& f = curves.lastFigureLayout();
    ASSERT_EQ(f.axisRects.size(), 1);
    EXPECT_GE(f.axisRects.front().width(), 0.65 * f.figure.width());
    EXPECT_LE(curves.lastFigureLegendRect().height(), 0.2 * f.figure.height());
    EXPECT_EQ(curves.lastFigureLegendEntries(), 7) << "3 runs, 3 metrics, 1 split: none left out";
    EXPECT_GE(f.axisRects.front().height(), 0.6 * f.figure.height());
    // The losses alone: no axis on the right at all.
    viz::FigureOptions losses = options.figure;
    losses.metrics = {"train loss", "eval loss (interpolation)"};
    ASSERT_TRUE(curves.exportPng(dir + "/curves_losses.png", losses)) << curves.exportError().toStdString();
    EXPECT_GE(curves.lastFigureLayout().axisRects.front().width(), 0.7 * f.figure.width());
    EXPECT_GE(curves.lastFigureLayout().axisOuterRects.front().right(), 0.95 * f.figure.width())
        << "the plot reaches the right edge";
    // The maps: the title whole, on one or more lines.
    EXPECT_FALSE(maps.lastFigureTitle().contains(QChar(0x2026))) << maps.lastFigureTitle().toStdString();
    EXPECT_TRUE(maps.lastFigureTitle().simplified().contains(QStringLiteral("\"4381+2975=7356\"")))
        << maps.lastFigureTitle().toStdString();
    // 43 tokens do not fit at 7.5 pt on a map a quarter of a column wide: a stride, named in the
    // caption under the maps.
    const int stride = maps.lastFigureTokenStride();
    EXPECT_GT(stride, 1);
    EXPECT_LE(stride, 15);
    EXPECT_EQ(maps.lastFigureCaption().simplified(), QStringLiteral("Tokens: one in %1 labelled.").arg(stride));
    EXPECT_EQ(maps.lastFigureLayout().axisRects.size(), 8);
    for (const QRectF& r : maps.lastFigureLayout().axisOuterRects)
      EXPECT_TRUE(maps.lastFigureLayout().figure.adjusted(-1.5, -1.5, 1.5, 1.5).contains(r)) << "a map clipped";
  }
  EXPECT_TRUE(curves.axisShown(viz::CurvesPlot::Axis::Rate)) << "the dock keeps its learning-rate axis";
}

TEST(Figures, DesignCoreAndFactorsAsFiguresAndData) {
  QTemporaryDir tmp;
  app::CoreEditor editor;
  editor.resize(600, 700);
  editor.show();
  editor.setSpec(kronecker());
  QApplication::processEvents();
  ASSERT_EQ(editor.factorName(0), "A");
  viz::RoleClusterPlot roles;  // a model without roles
  roles.setExportName("role_clusters");
  roles.showMessage("Role vectors appear here while a TP-attention model trains (variant tp).");
  const QString dir = keepDir(tmp);
  const auto report = app::exportFigures(dir, {{&roles}, &editor, kronecker(), false, "thsa_run"});
  EXPECT_TRUE(report.ok()) << report.failures.join('\n').toStdString();
  // C and both factors at 88 mm / 300 dpi, in every format.
  for (const char* stem : {"core", "core_A", "core_B"}) {
    EXPECT_EQ(QImage(dir + "/" + stem + ".png").width(), 1039) << stem;
    EXPECT_TRUE(QFile::exists(dir + "/" + stem + ".svg")) << stem;
    EXPECT_TRUE(QFile::exists(dir + "/" + stem + ".pdf")) << stem;
  }
  // The empty view is skipped, with why, and writes nothing.
  ASSERT_EQ(report.skipped.size(), 1) << report.skipped.join('\n').toStdString();
  EXPECT_TRUE(report.skipped[0].startsWith("role_clusters: Role vectors appear")) << report.skipped[0].toStdString();
  EXPECT_FALSE(QFile::exists(dir + "/role_clusters.png"));
  // The data read back to the values shown.
  const auto file = readBack(dir + "/core.safetensors");
  const viz::MatrixHeatmap& c = *editor.heatmap();
  ASSERT_TRUE(file.tensors.count("core"));
  const auto& core = file.tensors.at("core");
  EXPECT_EQ(core.shape, (std::vector<int64_t>{c.rows(), c.cols()}));
  const auto values = model_core::toDoubleVector(core);
  for (int r = 0; r < c.rows(); ++r)
    for (int k = 0; k < c.cols(); ++k) ASSERT_EQ(values[static_cast<size_t>(r) * c.cols() + k], c.value(r, k));
  const int H = kronecker().sizes.H, D = kronecker().sizes.D;
  ASSERT_TRUE(file.tensors.count("core.A") && file.tensors.count("core.B"));
  EXPECT_EQ(file.tensors.at("core.A").shape, (std::vector<int64_t>{H, H}));
  EXPECT_EQ(file.tensors.at("core.B").shape, (std::vector<int64_t>{D, D}));
  EXPECT_EQ(file.metadata.at("source"), "design");
  EXPECT_EQ(file.metadata.at("run"), "thsa_run");
  QFile csv(dir + "/core.csv");
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(csv.readAll()).count('\n'), 1 + c.rows() * c.cols());
}

TEST(Figures, LearnedCoreIsExportedAfterAnInspection) {
  QTemporaryDir tmp;
  app::CoreEditor editor;
  editor.resize(600, 700);
  editor.show();
  editor.setSpec(kronecker());
  const int R = kronecker().sizes.R;
  std::vector<float> learned(static_cast<size_t>(R) * R);
  for (size_t i = 0; i < learned.size(); ++i) learned[i] = 0.001f * static_cast<float>(i) - 0.3f;
  editor.showLearnedCore(learned, R, 1234);
  ASSERT_EQ(editor.learnedStep(), 1234);
  const auto report = app::exportFigures(tmp.path(), {{}, &editor, kronecker(), false, "run"});
  EXPECT_TRUE(report.ok());
  const auto file = readBack(tmp.filePath("core.safetensors"));
  EXPECT_EQ(model_core::toFloatVector(file.tensors.at("core")), learned);
  EXPECT_EQ(file.metadata.at("source"), "learned");
  EXPECT_EQ(file.metadata.at("step"), "1234");
  EXPECT_FALSE(file.tensors.count("core.A")) << "design factors are not passed off as learned ones";
  EXPECT_FALSE(QFile::exists(tmp.filePath("core_A.png")));
  EXPECT_TRUE(report.skipped.join('\n').contains("core_A: The factors of the learned C are read from the run's checkpoint"))
      << report.skipped.join('\n').toStdString();
  // Back on the design: the design C again.
  editor.setSpec(kronecker());
  EXPECT_EQ(editor.learnedStep(), -1);
}

// A stopped run's learned C comes with its learned factors (read from its checkpoint): they are
// drawn in the factor panels and exported as figures and data, not the design's.
TEST(Figures, LearnedFactorsAreExportedWithTheLearnedCore) {
  QTemporaryDir tmp;
  app::CoreEditor editor;
  editor.resize(600, 700);
  editor.show();
  const auto design = kronecker();
  editor.setSpec(design);
  const auto& z = design.sizes;
  auto learnedCore = *design.core;
  for (auto* f : {&learnedCore.a, &learnedCore.b}) f->kind = spec::FactorKind::Trainable;
  learnedCore.a.values.clear();
  for (int i = 0; i < z.H * z.H; ++i) learnedCore.a.values.push_back(0.5 + 0.1 * i);
  learnedCore.b.values.clear();
  for (int i = 0; i < z.D * z.D; ++i) learnedCore.b.values.push_back(-0.2 + 0.01 * i);
  const auto C = spec::materializeCore(learnedCore, z.H, z.D, z.R);
  editor.showLearnedCore(std::vector<float>(C.begin(), C.end()), z.R, 500, {}, &learnedCore);
  EXPECT_TRUE(editor.factorA()->hasFigure());
  EXPECT_NEAR(editor.factorA()->value(0, 1), 0.6, 1e-12);
  app::FigureExportOptions options;
  options.formats = {"svg"};
  const auto report = app::exportFigures(tmp.path(), {{}, &editor, design, false, "run"}, options);
  EXPECT_TRUE(report.ok()) << report.failures.join('\n').toStdString();
  EXPECT_TRUE(QFile::exists(tmp.filePath("core_A.svg")));
  EXPECT_TRUE(QFile::exists(tmp.filePath("core_B.svg")));
  const auto file = readBack(tmp.filePath("core.safetensors"));
  EXPECT_EQ(file.metadata.at("source"), "learned");
  const auto a = model_core::toFloatVector(file.tensors.at("core.A"));
  ASSERT_EQ(a.size(), learnedCore.a.values.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], learnedCore.a.values[i], 1e-6);
  EXPECT_NEAR(model_core::toFloatVector(file.tensors.at("core.B")).back(), learnedCore.b.values.back(), 1e-6);
}

TEST(Figures, DialogRemembersItsOptions) {
  app::FigureExportOptions o;
  o.figure = viz::FigureOptions::forColumn(viz::ColumnPreset::Double);
  o.figure.dpi = 600;
  o.figure.fontPt = 9;
  o.figure.legend = viz::LegendPosition::Right;
  o.formats = {"pdf"};
  app::FigureDialog::remember(o);
  app::FigureDialog dialog(app::FigureDialog::Mode::AllViews);
  dialog.setViews({{"curves", "Curves", {}}, {"role_clusters", "Role clusters", "no TP layer"}});
  dialog.setRunsAndMetrics({"a", "b"}, {"train loss"});
  const auto back = dialog.options();
  EXPECT_EQ(back.figure.widthMm, 180);
  EXPECT_EQ(back.figure.dpi, 600);
  EXPECT_EQ(back.figure.fontPt, 9);
  EXPECT_EQ(back.figure.legend, viz::LegendPosition::Right);
  EXPECT_EQ(back.formats, QStringList{"pdf"});
  EXPECT_EQ(back.views, QStringList{"curves"}) << "the empty view is not offered";
  EXPECT_TRUE(back.figure.runs.isEmpty()) << "all runs";
  dialog.adjustSize();
  const QString keep = qEnvironmentVariable("TS_FIGURE_DIR");
  if (!keep.isEmpty()) dialog.grab().save(keep + "/figure_dialog.png");
}

// The attention maps as data (CSV and safetensors): one [maps, query, key] tensor per layer with
// the values drawn, and the run, step and what the maps are in the metadata.
TEST(Figures, AttentionMapsAreExportedAsData) {
  QTemporaryDir tmp;
  viz::AttentionMapGrid maps;
  maps.resize(800, 500);
  maps.show();
  const auto map = [](float shift) {
    viz::MatrixData m{3, 3, {}};
    for (int i = 0; i < 9; ++i) m.values.push_back(shift + 0.01f * static_cast<float>(i));
    return m;
  };
  maps.setMaps({{map(0.1f), map(0.2f)}, {map(0.3f), map(0.4f)}}, {"a", "b", "c"}, {0, 1}, 40);
  QApplication::processEvents();
  app::FigureExportOptions options;
  options.formats = {"svg"};
  const auto report = app::exportFigures(tmp.path(), {{&maps}, nullptr, kronecker(), false, "maps_run"}, options);
  EXPECT_TRUE(report.ok()) << report.failures.join('\n').toStdString();
  const auto file = readBack(tmp.filePath("attention_maps.safetensors"));
  EXPECT_EQ(file.metadata.at("run"), "maps_run");
  EXPECT_EQ(file.metadata.at("step"), "40");
  ASSERT_TRUE(file.tensors.count("maps.layer1"));
  EXPECT_EQ(file.tensors.at("maps.layer1").shape, (std::vector<int64_t>{2, 3, 3}));
  const auto values = model_core::toFloatVector(file.tensors.at("maps.layer1"));
  EXPECT_NEAR(values.front(), 0.3f, 1e-6);
  EXPECT_NEAR(values.back(), 0.48f, 1e-6);
  QFile csv(tmp.filePath(maps.exportName() + ".csv"));
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
  EXPECT_GE(QString::fromUtf8(csv.readAll()).count('\n'), 4 * 9) << "every entry of every map";
}
