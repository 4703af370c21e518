#pragma once
#include <QRectF>
/// Stable rank ‖C‖_F² / ‖C‖_2² of each layer's core C over training steps: one line per layer,
/// with an optional dashed reference at the number of heads H.

#include <map>
#include <utility>
#include <vector>

#include "viz/plot_widget.h"

namespace tensorscope::viz {

class StableRankPlot : public PlotWidget {
  Q_OBJECT
 public:
  explicit StableRankPlot(QWidget* parent = nullptr);
  ~StableRankPlot() override;

  /// Adds one inspection: `stableRanks[i]` of layer `layers[i]` at `step`. A step not after a
  /// layer's last one (a resumed run) first drops that layer's points from `step` on.
  void appendSnapshot(double step, const std::vector<int>& layers, const std::vector<double>& stableRanks);
  /// Replaces the history of one layer (steps ascending).
  void setLayerHistory(int layer, const std::vector<double>& steps, const std::vector<double>& stableRanks);
  /// Dashed horizontal reference at H heads; 0 hides it.
  void setHeadsReference(double heads);
  double headsReference() const { return heads_; }
  /// Removes every line (a message says why the plot is empty until the next snapshot).
  void clear();
  /// What the empty plot says; empty: the default "No stable rank yet…" (a design that will have one).
  /// A design without a core C says why it never has a stable rank.
  void setEmptyText(const QString& text);
  QString emptyText() const { return emptyText_; }
  /// Draws layer `layer`'s line bold and the others faded (the layer chosen in the core editor);
  /// -1: every line alike.
  void setHighlightedLayer(int layer);
  int highlightedLayer() const { return highlighted_; }

  /// Layers with a line, ascending.
  std::vector<int> layers() const;
  int pointCount(int layer) const;
  /// The pen width of a layer's line (0 when it has none): the highlighted layer's is the widest.
  double lineWidth(int layer) const;
  std::pair<double, double> xRange() const;
  std::pair<double, double> yRange() const;

  /// Step labels on the x axis as last drawn.
  int stepLabelCount() const;
  /// Where the "H = … heads" label is drawn, in widget pixels (empty when there is none).
  QRectF headsLabelRect() const;
  /// The pixel height of stable rank `value` on the plot.
  double pixelOf(double value) const;

 protected:
  void writeCsv(QTextStream& out) const override;
  /// A narrow dock gets fewer step labels (they must not run into each other).
  bool eventFilter(QObject* watched, QEvent* event) override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;

 private:
  struct Line;
  Line& lineFor(int layer);
  void afterUpdate();

  std::map<int, std::unique_ptr<Line>> lines_;
  double heads_ = 0;
  QString emptyText_;
  int highlighted_ = -1;
  struct Items;
  std::unique_ptr<Items> items_;
};

}  // namespace tensorscope::viz
