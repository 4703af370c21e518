#pragma once
// Light and dark looks shared by every viz widget, and the colour maps and palettes they use.

#include <QColor>

#include "qcp.h"

namespace tensorscope::viz::detail {

struct Theme {
  bool dark = false;
  QColor background;   // whole plot
  QColor panel;        // inside axis rects
  QColor text;         // labels, titles, legend
  QColor mutedText;    // secondary annotations
  QColor axis;         // axis lines and ticks
  QColor grid;
  QColor subGrid;
  QColor legendBackground;
  QColor legendBorder;
  QColor reference;    // reference lines (heads, zero)
  QColor hatch;        // frozen-mask hatching
};

const Theme& themeFor(bool dark);

/// Styles background, every axis rect and axis (colour scales included), legend and text elements.
void applyTheme(QCustomPlot* plot, const Theme& theme);

/// Categorical colour i (Tableau-10 order; brighter variants on dark backgrounds).
QColor categoricalColour(int index, bool dark);
/// Line style i for distinguishing metrics of one run.
Qt::PenStyle lineStyle(int index);
/// Scatter shape i, cycling once the palette repeats.
QCPScatterStyle::ScatterShape scatterShape(int index);

/// Sequential map for values in [0, 1] (viridis).
QCPColorGradient sequentialGradient();
/// Diverging map with white at the centre (RdBu reversed).
QCPColorGradient divergingGradient(bool dark = false);

}  // namespace tensorscope::viz::detail
