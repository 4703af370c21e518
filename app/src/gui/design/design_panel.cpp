#include "gui/design/design_panel.h"

#include "spec/slot_values.h"

#include <algorithm>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "gui/design/design_panel_parts.h"
#include "spec/design_baseline.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/validation.h"

namespace tensorscope::app {

namespace {
const QString kCustomCore = QStringLiteral("custom");
}  // namespace

namespace design_parts {

QSpinBox* sizeBox(int max, const QString& tip) {
  auto* b = new QSpinBox;
  b->setRange(1, max);
  b->setToolTip(tip);
  b->setKeyboardTracking(false);
  return b;
}

QString human(double v, const QString& unit, double base) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= base && i < 5) {
    v /= base;
    ++i;
  }
  return QString::number(v, 'g', 3) + " " + prefixes[i] + (base == 1024.0 && i ? "i" : "") + unit;
}

QString ratio(double value, double base) {
  if (base <= 0) return value <= 0 ? QStringLiteral("1×") : QStringLiteral("∞×");
  return QString::number(value / base, 'g', 3) + "×";
}

spec::AttentionSpec mhsaBaseline(const spec::AttentionSpec& s) { return spec::mhsaAtSizeOf(s); }

QStringList enumNames(int count, const std::function<std::string_view(int)>& name) {
  QStringList out;
  for (int i = 0; i < count; ++i) out << QString::fromUtf8(name(i).data(), static_cast<int>(name(i).size()));
  return out;
}

}  // namespace design_parts

using design_parts::sizeBox;

DesignPanel::DesignPanel(QWidget* parent) : QWidget(parent) {
  // What the drawn network is stays on top, outside the scrolled form: it changes with every edit
  // below, wherever the form is scrolled to (a laptop shows a third of it).
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->setSpacing(0);
  name_ = new QLabel;
  name_->setObjectName("designName");
  name_->setWordWrap(true);
  name_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  name_->setContentsMargins(9, 6, 9, 6);
  name_->setStyleSheet("QLabel#designName { border-bottom: 1px solid palette(mid); }");
  QFont nameFont = name_->font();
  nameFont.setBold(true);
  name_->setFont(nameFont);
  outer->addWidget(name_);
  auto* scroll = new QScrollArea;
  scroll->setObjectName("designScroll");
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* content = new QWidget;
  scroll->setWidget(content);
  outer->addWidget(scroll, 1);
  auto* layout = new QVBoxLayout(content);
  // Never squeezed below what its rows need: the form scrolls instead (the scroll area sized it by
  // its height-for-width, which crushed the spin boxes to a few pixels once the slots came).
  layout->setSizeConstraint(QLayout::SetMinimumSize);
  auto* form = new QFormLayout;
  layout->addLayout(form);

  preset_ = new QComboBox;
  preset_->setObjectName("designPreset");
  for (const auto& n : spec::specPresetNames()) preset_->addItem(QString::fromStdString(n));
  preset_->setToolTip("Start from a preset: a variant, a THSA core preset from Tuformer's design space, or a "
                      "modern design (mqa, gqa, talking_heads, gated, diff, mla…). It shows the preset the design "
                      "is (variant, core C and which slots are on; sizes, ranks and kernel sizes are yours to set), "
                      "and is blank after an edit that no preset equals");
  preset_->setPlaceholderText("(edited: no preset)");
  form->addRow("Preset", preset_);

  variant_ = new QComboBox;
  variant_->setObjectName("designVariant");
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

  positions_ = new QComboBox;
  positions_->setObjectName("modelPositions");
  positions_->addItem("learned table", "learned");
  positions_->addItem("sinusoidal", "sinusoidal");
  positions_->addItem("rotary, half pairs", "rotary");
  positions_->addItem("rotary, interleaved pairs", "rotary_interleaved");
  positions_->setToolTip("model.positions, for every layer of the run (docs/attention-variants.md §9): a learned or "
                         "sinusoidal table added to the input, or rotary positions that turn each query and key by "
                         "its token's position — pairs (j, j + D/2) as GPT-NeoX and Llama in Hugging Face, or (2j, "
                         "2j + 1) as RoFormer and Meta's Llama");
  form->addRow("Positions", positions_);
  positionsNote_ = new QLabel;
  positionsNote_->setObjectName("positionsNote");
  positionsNote_->setWordWrap(true);
  positionsNote_->setStyleSheet("color: palette(placeholder-text);");
  positionsNote_->setVisible(false);
  form->addRow(positionsNote_);
  connect(positions_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    const QString value = positions_->currentData().toString();
    Q_EMIT positionsEdited(value, "Positions " + positions_->currentText());
  });

  slotsBox_ = new QGroupBox("Attention network slots");
  slotsBox_->setObjectName("designSlots");
  slotsBox_->setToolTip("The slots of the one attention network (docs/attention-variants.md §8): MHSA when all are "
                        "off; the name above says which published design they make");
  slotsForm_ = new QFormLayout(slotsBox_);
  buildSlots();
  slotRefusal_ = new QLabel;
  slotRefusal_->setObjectName("slotRefusal");
  slotRefusal_->setWordWrap(true);
  slotRefusal_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  slotRefusal_->setStyleSheet("color: #b2182b;");
  slotRefusal_->setVisible(false);
  slotsForm_->addRow(slotRefusal_);
  layout->addWidget(slotsBox_);
  headMixing_ = new HeadMixingView;
  layout->addWidget(headMixing_);

  buildCostPanel();

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

  // A pick of another name is applied through currentTextChanged, and Qt sends textActivated right
  // after it, for the index current by then. When the window did not take the preset (the run
  // trains, or it has trained and the user declined the fork), the box shows the old design's name
  // again: that textActivated must not apply it (a second refusal or fork question). Picking the
  // name already shown changes no text: textActivated alone applies it again when the design has
  // moved from it (MLA in the absorbed order shows "mla"; picking "mla" brings the naive order back).
  connect(preset_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
    if (updating_) return;
    refusedPick_.clear();
    applyPreset(name);
    if (!(spec::makeSpecPreset(name.toStdString()) == spec_)) {
      refusedPick_ = name;
      refusedFrom_ = spec_;
    }
  });
  connect(preset_, &QComboBox::textActivated, this, [this](const QString& name) {
    const bool afterRefusal = !refusedPick_.isEmpty() && refusedFrom_ == spec_;
    refusedPick_.clear();
    if (afterRefusal || updating_ || spec::makeSpecPreset(name.toStdString()) == spec_) return;
    applyPreset(name);
  });
  connect(precision_, &QComboBox::currentIndexChanged, this, [this] { refreshReadouts(); });
  connect(context_, &QSpinBox::valueChanged, this, [this] { refreshReadouts(); });
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

