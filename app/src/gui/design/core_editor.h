#pragma once
/// The core-matrix C editor: a heatmap of C (diverging colours, symmetric range) edited directly —
/// click or drag to set values, paint trainable/frozen masks — plus the structure (dense, or
/// s·(A ⊗ B) with a kind per factor), the factor matrices, presets, and live read-outs: stable
/// rank (= number of heads), singular spectrum, parameter and FLOP change versus MHSA.
/// Every edit is reported as (before, after) so the window can put it on the undo stack.

#include <QWidget>
#include <optional>
#include <utility>

#include "spec/attention_spec.h"
#include "spec/validation.h"

class QButtonGroup;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;
class QLabel;
class QPushButton;

namespace tensorscope::viz {
class MatrixHeatmap;
}

namespace tensorscope::app {

class CoreEditor : public QWidget {
  Q_OBJECT
 public:
  enum class Tool { SetValue, PaintTrainable, PaintFrozen };

  explicit CoreEditor(QWidget* parent = nullptr);
  /// Widest C (and A, B) the editor draws and analyses (an R x R SVD per edit).
  static constexpr int kMaxDrawnCoreWidth = 1024;
  /// The banner's message when shown (read-only run, refused edit), else empty.
  QString bannerText() const;

  /// Shows the design `spec` (THSA family; other variants show an explanation).
  void setSpec(const spec::AttentionSpec& spec);
  /// Shows a learned C (training in progress): read-only; an edit then asks to fork a run.
  /// `whose` says whose C it is and what an edit does, for the banner (empty: a generic text).
  /// `factors`: the learned core read from the run's checkpoint of the same step, whose factors
  /// the factor panels then show (training reports C only: without it they say so).
  void showLearnedCore(const std::vector<float>& values, int R, qint64 step, const QString& whose = {},
                       const spec::CoreSpec* factors = nullptr);
  /// The run's layer count and the layer shown; `perLayer` when the layers' designs differ.
  void setLayers(int count, int current, bool perLayer);
  int layer() const;
  /// Back to editing the design.
  void setEditable(bool editable);
  bool editable() const { return editable_; }

  void setTool(Tool tool);
  void setPaintValue(double value);
  /// Applies the current tool at C[row, col] (what a click does; public for tests and scripts).
  /// On a training run's learned C it asks for a fork and remembers the cell: replayPendingEdit()
  /// applies it to the fork, so the edit that asked for the fork is not lost.
  void editCell(int row, int col, bool continuingStroke = false);
  /// Applies the current tool to every cell of C[row0..row1, col0..col1] as one edit (one undo
  /// step): what a Shift+drag on C does.
  void editRectangle(int row0, int col0, int row1, int col1);
  /// Applies the cell edit remembered by a refused editCell to the C now shown (the fork); false
  /// when there is none or the editor is still read-only.
  bool replayPendingEdit();
  void clearPendingEdit() { pendingCell_.reset(); }
  /// What the fork question says of the edit that asked for it (finding N14): "with your edit
  /// applied" only when a cell edit of a dense C waits to be replayed on the fork; a factored C's
  /// click cannot be replayed, so the fork starts from the learned C unedited and the edit is
  /// repeated there. Either way the fork's learning-rate schedule (its warm-up) starts again.
  QString forkEditText() const;

  /// Chooses the core's structure ("dense", "kronecker", "low_rank"), as the Structure box does.
  void setStructure(const QString& name);
  /// Sets the rank ρ of a low-rank core (keeps the learned columns), as the Rank box does.
  void setRank(int rank);

  viz::MatrixHeatmap* heatmap() const { return heatmap_; }
  /// The factor panels (A and B of a Kronecker C, U and V of a low-rank one; hidden or empty
  /// otherwise), labelled as rows and columns of the factor.
  viz::MatrixHeatmap* factorA() const { return factorA_; }
  viz::MatrixHeatmap* factorB() const { return factorB_; }
  /// "A"/"B", "U"/"V", or empty when C has no factors (dense, or no core).
  QString factorName(int index) const;
  /// The step of the learned C on show, or -1 while the design's C is shown.
  qint64 learnedStep() const { return learnedStep_; }
  /// The read-out under C: stable rank, spectrum, parameters and FLOPs against a named MHSA.
  QString readoutText() const;
  double stableRank() const { return stableRank_; }

 Q_SIGNALS:
  /// An edit of the current design; `stroke` groups the cells of one drag for undo merging.
  void coreEdited(const tensorscope::spec::AttentionSpec& before, const tensorscope::spec::AttentionSpec& after,
                  const QString& description, int stroke);
  /// The user tried to edit while training shows a learned C.
  void forkRequested();
  /// The user chose another layer's C.
  void layerChosen(int layer);

 protected:
  /// A palette change (the dark theme) recolours the banner.
  void changeEvent(QEvent* event) override;

 private:
  /// The banner's amber box in the palette's colours: the window colour tinted amber, its text.
  void updateBannerColours();
  void refresh();
  void emitEdit(const spec::AttentionSpec& after, const QString& what, int stroke = -1);
  /// Shows `issues` in the banner and returns true when there are any: an edit that would expand
  /// C beyond spec::kMaxCoreValues (or a preset at impossible sizes) is refused before it allocates.
  bool refuse(const std::vector<spec::Issue>& issues);
  void onStructureChanged();

  spec::AttentionSpec spec_;
  bool editable_ = true;
  std::optional<std::pair<int, int>> pendingCell_;  ///< a cell clicked on a training run's C
  bool loading_ = false;
  Tool tool_ = Tool::SetValue;
  int stroke_ = 0;
  double stableRank_ = 0;
  qint64 learnedStep_ = -1;
  /// Draws the factors of `core` in the factor panels (dense: none); `learned` prefixes titles.
  void showFactors(const spec::CoreSpec& core, const QString& learned);
  viz::MatrixHeatmap* heatmap_ = nullptr;
  viz::MatrixHeatmap* factorA_ = nullptr;
  viz::MatrixHeatmap* factorB_ = nullptr;
  QComboBox *preset_ = nullptr, *structure_ = nullptr, *kindA_ = nullptr, *kindB_ = nullptr;
  QDoubleSpinBox *value_ = nullptr, *scale_ = nullptr;
  QSpinBox* rank_ = nullptr;  ///< ρ of a low-rank core C = U·Vᵀ
  QSpinBox* layer_ = nullptr;
  QLabel* layerNote_ = nullptr;
  QButtonGroup* tools_ = nullptr;
  QPushButton* toDense_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* banner_ = nullptr;
};

}  // namespace tensorscope::app
