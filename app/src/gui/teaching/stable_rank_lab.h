#pragma once
/// The stable-rank lab (issue 15; Tuformer): a core C of a chosen stable rank (or the design's
/// C), its spectrum, the per-channel maps of the THSA layer with that core beside the maps of an
/// MHSA layer with H′ = round(stable rank) heads, and both parameter counts. The layers run on a
/// worker thread (model_core/labs.h); see LabPanel (lab_panel.h).

#include <QString>
#include <cstdint>
#include <optional>

#include "gui/teaching/lab_panel.h"
#include "model_core/host_tensor.h"
#include "model_core/labs.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;
class QTimer;

namespace tensorscope::viz {
class AttentionMapGrid;
class MatrixHeatmap;
class SpectrumPlot;
}  // namespace tensorscope::viz

namespace tensorscope::app {

/// What one stable-rank lab run returned (on the worker thread).
struct StableRankOutcome {
  std::uint64_t generation = 0;
  std::optional<model_core::StableRankLab> result;
  QString error;
  bool designCore = false;
  double targetStableRank = 0;
};

class StableRankLab : public LabPanel {
  Q_OBJECT
 public:
  enum class CoreSource { Generated, Design };

  explicit StableRankLab(QWidget* parent = nullptr);
  ~StableRankLab() override;

  /// Model width F (1..1024), heads H and head size D (R = H·D <= 256), tokens N (2..64).
  void setSizes(int F, int H, int D, int N);
  int F() const;
  int H() const;
  int D() const;
  int N() const;
  int R() const { return H() * D(); }
  /// The stable rank C is generated with, in [1, R] (clamped).
  void setTargetStableRank(double stableRank);
  double targetStableRank() const;
  void setShape(model_core::SpectrumShape shape);
  void setSeed(std::uint64_t seed);
  /// Multiplies the q/k weights of both layers (1: the modules' init, nearly uniform maps).
  void setQkGain(double gain);

  /// The design's core C [R, R] with its H and D (the window calls this when the design changes);
  /// an empty tensor: the design has no core (the button says so).
  void setCore(const model_core::HostTensor& core, int H, int D);
  bool hasDesignCore() const { return designCore_.rows() > 0; }
  /// Generates C of the target stable rank (coreWithStableRank, seeded) and runs the lab on a
  /// worker thread. False, with the reason in errorText(), for invalid sizes.
  bool generate();
  /// Runs the lab with the design's C (sizes H and D become the design's). False without one.
  bool useDesignCore();
  CoreSource coreSource() const { return coreSource_; }
  bool waitForResult(int timeoutMs = 60000) { return waitUntilIdle(timeoutMs); }
  const std::optional<model_core::StableRankLab>& result() const { return result_; }

  QString readoutText() const;
  viz::MatrixHeatmap* coreView() const { return coreView_; }
  viz::SpectrumPlot* spectrumView() const { return spectrum_; }
  viz::AttentionMapGrid* thsaMaps() const { return thsaMaps_; }
  viz::AttentionMapGrid* mhsaMaps() const { return mhsaMaps_; }

 protected:
  /// The first time the lab is shown it generates a core of the default stable rank.
  void showEvent(QShowEvent* event) override;

 private:
  // building the panel (in this order)
  void buildUi();
  QGroupBox* buildSizesBox(QWidget* controls);
  QGroupBox* buildCoreBox(QWidget* controls);
  QWidget* buildResults();
  void connectControls();

  bool start(const model_core::HostTensor& core, bool designCore, double targetStableRank);
  void finished(const StableRankOutcome& outcome);
  void showResult();
  void sizesChanged();

  QSpinBox* fSpin_ = nullptr;
  QSpinBox* hSpin_ = nullptr;
  QSpinBox* dSpin_ = nullptr;
  QSpinBox* nSpin_ = nullptr;
  QDoubleSpinBox* rankSpin_ = nullptr;
  QSlider* rankSlider_ = nullptr;
  QComboBox* shapeBox_ = nullptr;
  QSpinBox* seedSpin_ = nullptr;
  QDoubleSpinBox* gainSpin_ = nullptr;
  QPushButton* generateButton_ = nullptr;
  QPushButton* designButton_ = nullptr;
  QCheckBox* liveCheck_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* thsaTitle_ = nullptr;
  QLabel* mhsaTitle_ = nullptr;
  QTimer* liveTimer_ = nullptr;
  viz::MatrixHeatmap* coreView_ = nullptr;
  viz::SpectrumPlot* spectrum_ = nullptr;
  viz::AttentionMapGrid* thsaMaps_ = nullptr;
  viz::AttentionMapGrid* mhsaMaps_ = nullptr;

  model_core::HostTensor designCore_;
  int designH_ = 0, designD_ = 0;
  CoreSource coreSource_ = CoreSource::Generated;
  std::optional<model_core::StableRankLab> result_;
  double resultTarget_ = 0;  ///< the stable rank asked for (generated cores)
  bool updating_ = false;
  bool shownOnce_ = false;
};

}  // namespace tensorscope::app
