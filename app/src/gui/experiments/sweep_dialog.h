#pragma once
/// Experiments > Sweep this design: compares the current run's design with Tuformer's designs
/// (MHSA, skip-left, skip-right, heads-only, trainable heads-only, dense THSA) over seeds, at the
/// current design's attention parameter count, as a sweep directory the Experiments dock opens.

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

namespace tensorscope::app {

struct DesignSweepChoice {
  QString name;            ///< the sweep's name
  QStringList designs;     ///< of kTuformerDesigns, compared with the current design
  int seeds = 3;           ///< seeds 1..seeds
  std::int64_t steps = 1000;
  QString metric = "loss";
  bool matchParameters = true;  ///< every design at the current design's attention parameter count
  double tolerance = 0.03;
  /// A second axis, optional: a config path (e.g. train.lr) and its values as JSON scalars
  /// ("0.001, 0.002"); empty path: none.
  QString alsoPath;
  QString alsoValues;
};

/// The designs the dialog offers, as core presets (mhsa is the variant itself).
extern const QStringList kTuformerDesigns;

/// The sweep file (tensorscope.sweep) of the choice: base = `base` (the current run's config), a
/// "design" axis whose first value is the current design unchanged ("this design") and then each
/// chosen design with the current H and D (R = H·D; the D = 1 designs get H·D heads), seeds, steps,
/// the metric, the parameter match with "this design" as the reference, and the second axis when
/// given. Throws std::invalid_argument for values that do not read.
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

  /// Plans the sweep (the OK button); one that does not expand keeps the dialog open with the reason.
  void accept() override;

 private:
  model_core::RunConfig base_;
  QLineEdit* name_ = nullptr;
  QList<QCheckBox*> designs_;
  QSpinBox* seeds_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QComboBox* metric_ = nullptr;
  QCheckBox* match_ = nullptr;
  QDoubleSpinBox* tolerance_ = nullptr;
  QLineEdit* dir_ = nullptr;
  QLineEdit* alsoPath_ = nullptr;
  QLineEdit* alsoValues_ = nullptr;
  QLabel* error_ = nullptr;
  QString planned_;
};

}  // namespace tensorscope::app
