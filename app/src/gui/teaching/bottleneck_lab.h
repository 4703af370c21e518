#pragma once
/// The low-rank bottleneck lab (issue 15; Theorem 1 of "Low-Rank Bottleneck in Multi-head
/// Attention Models"): a target attention pattern P (random, drawn by clicking, or a map of a
/// trained run), the best single head of each size d_p fitted to it, the error against d_p with
/// reference lines at N − 1 and N, the target beside the fit of a chosen d_p, and the threshold
/// found. Patterns are row-stochastic here (rows = queries; the paper's column-stochastic P is
/// the transpose). Because the softmax ignores a constant added to a query row, a generic
/// positive P is reproduced exactly from d_p = N − 1; the theorem's d_p ≥ N is sufficient, not
/// necessary. The fits run on a worker thread (model_core/labs.h); see LabPanel (lab_panel.h).

#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

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
class QStackedWidget;
class QTimer;

namespace tensorscope::viz {
class LinePlot;
class MatrixHeatmap;
}  // namespace tensorscope::viz

namespace tensorscope::app {

/// What one bottleneck fit returned (on the worker thread).
struct BottleneckOutcome {
  std::uint64_t generation = 0;
  std::optional<model_core::BottleneckCurve> curve;
  QString error;      ///< the backend's refusal (empty on success)
  double seconds = 0;
  bool skipped = false;  ///< cancelled before it started
};

class BottleneckLab : public LabPanel {
  Q_OBJECT
 public:
  enum class Source { Random, Drawn, Run };
  /// An error below this counts as "reproduced exactly" (float32 maps: the exact construction
  /// lands near 1e-8).
  static constexpr double kExactError = 1e-6;
  /// Tokens the lab accepts (the spin box range; run maps larger than this are refused).
  static constexpr int kMinTokens = 2, kMaxTokens = 64;

  explicit BottleneckLab(QWidget* parent = nullptr);
  ~BottleneckLab() override;

  // --- the target P -----------------------------------------------------------------------
  /// Pattern size N (2..64) for the random and drawn sources (a run map has its own size). A
  /// head-size range that ended at N + 1 follows to the new N + 1. The drawing restarts uniform.
  void setN(int n);
  /// The N of the current target.
  int n() const;
  void setSource(Source source);
  Source source() const;
  void setSeed(std::uint64_t seed);
  /// Peakiness of the random pattern (softmax of concentration·Gaussian), 0..5.
  void setConcentration(double concentration);
  /// The current run's attention maps (the window calls this when the run or probe changes):
  /// each [N, N], rows = queries, rows summing to 1. `names` label them in the map box.
  void setRunMaps(const QStringList& names, std::vector<model_core::HostTensor> maps);
  void setRunMap(int index);
  int runMapCount() const { return static_cast<int>(runMaps_.size()); }
  /// Smoothing of a run map with zero entries (e.g. causal): P_ε = (1 − ε)·P + ε/N. Rows still
  /// sum to 1, every entry is ≥ ε/N > 0, no entry moves by more than ε. Off by default: a map
  /// with zeros is refused, and the message offers this.
  void setSmoothing(bool on, double epsilon = 1e-3);
  static model_core::HostTensor smoothed(const model_core::HostTensor& map, double epsilon);
  /// Drawn source: raises entry (row, col) by amount/N and renormalises its row (left click and
  /// drag); lowerEntry halves it (right click). resetDrawing: back to the uniform pattern.
  void raiseEntry(int row, int col, double amount = 1.0);
  void lowerEntry(int row, int col);
  void resetDrawing();
  /// The target the next fit uses, float32 [N, N]; empty (no shape) when there is none, and then
  /// targetProblem() says why.
  const model_core::HostTensor& target() const { return target_; }
  QString targetProblem() const { return problem_; }