void DesignPanel::setModelContext(const ModelContext& context) {
  context_model_ = context;
  showModelContext();
  headMixing_->setTrained(context.trainedMixing);
}

void DesignPanel::showModelContext() {
  const ModelContext& m = context_model_;
  {
    const bool was = updating_;
    updating_ = true;
    const QSignalBlocker block(positions_);
    auto* items = qobject_cast<QStandardItemModel*>(positions_->model());
    const QString refusals[] = {QString(), QString(), m.rotaryRefusal, m.interleavedRefusal};
    for (int i = 0; i < positions_->count(); ++i) {
      if (items)
        if (QStandardItem* item = items->item(i)) {
          // A refused choice stays in the list, greyed, with the reason as its tooltip; the note
          // below says it in words.
          item->setEnabled(refusals[i].isEmpty() || positions_->itemData(i).toString() == m.positions);
          item->setToolTip(refusals[i]);
        }
    }
    const int i = positions_->findData(m.positions);
    positions_->setCurrentIndex(i >= 0 ? i : 0);
    updating_ = was;
  }
  // The validator's lines, without the field prefix the form already says ("model.positions:
  // rotary at model.attention[0]: "): one shared design is every layer.
  const auto plain = [](QString why) {
    static const QRegularExpression prefix("model\\.positions: rotary(_interleaved)? at model\\.attention\\[(\\d+)\\]: ");
    return why.replace(prefix, "").replace("model.tp_role_embedding: ", "the TP role embedding ");
  };
  QString note;
  const bool rotary = m.positions.startsWith("rotary");
  const QString why = m.positions == "rotary_interleaved" ? m.interleavedRefusal : m.rotaryRefusal;
  if (rotary && !why.isEmpty()) note = "This design does not take rotary positions: " + plain(why);
  else if (!m.rotaryRefusal.isEmpty()) note = "No rotary positions here: " + plain(m.rotaryRefusal);
  positionsNote_->setText(note);
  positionsNote_->setStyleSheet(rotary && !why.isEmpty() ? "color: #b2182b;" : "color: palette(placeholder-text);");
  positionsNote_->setVisible(!note.isEmpty());
  // λ of differential attention, layer by layer.
  QString lambda;
  if (spec_.slots.differential) {
    QStringList rows;
    const int layers = std::max(1, m.layers);
    for (int l = 0; l < layers && l < 8; ++l) {
      QString row = QString("layer %1: λ_init %2").arg(l).arg(QString::number(spec::diffLambdaInit(l), 'f', 3));
      if (static_cast<size_t>(l) < m.learnedLambda.size() && m.learnedLambda[static_cast<size_t>(l)])
        row += QString(", learned %1").arg(QString::number(*m.learnedLambda[static_cast<size_t>(l)], 'f', 3));
      rows << row;
    }
    if (layers > 8) rows << QString("… %1 layers in all").arg(layers);
    const bool learned = std::any_of(m.learnedLambda.begin(), m.learnedLambda.end(), [](const auto& v) { return v.has_value(); });
    lambda = "λ (A = P₁ − λ·P₂) by layer — " +
             (learned ? QString("learned at step %1 of the run's checkpoint").arg(m.lambdaStep)
                      : QString("not trained yet: λ starts at λ_init")) +
             "\n" + rows.join("\n");
  }
  lambda_->setText(lambda);
  slotsForm_->setRowVisible(lambda_, !lambda.isEmpty());
}

