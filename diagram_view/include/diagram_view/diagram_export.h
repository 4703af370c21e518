#pragma once
/// Exports of a tensor diagram, usable without a window (an offscreen QApplication suffices for
/// the rendered formats; DOT and TikZ need none): SVG and PDF (vector), PNG at a chosen DPI,
/// Graphviz DOT (the graph that is laid out) and TikZ (a standalone LaTeX picture with the
/// layout's positions). Every format draws what the screen shows for the same options, on the
/// theme's background (white for light).

#include <QImage>
#include <QString>
#include <optional>
#include <string>
#include <string_view>

#include "diagram_view/diagram_style.h"
#include "spec/tensor_network.h"

namespace tensorscope::diagram_view {

enum class ExportFormat { Svg, Pdf, Png, Dot, Tikz };

/// Reads "svg", "pdf", "png", "dot" or "tikz".
std::optional<ExportFormat> parseExportFormat(std::string_view text);
/// The usual file extension, e.g. ".tex" for TikZ.
QString exportExtension(ExportFormat format);

struct ExportOptions {
  DiagramOptions diagram;  ///< cosmetic_pens is ignored: exports scale their lines
  double dpi = 300;        ///< PNG only
  /// > 0: SVG, PDF and PNG are this many millimetres wide (a journal column), the drawing scaled
  /// to it and the height in proportion; 0: the drawing's natural size (1 scene unit = 1 pt).
  double widthMm = 0;
};

/// Writes `network` to `path` in `format`. Throws std::runtime_error with the reason on failure.
/// SVG, PDF and PNG need a QGuiApplication (QApplication) to exist.
void exportDiagram(const spec::TensorNetwork& network, ExportFormat format, const QString& path,
                   const ExportOptions& options);

/// The drawing as an image at `dpi` (1 point = dpi/72 pixels), on the theme's background.
QImage renderDiagram(const spec::TensorNetwork& network, const DiagramOptions& options, double dpi);

/// Size of the drawing in points (what the PDF page and SVG canvas measure).
QSizeF diagramPageSize(const spec::TensorNetwork& network, const DiagramOptions& options);

/// The Graphviz DOT text of the laid-out graph, with labels.
std::string diagramDot(const spec::TensorNetwork& network, const DiagramOptions& options);

/// A standalone LaTeX document with one tikzpicture reproducing the layout.
std::string diagramTikz(const spec::TensorNetwork& network, const DiagramOptions& options);

}  // namespace tensorscope::diagram_view
