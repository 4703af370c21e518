#pragma once
/// The Design dock: variant, sizes and core preset of one attention layer, with live validation
/// and the analytic cost model. Emits the spec whenever the user changes it.

#include <QWidget>

#include "spec/attention_spec.h"
#include "spec/validation.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace tensorscope::app {

class DesignPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DesignPanel(QWidget* parent = nullptr);

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

 Q_SIGNALS:
  void specChanged(const tensorscope::spec::AttentionSpec& spec);
  /// "Sweep this design…": compare the run's design with Tuformer's designs (the window's dialog).
  void sweepRequested();

 private:
  void applyPreset(const QString& name);
  void readControls();
  void refreshReadouts();
  void updateEnabledFields();

  spec::AttentionSpec spec_;
  bool valid_ = true;
  /// Why the chosen core preset was not expanded at the chosen sizes (the old core stays meanwhile).
  std::vector<spec::Issue> presetProblems_;
  bool updating_ = false;
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
};

}  // namespace tensorscope::app
