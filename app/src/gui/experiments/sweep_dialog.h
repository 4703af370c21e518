#pragma once
/// Experiments > Sweep this design: compares the current run's design with Tuformer's designs
/// (MHSA, skip-left, skip-right, heads-only, trainable heads-only, dense THSA) and the modern
/// presets (MQA, GQA, MLA, TPA, differential, talking heads, gated, MTA) over seeds, against a
/// chosen baseline, at an equal budget (the attention parameter count, or the cost model's
/// trainable parameters, KV cache or training FLOPs through its matcher), as a sweep directory the
/// Experiments dock opens. The plan preview shows each design's solved size and residual.

#include <QDialog>
#include <QStringList>
#include <nlohmann/json.hpp>

#include "model_core/run_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;

namespace tensorscope::app {

struct DesignSweepChoice {
  QString name;            ///< the sweep's name
  QStringList designs;     ///< of kTuformerDesigns and kModernDesigns, compared with the current design
  int seeds = 3;           ///< seeds 1..seeds
  std::int64_t steps = 1000;
  QString metric = "loss";
  /// The equal budget: "attention" (match_parameters: the attention parameter count, Tuformer's
  /// sizes solved), "params", "kv" or "flops" (match: the cost model's matcher), "" (none).
  QString matchOn = "attention";
  QString matchSize = "any";  ///< under params, kv or flops: the size solved (spec::budgetSizeNames) or any
  double tolerance = 0.03;
  /// The design every other is compared with (and the budget's reference): "this design" or one of
  /// `designs` (a baseline not among them is added to them).
  QString baseline = "this design";
  /// A second axis, optional: a config path (e.g. train.lr) and its values as JSON scalars
  /// ("0.001, 0.002"); empty path: none.
  QString alsoPath;
  QString alsoValues;
};

/// The designs the dialog offers, as core presets (mhsa is the variant itself).
extern const QStringList kTuformerDesigns;
/// The modern designs the dialog offers (spec design presets), each at the current F, H and D.
extern const QStringList kModernDesigns;

/// The sweep file (tensorscope.sweep) of the choice: base = `base` (the current run's config), a
/// "design" axis whose first value is the current design unchanged ("this design") and then each
/// chosen design with the current H and D (R = H·D; the D = 1 designs get H·D heads; a modern
/// preset at the current F, H, D, sequence length and causality), seeds, steps, the metric, the
/// baseline, the budget match with the baseline as the reference, and the second axis when given.
/// Throws std::invalid_argument for values that do not read.
nlohmann::json designSweepJson(const model_core::RunConfig& base, const DesignSweepChoice& choice);

class SweepDialog : public QDialog {
  Q_OBJECT
 public:
  SweepDialog(const QString& runName, const model_core::RunConfig& base, const QString& defaultDir, QWidget* parent = nullptr);
  DesignSweepChoice choice() const;
  QString directory() const;
  /// After accept(): the planned sweep directory (written), or empty.
  QString planned() const { return planned_; }
  /// Why the last accept() planned nothing (shown in the dialog), or empty.
  QString error() const;
  QLineEdit* nameEdit() const { return name_; }
  QLineEdit* directoryEdit() const { return dir_; }
  QSpinBox* seedsBox() const { return seeds_; }
  QSpinBox* stepsBox() const { return steps_; }
  QDoubleSpinBox* toleranceBox() const { return tolerance_; }
  QLineEdit* alsoPathEdit() const { return alsoPath_; }
  QLineEdit* alsoValuesEdit() const { return alsoValues_; }
  QCheckBox* designBox(const QString& design) const;
  QComboBox* baselineBox() const { return baseline_; }
  QComboBox* matchOnBox() const { return matchOn_; }
  QComboBox* matchSizeBox() const { return matchSize_; }
  /// The plan preview: per design its solved size, cost, the reference's and the residual.
  QTableWidget* planTable() const { return plan_; }
  /// Expands the sweep of the current choice into the preview (Preview the plan); false with the
  /// reason (the matcher's, for a design no size brings within the tolerance) shown as error().
  bool previewPlan();

  /// Plans the sweep (the OK button); one that does not expand keeps the dialog open with the reason.
  void accept() override;

 private:
  model_core::RunConfig base_;
  QLineEdit* name_ = nullptr;
  QList<QCheckBox*> designs_;
  QSpinBox* seeds_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QComboBox* metric_ = nullptr;
  QComboBox* matchOn_ = nullptr;
  QComboBox* matchSize_ = nullptr;
  QComboBox* baseline_ = nullptr;
  QTableWidget* plan_ = nullptr;
  QDoubleSpinBox* tolerance_ = nullptr;
  QLineEdit* dir_ = nullptr;
  QLineEdit* alsoPath_ = nullptr;
  QLineEdit* alsoValues_ = nullptr;
  QLabel* error_ = nullptr;
  QString planned_;
  void showProblem(const QString& problem);
};

}  // namespace tensorscope::app
