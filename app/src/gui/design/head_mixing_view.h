#pragma once
/// The head mixings and multi-token attention's kernels of a design as heatmaps, under the slots of
/// the Design dock: C′ (`mix_post`, slots.post_mix: the attention weights mixed across heads after
/// the softmax, H x H, [to, from]), C^pre (`mix_pre`, slots.pre_mix), MTA's key-query kernels θ
/// (`mta_kernel`, [H, c_q, c_k], one c_q x c_k grid per head) and θ′ (`mta_kernel_after_sm`), and
/// its head convolution κ (`head_kernel`, [H/g, g, g], [group, from, to]); the H x H mixings with
/// their singular spectrum and stable rank (model_core/analysis.h), as the core editor gives for C.
///
/// An editor as C's is (spec/slot_values.h): C′, C^pre, θ and θ′ start as the design draws them
/// (slots.pre_mixing / post_mixing, slots.mta.kernel / post_kernel; the identity when it draws
/// none). A click or a drag sets entries to the value, Shift+drag fills a rectangle, the two paint
/// tools freeze entries of a mixing or let them train again, and the presets redraw the whole
/// weight; each edit is one undo step of the document (strokes merge). κ stays the identity in
/// every group (the spec draws no κ). While the design's run trains, or once it has a checkpoint,
/// the view shows those trained values read-only, and an edit asks to fork the run (as an edit of
/// its learned C does): the fork starts from the values shown, with the edit. Its weight names
/// are model_core::slotWeightNames(), in that order.

#include <QGroupBox>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "spec/attention_spec.h"

class QButtonGroup;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace tensorscope::viz {
class MatrixHeatmap;
}

namespace tensorscope::app {

class HeadMixingView : public QGroupBox {
  Q_OBJECT
 public:
  /// One weight of the layer: its name in the module ("mix_post"), shape and values (row-major).
  struct Tensor {
    QString name;
    std::vector<std::int64_t> shape;
    std::vector<double> values;
  };
  /// The trained weights of the selected run's shown layer, read from its checkpoint (step) or, while
  /// it trains, from its latest inspection (live), or why there are none (not trained yet, no
  /// inspection yet, unreadable).
  struct Trained {
    QString run;
    qint64 step = -1;
    int layer = 0;
    std::vector<Tensor> tensors;
    QString why;
    bool live = false;  ///< the values of a run that is training, at its latest inspection
    /// The values a fork that has not trained yet starts from (its starting snapshot's): editable,
    /// an edit draws them into the fork's design.
    bool forkStart = false;
  };
  enum class Tool { SetValue, PaintTrainable, PaintFrozen };

  explicit HeadMixingView(QWidget* parent = nullptr);

  /// The design whose weights are shown; the view hides itself when it has none of them.
  void setSpec(const spec::AttentionSpec& s);
  /// The selected run's trained values (an empty `tensors`: the design's initial values).
  void setTrained(const Trained& trained);

  /// The weights this design has, in the order of the Weight box: "mix_post", "mix_pre",
  /// "mta_kernel", "mta_kernel_after_sm", "head_kernel".
  QStringList weights() const { return weightsOf(spec_); }
  static QStringList weightsOf(const spec::AttentionSpec& s);
  /// Shows weight `name`, head (kernel) or group (κ) `index`; false when the design has no such
  /// weight or index.
  bool choose(const QString& name, int index = 0);
  QString shownWeight() const;
  int shownIndex() const;
  /// Whether the values on show are trained ones, a checkpoint's or a training run's (else the
  /// initial values).
  bool showsTrained() const { return showsTrained_; }
  viz::MatrixHeatmap* heatmap() const { return heatmap_; }
  /// "stable rank …, σ: …" for an H x H mixing; the kernel's entries otherwise.
  QString readoutText() const;
  /// Where the values come from and how they are edited.
  QString noteText() const;
  double stableRank() const { return stableRank_; }

  /// Whether the design may be edited (false while its run trains); the Design dock sets it.
  void setEditable(bool editable);
  /// Whether an edit of the values on show changes the design (else it asks for a fork).
  bool editsDesign() const;
  void setTool(Tool tool);
  void setPaintValue(double value);
  /// Applies the tool at [row, col] of the grid on show (what a click does). Read-only values ask
  /// for a fork and remember the cell for replayPendingEdit().
  void editCell(int row, int col, bool continuingStroke = false);
  /// Applies the tool to every cell of the rectangle as one undo step (Shift+drag).
  void editRectangle(int row0, int col0, int row1, int col1);
  /// Redraws the weight on show with preset `name` (spec::mixingPresetNames(),
  /// spec::mtaKernelPresetNames()); false when it is not one of the weight's presets.
  bool applyPreset(const QString& name);
  /// The presets of the weight on show (empty for κ).
  QStringList presetNames() const;
  /// Applies the cell edit that asked for a fork, on the fork now shown; false when none waits.
  bool replayPendingEdit();
  void clearPendingEdit() { pending_.reset(); }

  /// The starting values of weight `name` in a layer of design `s`, as the module sets them
  /// (model_core attention/mhsa.cpp, attention/mta.cpp): the design's drawn values, else identity
  /// mixings, and a single 1 at [h, c_q − 1, p] of each convolution kernel (p the key offset 0 of
  /// the pad); κ the identity in each group.
  /// Throws std::invalid_argument for a weight the design does not have.
  static Tensor initialValues(const spec::AttentionSpec& s, const QString& name);

 Q_SIGNALS:
  /// An edit of the design's drawn values (the Design dock puts it on the undo stack); `stroke`
  /// groups the cells of one drag.
  void valuesEdited(const tensorscope::spec::AttentionSpec& after, const QString& description, int stroke);
  /// The user edited trained values: the run has to be forked first.
  void forkRequested();

 private:
  struct PendingCell {
    QString weight;
    int index = 0, row = 0, col = 0;
  };
  void refresh();
  /// The whole tensor on show (every head), as its values would start an edit.
  const Tensor& shownTensor() const { return showsTrained_ ? shownTrained_ : shownInit_; }
  /// Sets cells (row, col) of the grid on show to the tool's value or mask; emits one edit.
  void applyTool(const std::vector<std::pair<int, int>>& cells, const QString& what, int stroke);
  /// "set C′[0,1] = 0.5", "paint θ[head 1][2,0] frozen": what the tool does to `cells`, for undo.
  QString toolText(const QString& cells) const;
  /// The design with the weight on show drawn as `values` (and, for a mixing, `mask`).
  spec::AttentionSpec withValues(std::vector<double> values, std::vector<unsigned char> mask) const;

  spec::AttentionSpec spec_;
  Trained trained_;
  bool showsTrained_ = false;
  double stableRank_ = 0;
  bool updating_ = false;
  bool editable_ = true;
  Tool tool_ = Tool::SetValue;
  /// Strokes number apart from the core editor's, so that one of its drags and one here never
  /// merge into one undo step (SpecCommand merges equal strokes of one run).
  int stroke_ = 1 << 24;
  std::optional<PendingCell> pending_;
  Tensor shownInit_, shownTrained_;
  QButtonGroup* tools_ = nullptr;
  QDoubleSpinBox* value_ = nullptr;
  QComboBox* preset_ = nullptr;
  QPushButton* applyPreset_ = nullptr;
  QComboBox* weight_ = nullptr;
  QSpinBox* index_ = nullptr;
  QLabel* indexLabel_ = nullptr;
  viz::MatrixHeatmap* heatmap_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* note_ = nullptr;
};

}  // namespace tensorscope::app
