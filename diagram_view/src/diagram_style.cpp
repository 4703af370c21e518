#include "diagram_view/diagram_style.h"

#include <cmath>

namespace tensorscope::diagram_view {

std::optional<Theme> parseTheme(std::string_view text) {
  if (text == "light") return Theme::Light;
  if (text == "dark") return Theme::Dark;
  return std::nullopt;
}

QString themeName(Theme theme) { return theme == Theme::Dark ? "dark" : "light"; }

DiagramPalette paletteFor(Theme theme) {
  DiagramPalette p;
  if (theme == Theme::Dark) {
    p.background = QColor("#1e1f22");
    p.ink = QColor("#d8d8d8");
    p.text = QColor("#f0f0f0");
    p.muted_text = QColor("#b8bcc4");
    p.input_fill = QColor("#2e4a66");
    p.weight_fill = QColor("#2b2d31");
    p.core_fill = QColor("#6b4420");
    p.core_outline = QColor("#f0a860");
    p.constant_fill = QColor("#3a3b40");
    p.op_fill = QColor("#34363b");
    p.output_fill = QColor("#2f4f3a");
    p.box_outline = QColor("#c8c8c8");
    p.selection = QColor("#5ea3ff");
  } else {
    p.background = QColor(Qt::white);
    p.ink = QColor("#1a1a1a");
    p.text = QColor("#111111");
    p.muted_text = QColor("#3c4250");
    p.input_fill = QColor("#dce8f5");
    p.weight_fill = QColor(Qt::white);
    p.core_fill = QColor("#fde3c4");
    p.core_outline = QColor("#b3560f");
    p.constant_fill = QColor("#ececec");
    p.op_fill = QColor("#f4f4f4");
    p.output_fill = QColor("#e0f0e3");
    p.box_outline = QColor("#333333");
    p.selection = QColor("#1f6fd6");
  }
  return p;
}

QString diagramFontFamily() { return QStringLiteral("DejaVu Serif"); }

namespace {
// Pixel sizes in scene units (points): independent of any screen's DPI, so the layout is the
// same on screen and in every export.
QFont makeFont(double size, bool italic, bool bold) {
  QFont f(diagramFontFamily());
  f.setPixelSize(static_cast<int>(std::lround(size)));
  f.setItalic(italic);
  f.setBold(bold);
  f.setStyleHint(QFont::Serif);
  return f;
}
}  // namespace

QFont tensorFont() { return makeFont(style::kTensorFontSize, true, false); }
QFont legFont(bool sizes) { return makeFont(style::kLegFontSize, !sizes, false); }
QFont titleFont() { return makeFont(style::kTitleFontSize, false, true); }
QFont equationFont() { return makeFont(style::kEquationFontSize, false, false); }

}  // namespace tensorscope::diagram_view
