#pragma once
/// Attention maps of a probe input as a grid of small heatmaps: one row of maps per layer (wrapped
/// when a layer has more maps than fit across), probe tokens as thinned tick labels on the outer
/// axes, a shared sequential colour scale on [0, 1], hover read-out, and click-to-enlarge.
/// For THSA with many channels (R up to 128) a combo box switches between one map per channel
/// and the mean over each head's group of channels.

#include <QStringList>
#include <utility>
#include <vector>

#include "viz/plot_types.h"
#include "viz/plot_widget.h"

class QCPTextElement;
class QComboBox;
class QDialog;

namespace tensorscope::viz {

class MatrixHeatmap;

/// The mean of each run of `groupSize` consecutive maps (the last group may be shorter); maps of
/// a different shape than the group's first are skipped. groupSize <= 1 returns the input.
std::vector<MatrixData> perHeadMean(const std::vector<MatrixData>& channels, int groupSize);

class AttentionMapGrid : public PlotWidget {
  Q_OBJECT
 public:
  enum class Aggregation { PerHeadMean, PerChannel };

  explicit AttentionMapGrid(QWidget* parent = nullptr);
  ~AttentionMapGrid() override;

  /// maps[l][h]: the maps of layer l (rows = query, cols = key). `tokens` label the axes when
  /// their count matches the map size; `layerIds` name the layers (default 0, 1, …); `step` < 0
  /// leaves the step out of the title. Cheap when the shapes are unchanged (data-only update).
  void setMaps(const std::vector<std::vector<MatrixData>>& maps, const QStringList& tokens,
               const std::vector<int>& layerIds = {}, double step = -1);
  void clear(const QString& message);
  /// What the probe input is ("“12+7=” → “19”"), for the title; empty: "Probe attention".
  void setProbeName(const QString& name) { probeName_ = name; }
  /// The grid's title in full, and as drawn (elided to the width there is).
  QString title() const;
  QString drawnTitle() const;
  /// The title the last exported figure drew (wrapped, never elided; it names the token stride).
  QString lastFigureTitle() const { return figureTitle_; }
  /// The last figure labelled one token in this many (1: every token).
  int lastFigureTokenStride() const { return figureTokenStride_; }
  /// The caption under the last figure's maps: the token stride when not every token is labelled,
  /// the whole probe when the title had to elide it; empty when neither.
  QString lastFigureCaption() const { return figureCaption_; }
  /// Channels per head (R / H). Above 1 it enables the per-head mean aggregation.
  void setGroupSize(int channelsPerHead);
  int groupSize() const { return groupSize_; }
  void setAggregation(Aggregation aggregation);
  /// The aggregation in effect (per channel whenever the group size is 1).
  Aggregation aggregation() const;
  /// Most maps in one grid row (default 16); fewer when the widget is narrow.
  void setMaxColumns(int columns);
  /// Whether a click opens the enlarged view (on by default); mapClicked is emitted regardless.
  void setEnlargeOnClick(bool on) { enlargeOnClick_ = on; }

  /// Shows only the model's layer `layerId` / head `head` (-1: all); the combo boxes in the control
  /// bar set them too. A head of a THSA layer is its mean map or its channels, as aggregated.
  void setLayerFilter(int layerId);
  void setHeadFilter(int head);
  int layerFilter() const { return layerFilter_; }
  int headFilter() const { return headFilter_; }
  /// Heads of the widest layer given (channels / group size for THSA).
  int headCount() const;

  int layerCount() const { return static_cast<int>(shown_.size()); }
  /// Maps shown for a layer (after aggregation).
  int mapCount(int layer) const;
  const MatrixData& displayedMap(int layer, int index) const;
  /// "h3" (head or head mean) or "c17" (channel).
  QString mapTitle(int layer, int index) const;
  /// The model's index of shown layer `layer` (its layerIds entry), and the step of the maps
  /// (-1 when not given): for data exports.
  int layerId(int layer) const { return layer >= 0 && layer < layerCount() ? shownLayerIds_[layer] : layer; }
  double step() const { return step_; }
  /// Grid columns and side of one map in pixels (after layout).
  int gridColumns() const { return columns_; }
  int cellSide() const { return side_; }
  /// The pixel centre (in plotArea()) of entry (row, col) of a map, after the plot is laid out.
  QPointF cellCentre(int layer, int index, int row, int col) const;

  /// Opens (or updates) the enlarged view of one map; it follows later snapshots.
  void showEnlarged(int layer, int index);
  /// The enlarged view, or nullptr before the first showEnlarged.
  MatrixHeatmap* enlargedView() const { return enlarged_; }

 Q_SIGNALS:
  void mapClicked(int layer, int index);

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;
  void viewportResized() override;
  // A figure lays the grid out for the figure's width (the height follows the rows of maps).
  QSize beginFigure(const FigureOptions& options, const QSize& size) override;
  void endFigure() override;
  bool figureRestylesFonts() const override { return false; }  // its margins are fitted to its own fonts

 private:
  struct Grid;
  struct Hit {
    int layer = -1, index = -1, row = -1, col = -1;
  };
  Hit hitAt(const QPointF& pos) const;
  bool isShown(int layer, int index) const;
  void aggregate();
  void rebuild();
  void layoutGrid();
  void refreshEnlarged();
  QString layerName(int layer) const;

  /// Fills the layer and head boxes for the maps given (keeping the choice where it still exists).
  void updateFilterBoxes();

  std::vector<std::vector<MatrixData>> raw_, shown_;
  std::vector<int> shownLayerIds_;          ///< the model's layer of each shown row
  std::vector<std::vector<int>> shownIds_;  ///< the head / channel number of each shown map
  QStringList tokens_;
  std::vector<int> layerIds_;
  int layerFilter_ = -1, headFilter_ = -1;
  QString probeName_;
  QString figureTitle_;  ///< the title of the last figure, as drawn
  int figureTokenStride_ = 1;
  QString figureCaption_;
  QCPTextElement* captionElement_ = nullptr;  ///< under the maps while a figure is drawn
  QComboBox* layerBox_ = nullptr;
  QComboBox* headBox_ = nullptr;
  double step_ = -1;
  int groupSize_ = 1;
  Aggregation aggregation_ = Aggregation::PerHeadMean;
  int maxColumns_ = 16;
  int columns_ = 0, side_ = 0;
  bool enlargeOnClick_ = true;
  std::unique_ptr<Grid> grid_;
  QComboBox* aggregationBox_ = nullptr;
  QDialog* dialog_ = nullptr;
  MatrixHeatmap* enlarged_ = nullptr;
  std::pair<int, int> enlargedKey_{-1, -1};
};

}  // namespace tensorscope::viz
