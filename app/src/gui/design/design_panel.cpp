#include "gui/design/design_panel.h"

#include <algorithm>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QPushButton>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "spec/cost_model.h"
#include "spec/validation.h"

namespace tensorscope::app {

namespace {
const QString kCustomCore = QStringLiteral("custom");
}  // namespace
namespace {

QSpinBox* sizeBox(int max, const QString& tip) {
  auto* b = new QSpinBox;
  b->setRange(1, max);
  b->setToolTip(tip);
  b->setKeyboardTracking(false);
  return b;
}

QString human(double v, const QString& unit, double base = 1000.0) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= base && i < 5) {
    v /= base;
    ++i;
  }
  return QString::number(v, 'g', 3) + " " + prefixes[i] + (base == 1024.0 && i ? "i" : "") + unit;
}

}  // namespace

DesignPanel::DesignPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  layout->addLayout(form);

  preset_ = new QComboBox;
  for (const auto& n : spec::specPresetNames()) preset_->addItem(QString::fromStdString(n));
  preset_->setToolTip("Start from a preset: a variant, or a THSA core preset from Tuformer's design space");
  form->addRow("Preset", preset_);

  variant_ = new QComboBox;
  for (const auto& n : spec::variantNames()) variant_->addItem(QString::fromStdString(n));
  form->addRow("Variant", variant_);

  corePreset_ = new QComboBox;
  for (const auto& n : spec::corePresetNames()) corePreset_->addItem(QString::fromStdString(n));
  corePreset_->addItem(kCustomCore);  // an edited, converted or learned C: kept through other edits
  corePreset_->setToolTip("Structure of the core matrix C (THSA family). \"custom\": a C edited in the core "
                          "editor, converted or learned; it stays until you choose a preset");
  form->addRow("Core C", corePreset_);

  F_ = sizeBox(spec::kMaxWidth, "F: model width");
  H_ = sizeBox(spec::kMaxHeads, "H: heads");
  D_ = sizeBox(spec::kMaxWidth, "D: head (latent) size");
  R_ = sizeBox(spec::kMaxWidth, "R: rank / channels (THSA), projection width (multilinear, dimwise)");
  P_ = sizeBox(spec::kMaxBlockTerms, "P: block terms (multilinear)");
  c_ = sizeBox(spec::kMaxFilters, "c: filters (dimwise)");
  seq_ = sizeBox(spec::kMaxSeqLen, "N: tokens (fixed at build time for multilinear)");
  form->addRow("F (width)", F_);
  form->addRow("H (heads)", H_);
  form->addRow("D (head size)", D_);
  form->addRow("R (rank)", R_);
  form->addRow("P (block terms)", P_);
  form->addRow("c (filters)", c_);
  form->addRow("N (tokens)", seq_);

  causal_ = new QCheckBox("causal");
  bias_ = new QCheckBox("bias");
  coreSoftmax_ = new QCheckBox("softmax(g) cores");
  coreSoftmax_->setToolTip("multilinear: softmax over the core weights (paper) or raw weights (authors' code)");
  auto* flags = new QHBoxLayout;  // two short rows: a laptop's dock is about 300 px wide
  flags->addWidget(causal_);
  flags->addWidget(bias_);
  flags->addStretch(1);
  form->addRow(flags);
  form->addRow(coreSoftmax_);
  dropout_ = new QDoubleSpinBox;
  dropout_->setRange(0.0, 0.95);
  dropout_->setSingleStep(0.05);
  form->addRow("Dropout", dropout_);

  auto* costBox = new QGroupBox("Cost of one layer");
  auto* costLayout = new QVBoxLayout(costBox);
  batch_ = sizeBox(1 << 16, "batch size B for the cost estimate");
  batch_->setValue(32);
  auto* bRow = new QFormLayout;
  bRow->addRow("batch B", batch_);
  costLayout->addLayout(bRow);
  cost_ = new QLabel;
  cost_->setWordWrap(true);  // long lines would widen the dock past a laptop's share of the screen
  cost_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  costLayout->addWidget(cost_);
  layout->addWidget(costBox);
  auto* sweep = new QPushButton("Sweep this design…");
  sweep->setObjectName("sweepDesign");
  sweep->setToolTip("Train this design beside Tuformer's designs over seeds, at its parameter count "
                    "(the Experiments dock runs and compares them)");
  connect(sweep, &QPushButton::clicked, this, &DesignPanel::sweepRequested);
  layout->addWidget(sweep);

  locked_ = new QLabel("This run is training: its design is fixed while it trains (edit C to fork it, or stop it "
                       "first).");
  locked_->setWordWrap(true);
  locked_->setStyleSheet("color: #8a6d00;");
  locked_->setVisible(false);
  layout->addWidget(locked_);

  problems_ = new QLabel;
  problems_->setWordWrap(true);
  problems_->setStyleSheet("color: #b2182b;");
  layout->addWidget(problems_);
  layout->addStretch(1);

  connect(preset_, &QComboBox::currentTextChanged, this, &DesignPanel::applyPreset);
  connect(variant_, &QComboBox::currentTextChanged, this, [this] { readControls(); });
  connect(corePreset_, &QComboBox::currentTextChanged, this, [this] { readControls(); });
  for (QSpinBox* b : {F_, H_, D_, R_, P_, c_, seq_})
    connect(b, &QSpinBox::valueChanged, this, [this] { readControls(); });
  connect(batch_, &QSpinBox::valueChanged, this, [this] { refreshReadouts(); });
  for (QCheckBox* b : {causal_, bias_, coreSoftmax_})
    connect(b, &QCheckBox::toggled, this, [this] { readControls(); });
  connect(dropout_, &QDoubleSpinBox::valueChanged, this, [this] { readControls(); });

  // Opens on Tuformer's fully trainable core, so C has something to show from the start.
  {
    const QSignalBlocker block(preset_);
    preset_->setCurrentText("thsa");
  }
  setSpec(spec::makeSpecPreset("thsa"));
}

