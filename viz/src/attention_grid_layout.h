#pragma once
// Layout of AttentionMapGrid: how many maps per grid row, how large each map is, and the
// QCustomPlot structure (one axis rect + colour map per map, shared colour scale) built from it.
// Margins are set by hand so every map gets the same square plotting area whether or not its
// axes carry tick labels.

#include <QFont>
#include <QSize>
#include <functional>
#include <vector>

#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"
#include "viz/attention_map_grid.h"

class QStyle;

namespace tensorscope::viz {

struct GridGeometry {
  int columns = 1;
  int side = 96;              // pixels of one map's plotting area
  int leftLabelled = 0;       // left margin of the first column (tick labels + layer name)
  int top = 0;                // above each map (its title)
  int bottomLabelled = 0;     // below the last grid row of a layer (key tick labels)
  int gap = 3;                // the other margins
  int titleHeight = 0;
  int scaleWidth = 64;
  QFont tickFont, labelFont;
  QStringList rowLabels, colLabels;
  detail::TickPlan xPlan, yPlan;
  QSize plotSize;
  QString signature;          // everything that needs a rebuild when it changes
};

/// `figure`: laid out for an exported figure rather than the dock: every map of a layer on one
/// row while the maps stay at least kFigureMinSide, and a narrower colour scale.
GridGeometry planGrid(const std::vector<std::vector<MatrixData>>& maps, const QStringList& tokens, int maxColumns,
                      const QSize& viewport, const QStyle* style, bool figure = false);

struct GridCell {
  QCPAxisRect* rect = nullptr;
  QCPColorMap* map = nullptr;
  int layer = 0, index = 0;
};

struct AttentionMapGrid::Grid {
  QCPTextElement* title = nullptr;
  QCPLayoutGrid* layout = nullptr;
  QCPColorScale* scale = nullptr;
  QCPLayoutGrid* scaleHolder = nullptr;  // scale on top, a spacer below: short on tall grids
  std::vector<GridCell> cells;
  QString signature;

  /// Replaces the default axis rect by title, map grid and colour scale.
  void build(QCustomPlot* plot);
  /// Fits the structure to `g` (rebuilding only when needed) and copies the map data in.
  /// Returns true when axis rects were created.
  bool populate(QCustomPlot* plot, const std::vector<std::vector<MatrixData>>& maps, const GridGeometry& g,
                const std::function<QString(int, int)>& mapTitle, const std::function<QString(int)>& layerName);
  void setTitle(const QString& text) { title->setText(text); }
  void themeChanged(const detail::Theme& theme);
};

}  // namespace tensorscope::viz
