// Diagram exports open in standard tools: SVG is well-formed XML, the PDF renders with poppler,
// the PNG has the size its DPI asks for, DOT parses back with Graphviz, TikZ is a tikzpicture.
#include <gtest/gtest.h>

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <cmath>

#include "test_diagram_networks.h"
#include "diagram_view/diagram_export.h"
#include "diagram_view/graphviz.h"
#include "spec/attention_spec.h"

using namespace tensorscope;
using diagram_view::ExportFormat;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Fraction of pixels that differ clearly from the top-left (background) pixel.
double inkFraction(const QImage& image) {
  const QColor bg = image.pixelColor(0, 0);
  qint64 ink = 0;
  for (int y = 0; y < image.height(); y += 2)
    for (int x = 0; x < image.width(); x += 2) {
      const QColor c = image.pixelColor(x, y);
      if (std::abs(c.red() - bg.red()) + std::abs(c.green() - bg.green()) + std::abs(c.blue() - bg.blue()) > 90) ++ink;
    }
  return static_cast<double>(ink) / ((image.width() / 2 + 1) * (image.height() / 2 + 1));
}

void write(ExportFormat format, const QString& path, const spec::TensorNetwork& net, double dpi = 300,
           diagram_view::Theme theme = diagram_view::Theme::Light) {
  diagram_view::ExportOptions o;
  o.dpi = dpi;
  o.diagram.theme = theme;
  diagram_view::exportDiagram(net, format, path, o);
}

}  // namespace

TEST(DiagramExport, SvgIsWellFormedXmlWithTheLabels) {
  QTemporaryDir dir;
  const QString path = dir.filePath("d.svg");
  write(ExportFormat::Svg, path, diagram_test::smallThsa());
  const QByteArray svg = readAll(path);
  QXmlStreamReader xml(svg);
  int elements = 0;
  bool root = false;
  while (!xml.atEnd()) {
    if (xml.readNext() == QXmlStreamReader::StartElement) {
      if (elements == 0) root = xml.name() == QLatin1String("svg");
      ++elements;
    }
  }
  EXPECT_FALSE(xml.hasError()) << xml.errorString().toStdString();
  EXPECT_TRUE(root);
  EXPECT_GT(elements, 30);
  EXPECT_TRUE(svg.contains("THSA test")) << "title missing";
  const QString xmllint = QStandardPaths::findExecutable("xmllint");
  if (!xmllint.isEmpty()) {
    EXPECT_EQ(QProcess::execute(xmllint, {"--noout", path}), 0);
  }
}

TEST(DiagramExport, PdfIsVectorAndRendersWithPoppler) {
  QTemporaryDir dir;
  const QString path = dir.filePath("d.pdf");
  write(ExportFormat::Pdf, path, spec::buildTensorNetwork(spec::makeSpecPreset("thsa"), 8));
  EXPECT_TRUE(readAll(path).startsWith("%PDF-"));
  const QString pdftoppm = QStandardPaths::findExecutable("pdftoppm");
  if (pdftoppm.isEmpty()) GTEST_SKIP() << "pdftoppm (poppler-utils) not installed";
  ASSERT_EQ(QProcess::execute(pdftoppm, {"-png", "-r", "72", "-singlefile", path, dir.filePath("page")}), 0);
  const QImage page(dir.filePath("page.png"));
  ASSERT_FALSE(page.isNull());
  const QSizeF points = diagram_view::diagramPageSize(spec::buildTensorNetwork(spec::makeSpecPreset("thsa"), 8), {});
  EXPECT_NEAR(page.width(), points.width(), 2.0);
  EXPECT_NEAR(page.height(), points.height(), 2.0);
  EXPECT_EQ(page.pixelColor(0, 0), QColor(Qt::white));
  EXPECT_GT(inkFraction(page), 0.01);
}

TEST(DiagramExport, PngHasTheRequestedResolution) {
  QTemporaryDir dir;
  const auto net = diagram_test::smallThsa();
  const QSizeF points = diagram_view::diagramPageSize(net, {});
  for (const double dpi : {72.0, 300.0}) {
    const QString path = dir.filePath(QString("d%1.png").arg(dpi));
    write(ExportFormat::Png, path, net, dpi);
    const QImage png(path);
    ASSERT_FALSE(png.isNull());
    EXPECT_EQ(png.width(), static_cast<int>(std::ceil(points.width() * dpi / 72.0)));
    EXPECT_EQ(png.height(), static_cast<int>(std::ceil(points.height() * dpi / 72.0)));
    EXPECT_NEAR(png.dotsPerMeterX() * 0.0254, dpi, 0.5);
    EXPECT_EQ(png.pixelColor(0, 0), QColor(Qt::white));
    EXPECT_GT(inkFraction(png), 0.01);
  }
}