void DesignPanel::applyPreset(const QString& name) {
  if (updating_) return;
  setSpec(spec::makeSpecPreset(name.toStdString()));
  Q_EMIT specChanged(spec_);
}

void DesignPanel::setSpec(const spec::AttentionSpec& s) {
  if (!(s == spec_)) presetProblems_.clear();  // kept when the window echoes this panel's own edit
  spec_ = s;
  updating_ = true;
  const QString variant = QString::fromStdString(std::string(spec::toString(s.variant)));
  variant_->setCurrentText(variant);
  {
    // The preset this design starts from: a THSA core preset by its name (skip_left, …), else
    // the variant; the box never shows another design's preset.
    const QSignalBlocker block(preset_);
    const QString core = s.core ? QString::fromStdString(s.core->preset) : QString();
    const bool corePreset = s.variant == spec::Variant::Thsa && !core.isEmpty() && preset_->findText(core) >= 0;
    preset_->setCurrentText(corePreset ? core : variant);
  }
  if (s.core) {
    const int i = corePreset_->findText(QString::fromStdString(s.core->preset));
    corePreset_->setCurrentIndex(i >= 0 ? i : corePreset_->findText(kCustomCore));
  }
  F_->setValue(s.sizes.F);
  H_->setValue(s.sizes.H);
  D_->setValue(s.sizes.D);
  R_->setValue(s.sizes.R);
  P_->setValue(s.sizes.P);
  c_->setValue(s.sizes.c);
  seq_->setValue(s.sizes.seq_len);
  causal_->setChecked(s.causal);
  bias_->setChecked(s.bias);
  coreSoftmax_->setChecked(s.core_softmax);
  dropout_->setValue(s.dropout);
  updating_ = false;
  updateEnabledFields();
  refreshReadouts();
}

void DesignPanel::readControls() {
  if (updating_) return;
  spec::AttentionSpec s = spec_;
  spec::parseVariant(variant_->currentText().toStdString(), s.variant);
  s.sizes = {F_->value(), H_->value(), D_->value(), R_->value(), P_->value(), c_->value(), seq_->value()};
  s.causal = causal_->isChecked();
  s.bias = bias_->isChecked();
  s.core_softmax = coreSoftmax_->isChecked();
  s.dropout = dropout_->value();
  if (spec::hasCore(s.variant)) {
    // The core is rebuilt only when the user asks for it: a preset chosen in the combo, or H or D
    // changed under a preset core (re-expanded at the new sizes). A custom C (edited, converted or
    // learned) survives every other edit; if H or D change under it, validation says what no
    // longer fits and undo brings the sizes back.
    std::string name = corePreset_->currentText().toStdString();
    const bool custom = name == kCustomCore.toStdString();
    const bool presetChosen = !custom && (!spec_.core || spec_.core->preset != name);
    const bool sizesChanged = s.sizes.H != spec_.sizes.H || s.sizes.D != spec_.sizes.D;
    if (custom && !spec_.core) name = "thsa";  // a core variant chosen again after its custom C went
    if (presetChosen || !spec_.core || (!custom && sizesChanged)) {
      const bool heads = name == "heads_only" || name == "trainable_heads_only";
      if (heads && s.sizes.D != 1) s.sizes.D = 1;
      s.sizes.R = s.sizes.H * s.sizes.D;
      // Never expand a preset past its bounds (H*D up to 16.7 M here, and a dense C squares it):
      // the old core stays, and validation below names what is wrong with the sizes.
      presetProblems_ = spec::corePresetIssues(name, s.sizes);
      if (presetProblems_.empty()) s.core = spec::makeCorePreset(name, s.sizes.H, s.sizes.D);
    } else {
      s.sizes.R = s.sizes.H * s.sizes.D;  // THSA: R = H*D; a custom C of another R is named by validation
      presetProblems_.clear();
    }
  } else {
    presetProblems_.clear();
    s.core.reset();
  }
  if (s.sizes.R != R_->value() || s.sizes.D != D_->value()) {
    updating_ = true;
    R_->setValue(s.sizes.R);
    D_->setValue(s.sizes.D);
    updating_ = false;
  }
  spec_ = s;
  updateEnabledFields();
  refreshReadouts();
  Q_EMIT specChanged(spec_);
}

