#include "diagram_view/diagram_export.h"

#include <QApplication>
#include <QBuffer>
#include <QFile>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSvgGenerator>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "diagram_view/diagram_layout.h"
#include "diagram_view/diagram_scene.h"
#include "files/atomic_file.h"

namespace tensorscope::diagram_view {
namespace {

void requireApplication(const char* what) {
  if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
    throw std::runtime_error(std::string(what) + " export needs a QApplication (the offscreen platform will do)");
}

std::unique_ptr<DiagramScene> sceneFor(const spec::TensorNetwork& network, const DiagramOptions& options) {
  DiagramOptions o = options;
  o.cosmetic_pens = false;  // exports scale their lines with the drawing
  auto scene = std::make_unique<DiagramScene>();
  scene->setOptions(o);
  scene->setNetwork(network);
  return scene;
}

void paintScene(DiagramScene& scene, QPainter& painter, const QRectF& target) {
  painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  painter.fillRect(target, paletteFor(scene.options().theme).background);
  scene.render(&painter, target, scene.contentRect(), Qt::IgnoreAspectRatio);
}

// Every format is produced in memory and reaches the disk in one atomic write (a temporary file,
// fsync, rename): a full disk or an unwritable directory throws with the reason and leaves a
// previous file at `path` exactly as it was, never empty or truncated.
void writeBytes(const QString& path, std::string_view bytes) {
  files::writeFileAtomically(QFile::encodeName(path).toStdString(), bytes);
}

void writeBytes(const QString& path, const QByteArray& bytes) {
  writeBytes(path, std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
}

// The page in points: the drawing's own size, or scaled to `widthMm` with its aspect ratio.
QSizeF pagePoints(const DiagramScene& scene, double widthMm) {
  const QSizeF natural = scene.contentRect().size();
  if (widthMm <= 0 || natural.width() <= 0) return natural;
  const double width = widthMm / 25.4 * 72;
  return {width, natural.height() * width / natural.width()};
}

QByteArray svgBytes(DiagramScene& scene, double widthMm) {
  const QRectF page(QPointF(0, 0), pagePoints(scene, widthMm));
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setResolution(72);  // one SVG user unit = one point = one scene unit
  svg.setSize(QSize(static_cast<int>(std::ceil(page.width())), static_cast<int>(std::ceil(page.height()))));
  svg.setViewBox(page);
  svg.setTitle(QString::fromStdString(scene.network().title));
  svg.setDescription(QString::fromStdString(scene.network().equation));
  QPainter painter;
  if (!painter.begin(&svg)) throw std::runtime_error("cannot start the SVG painter");
  paintScene(scene, painter, page);
  painter.end();
  // The generator states width and height from whole points: state the exact size in mm.
  const qsizetype head = bytes.indexOf("<svg"), end = bytes.indexOf('>', head);
  if (head >= 0 && end > head) {
    QString tag = QString::fromUtf8(bytes.mid(head, end - head));
    tag.replace(QRegularExpression(QStringLiteral("\\bwidth=\"[^\"]*\"")),
                QStringLiteral("width=\"%1mm\"").arg(page.width() * 25.4 / 72, 0, 'g', 8));
    tag.replace(QRegularExpression(QStringLiteral("\\bheight=\"[^\"]*\"")),
                QStringLiteral("height=\"%1mm\"").arg(page.height() * 25.4 / 72, 0, 'g', 8));
    bytes.replace(head, end - head, tag.toUtf8());
  }
  return bytes;
}

QByteArray pdfBytes(DiagramScene& scene, double widthMm) {
  const QSizeF points = pagePoints(scene, widthMm);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  {
    QPdfWriter pdf(&buffer);
    pdf.setResolution(1200);
    pdf.setPageSize(QPageSize(points, QPageSize::Point, QString(), QPageSize::ExactMatch));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setTitle(QString::fromStdString(scene.network().title));
    pdf.setCreator("Tensorscope");
    QPainter painter;
    if (!painter.begin(&pdf)) throw std::runtime_error("cannot start the PDF painter");
    paintScene(scene, painter, QRectF(0, 0, pdf.width(), pdf.height()));
    painter.end();
  }
  return bytes;
}

QImage renderScene(DiagramScene& scene, double dpi, double widthMm = 0) {
  if (!(dpi >= 10 && dpi <= 2400)) throw std::runtime_error("the PNG resolution must be between 10 and 2400 dpi");
  const QSizeF points = pagePoints(scene, widthMm);
  const double k = dpi / 72.0;
  QImage image(static_cast<int>(std::ceil(points.width() * k)), static_cast<int>(std::ceil(points.height() * k)),
               QImage::Format_ARGB32_Premultiplied);
  if (image.isNull()) throw std::runtime_error("the picture is too large for memory at this resolution");
  const int dotsPerMeter = static_cast<int>(std::lround(dpi / 0.0254));
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  image.fill(paletteFor(scene.options().theme).background);
  QPainter painter(&image);
  paintScene(scene, painter, QRectF(0, 0, image.width(), image.height()));
  painter.end();
  return image;
}

}  // namespace

std::optional<ExportFormat> parseExportFormat(std::string_view text) {
  if (text == "svg") return ExportFormat::Svg;
  if (text == "pdf") return ExportFormat::Pdf;
  if (text == "png") return ExportFormat::Png;
  if (text == "dot") return ExportFormat::Dot;
  if (text == "tikz") return ExportFormat::Tikz;
  return std::nullopt;
}

QString exportExtension(ExportFormat format) {
  switch (format) {
    case ExportFormat::Svg: return ".svg";
    case ExportFormat::Pdf: return ".pdf";
    case ExportFormat::Png: return ".png";
    case ExportFormat::Dot: return ".dot";
    case ExportFormat::Tikz: return ".tex";
  }
  return {};
}

QImage renderDiagram(const spec::TensorNetwork& network, const DiagramOptions& options, double dpi) {
  requireApplication("PNG");
  auto scene = sceneFor(network, options);
  return renderScene(*scene, dpi);
}

QSizeF diagramPageSize(const spec::TensorNetwork& network, const DiagramOptions& options) {
  requireApplication("Rendered");
  return sceneFor(network, options)->contentRect().size();
}

std::string diagramDot(const spec::TensorNetwork& network, const DiagramOptions& options) {
  return networkToDot(network, options);
}

void exportDiagram(const spec::TensorNetwork& network, ExportFormat format, const QString& path,
                   const ExportOptions& options) {
  switch (format) {
    case ExportFormat::Dot: writeBytes(path, diagramDot(network, options.diagram)); return;
    case ExportFormat::Tikz: writeBytes(path, diagramTikz(network, options.diagram)); return;
    case ExportFormat::Svg: requireApplication("SVG"); writeBytes(path, svgBytes(*sceneFor(network, options.diagram), options.widthMm)); return;
    case ExportFormat::Pdf: requireApplication("PDF"); writeBytes(path, pdfBytes(*sceneFor(network, options.diagram), options.widthMm)); return;
    case ExportFormat::Png: {
      requireApplication("PNG");
      const QImage image = renderScene(*sceneFor(network, options.diagram), options.dpi, options.widthMm);
      QByteArray bytes;
      QBuffer buffer(&bytes);
      buffer.open(QIODevice::WriteOnly);
      if (!image.save(&buffer, "PNG")) throw std::runtime_error("cannot encode the PNG of " + path.toStdString());
      writeBytes(path, bytes);
      return;
    }
  }
}

}  // namespace tensorscope::diagram_view
