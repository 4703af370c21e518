#include "viz/attention_map_grid.h"

#include <QComboBox>
#include <QDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QTextStream>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "attention_grid_layout.h"
#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::viz {

std::vector<MatrixData> perHeadMean(const std::vector<MatrixData>& channels, int groupSize) {
  if (groupSize <= 1) return channels;
  std::vector<MatrixData> heads;
  for (std::size_t start = 0; start < channels.size(); start += static_cast<std::size_t>(groupSize)) {
    const std::size_t end = std::min(channels.size(), start + static_cast<std::size_t>(groupSize));
    MatrixData mean = channels[start];
    int count = 1;
    for (std::size_t k = start + 1; k < end; ++k) {
      const MatrixData& m = channels[k];
      if (m.rows != mean.rows || m.cols != mean.cols || m.values.size() != mean.values.size()) continue;
      for (std::size_t i = 0; i < mean.values.size(); ++i) mean.values[i] += m.values[i];
      ++count;
    }
    for (float& v : mean.values) v /= static_cast<float>(count);
    heads.push_back(std::move(mean));
  }
  return heads;
}

AttentionMapGrid::AttentionMapGrid(QWidget* parent)
    : PlotWidget(parent, /*scrollable=*/true), grid_(std::make_unique<Grid>()) {
  setExportName(QStringLiteral("attention_maps"));
  auto* bar = controlBar();
  bar->addWidget(new QLabel(tr("Maps"), this));
  aggregationBox_ = new QComboBox(this);
  aggregationBox_->addItem(tr("Per-head mean"), static_cast<int>(Aggregation::PerHeadMean));
  aggregationBox_->addItem(tr("Per channel"), static_cast<int>(Aggregation::PerChannel));
  aggregationBox_->setEnabled(false);
  aggregationBox_->setToolTip(tr("THSA: one map per channel, or the mean over each head's channels"));
  bar->addWidget(aggregationBox_);
  bar->addStretch(1);
  connect(aggregationBox_, &QComboBox::currentIndexChanged, this,
          [this] { setAggregation(static_cast<Aggregation>(aggregationBox_->currentData().toInt())); });
  grid_->build(plot());
  connect(plot(), &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
    const Hit hit = hitAt(event->position());
    if (hit.layer < 0) return;
    Q_EMIT mapClicked(hit.layer, hit.index);
    if (enlargeOnClick_) showEnlarged(hit.layer, hit.index);
  });
  showMessage(tr("No attention maps yet"));
  restyle();
}

AttentionMapGrid::~AttentionMapGrid() = default;

void AttentionMapGrid::setMaps(const std::vector<std::vector<MatrixData>>& maps, const QStringList& tokens,
                               const std::vector<int>& layerIds, double step) {
  raw_ = maps;
  tokens_ = tokens;
  layerIds_ = layerIds;
  step_ = step;
  aggregate();
  layoutGrid();
  refreshEnlarged();
}

void AttentionMapGrid::clear(const QString& message) {
  raw_.clear();
  shown_.clear();
  showMessage(message);
}

void AttentionMapGrid::setGroupSize(int channelsPerHead) {
  groupSize_ = std::max(1, channelsPerHead);
  aggregationBox_->setEnabled(groupSize_ > 1);
  aggregate();
  layoutGrid();
  refreshEnlarged();
}

void AttentionMapGrid::setAggregation(Aggregation aggregation) {
  {
    const QSignalBlocker block(aggregationBox_);
    aggregationBox_->setCurrentIndex(aggregationBox_->findData(static_cast<int>(aggregation)));
  }
  if (aggregation == aggregation_) return;
  aggregation_ = aggregation;
  enlargedKey_ = {-1, -1};  // indices change meaning
  aggregate();
  layoutGrid();
}

AttentionMapGrid::Aggregation AttentionMapGrid::aggregation() const {
  return groupSize_ > 1 ? aggregation_ : Aggregation::PerChannel;
}

void AttentionMapGrid::setMaxColumns(int columns) {
  maxColumns_ = std::max(1, columns);
  layoutGrid();
}