void DesignPanel::updateEnabledFields() {
  using spec::Variant;
  const Variant v = spec_.variant;
  const bool headed = v == Variant::Mhsa || v == Variant::FixedHead || v == Variant::Tp;
  const bool core = spec::hasCore(v);
  const bool e = editable_;
  for (QWidget* w : std::initializer_list<QWidget*>{preset_, variant_, F_, seq_, causal_, bias_, dropout_})
    w->setEnabled(e);
  corePreset_->setEnabled(e && core);
  H_->setEnabled(e && (headed || core));
  D_->setEnabled(e && (headed || core));
  R_->setEnabled(e && (v == Variant::Multilinear || v == Variant::Dimwise));  // THSA: R = H*D
  P_->setEnabled(e && v == Variant::Multilinear);
  c_->setEnabled(e && v == Variant::Dimwise);
  coreSoftmax_->setEnabled(e && v == Variant::Multilinear);
  locked_->setVisible(!e);
}

void DesignPanel::setEditable(bool editable) {
  editable_ = editable;
  updateEnabledFields();
}

QString DesignPanel::problemsText() const { return problems_->text(); }

void DesignPanel::refreshReadouts() {
  auto issues = spec::validate(spec_);
  if (!presetProblems_.empty() && spec_.core) {
    // The refused preset left the previous core in place: its mismatch with the new sizes (and its
    // own size bound) follow from the refusal, so only the preset's reason is shown for them.
    const auto stale = spec::coreSizeIssues(spec_.core->structure, spec_.sizes.R, spec_.core->rank);
    std::erase_if(issues, [&](const spec::Issue& i) {
      return i.field.rfind("core", 0) == 0 || std::find(stale.begin(), stale.end(), i) != stale.end();
    });
  }
  issues.insert(issues.begin(), presetProblems_.begin(), presetProblems_.end());
  valid_ = issues.empty();
  problems_->setText(QString::fromStdString(spec::formatIssues(issues)));
  if (!valid_) {
    cost_->setText("(fix the problems below to see the cost)");
    return;
  }
  const auto c = spec::estimateCost(spec_, batch_->value(), spec_.sizes.seq_len);
  auto mhsa = spec::makeSpecPreset("mhsa");
  mhsa.sizes.F = spec_.sizes.F;
  mhsa.sizes.H = spec_.sizes.H;
  mhsa.sizes.D = std::max(1, spec_.sizes.F / spec_.sizes.H);
  mhsa.bias = spec_.bias;
  const auto base = spec::estimateCost(mhsa, batch_->value(), spec_.sizes.seq_len);
  QString text;
  text += QString("parameters: %1 trainable").arg(c.parameters);
  if (c.frozen_parameters) text += QString(", %1 frozen").arg(c.frozen_parameters);
  text += QString("  (%1% of MHSA F=%2, H=%3)\n")
              .arg(100.0 * c.parameters / std::max<std::int64_t>(1, base.parameters), 0, 'f', 1)
              .arg(mhsa.sizes.F)
              .arg(mhsa.sizes.H);
  text += "forward: " + human(c.forward_flops, "FLOP") +
          QString("  (%1x MHSA)\n").arg(c.forward_flops / std::max(1.0, base.forward_flops), 0, 'f', 2);
  text += "activations: " + human(c.activation_bytes, "B", 1024.0) + ", largest tensor " +
          human(c.largest_intermediate_bytes, "B", 1024.0);
  cost_->setText(text);
}

}  // namespace tensorscope::app
