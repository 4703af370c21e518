#pragma once
/// How a tensor diagram is drawn: theme, leg-label mode and the colours and sizes of each element.
/// Sizes are in points (1/72 inch); the scene's unit is the point, so a PNG at D dpi is
/// D/72 pixels per scene unit.

#include <QColor>
#include <QFont>
#include <QString>
#include <optional>
#include <string_view>

namespace tensorscope::diagram_view {

enum class Theme { Light, Dark };

/// Reads "light" or "dark".
std::optional<Theme> parseTheme(std::string_view text);
QString themeName(Theme theme);

/// Everything that changes what the diagram looks like (the network aside).
struct DiagramOptions {
  Theme theme = Theme::Light;
  bool show_sizes = false;     ///< leg labels show sizes ("4") instead of symbols ("H")
  bool show_title = true;      ///< title and equation above the drawing
  bool cosmetic_pens = false;  ///< screen: lines keep their pixel width at any zoom; exports: off

  bool operator==(const DiagramOptions&) const = default;
};

/// Colours of one theme.
struct DiagramPalette {
  QColor background;
  QColor ink;            ///< lines, outlines, dots, balls
  QColor text;           ///< tensor labels, title
  QColor muted_text;     ///< equation, leg labels
  QColor input_fill;     ///< X
  QColor weight_fill;    ///< W^Q, W^K, ...
  QColor core_fill;      ///< C and its factors
  QColor core_outline;
  QColor constant_fill;  ///< fixed tensors (identity, ones)
  QColor op_fill;        ///< elementwise operation boxes
  QColor output_fill;
  QColor box_outline;    ///< dotted softmax box
  QColor selection;
};

DiagramPalette paletteFor(Theme theme);

/// Geometry and typography shared by the scene, the Graphviz input and the TikZ writer.
namespace style {
constexpr double kTensorDiameter = 38.0;  ///< circle of a tensor node
constexpr double kOpSide = 24.0;          ///< square of an elementwise operation
constexpr double kHyperedgeDot = 7.0;     ///< diameter of a batch-multiplication dot
constexpr double kBallDiameter = 8.0;     ///< softmax ball
constexpr double kLineWidth = 1.1;
constexpr double kOutlineWidth = 1.3;
constexpr double kCoreOutlineWidth = 2.0;
constexpr double kMargin = 16.0;          ///< around everything in exports
constexpr double kTensorFontSize = 13.0;
constexpr double kLegFontSize = 10.0;
constexpr double kTitleFontSize = 13.0;
constexpr double kEquationFontSize = 10.0;
}  // namespace style

/// The serif family used for every label (DejaVu Serif on Debian; Qt substitutes if missing).
QString diagramFontFamily();
QFont tensorFont();
QFont legFont(bool sizes);
QFont titleFont();
QFont equationFont();

}  // namespace tensorscope::diagram_view