TEST(DiagramExport, DarkThemeKeepsItsBackground) {
  const QImage dark = diagram_view::renderDiagram(diagram_test::smallThsa(), {diagram_view::Theme::Dark}, 72);
  EXPECT_LT(dark.pixelColor(0, 0).lightness(), 60);
  EXPECT_GT(inkFraction(dark), 0.01);
}

TEST(DiagramExport, DotParsesBackWithGraphviz) {
  QTemporaryDir dir;
  const QString path = dir.filePath("d.dot");
  const auto net = spec::buildTensorNetwork(spec::makeSpecPreset("mhsa"), 8);
  write(ExportFormat::Dot, path, net);
  const std::string dot = readAll(path).toStdString();
  const auto layout = diagram_view::GraphvizEngine::layout(dot);
  int tensors = 0;
  for (const auto& n : layout.nodes) tensors += n.name[0] == 't';
  EXPECT_EQ(tensors, static_cast<int>(net.nodes.size()));
  EXPECT_EQ(layout.clusters.size(), net.boxes.size());
  EXPECT_NE(dot.find("W<SUP>Q</SUP>"), std::string::npos);  // labels travel with the graph
}

TEST(DiagramExport, TikzIsAStandalonePictureOfTheLayout) {
  QTemporaryDir dir;
  const QString path = dir.filePath("d.tex");
  write(ExportFormat::Tikz, path, spec::buildTensorNetwork(spec::makeSpecPreset("skip_right"), 8));
  const QString tex = QString::fromUtf8(readAll(path));
  EXPECT_TRUE(tex.contains("\\documentclass[tikz"));
  EXPECT_TRUE(tex.contains("\\begin{tikzpicture}"));
  EXPECT_TRUE(tex.contains("\\end{tikzpicture}"));
  EXPECT_TRUE(tex.contains("{$W^{Q}$}"));
  EXPECT_TRUE(tex.contains("\\draw[softmax]"));
  EXPECT_TRUE(tex.contains("circle (4.00pt)"));  // the softmax ball
  EXPECT_EQ(tex.count("\\node[core]"), 1);        // A
  for (QChar c : tex) EXPECT_LT(c.unicode(), 0x80) << "non-ASCII in TikZ: " << QString(c).toStdString();
  const QString pdflatex = QStandardPaths::findExecutable("pdflatex");
  if (pdflatex.isEmpty()) return;
  QProcess latex;
  latex.setWorkingDirectory(dir.path());
  latex.start(pdflatex, {"-interaction=nonstopmode", "-halt-on-error", path});
  ASSERT_TRUE(latex.waitForFinished(120000));
  EXPECT_EQ(latex.exitCode(), 0) << latex.readAllStandardOutput().right(2000).toStdString();
}

TEST(DiagramExport, LabelsBecomeLatex) {
  const auto tex = diagram_view::diagramTikz(diagram_test::smallThsa(), {});
  EXPECT_NE(tex.find("1/$\\sqrt{R}$"), std::string::npos) << "α label";
  EXPECT_NE(tex.find("\\Omega _{r}"), std::string::npos) << "equation";
  EXPECT_NE(tex.find("$X^{Q}$"), std::string::npos);
}

TEST(DiagramExport, ParsesFormatsAndRejectsOthers) {
  EXPECT_EQ(diagram_view::parseExportFormat("tikz"), ExportFormat::Tikz);
  EXPECT_EQ(diagram_view::parseExportFormat("svg"), ExportFormat::Svg);
  EXPECT_FALSE(diagram_view::parseExportFormat("jpeg").has_value());
  EXPECT_EQ(diagram_view::exportExtension(ExportFormat::Tikz), ".tex");
  EXPECT_THROW(write(ExportFormat::Png, "/nonexistent-dir/d.png", diagram_test::smallThsa()), std::runtime_error);
  EXPECT_THROW(write(ExportFormat::Tikz, "/nonexistent-dir/d.tex", diagram_test::smallThsa()), std::runtime_error);
}