QString DesignPanel::positionsNote() const { return positionsNote_->isHidden() ? QString() : positionsNote_->text(); }
QString DesignPanel::lambdaText() const { return lambda_->text(); }

namespace {

/// What a preset fixes of a design: the variant, the core's preset (THSA family) and the slots. Not
/// the sizes, causality, bias or dropout, which a user sets around a preset (the demo and the
/// lessons make presets causal), nor MLA's order of contractions: naive and absorbed are one layer
/// (docs/attention-variants.md §8.6), so MLA in the absorbed order is still the mla preset. The
/// slots' own sizes count as sizes too: the latent and rotary sizes of MLA (its preset derives them
/// from D), TPA's ranks and MTA's kernel and head-group sizes. Which of them are on is the design
/// (a query latent, TPA's factorised queries, a convolution after the softmax): a zero stays zero.
bool sameDesign(const spec::AttentionSpec& a, const spec::AttentionSpec& b) {
  if (a.variant != b.variant) return false;
  const std::string coreA = a.core ? a.core->preset : std::string(), coreB = b.core ? b.core->preset : std::string();
  if (coreA != coreB || coreA == kCustomCore.toStdString()) return false;  // a custom C is no preset's
  const auto structure = [](spec::Slots s) {
    const auto on = [](int& size) { size = size != 0 ? 1 : 0; };
    if (s.latent.kv_rank != 0) s.latent.order = spec::LatentOrder::Naive;
    for (int* size : {&s.latent.kv_rank, &s.latent.q_rank, &s.latent.rope_dim, &s.tpa.q_rank, &s.tpa.k_rank,
                      &s.tpa.v_rank, &s.mta.q_kernel, &s.mta.k_kernel, &s.mta.post_q_kernel, &s.mta.post_k_kernel,
                      &s.mta.head_group})
      on(*size);
    return s;
  };
  return structure(a.slots) == structure(b.slots);
}

/// Every name of the Preset box with the spec it applies, in the box's order.
const std::vector<std::pair<QString, spec::AttentionSpec>>& shippedPresets() {
  static const auto presets = [] {
    std::vector<std::pair<QString, spec::AttentionSpec>> v;
    for (const auto& n : spec::specPresetNames()) v.emplace_back(QString::fromStdString(n), spec::makeSpecPreset(n));
    return v;
  }();
  return presets;
}

}  // namespace

QString DesignPanel::designPresetOf(const spec::AttentionSpec& s, const QString& shown) {
  const auto& presets = shippedPresets();
  // Two names can apply one design ("skip_left" and "core:skip_left"): the one shown stays.
  for (const auto& [name, preset] : presets)
    if (name == shown && sameDesign(preset, s)) return name;
  for (const auto& [name, preset] : presets)
    if (sameDesign(preset, s)) return name;
  return {};
}

void DesignPanel::showPreset() {
  const QSignalBlocker block(preset_);
  const QString name = designPresetOf(spec_, preset_->currentText());
  // No preset is this design (an edit, a custom C): the box is blank with its placeholder, never
  // another design's name.
  preset_->setCurrentIndex(name.isEmpty() ? -1 : preset_->findText(name));
}

