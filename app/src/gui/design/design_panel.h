#pragma once
/// The Design dock: variant, sizes and core preset of one attention layer, the slots of the one
/// attention network (issue 36: K/V groups, head mixing, gate, differential attention, MLA's
/// latent, TPA, MTA; the slot rows in design_slots.cpp, the Cost dock in design_cost.cpp), what the drawn network is (spec::nameDesigns) and what it costs against MHSA (the
/// analytic cost model), with live validation. Emits the spec, and what changed, whenever the user
/// changes it.

#include <QWidget>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "gui/design/head_mixing_view.h"
#include "spec/attention_spec.h"
#include "spec/validation.h"

class QCheckBox;
class QFormLayout;
class QGroupBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QVBoxLayout;

namespace tensorscope::app {

class DesignPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DesignPanel(QWidget* parent = nullptr);

  /// One editable slot of the attention network: its widget, how it shows a spec and how it writes
  /// itself into one. A new slot (e.g. TPA's ranks) is one addSlot…() call in the constructor.
  struct SlotControl {
    QString field;  ///< the spec field ("slots.kv_groups"): the widget's object name
    QWidget* widget = nullptr;
    std::function<void(const spec::AttentionSpec&)> show;  ///< the spec's value into the widget
    std::function<void(spec::AttentionSpec&)> read;        ///< the widget's value into a spec
    std::function<QString(const spec::AttentionSpec&)> describe;  ///< the undo text of an edit
    /// Whether the row is shown (empty: always), e.g. MLA's query rank only with a latent.
    std::function<bool(const spec::AttentionSpec&)> shown = {};
    /// An edit the spec validator refuses (a problem the design did not have) is not applied: the
    /// control goes back and the validator's reason shows under the slots (MTA's fields).
    bool refuseInvalid = false;
  };

  /// What the cost section shows, from spec/cost_model.h (valid designs only).
  struct Costs {
    bool valid = false;
    int bytesPerElement = 4;    ///< the precision chosen (float32: 4, bfloat16 and float16: 2)
    std::int64_t context = 0;   ///< L: training sequence length, and tokens cached when decoding
    std::int64_t parameters = 0;
    std::int64_t mhsaParameters = 0;
    bool decodes = true;        ///< false: the layer does not decode token by token (decodeNote says why)
    double kvCacheBytesPerToken = 0, mhsaKvCacheBytesPerToken = 0;
    double stateBytes = 0;      ///< a fixed-size state instead of a cache (linear THSA, dimwise)
    double trainingFlopsPerToken = 0, mhsaTrainingFlopsPerToken = 0;
    double decodeFlops = 0, mhsaDecodeFlops = 0;
    QString decodeNote;
    bool hasBaseline = false;  ///< MHSA at the same F, H, D is a valid layer (the ratios)
  };

  /// What the dock shows of the model around the layer: the run's layer count and position scheme
  /// (`model.positions`), why each rotary choice is refused for this run (the run validator's
  /// words; empty: allowed), and the learned λ of differential attention per layer where the run's
  /// checkpoint has it (with its step).
  struct ModelContext {
    int layers = 1;
    QString positions = "learned";
    QString rotaryRefusal, interleavedRefusal;
    std::vector<std::optional<double>> learnedLambda;
    qint64 lambdaStep = -1;
    /// The trained head mixings and MTA kernels of the shown layer (C′, C^pre, θ, θ′, κ) from the
    /// run's checkpoint; empty for a run without one (the view then shows the initial values).
    HeadMixingView::Trained trainedMixing;
  };
  void setModelContext(const ModelContext& context);
  /// The position choices: "learned", "sinusoidal", "rotary", "rotary_interleaved".
  QComboBox* positionsBox() const { return positions_; }
  /// Why the rotary choices are unavailable for this run (empty: both allowed).
  QString positionsNote() const;
  /// λ of differential attention by layer (λ_init, and the learned λ where there is one); empty
  /// when the design is not differential.
  QString lambdaText() const;

  const spec::AttentionSpec& spec() const { return spec_; }
  /// Shows `s` in the controls (without emitting specChanged).
  void setSpec(const spec::AttentionSpec& s);
  /// True when the current spec has no validation problems.
  bool isValid() const { return valid_; }
  /// The problems shown under the controls, one "field: message" per line.
  QString problemsText() const;
  /// Off while the shown run trains: the controls show its design and take no edits.
  void setEditable(bool editable);
  bool isEditable() const { return editable_; }
  /// The widget of slot `field` ("slots.kv_groups", "slots.latent.order", …); null if none.
  QWidget* slotWidget(const QString& field) const;
  /// Whether the slots section is shown (variants with slots, spec::hasSlots).
  bool slotsShown() const;
  /// Why the last slot edit was refused (the spec validator's words, "field: message" per line);
  /// empty when it was applied.
  QString slotRefusal() const;
  /// C′ (post-softmax head mixing), C^pre and MTA's kernels as heatmaps, under the slots.
  HeadMixingView* headMixing() const { return headMixing_; }
  /// "Equals GQA-2" / "Contains …": what the drawn network is (spec::nameDesigns; empty while invalid).
  QString designNameText() const;
  /// The why of every name, one per line (the name label's tooltip).
  QString designNameWhy() const;
  /// The Preset box's name of the preset the spec is (same variant, core preset and slots; MLA's
  /// order, the sizes and the slots' ranks and kernel sizes aside, though not whether each is on),
  /// else empty. `shown` is kept where it names the same design.
  static QString designPresetOf(const spec::AttentionSpec& s, const QString& shown = {});
  /// "Equals X; contains Y, Z" from spec::nameDesigns (empty for an invalid spec).
  static QString describeDesigns(const spec::AttentionSpec& s);
  /// The cost section's numbers at the chosen precision and context length.
  Costs costs() const;
  QString costText() const;
  /// The cost section and "Match budget": a panel the window docks on its own (hidden otherwise).
  QWidget* costPanel() const { return costPanel_; }
  /// The Cost dock's table: this design, MHSA and every design preset at this F, H, D, each cost
  /// per token as a ratio to MHSA's (absolute values in the tooltips).
  QTableWidget* costTable() const { return costTable_; }
  /// "Match budget" driven as a user does: cost ("params", "kv", "flops"), the baseline's design
  /// preset ("" or "mhsa": MHSA at this F, H, D), the size ("" any), then Match. The result line;
  /// apply() then applies it (false when there is nothing to apply).
  QString matchBudget(const QString& cost, const QString& baseline, const QString& size);
  bool applyMatchedBudget();
  QString matchResultText() const;
  void setPrecision(int bytesPerElement);
  void setContext(int tokens);