void AttentionMapGrid::aggregate() {
  shown_.clear();
  const bool mean = aggregation() == Aggregation::PerHeadMean;
  for (const auto& layer : raw_) shown_.push_back(mean ? perHeadMean(layer, groupSize_) : layer);
}

int AttentionMapGrid::mapCount(int layer) const {
  return layer >= 0 && layer < layerCount() ? static_cast<int>(shown_[layer].size()) : 0;
}

const MatrixData& AttentionMapGrid::displayedMap(int layer, int index) const { return shown_.at(layer).at(index); }

QString AttentionMapGrid::layerName(int layer) const {
  const int id = layer < static_cast<int>(layerIds_.size()) ? layerIds_[layer] : layer;
  return tr("layer %1").arg(id);
}

QString AttentionMapGrid::mapTitle(int layer, int index) const {
  Q_UNUSED(layer);
  const bool channels = groupSize_ > 1 && aggregation() == Aggregation::PerChannel;
  return (channels ? QStringLiteral("c%1") : QStringLiteral("h%1")).arg(index);
}

void AttentionMapGrid::layoutGrid() {
  if (shown_.empty() || std::all_of(shown_.begin(), shown_.end(), [](const auto& l) { return l.empty(); })) {
    showMessage(tr("No attention maps yet"));
    return;
  }
  showPlot();
  QString title = tr("Probe attention");
  if (step_ >= 0) title += tr(" · step %1").arg(QString::number(step_, 'g', 12));
  if (groupSize_ > 1)
    title += aggregation() == Aggregation::PerHeadMean ? tr(" · head means (%1 ch.)").arg(groupSize_)
                                                       : tr(" · channels");
  const GridGeometry g = planGrid(shown_, tokens_, maxColumns_, viewportSize(), style());
  columns_ = g.columns;
  side_ = g.side;
  if (grid_->populate(plot(), shown_, g, [this](int l, int i) { return mapTitle(l, i); },
                      [this](int l) { return layerName(l); }))
    restyle();  // new axes take the theme
  grid_->setTitle(title);
  requestReplot();
}

QSize AttentionMapGrid::beginFigure(const FigureOptions& options, const QSize& size) {
  Q_UNUSED(options);
  const GridGeometry g = planGrid(shown_, tokens_, maxColumns_, QSize(size.width(), 1 << 20), style());
  if (grid_->populate(plot(), shown_, g, [this](int l, int i) { return mapTitle(l, i); },
                      [this](int l) { return layerName(l); }))
    restyle();
  return g.plotSize + QSize(0, 2);  // the grid's rows can round one unit past its planned height
}

void AttentionMapGrid::endFigure() { layoutGrid(); }

void AttentionMapGrid::viewportResized() {
  if (!shown_.empty()) layoutGrid();
}

bool AttentionMapGrid::isShown(int layer, int index) const {
  return !isShowingMessage() && layer >= 0 && layer < layerCount() && index >= 0 && index < mapCount(layer);
}

AttentionMapGrid::Hit AttentionMapGrid::hitAt(const QPointF& pos) const {
  for (const GridCell& c : grid_->cells) {
    if (!isShown(c.layer, c.index) || !c.rect->rect().contains(pos.toPoint())) continue;
    const MatrixData& m = shown_[c.layer][c.index];
    const int col = static_cast<int>(std::floor(c.rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x()) + 0.5));
    const int row = static_cast<int>(std::floor(c.rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y()) + 0.5));
    if (row < 0 || row >= m.rows || col < 0 || col >= m.cols) return {};
    return {c.layer, c.index, row, col};
  }
  return {};
}

QPointF AttentionMapGrid::cellCentre(int layer, int index, int row, int col) const {
  if (!isShown(layer, index)) return {-1, -1};
  for (const GridCell& c : grid_->cells)
    if (c.layer == layer && c.index == index)
      return {c.rect->axis(QCPAxis::atBottom)->coordToPixel(col), c.rect->axis(QCPAxis::atLeft)->coordToPixel(row)};
  return {-1, -1};
}

