// The explorer's figure export (issue 13): C as a vector figure at the chosen physical size, the
// learned C after an inspection (not the design's), factors as their own figures, C and its factors
// as CSV and safetensors that read back to the values shown, empty views skipped with the reason;
// and the export dialog's remembered options.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>

#include "gui/design/core_editor.h"
#include "gui/figures/figure_dialog.h"
#include "gui/figures/figure_export.h"
#include "model_core/safetensors.h"
#include "spec/attention_spec.h"
#include "spec/core_spec.h"
#include "viz/attention_map_grid.h"
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

}  // namespace

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
