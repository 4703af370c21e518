#pragma once
/// How a figure for a paper is laid out: its physical size (millimetres, or a journal column),
/// the resolution of raster output, the font size in points, where the legend goes and which theme
/// it is drawn in. PlotWidget::exportFigure renders a plot at exactly this size, whatever the size
/// of the dock it sits in; the curves plot also honours the run and metric selection.

#include <QList>
#include <QRectF>
#include <QSize>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <optional>

namespace tensorscope::viz {

enum class LegendPosition { Top, Right, Bottom, Inside, None };
/// Journal column widths: 88 mm (single), 120 mm (one and a half), 180 mm (double).
enum class ColumnPreset { Single, OneAndHalf, Double, Custom };
/// The theme a figure is drawn in: as the view shows it, or light / dark whatever the view shows.
enum class FigureTheme { AsShown, Light, Dark };

struct FigureOptions {
  double widthMm = 88;
  double heightMm = 66;
  double dpi = 300;    ///< raster (PNG) only; SVG and PDF are vector at the same physical size
  double fontPt = 8;   ///< tick labels, axis labels and legend; titles are 10% larger
  LegendPosition legend = LegendPosition::Top;
  FigureTheme theme = FigureTheme::Light;
  /// Curves only: the runs and metrics to draw (empty: every one).
  QStringList runs, metrics;

  /// The preset's width with its default height (3:4 for one column, 1:2 for two).
  static FigureOptions forColumn(ColumnPreset preset);
  /// The preset whose width this is (Custom when none).
  ColumnPreset column() const;
  QSizeF sizeMm() const { return {widthMm, heightMm}; }
  /// Pixels of the PNG: the physical size at `dpi` (88 mm at 300 dpi: 1039 px).
  QSize pixelSize() const;
  bool operator==(const FigureOptions&) const = default;
};

double columnWidthMm(ColumnPreset preset);
double columnHeightMm(ColumnPreset preset);
/// "top", "right", "bottom", "inside", "none" (for settings and scripts).
QString toString(LegendPosition position);
std::optional<LegendPosition> parseLegendPosition(const QString& name);
/// "single", "one_and_half", "double", "custom".
QString toString(ColumnPreset preset);
std::optional<ColumnPreset> parseColumnPreset(const QString& name);
/// "as_shown", "light", "dark".
QString toString(FigureTheme theme);
std::optional<FigureTheme> parseFigureTheme(const QString& name);

/// Where the last export laid out a figure's parts, in its layout units (the figure's physical
/// size at the fonts' logical DPI, 96 on most systems; origin top left), to check that nothing is
/// clipped.
struct FigureLayout {
  QRectF figure;
  QRectF legend;             ///< empty when no legend is drawn
  QList<QRectF> titles;      ///< every title text element (its text's bounding box)
  QList<QRectF> axisRects;   ///< the plotting areas
  QList<QRectF> axisOuterRects;  ///< the plotting areas with their tick and axis labels
  int legendColumns = 0, legendRows = 0, legendItems = 0;
  int plottablesDrawn = 0;  ///< visible plottables with data (graphs, colour maps)
};

}  // namespace tensorscope::viz
