#pragma once
/// The slots of a layer that act on the probe's tokens, as the Inspector's third page (issue 36):
///
/// - differential attention: the two softmax maps of a head, P_{h,1} and P_{h,2}, beside what the
///   layer uses, A_h = P_{h,1} − λ·P_{h,2}, with λ read from the network's Λ = (1, −λ);
/// - an output gate: σ(X·W^G) over the probe's tokens, one gate per head (headwise) or one per
///   output feature (elementwise), with its mean and range.
///
/// The values are the Inspector's (model_core::NetworkValues of the chosen layer): a training run's
/// latest inspection, a stopped run's checkpoint, or a design's random weights on a random input;
/// so the page is as live as the Inspector. The trained head mixings C′ and C^pre, with their
/// spectra and stable ranks, and MTA's kernels are weights, not activations: the Design dock's
/// head-mixing view shows them (head_mixing_view.h).

#include <QString>
#include <QWidget>
#include <memory>

class QLabel;
class QSpinBox;

namespace tensorscope::model_core {
struct NetworkValues;
}
namespace tensorscope::viz {
class MatrixHeatmap;
}

namespace tensorscope::app {

class ProbeSlotsView : public QWidget {
  Q_OBJECT
 public:
  explicit ProbeSlotsView(QWidget* parent = nullptr);

  /// Shows the probe slots of `values` (null: nothing, with `why`).
  void setValues(std::shared_ptr<const model_core::NetworkValues> values, const QString& why = {});
  /// Whether the values on show have differential maps / an output gate (false without values).
  bool showsDifferential() const { return differential_; }
  bool showsGates() const { return gated_; }
  /// Whether there is anything for this page (either of the two).
  bool hasSlots() const { return differential_ || gated_; }

  /// The head whose differential maps are drawn (0-based), and how many there are.
  int head() const;
  void setHead(int head);
  int heads() const { return heads_; }
  /// λ of the values on show (NaN without differential maps).
  double lambda() const { return lambda_; }
  /// The text above the maps: whose values, which step, the probe.
  QString captionText() const;

  viz::MatrixHeatmap* firstMap() const { return map1_; }
  viz::MatrixHeatmap* secondMap() const { return map2_; }
  viz::MatrixHeatmap* difference() const { return diff_; }
  viz::MatrixHeatmap* gates() const { return gates_; }

 private:
  void drawMaps();
  void drawGates();

  std::shared_ptr<const model_core::NetworkValues> values_;
  bool differential_ = false, gated_ = false;
  int heads_ = 0;
  double lambda_ = 0.0;
  QLabel* caption_ = nullptr;
  QWidget* mapsBox_ = nullptr;
  QLabel* mapsNote_ = nullptr;
  QSpinBox* head_ = nullptr;
  viz::MatrixHeatmap* map1_ = nullptr;
  viz::MatrixHeatmap* map2_ = nullptr;
  viz::MatrixHeatmap* diff_ = nullptr;
  QWidget* gatesBox_ = nullptr;
  QLabel* gatesNote_ = nullptr;
  viz::MatrixHeatmap* gates_ = nullptr;
};

}  // namespace tensorscope::app