  // --- the fit ----------------------------------------------------------------------------
  /// Head sizes d_p = from..to (1 <= from <= to <= 4·kMaxTokens); default 1..N + 1.
  void setHeadSizeRange(int from, int to);
  std::vector<int> headSizes() const;
  /// Starts a fit of the current target on a worker thread (supersedes a running one). False,
  /// with the reason in errorText(), when there is no valid target.
  bool fit();
  /// Drops the running fit (its answer will be ignored).
  void cancel();
  /// Processes events until no fit is running (tests, lessons); false on timeout.
  bool waitForResult(int timeoutMs = 120000) { return waitUntilIdle(timeoutMs); }
  /// The last fit shown (nullopt before the first, or after the target changed).
  const std::optional<model_core::BottleneckCurve>& curve() const { return curve_; }
  /// The smallest d_p of the last fit with error < kExactError; -1 when none (or no fit).
  int thresholdFound() const;
  /// The head size whose fitted P is shown beside the target.
  void setShownHeadSize(int headSize);
  int shownHeadSize() const;

  QString thresholdText() const;
  viz::LinePlot* errorPlot() const { return plot_; }
  viz::MatrixHeatmap* targetView() const { return targetView_; }
  viz::MatrixHeatmap* fittedView() const { return fittedView_; }

 Q_SIGNALS:
  /// A fit's curve is shown (labDone() follows).
  void fitted();
  /// The target P changed (its curve, if any, is cleared).
  void targetChanged();

 protected:
  /// The first time the lab is shown it fits the default target (no empty plot to start from).
  void showEvent(QShowEvent* event) override;

 private:
  // building the panel (in this order)
  void buildUi();
  QGroupBox* buildTargetBox(QWidget* controls);
  QWidget* buildRandomPage();
  QWidget* buildDrawnPage();
  QWidget* buildRunPage();
  QGroupBox* buildFitBox(QWidget* controls);
  QWidget* buildResults();
  void connectControls();

  void updateTarget();
  void showTarget();
  void clearResults(const QString& why);
  void finished(const BottleneckOutcome& outcome);
  void showCurve();
  void showFitted();
  void updateProgress();

  // controls
  QSpinBox* nSpin_ = nullptr;
  QComboBox* sourceBox_ = nullptr;
  QStackedWidget* sourcePages_ = nullptr;
  QSpinBox* seedSpin_ = nullptr;
  QDoubleSpinBox* concentrationSpin_ = nullptr;
  QPushButton* resetButton_ = nullptr;
  QComboBox* mapBox_ = nullptr;
  QCheckBox* smoothCheck_ = nullptr;
  QDoubleSpinBox* epsilonSpin_ = nullptr;
  QLabel* mapNote_ = nullptr;
  QSpinBox* fromSpin_ = nullptr;
  QSpinBox* toSpin_ = nullptr;
  QPushButton* fitButton_ = nullptr;
  QPushButton* cancelButton_ = nullptr;
  QLabel* threshold_ = nullptr;
  QSpinBox* shownSpin_ = nullptr;
  QSlider* shownSlider_ = nullptr;
  QTimer* progressTimer_ = nullptr;
  // views
  viz::LinePlot* plot_ = nullptr;
  viz::MatrixHeatmap* targetView_ = nullptr;
  viz::MatrixHeatmap* fittedView_ = nullptr;

  // state
  std::vector<double> drawn_;  ///< N×N row-stochastic, the drawn source
  QStringList runNames_;
  std::vector<model_core::HostTensor> runMaps_;
  model_core::HostTensor target_;
  QString problem_;
  std::optional<model_core::BottleneckCurve> curve_;
  model_core::HostTensor curveTarget_;  ///< the target the shown curve was fitted to
  std::shared_ptr<std::atomic<std::uint64_t>> latest_;  ///< read by workers not yet started
  qint64 startedMs_ = 0;
  QString runningWhat_;
  Qt::MouseButtons dragButtons_ = Qt::LeftButton;
  bool updating_ = false;
  bool shownOnce_ = false;
};

}  // namespace tensorscope::app