 Q_SIGNALS:
  /// `what`: the undo text ("K/V groups 2 (GQA-2)", "preset mla", "edit design").
  void specChanged(const tensorscope::spec::AttentionSpec& spec, const QString& what);
  /// The model's position scheme chosen (`model.positions`); `what`: the undo text.
  void positionsEdited(const QString& positions, const QString& what);
  /// "Sweep this design…": compare the run's design with Tuformer's designs (the window's dialog).
  void sweepRequested();

 private:
  void applyPreset(const QString& name);
  /// The Preset box shows designPresetOf(spec_), blank when it is none.
  void showPreset();
  void readControls(const QString& what = QStringLiteral("edit design"));
  void addSlotRow(const QString& label, SlotControl control);
  void addSlotCheck(const QString& field, const QString& label, const QString& tip,
                    std::function<bool&(spec::AttentionSpec&)> member);
  void addSlotSpin(const QString& field, const QString& label, const QString& tip, int min, int max, int step,
                   const QString& zeroText, std::function<int&(spec::AttentionSpec&)> member);
  /// A combo of `names`; item i is the slot's value i (an enum's order).
  void addSlotChoice(const QString& field, const QString& label, const QString& tip, const QStringList& names,
                     std::function<int(const spec::AttentionSpec&)> get,
                     std::function<void(spec::AttentionSpec&, int)> set);
  void buildSlots();
  /// Multi-token attention's fields (slots.mta, §8.8).
  void buildMtaSlots();
  void buildCollaborativeSlots();
  /// Slot `i`'s control was changed by the user: refused (refuseInvalid) or applied as one edit.
  void slotEdited(size_t i);
  void buildCostPanel();
  void buildMatchBudget(QVBoxLayout* layout);
  /// The "solve" box lists the sizes this design uses (a design change drops a stale choice); a
  /// match made for another design is dropped.
  void followDesignInMatch();
  /// The Cost dock's numbers for the current (valid) design.
  void refreshCost();
  /// The baseline chosen in "Match budget" at this design's F, H, D.
  spec::AttentionSpec matchBaseline() const;
  void runMatch();
  void applyMatch();
  void showSlots();
  void refreshReadouts();
  void updateEnabledFields();

  spec::AttentionSpec spec_;
  bool valid_ = true;
  /// Why the chosen core preset was not expanded at the chosen sizes (the old core stays meanwhile).
  std::vector<spec::Issue> presetProblems_;
  bool updating_ = false;
  // A preset picked from the box that the window did not take, and the design it stayed at: the
  // textActivated that Qt sends after the pick (for the old name shown again) is no request.
  QString refusedPick_;
  spec::AttentionSpec refusedFrom_;
  bool editable_ = true;
  QLabel* locked_ = nullptr;
  QComboBox* preset_ = nullptr;
  QComboBox* variant_ = nullptr;
  QComboBox* corePreset_ = nullptr;
  QSpinBox *F_ = nullptr, *H_ = nullptr, *D_ = nullptr, *R_ = nullptr, *P_ = nullptr, *c_ = nullptr,
           *seq_ = nullptr, *batch_ = nullptr;
  QCheckBox *causal_ = nullptr, *bias_ = nullptr, *coreSoftmax_ = nullptr;
  QDoubleSpinBox* dropout_ = nullptr;
  QLabel* problems_ = nullptr;
  QLabel* cost_ = nullptr;
  QGroupBox* slotsBox_ = nullptr;
  QFormLayout* slotsForm_ = nullptr;
  std::vector<SlotControl> slotControls_;
  int editedSlot_ = -1;  ///< the slot whose edit readControls takes (-1: every control)
  QLabel* slotRefusal_ = nullptr;
  HeadMixingView* headMixing_ = nullptr;
  QLabel* name_ = nullptr;
  QComboBox* precision_ = nullptr;
  QSpinBox* context_ = nullptr;
  QLabel* tokenCost_ = nullptr;
  QComboBox* positions_ = nullptr;
  QLabel* positionsNote_ = nullptr;
  QLabel* lambda_ = nullptr;
  ModelContext context_model_;
  void showModelContext();
  QWidget* costPanel_ = nullptr;
  QComboBox *matchOn_ = nullptr, *matchBase_ = nullptr, *matchSize_ = nullptr;
  QPushButton *matchRun_ = nullptr, *matchApply_ = nullptr;
  QLabel* matchResult_ = nullptr;
  QTableWidget* costTable_ = nullptr;
  void refreshCostTable(const Costs& k);
  std::optional<spec::AttentionSpec> matched_;  ///< the matcher's design, for Apply
  spec::AttentionSpec matchedFrom_;             ///< the design it was solved from
  QString matchText_;                           ///< the undo text of applying it
};

}  // namespace tensorscope::app
