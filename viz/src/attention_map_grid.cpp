#include "viz/attention_map_grid.h"

#include <QComboBox>
#include <QDialog>
#include <QHBoxLayout>
#include <QFontMetrics>
#include <QLabel>
#include <QScreen>
#include <QScrollArea>
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
  layerBox_ = new QComboBox(this);
  layerBox_->setToolTip(tr("Show one layer, or all"));
  headBox_ = new QComboBox(this);
  headBox_->setToolTip(tr("Show one head (its mean map or its channels), or all"));
  bar->addWidget(layerBox_);
  bar->addWidget(headBox_);
  bar->addStretch(1);
  updateFilterBoxes();
  connect(layerBox_, &QComboBox::currentIndexChanged, this, [this] { setLayerFilter(layerBox_->currentData().toInt()); });
  connect(headBox_, &QComboBox::currentIndexChanged, this, [this] { setHeadFilter(headBox_->currentData().toInt()); });
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
  updateFilterBoxes();
  aggregate();
  layoutGrid();
  refreshEnlarged();
}

int AttentionMapGrid::headCount() const {
  std::size_t widest = 0;
  for (const auto& layer : raw_) widest = std::max(widest, layer.size());
  const auto group = static_cast<std::size_t>(groupSize_);
  return static_cast<int>((widest + group - 1) / group);
}

void AttentionMapGrid::updateFilterBoxes() {
  const QSignalBlocker blockLayers(layerBox_), blockHeads(headBox_);
  const auto fill = [](QComboBox* box, const QString& all, const QString& item, const std::vector<int>& ids, int& filter) {
    box->clear();
    box->addItem(all, -1);
    for (int id : ids) box->addItem(item.arg(id), id);
    if (box->findData(filter) < 0) filter = -1;
    box->setCurrentIndex(box->findData(filter));
    box->setVisible(ids.size() > 1);
  };
  std::vector<int> layers, heads;
  for (std::size_t l = 0; l < raw_.size(); ++l)
    if (!raw_[l].empty()) layers.push_back(l < layerIds_.size() ? layerIds_[l] : static_cast<int>(l));
  for (int h = 0; h < headCount(); ++h) heads.push_back(h);
  fill(layerBox_, tr("All layers"), tr("layer %1"), layers, layerFilter_);
  fill(headBox_, tr("All heads"), tr("head %1"), heads, headFilter_);
}

void AttentionMapGrid::setLayerFilter(int layerId) {
  if (layerId == layerFilter_) return;
  layerFilter_ = layerId;
  updateFilterBoxes();
  enlargedKey_ = {-1, -1};  // indices change meaning
  aggregate();
  layoutGrid();
}

void AttentionMapGrid::setHeadFilter(int head) {
  if (head == headFilter_) return;
  headFilter_ = head;
  updateFilterBoxes();
  enlargedKey_ = {-1, -1};
  aggregate();
  layoutGrid();
}

void AttentionMapGrid::clear(const QString& message) {
  raw_.clear();
  shown_.clear();
  shownIds_.clear();
  shownLayerIds_.clear();
  showMessage(message);
}

void AttentionMapGrid::setGroupSize(int channelsPerHead) {
  groupSize_ = std::max(1, channelsPerHead);
  aggregationBox_->setEnabled(groupSize_ > 1);
  updateFilterBoxes();
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
  shownIds_.clear();
  shownLayerIds_.clear();
  const bool mean = aggregation() == Aggregation::PerHeadMean;
  // A head is one map when maps are per head (MHSA, THSA head means), G channels otherwise.
  const int perHead = mean ? 1 : groupSize_;
  for (std::size_t l = 0; l < raw_.size(); ++l) {
    const int id = l < layerIds_.size() ? layerIds_[l] : static_cast<int>(l);
    if (layerFilter_ >= 0 && id != layerFilter_) continue;
    const auto maps = mean ? perHeadMean(raw_[l], groupSize_) : raw_[l];
    std::vector<MatrixData> kept;
    std::vector<int> ids;
    for (std::size_t i = 0; i < maps.size(); ++i) {
      if (headFilter_ >= 0 && static_cast<int>(i) / perHead != headFilter_) continue;
      kept.push_back(maps[i]);
      ids.push_back(static_cast<int>(i));
    }
    shown_.push_back(std::move(kept));
    shownIds_.push_back(std::move(ids));
    shownLayerIds_.push_back(id);
  }
}

