#include "attention_grid_layout.h"

#include <QFontMetrics>
#include <QStyle>
#include <algorithm>

namespace tensorscope::viz {

namespace {
constexpr int kMinSide = 64;      // below this a map stops being readable: wrap instead
constexpr int kComfortSide = 120; // maps shrink to fit the height only down to this
constexpr int kMaxSide = 240;
constexpr int kFigureMinSide = 44;  // a figure's maps: 11.6 mm, the heads of a layer on one row
constexpr int kTickLength = 3;

int gridRows(const std::vector<std::vector<MatrixData>>& maps, int columns) {
  int rows = 0;
  for (const auto& layer : maps) rows += std::max(1, (static_cast<int>(layer.size()) + columns - 1) / columns);
  return rows;
}
}  // namespace

GridGeometry planGrid(const std::vector<std::vector<MatrixData>>& maps, const QStringList& tokens, int maxColumns,
                      const QSize& viewport, const QStyle* style, bool figure) {
  GridGeometry g;
  const int minSide = figure ? kFigureMinSide : kMinSide;
  if (figure) g.scaleWidth = 50;
  g.tickFont.setPointSizeF(7.5);
  g.labelFont.setPointSizeF(8.5);
  const QFontMetrics tick(g.tickFont), label(g.labelFont);
  const MatrixData* first = nullptr;
  int widest = 0;
  for (const auto& layer : maps) {
    widest = std::max(widest, static_cast<int>(layer.size()));
    if (!first && !layer.empty()) first = &layer.front();
  }
  const int n = first ? first->rows : 0, m = first ? first->cols : 0;
  g.rowLabels = tokens.size() == n ? tokens : detail::indexLabels(n);
  g.colLabels = tokens.size() == m ? tokens : detail::indexLabels(m);
  int rowLabelWidth = 0;
  for (const QString& s : g.rowLabels) rowLabelWidth = std::max(rowLabelWidth, tick.horizontalAdvance(s));
  g.leftLabelled = rowLabelWidth + kTickLength + 8 + label.height() + 6;
  g.top = label.height() + 4;
  g.titleHeight = QFontMetrics(QFont(g.labelFont.family(), 10, QFont::Bold)).height() + 12;

  auto fit = [&](int width) {
    const int fixed = g.leftLabelled + g.gap + g.scaleWidth + 6;
    const int perMap = minSide + 2 * g.gap;
    const int fitting = std::max(1, (width - fixed + 2 * g.gap) / perMap);
    g.columns = std::clamp(std::min(maxColumns, widest), 1, fitting);
    const int byWidth = (width - fixed - (2 * g.columns - 1) * g.gap) / g.columns;
    g.side = std::clamp(byWidth, minSide, kMaxSide);
    g.xPlan = detail::planTicks(g.tickFont, g.colLabels, g.side, true);
    g.yPlan = detail::planTicks(g.tickFont, g.rowLabels, g.side, false);
    g.bottomLabelled = g.xPlan.extent + kTickLength + 8;
    const int rows = gridRows(maps, g.columns);
    const int layers = static_cast<int>(maps.size());
    const int fixedHeight = g.titleHeight + rows * (g.top + g.gap) + layers * (g.bottomLabelled - g.gap);
    const int byHeight = (viewport.height() - fixedHeight) / std::max(1, rows);
    // Fit the height when maps stay comfortable; otherwise keep them readable and scroll.
    g.side = std::clamp(std::min(g.side, std::max(byHeight, kComfortSide)), minSide, kMaxSide);
    g.xPlan = detail::planTicks(g.tickFont, g.colLabels, g.side, true);
    g.yPlan = detail::planTicks(g.tickFont, g.rowLabels, g.side, false);
    g.bottomLabelled = g.xPlan.extent + kTickLength + 8;
    const int height = g.titleHeight + rows * (g.top + g.side + g.gap) + layers * (g.bottomLabelled - g.gap);
    const int plotWidth = g.leftLabelled + g.columns * g.side + (2 * g.columns - 1) * g.gap + g.scaleWidth + 6;
    g.plotSize = QSize(plotWidth, height);
  };
  fit(viewport.width());
  if (figure) g.xPlan.step = g.yPlan.step = std::max(g.xPlan.step, g.yPlan.step);  // one stride, named in the title
  if (g.plotSize.height() > viewport.height())  // a vertical scroll bar will take some width
    fit(viewport.width() - style->pixelMetric(QStyle::PM_ScrollBarExtent));

  QStringList shape;
  for (const auto& layer : maps) {
    shape << QString::number(layer.size());
    for (const MatrixData& map : layer) shape << QStringLiteral("%1x%2").arg(map.rows).arg(map.cols);
  }
  g.signature = QStringLiteral("%1|%2|%3|%4|%5|%6|%7")
                    .arg(g.columns)
                    .arg(g.side)
                    .arg(g.scaleWidth)
                    .arg(shape.join(QLatin1Char(',')), g.rowLabels.join(QChar(0x1f)), g.colLabels.join(QChar(0x1f)))
                    .arg(g.plotSize.height());
  return g;
}

void AttentionMapGrid::Grid::build(QCustomPlot* plot) {
  plot->plotLayout()->clear();  // drops the default axis rect
  plot->plotLayout()->setRowSpacing(0);
  plot->plotLayout()->setColumnSpacing(6);
  title = new QCPTextElement(plot, QString(), QFont(QFont().family(), 10, QFont::Bold));
  plot->plotLayout()->addElement(0, 0, title);
  layout = new QCPLayoutGrid;
  layout->setRowSpacing(0);
  layout->setColumnSpacing(0);
  plot->plotLayout()->addElement(1, 0, layout);
  scale = new QCPColorScale(plot);
  scale->setDataRange(QCPRange(0, 1));
  scale->setGradient(detail::sequentialGradient());
  scale->setBarWidth(12);
  scale->axis()->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
  qSharedPointerCast<QCPAxisTickerFixed>(scale->axis()->ticker())->setTickStep(0.25);
  scaleHolder = new QCPLayoutGrid;
  scaleHolder->setRowSpacing(0);
  plot->plotLayout()->addElement(1, 1, scaleHolder);
  scaleHolder->addElement(0, 0, scale);
  scaleHolder->addElement(1, 0, new QCPLayoutElement(plot));
  plot->plotLayout()->setRowStretchFactor(0, 0.001);
}

bool AttentionMapGrid::Grid::populate(QCustomPlot* plot, const std::vector<std::vector<MatrixData>>& maps,
                                      const GridGeometry& g, const std::function<QString(int, int)>& mapTitle,
                                      const std::function<QString(int)>& layerName) {
  const bool rebuild = g.signature != signature;
  if (rebuild) {
    signature = g.signature;
    for (GridCell& c : cells) plot->removePlottable(c.map);
    cells.clear();
    layout->clear();
    QList<double> rowStretch, colStretch;
    int row = 0;
    for (int l = 0; l < static_cast<int>(maps.size()); ++l) {
      const int count = static_cast<int>(maps[l].size());
      const int rowsOfLayer = std::max(1, (count + g.columns - 1) / g.columns);
      for (int i = 0; i < count; ++i) {
        const int r = row + i / g.columns, c = i % g.columns;
        const bool left = c == 0, bottom = i / g.columns == rowsOfLayer - 1;
        auto* rect = new QCPAxisRect(plot, true);
        rect->setAutoMargins(QCP::msNone);
        rect->setMinimumSize(8, 8);
        rect->setMargins(QMargins(left ? g.leftLabelled : g.gap, g.top, g.gap, bottom ? g.bottomLabelled : g.gap));
        layout->addElement(r, c, rect);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        QCPAxis* topAxis = rect->axis(QCPAxis::atTop);
        QCPAxis* right = rect->axis(QCPAxis::atRight);
        const MatrixData& m = maps[l][i];
        x->setRange(-0.5, m.cols - 0.5);
        y->setRange(-0.5, m.rows - 0.5);
        y->setRangeReversed(true);
        for (QCPAxis* axis : {x, y, topAxis, right}) {
          axis->setVisible(true);
          axis->grid()->setVisible(false);
          axis->setTickLabelFont(g.tickFont);
          axis->setLabelFont(g.labelFont);
          axis->setTickLength(0, kTickLength);
          axis->setSubTicks(false);
          axis->setTicks(false);
          axis->setTickLabels(false);
          axis->setPadding(0);
        }
        topAxis->setLabel(mapTitle(l, i));
        topAxis->setLabelPadding(2);
        if (bottom) {
          x->setTicks(true);
          x->setTickLabels(true);
          detail::applyTicks(x, g.colLabels, g.xPlan);
        }
        if (left) {
          y->setTicks(true);
          y->setTickLabels(true);
          detail::applyTicks(y, g.rowLabels, g.yPlan);
          if (i == 0) y->setLabel(layerName(l));
          y->setLabelPadding(4);
        }
        auto* map = new QCPColorMap(x, y);
        map->setInterpolate(false);
        map->setColorScale(scale);
        map->data()->setSize(m.cols, m.rows);
        map->data()->setRange(QCPRange(0, m.cols - 1), QCPRange(0, m.rows - 1));
        cells.push_back({rect, map, l, i});
      }
      for (int k = 0; k < rowsOfLayer; ++k)
        rowStretch << g.top + g.side + (k == rowsOfLayer - 1 ? g.bottomLabelled : g.gap);
      row += rowsOfLayer;
    }
    for (int c = 0; c < layout->columnCount(); ++c) colStretch << (c == 0 ? g.leftLabelled : g.gap) + g.side + g.gap;
    layout->setRowStretchFactors(rowStretch);
    layout->setColumnStretchFactors(colStretch);
    scale->setMinimumSize(g.scaleWidth, 0);
    scale->setMaximumSize(g.scaleWidth, QWIDGETSIZE_MAX);
    const int gridHeight = g.plotSize.height() - g.titleHeight;
    const int scaleHeight = std::min(gridHeight, std::max(200, g.side + g.top + g.bottomLabelled));
    scaleHolder->setRowStretchFactors({double(scaleHeight), std::max(0.001, double(gridHeight - scaleHeight))});
    plot->setFixedSize(g.plotSize);
  }
  for (GridCell& c : cells) {
    const MatrixData& m = maps[c.layer][c.index];
    auto* data = c.map->data();
    for (int r = 0; r < m.rows; ++r)
      for (int k = 0; k < m.cols; ++k) data->setCell(k, r, m.at(r, k));
  }
  return rebuild;
}

void AttentionMapGrid::Grid::themeChanged(const detail::Theme& theme) {
  for (GridCell& c : cells)
    for (QCPAxis* axis : c.rect->axes()) axis->grid()->setVisible(false);
  title->setTextColor(theme.text);
}

}  // namespace tensorscope::viz
