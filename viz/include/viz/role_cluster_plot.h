#pragma once
/// TP role vectors projected to 2-D (PCA coordinates computed by the app), coloured by k-means
/// cluster or by structural label, with a legend, hover read-out of token and context, and a spin
/// box for k whose changes the app answers with new cluster assignments.

#include <QStringList>
#include <vector>

#include "viz/plot_widget.h"

class QComboBox;
class QLabel;
class QSpinBox;

namespace tensorscope::viz {

class RoleClusterPlot : public PlotWidget {
  Q_OBJECT
 public:
  enum class ColourBy { Cluster, Label };

  explicit RoleClusterPlot(QWidget* parent = nullptr);
  ~RoleClusterPlot() override;

  /// One point per role vector: coordinates, token text, the context it came from and its
  /// structural label. Lists shorter than the coordinates are padded with empty text.
  void setPoints(const std::vector<double>& xs, const std::vector<double>& ys, const QStringList& tokens,
                 const QStringList& contexts, const QStringList& labels);
  /// The k-means cluster of every point (0..k-1); empty means "not clustered yet".
  void setClusters(const std::vector<int>& clusters);
  void setColourBy(ColourBy colourBy);
  ColourBy colourBy() const { return colourBy_; }
  /// Sets the spin box without emitting kChanged.
  void setK(int k);
  int k() const;
  void setAxisTitles(const QString& x, const QString& y);
  /// The role vector sets the user can pick from ("layer 1 · head 0", …) and the one shown; the box
  /// hides itself for fewer than two. A pick emits sourceChanged.
  void setSources(const QStringList& names, int current);
  int source() const;
  /// What the points show (which probe, layer and head), next to the controls.
  void setCaption(const QString& caption);
  QString caption() const;

  int pointCount() const { return static_cast<int>(xs_.size()); }
  /// Legend entries of the current colouring, in legend order.
  QStringList groupNames() const;
  /// Points in legend group `group`.
  int groupPointCount(int group) const;
  /// Pixel position of point i in plotArea() (after layout).
  QPointF pointPosition(int i) const;
  /// The hover read-out for point i.
  QString pointText(int i) const;

 Q_SIGNALS:
  /// The user changed k in the spin box.
  void kChanged(int k);
  /// The user picked role vector set `index` (of setSources).
  void sourceChanged(int index);

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;
  void hoverLeft() override;

 private:
  void rebuildGroups();
  void rescale();

  std::vector<double> xs_, ys_;
  QStringList tokens_, contexts_, labels_;
  std::vector<int> clusters_;
  ColourBy colourBy_ = ColourBy::Cluster;
  QStringList groups_;
  std::vector<std::vector<int>> members_;  // point indices per group
  QComboBox* colourBox_ = nullptr;
  QSpinBox* kBox_ = nullptr;
  QComboBox* sourceBox_ = nullptr;
  QLabel* caption_ = nullptr;
  struct Items;
  std::unique_ptr<Items> items_;
};

}  // namespace tensorscope::viz