int AttentionMapGrid::mapCount(int layer) const {
  return layer >= 0 && layer < layerCount() ? static_cast<int>(shown_[layer].size()) : 0;
}

const MatrixData& AttentionMapGrid::displayedMap(int layer, int index) const { return shown_.at(layer).at(index); }

QString AttentionMapGrid::layerName(int layer) const { return tr("layer %1").arg(layerId(layer)); }

QString AttentionMapGrid::mapTitle(int layer, int index) const {
  const bool channels = groupSize_ > 1 && aggregation() == Aggregation::PerChannel;
  const bool known = layer >= 0 && layer < layerCount() && index >= 0 && index < static_cast<int>(shownIds_[layer].size());
  return (channels ? QStringLiteral("c%1") : QStringLiteral("h%1")).arg(known ? shownIds_[layer][index] : index);
}

void AttentionMapGrid::layoutGrid() {
  if (shown_.empty() || std::all_of(shown_.begin(), shown_.end(), [](const auto& l) { return l.empty(); })) {
    showMessage(tr("No attention maps yet"));
    return;
  }
  showPlot();
  const QString title = this->title();
  const GridGeometry g = planGrid(shown_, tokens_, maxColumns_, viewportSize(), style());
  columns_ = g.columns;
  side_ = g.side;
  if (grid_->populate(plot(), shown_, g, [this](int l, int i) { return mapTitle(l, i); },
                      [this](int l) { return layerName(l); }))
    restyle();  // new axes take the theme
  // Elided to the width there is (a long probe must not push the title off both sides).
  const QFontMetrics metrics(grid_->title->font());
  grid_->setTitle(metrics.elidedText(title, Qt::ElideRight, std::max(60, g.plotSize.width() - g.scaleWidth - 16)));
  requestReplot();
}

QString AttentionMapGrid::title() const {
  QString title = probeName_.isEmpty() ? tr("Probe attention") : tr("Probe %1").arg(probeName_);
  if (step_ >= 0) title += tr(" · step %1").arg(QString::number(step_, 'g', 12));
  if (groupSize_ > 1)
    title += aggregation() == Aggregation::PerHeadMean ? tr(" · head means") : tr(" · channels");
  return title;
}

QString AttentionMapGrid::drawnTitle() const { return grid_->title->text(); }

QSize AttentionMapGrid::beginFigure(const FigureOptions& options, const QSize& size) {
  Q_UNUSED(options);
  const GridGeometry g = planGrid(shown_, tokens_, maxColumns_, QSize(size.width(), 1 << 20), style(), true);
  if (grid_->populate(plot(), shown_, g, [this](int l, int i) { return mapTitle(l, i); },
                      [this](int l) { return layerName(l); }))
    restyle();
  // A figure keeps the whole title: the probe, wrapped at spaces onto a second line when it is
  // too wide, then step and aggregation on a line of their own. A probe that needs more than two
  // lines is elided in the title and written whole in a caption under the maps, at the tick
  // font. Tokens are labelled where they fit at the tick font, else one in every `stride` (the
  // same on both axes), which the caption says.
  const QFont font = grid_->title->font();
  const QFontMetrics metrics(font);
  const int width = std::max(60, g.plotSize.width() - g.scaleWidth - 16);
  figureTokenStride_ = std::max(g.xPlan.step, g.yPlan.step);
  QString text = title();
  QStringList caption;
  const int cut = text.indexOf(QStringLiteral(" · step"));
  if (metrics.horizontalAdvance(text) > width && cut > 0) {
    QString probe = detail::wrapText(text.left(cut), font, width);
    if (probe.count(QLatin1Char('\n')) > 1 || metrics.horizontalAdvance(probe.section(QLatin1Char('\n'), 0, 0)) > width) {
      probe = metrics.elidedText(text.left(cut), Qt::ElideRight, width);
      caption << tr("Probe: %1.").arg(probeName_);
    }
    text = probe + QLatin1Char('\n') + detail::wrapText(text.mid(cut + 3), font, width);
  } else {
    text = detail::wrapText(text, font, width);
  }
  if (figureTokenStride_ > 1) caption << tr("Tokens: one in %1 labelled.").arg(figureTokenStride_);
  grid_->setTitle(text);
  figureTitle_ = text;
  int extra = static_cast<int>(text.count(QLatin1Char('\n'))) * metrics.lineSpacing();
  figureCaption_.clear();
  if (!caption.isEmpty()) {
    figureCaption_ = detail::wrapText(caption.join(QLatin1Char(' ')), g.tickFont, width);
    captionElement_ = new QCPTextElement(plot(), figureCaption_, g.tickFont);
    captionElement_->setTextColor(theme().text);
    captionElement_->setTextFlags(Qt::AlignLeft | Qt::AlignTop);
    captionElement_->setMargins(QMargins(g.leftLabelled, 2, 0, 2));
    QCPLayoutGrid* main = plot()->plotLayout();
    main->addElement(main->rowCount(), 0, captionElement_);
    main->setRowStretchFactor(main->rowCount() - 1, 0.001);
    extra += (static_cast<int>(figureCaption_.count(QLatin1Char('\n'))) + 1) * QFontMetrics(g.tickFont).lineSpacing() + 6;
  }
  return g.plotSize + QSize(0, 2 + extra);  // the grid's rows can round one unit past its planned height
}