void AttentionMapGrid::hoverAt(const QPointF& pos) {
  const Hit hit = hitAt(pos);
  if (hit.layer < 0) {
    setHoverText(QString(), pos.toPoint());
    return;
  }
  const MatrixData& m = shown_[hit.layer][hit.index];
  QString text = layerName(hit.layer) + QStringLiteral(" · ") + mapTitle(hit.layer, hit.index);
  if (tokens_.size() == m.rows && tokens_.size() == m.cols)
    text += QStringLiteral("\nquery %1 “%2” → key %3 “%4”")
                .arg(hit.row)
                .arg(tokens_[hit.row])
                .arg(hit.col)
                .arg(tokens_[hit.col]);
  else
    text += QStringLiteral("\n[%1, %2]").arg(hit.row).arg(hit.col);
  text += QStringLiteral(": ") + detail::formatValue(m.at(hit.row, hit.col));
  setHoverText(text, pos.toPoint());
}

void AttentionMapGrid::showEnlarged(int layer, int index) {
  if (!isShown(layer, index)) return;
  if (!dialog_) {
    dialog_ = new QDialog(this);
    auto* layout = new QVBoxLayout(dialog_);
    layout->setContentsMargins(0, 0, 0, 0);
    enlarged_ = new MatrixHeatmap(dialog_);
    enlarged_->setExportName(QStringLiteral("attention_map"));
    enlarged_->setColourScale(MatrixHeatmap::ColourScale::Sequential, 0.0, 1.0);
    enlarged_->setAxisTitles(tr("key position"), tr("query position"));
    layout->addWidget(enlarged_);
    dialog_->resize(620, 560);
  }
  enlargedKey_ = {layer, index};
  refreshEnlarged();
  dialog_->show();
  dialog_->raise();
}

void AttentionMapGrid::refreshEnlarged() {
  const auto [layer, index] = enlargedKey_;
  if (!enlarged_ || !isShown(layer, index)) return;
  const MatrixData& m = shown_[layer][index];
  QString title = layerName(layer) + QStringLiteral(" · ") + mapTitle(layer, index);
  if (groupSize_ > 1 && aggregation() == Aggregation::PerHeadMean)
    title += tr(" (mean of channels %1–%2)").arg(index * groupSize_).arg((index + 1) * groupSize_ - 1);
  if (step_ >= 0) title += tr(" · step %1").arg(QString::number(step_, 'g', 12));
  enlarged_->setDarkTheme(isDarkTheme());
  enlarged_->setMatrix(m, title);
  const bool labelled = tokens_.size() == m.rows && tokens_.size() == m.cols;
  enlarged_->setLabels(labelled ? tokens_ : QStringList(), labelled ? tokens_ : QStringList());
  dialog_->setWindowTitle(title);
}

void AttentionMapGrid::writeCsv(QTextStream& out) const {
  out << "layer,map,query,key,query_token,key_token,value\n";
  for (int l = 0; l < layerCount(); ++l)
    for (int i = 0; i < mapCount(l); ++i) {
      const MatrixData& m = shown_[l][i];
      const bool labelled = tokens_.size() == m.rows && tokens_.size() == m.cols;
      const QString prefix = QString::number(l < static_cast<int>(layerIds_.size()) ? layerIds_[l] : l) +
                             QLatin1Char(',') + mapTitle(l, i) + QLatin1Char(',');
      for (int r = 0; r < m.rows; ++r)
        for (int c = 0; c < m.cols; ++c)
          out << prefix << r << ',' << c << ',' << (labelled ? csvField(tokens_[r]) : QString()) << ','
              << (labelled ? csvField(tokens_[c]) : QString()) << ',' << QString::number(m.at(r, c), 'g', 8)
              << '\n';
    }
}

void AttentionMapGrid::themeChanged() {
  grid_->themeChanged(theme());
  if (enlarged_) enlarged_->setDarkTheme(isDarkTheme());
}

}  // namespace tensorscope::viz
