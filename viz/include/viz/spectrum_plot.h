#pragma once
/// The live singular spectrum of a core C: σ_1 ≥ σ_2 ≥ … as bars, the stable rank as text and as
/// a marker, and a reference at the number of heads H (bars beyond H are drawn faded). A combo
/// box picks the layer when the snapshot has several cores.

#include <vector>

#include "viz/plot_types.h"
#include "viz/plot_widget.h"

class QComboBox;

namespace tensorscope::viz {

class SpectrumPlot : public PlotWidget {
  Q_OBJECT
 public:
  explicit SpectrumPlot(QWidget* parent = nullptr);
  ~SpectrumPlot() override;

  /// The spectra of one inspection snapshot (one per core layer); `step` < 0 leaves it out of
  /// the title. Keeps the selected layer when it is still present.
  void setSpectra(const std::vector<CoreSpectrum>& spectra, double step = -1);
  /// Number of heads H for the reference line; 0 hides it.
  void setHeads(int heads);
  int heads() const { return heads_; }
  /// Shows the spectrum of model layer `layer` (ignored when absent).
  void setCurrentLayer(int layer);
  int currentLayer() const;

  /// Singular values of the shown layer, descending.
  std::vector<double> displayedValues() const { return shown_; }
  /// The annotation text (layer, step, stable rank).
  QString annotation() const;
  std::pair<double, double> yRange() const;

 Q_SIGNALS:
  void layerChanged(int layer);

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void hoverAt(const QPointF& pos) override;

 private:
  void showSelected();

  std::vector<CoreSpectrum> spectra_;
  std::vector<double> shown_;
  double step_ = -1;
  int heads_ = 0;
  QComboBox* layerBox_ = nullptr;
  struct Items;
  std::unique_ptr<Items> items_;
};

}  // namespace tensorscope::viz