void AttentionMapGrid::endFigure() {
  if (captionElement_) {
    plot()->plotLayout()->remove(captionElement_);
    plot()->plotLayout()->simplify();
    captionElement_ = nullptr;
  }
  layoutGrid();
}

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
    // Every token is labelled: the map gets a label row per token and scrolls when that is more
    // than the screen holds.
    auto* scroll = new QScrollArea(dialog_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    enlarged_ = new MatrixHeatmap;
    enlarged_->setExportName(QStringLiteral("attention_map"));
    enlarged_->setColourScale(MatrixHeatmap::ColourScale::Sequential, 0.0, 1.0);
    enlarged_->setAxisTitles(tr("key position"), tr("query position"));
    scroll->setWidget(enlarged_);
    layout->addWidget(scroll);
  }
  enlargedKey_ = {layer, index};
  refreshEnlarged();
  const QSize want = enlarged_->minimumSize().expandedTo(QSize(620, 560)) + QSize(24, 24);
  const QScreen* screen = window() ? window()->screen() : nullptr;
  dialog_->resize(screen ? want.boundedTo(screen->availableGeometry().size() * 0.9) : want);
  dialog_->show();
  dialog_->raise();
}

void AttentionMapGrid::refreshEnlarged() {
  const auto [layer, index] = enlargedKey_;
  if (!enlarged_ || !isShown(layer, index)) return;
  const MatrixData& m = shown_[layer][index];
  QString title = layerName(layer) + QStringLiteral(" · ") + mapTitle(layer, index);
  if (groupSize_ > 1 && aggregation() == Aggregation::PerHeadMean)
    title += tr(" (mean of channels %1–%2)").arg(shownIds_[layer][index] * groupSize_).arg((shownIds_[layer][index] + 1) * groupSize_ - 1);
  if (step_ >= 0) title += tr(" · step %1").arg(QString::number(step_, 'g', 12));
  enlarged_->setDarkTheme(isDarkTheme());
  enlarged_->setMatrix(m, title);
  const bool labelled = tokens_.size() == m.rows && tokens_.size() == m.cols;
  enlarged_->setLabels(labelled ? tokens_ : QStringList(), labelled ? tokens_ : QStringList());
  // A label's height per row and column (the axis thins labels that do not fit), plus the margins
  // of the axes, the colour scale and the title.
  const int pitch = enlarged_->fontMetrics().height() + 2;
  const int side = std::max(m.rows, m.cols) * pitch;
  enlarged_->setMinimumSize(side + 220, side + 160);
  dialog_->setWindowTitle(title);
}

void AttentionMapGrid::writeCsv(QTextStream& out) const {
  out << "layer,map,query,key,query_token,key_token,value\n";
  for (int l = 0; l < layerCount(); ++l)
    for (int i = 0; i < mapCount(l); ++i) {
      const MatrixData& m = shown_[l][i];
      const bool labelled = tokens_.size() == m.rows && tokens_.size() == m.cols;
      const QString prefix = QString::number(layerId(l)) +
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
