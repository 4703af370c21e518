#pragma once
/// The diagram's inspector (issue 15): the value of any tensor of a layer's executable diagram for
/// the probe input of the selected run — weights, the input, and what every plan step computed
/// (q⊙C, the logits per channel, P, Ω, roles, S, T ...). A matrix is a heatmap; a tensor of higher
/// order is a heatmap of two chosen legs with a slider per other leg; hovering reads the exact
/// entry; the header gives the shape with leg symbols and sizes. Contraction stepping plays the
/// plan one step at a time (Back / Next / Play): each step asks the diagram to highlight what it
/// has contracted so far and shows its result, shape, FLOPs, memory and partial equation. The
/// "Orders" page compares the plan's contraction order with every other order of each
/// multi-operand contraction and shows how the cost grows with N.

#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "diagram_view/diagram_scene.h"
#include "model_core/network_values.h"
#include "spec/contraction_steps.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QTabWidget;
class QTableWidget;
class QTimer;
class QVBoxLayout;

namespace tensorscope::viz {
class MatrixHeatmap;
}

namespace tensorscope::app {

class ProbeSlotsView;

class TensorInspector : public QWidget {
  Q_OBJECT
 public:
  using Element = diagram_view::DiagramScene::Element;
  using Highlight = diagram_view::DiagramScene::Highlight;

  explicit TensorInspector(QWidget* parent = nullptr);
  ~TensorInspector() override;

  /// The values to show (what the layer computed on one input) and a caption saying whose they
  /// are; the element shown stays when the new values have it (a live run's next inspection).
  void setValues(std::shared_ptr<const model_core::NetworkValues> values, const QString& caption);
  /// The caption on show: whose values these are (or why there are none).
  QString captionText() const;
  /// No values: the page says `why`; the stepping stays (it needs only the network).
  void clear(const QString& why);
  /// The design on show and its diagram's network: the plan to step through (the values' network
  /// replaces it when values come) and the cost pages.
  void setDesign(const spec::AttentionSpec& design, const spec::TensorNetwork& network);
  std::shared_ptr<const model_core::NetworkValues> values() const { return values_; }

  /// Shows what a click on the diagram reached: a tensor (its value), a box (the step that
  /// evaluates it), a leg index (the step that sums it, else y). False when there is no such
  /// element; the page then says so.
  bool showElement(Element kind, const QString& id);
  /// Shows the value named `id`: a node, a plan step's output, or "<output>.logits" (what a
  /// softmax or φ step was applied to). False when there is none.
  bool showTensor(const QString& id);
  /// Whether a softmax / φ step is shown by its logits (the checkbox "before the softmax").
  void setShowLogits(bool logits);
  /// The id on show (empty for none).
  QString shownId() const { return shownId_; }
  /// The diagram element last asked for: a node id, a box id or "leg:<index>" (a lesson's
  /// "inspected" check); stepping through the plan does not change it.
  QString lastElement() const { return lastElement_; }
  /// "X^Q · x_q: [b = 1, N = 8, F = 32]"-style header of the tensor on show.
  QString headerText() const;

  /// The heatmap's legs (positions in the shown tensor's legs) and the index of every other leg.
  void setAxes(int rowLeg, int colLeg);
  void setSliceIndex(int leg, int index);
  int rowLeg() const { return rowLeg_; }
  int colLeg() const { return colLeg_; }
  /// The legs of the tensor on show (its batch leg first when it has one).
  const std::vector<spec::Leg>& legs() const { return legs_; }
  viz::MatrixHeatmap* heatmap() const { return heatmap_; }
  /// The page "Slots on the probe" (differential maps, gate values); its tab shows only for a layer
  /// that has either.
  ProbeSlotsView* probeSlots() const { return probeSlots_; }
  /// Whether the tab of that page is shown.
  bool probeSlotsTabVisible() const;
  /// The row-major position in the shown tensor of the heatmap's entry (row, col).
  std::int64_t flatIndexOf(int row, int col) const;

  // --- Contraction stepping --------------------------------------------------------------------
  int stepCount() const { return static_cast<int>(steps_.size()); }
  /// The plan step on show; -1 before the first (nothing highlighted).
  int currentStep() const { return step_; }
  const std::vector<spec::StepInfo>& steps() const { return steps_; }
  /// Shows plan step `index` (-1: none): highlights what it has contracted so far, shows its
  /// result when values are there, says its shape, FLOPs, memory and equation.
  void stepTo(int index);
  /// Leaves the stepping (before the first step, Play stopped) without asking the diagram for a
  /// highlight: whoever calls it (a lesson step) sets its own. A later values update then keeps it.
  void stopStepping();
  void next();
  void back();
  /// Plays the plan from the current step at `stepsPerSecond` (Play / Pause).
  void setPlaying(bool playing);
  bool playing() const;
  void setSpeed(double stepsPerSecond);
  /// The step's text as shown (tests, presenter mode).
  QString stepText() const;
  /// Larger fonts for presenting (1: as the desktop).
  void setFontScale(double scale);

  /// The contraction-order comparisons on the Orders page (tests). The page is filled when it is
  /// shown or asked for, not on every design edit.
  const std::vector<spec::OrderComparison>& orderComparisons();
  QTableWidget* ordersTable();
  QString scalingText();
  /// Multi-head latent attention's two orders side by side (rows: forward FLOPs, largest tensor,
  /// contraction steps, KV cache per token, decoding FLOPs per new token; columns: naive, absorbed,
  /// absorbed ÷ naive). Hidden with no rows for any other design.
  QTableWidget* mlaOrdersTable();

 Q_SIGNALS:
  /// What the diagram should highlight (empty: nothing).
  void highlightRequested(const tensorscope::diagram_view::DiagramScene::Highlight& highlight);
  void stepChanged(int index);
  /// The tensor on show changed (its id).
  void shown(const QString& id);

 private:
  void rebuildAxes();
  void redraw();
  void updateStepText();
  void fillOrders();
  void fillMlaOrders();
  /// Fills the Orders page if the design or values changed since it was last filled.
  void ensureOrders();
  void setPlan(const spec::TensorNetwork& network);
  const spec::TensorNode* node(const QString& id) const;

  std::shared_ptr<const model_core::NetworkValues> values_;
  spec::TensorNetwork network_;
  spec::AttentionSpec design_;
  std::vector<spec::StepInfo> steps_;
  std::vector<spec::OrderComparison> orders_;
  int step_ = -1;
  bool ordersStale_ = true;
  QString shownId_;
  QString lastElement_;
  std::vector<spec::Leg> legs_;
  std::vector<int> slice_;
  int rowLeg_ = -1, colLeg_ = -1;

  QLabel* caption_;
  QLabel* header_;
  QLabel* stepLabel_;
  QPushButton* backButton_;
  QPushButton* nextButton_;
  QPushButton* playButton_;
  QComboBox* speed_;
  QCheckBox* logits_;  ///< a softmax / φ step: show what the operation was applied to
  QComboBox* rows_;
  QComboBox* cols_;
  QWidget* sliders_;
  QVBoxLayout* slidersLayout_;
  viz::MatrixHeatmap* heatmap_;
  QTabWidget* tabs_;
  ProbeSlotsView* probeSlots_ = nullptr;
  int probeSlotsPage_ = -1;
  QTableWidget* ordersTable_;
  QLabel* scaling_;
  QLabel* mlaTitle_;
  QTableWidget* mlaOrders_;
  QTimer* timer_;
  double fontScale_ = 1.0;
};

/// "b = 1, N = 8, F = 32"-style shape of legs.
QString legsText(const std::vector<spec::Leg>& legs);

}  // namespace tensorscope::app
