#include "theme.h"

#include <array>

namespace tensorscope::viz::detail {

namespace {

Theme makeLight() {
  Theme t;
  t.dark = false;
  t.background = QColor(255, 255, 255);
  t.panel = QColor(255, 255, 255);
  t.text = QColor(33, 37, 41);
  t.mutedText = QColor(108, 117, 125);
  t.axis = QColor(90, 96, 104);
  t.grid = QColor(222, 226, 230);
  t.subGrid = QColor(241, 243, 245);
  t.legendBackground = QColor(255, 255, 255, 225);
  t.legendBorder = QColor(206, 212, 218);
  t.reference = QColor(120, 120, 120);
  t.hatch = QColor(20, 20, 20, 170);
  return t;
}

Theme makeDark() {
  Theme t;
  t.dark = true;
  t.background = QColor(30, 32, 36);
  t.panel = QColor(36, 39, 44);
  t.text = QColor(226, 228, 231);
  t.mutedText = QColor(154, 160, 168);
  t.axis = QColor(160, 166, 174);
  t.grid = QColor(58, 62, 69);
  t.subGrid = QColor(46, 49, 55);
  t.legendBackground = QColor(36, 39, 44, 230);
  t.legendBorder = QColor(80, 85, 94);
  t.reference = QColor(170, 170, 170);
  t.hatch = QColor(10, 10, 10, 190);
  return t;
}

void styleAxis(QCPAxis* axis, const Theme& t) {
  axis->setBasePen(QPen(t.axis, 1));
  axis->setTickPen(QPen(t.axis, 1));
  axis->setSubTickPen(QPen(t.axis, 1));
  axis->setLabelColor(t.text);
  axis->setTickLabelColor(t.text);
  axis->grid()->setPen(QPen(t.grid, 1, Qt::SolidLine));
  axis->grid()->setSubGridPen(QPen(t.subGrid, 1, Qt::DotLine));
  axis->grid()->setZeroLinePen(Qt::NoPen);
}

}  // namespace

const Theme& themeFor(bool dark) {
  static const Theme light = makeLight();
  static const Theme darkTheme = makeDark();
  return dark ? darkTheme : light;
}

void applyTheme(QCustomPlot* plot, const Theme& t) {
  plot->setBackground(QBrush(t.background));
  for (QCPAxisRect* rect : plot->axisRects()) {
    rect->setBackground(QBrush(t.panel));
    for (QCPAxis* axis : rect->axes()) styleAxis(axis, t);
  }
  for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
    if (auto* text = qobject_cast<QCPTextElement*>(element)) text->setTextColor(t.text);
    if (auto* scale = qobject_cast<QCPColorScale*>(element)) styleAxis(scale->axis(), t);
    if (auto* legend = qobject_cast<QCPLegend*>(element)) {
      legend->setBrush(QBrush(t.legendBackground));
      legend->setBorderPen(QPen(t.legendBorder));
      legend->setTextColor(t.text);
    }
  }
  // Legends placed inside an axis rect are not in the top-level layout.
  if (plot->legend) {
    plot->legend->setBrush(QBrush(t.legendBackground));
    plot->legend->setBorderPen(QPen(t.legendBorder));
    plot->legend->setTextColor(t.text);
  }
}

QColor categoricalColour(int index, bool dark) {
  static const std::array<QColor, 10> kTableau = {
      QColor(78, 121, 167), QColor(242, 142, 43), QColor(225, 87, 89), QColor(118, 183, 178),
      QColor(89, 161, 79),  QColor(237, 201, 72), QColor(176, 122, 161), QColor(255, 157, 167),
      QColor(156, 117, 95), QColor(186, 176, 172)};
  const QColor c = kTableau[static_cast<std::size_t>(index) % kTableau.size()];
  return dark ? c.lighter(125) : c;
}

Qt::PenStyle lineStyle(int index) {
  static const std::array<Qt::PenStyle, 5> kStyles = {Qt::SolidLine, Qt::DashLine, Qt::DotLine,
                                                      Qt::DashDotLine, Qt::DashDotDotLine};
  return kStyles[static_cast<std::size_t>(index) % kStyles.size()];
}

QCPScatterStyle::ScatterShape scatterShape(int index) {
  static const std::array<QCPScatterStyle::ScatterShape, 5> kShapes = {
      QCPScatterStyle::ssDisc, QCPScatterStyle::ssSquare, QCPScatterStyle::ssTriangle,
      QCPScatterStyle::ssDiamond, QCPScatterStyle::ssTriangleInverted};
  return kShapes[static_cast<std::size_t>(index / 10) % kShapes.size()];
}

QCPColorGradient sequentialGradient() {
  QCPColorGradient g;
  g.setNanHandling(QCPColorGradient::nhTransparent);  // a masked (−∞) or missing entry is not a colour
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(68, 1, 84));
  g.setColorStopAt(0.125, QColor(71, 44, 122));
  g.setColorStopAt(0.25, QColor(59, 81, 139));
  g.setColorStopAt(0.375, QColor(44, 113, 142));
  g.setColorStopAt(0.5, QColor(33, 144, 141));
  g.setColorStopAt(0.625, QColor(39, 173, 129));
  g.setColorStopAt(0.75, QColor(92, 200, 99));
  g.setColorStopAt(0.875, QColor(170, 220, 50));
  g.setColorStopAt(1.0, QColor(253, 231, 37));
  return g;
}

QCPColorGradient divergingGradient(bool dark) {
  QCPColorGradient g;
  g.setNanHandling(QCPColorGradient::nhTransparent);
  g.clearColorStops();
  if (dark) {  // zero is the dark page, not a white glare; the ends keep RdBu's hues
    g.setColorStopAt(0.0, QColor(67, 147, 230));
    g.setColorStopAt(0.25, QColor(42, 86, 138));
    g.setColorStopAt(0.5, QColor(48, 50, 56));
    g.setColorStopAt(0.75, QColor(150, 60, 52));
    g.setColorStopAt(1.0, QColor(240, 80, 60));
    return g;
  }
  g.setColorStopAt(0.0, QColor(33, 102, 172));
  g.setColorStopAt(0.25, QColor(146, 197, 222));
  g.setColorStopAt(0.5, QColor(247, 247, 247));
  g.setColorStopAt(0.75, QColor(244, 165, 130));
  g.setColorStopAt(1.0, QColor(178, 24, 43));
  return g;
}

}  // namespace tensorscope::viz::detail
