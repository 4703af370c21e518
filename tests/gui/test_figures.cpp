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

#include "gui/core_editor.h"
#include "gui/figure_dialog.h"
#include "gui/figure_export.h"
#include "model_core/safetensors.h"
#include "spec/attention_spec.h"
#include "spec/core_spec.h"
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
  EXPECT_TRUE(report.skipped.join('\n').contains("core_A: the learned C is shown"));
  // Back on the design: the design C again.
  editor.setSpec(kronecker());
  EXPECT_EQ(editor.learnedStep(), -1);
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