QString DesignPanel::describeDesigns(const spec::AttentionSpec& s) {
  if (!spec::validate(s).empty()) return {};
  QStringList equal, contained;
  for (const auto& n : spec::nameDesigns(s)) (n.equals ? equal : contained) << QString::fromStdString(n.name);
  QString text = equal.isEmpty() ? QString() : "Equals " + equal.join(" and ");
  if (!contained.isEmpty()) text += (text.isEmpty() ? "Contains " : "; contains ") + contained.join(", ");
  return text;
}

QString DesignPanel::designNameText() const { return valid_ ? name_->text() : QString(); }
QString DesignPanel::designNameWhy() const { return name_->toolTip(); }

void DesignPanel::applyPreset(const QString& name) {
  if (updating_) return;
  setSpec(spec::makeSpecPreset(name.toStdString()));
  Q_EMIT specChanged(spec_, "preset " + name);
}

void DesignPanel::setSpec(const spec::AttentionSpec& s) {
  if (!(s == spec_)) {  // both kept when the window echoes this panel's own edit
    presetProblems_.clear();
    slotRefusal_->clear();
    slotRefusal_->setVisible(false);
  }
  spec_ = s;
  updating_ = true;
  const QString variant = QString::fromStdString(std::string(spec::toString(s.variant)));
  variant_->setCurrentText(variant);
  showPreset();
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
  showSlots();
  updating_ = false;
  updateEnabledFields();
  refreshReadouts();
}

void DesignPanel::readControls(const QString& what) {
  if (updating_) return;
  spec::AttentionSpec s = spec_;
  spec::parseVariant(variant_->currentText().toStdString(), s.variant);
  s.sizes = {F_->value(), H_->value(), D_->value(), R_->value(), P_->value(), c_->value(), seq_->value()};
  s.causal = causal_->isChecked();
  s.bias = bias_->isChecked();
  s.core_softmax = coreSoftmax_->isChecked();
  s.dropout = dropout_->value();
  // The slots belong to mhsa and fixed_head: another variant drops them (its section is hidden).
  if (spec::hasSlots(s.variant) && editedSlot_ >= 0)
    slotControls_[static_cast<size_t>(editedSlot_)].read(s);
  else if (spec::hasSlots(s.variant))
    for (const auto& c : slotControls_) c.read(s);
  else
    s.slots = {};
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
  // Drawn C′ and kernel values that this edit leaves without their shape start from the identity.
  spec::dropStaleSlotValues(s);
  spec_ = s;
  showSlots();  // K/V groups follow H; the section follows the variant
  showPreset();
  updateEnabledFields();
  refreshReadouts();
  Q_EMIT specChanged(spec_, what);
}

void DesignPanel::updateEnabledFields() {
  using spec::Variant;
  const Variant v = spec_.variant;
  const bool headed = v == Variant::Mhsa || v == Variant::FixedHead || v == Variant::Tp;
  const bool core = spec::hasCore(v);
  const bool e = editable_;
  for (QWidget* w : std::initializer_list<QWidget*>{preset_, variant_, F_, seq_, causal_, bias_, dropout_, positions_})
    w->setEnabled(e);
  corePreset_->setEnabled(e && core);
  H_->setEnabled(e && (headed || core));
  D_->setEnabled(e && (headed || core));
  R_->setEnabled(e && (v == Variant::Multilinear || v == Variant::Dimwise));  // THSA: R = H*D
  P_->setEnabled(e && v == Variant::Multilinear);
  c_->setEnabled(e && v == Variant::Dimwise);
  coreSoftmax_->setEnabled(e && v == Variant::Multilinear);
  slotsBox_->setEnabled(e);
  matchApply_->setEnabled(e && matched_ && matchedFrom_ == spec_ && !(*matched_ == spec_));
  locked_->setVisible(!e);
}

void DesignPanel::setEditable(bool editable) {
  editable_ = editable;
  updateEnabledFields();
  headMixing_->setEditable(editable);
}

QString DesignPanel::problemsText() const { return problems_->text(); }

void DesignPanel::refreshReadouts() {
  followDesignInMatch();
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
    name_->setText("(fix the problems below to see what this network is)");
    name_->setToolTip({});
    tokenCost_->clear();
    cost_->setText("(fix the problems below to see the cost)");
    costTable_->setRowCount(0);
    return;
  }
  name_->setText(describeDesigns(spec_));
  {
    QStringList why;
    for (const auto& n : spec::nameDesigns(spec_))
      why << QString::fromStdString(n.name + (n.equals ? " — equals: " : " — contains: ") + n.why);
    name_->setToolTip(why.join("\n"));
  }
  refreshCost();
}

}  // namespace tensorscope::app
