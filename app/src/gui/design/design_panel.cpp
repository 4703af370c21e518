#include "gui/design/design_panel.h"

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
#include <QVBoxLayout>

#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
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

QString ratio(double value, double base) {
  if (base <= 0) return value <= 0 ? QStringLiteral("1×") : QStringLiteral("∞×");
  return QString::number(value / base, 'g', 3) + "×";
}

/// MHSA at the same width as `s` (F, H, D; D = F/H for variants without heads), what the cost
/// section compares with.
spec::AttentionSpec mhsaBaseline(const spec::AttentionSpec& s) {
  using spec::Variant;
  auto m = spec::makeSpecPreset("mhsa");
  const bool headed = spec::hasSlots(s.variant) || s.variant == Variant::Tp || spec::hasCore(s.variant);
  m.sizes.F = s.sizes.F;
  m.sizes.H = s.sizes.H;
  m.sizes.D = headed ? s.sizes.D : std::max(1, s.sizes.F / std::max(1, s.sizes.H));
  m.sizes.R = m.sizes.H * m.sizes.D;
  m.sizes.seq_len = s.sizes.seq_len;
  m.bias = s.bias;
  m.causal = s.causal;
  return m;
}

/// The precisions the KV cache is counted at.
struct Precision {
  const char* name;
  int bytes;
};
constexpr Precision kPrecisions[] = {{"float32", 4}, {"bfloat16", 2}, {"float16", 2}};

QStringList enumNames(int count, const std::function<std::string_view(int)>& name) {
  QStringList out;
  for (int i = 0; i < count; ++i) out << QString::fromUtf8(name(i).data(), static_cast<int>(name(i).size()));
  return out;
}

}  // namespace

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
                      "modern design (mqa, gqa, talking_heads, gated, diff, mla…); it shows the design preset the "
                      "slots below equal");
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
  layout->addWidget(slotsBox_);

  // The cost and the budget matcher: a panel of its own (the window docks it beside C and the
  // Inspector, where a laptop has the height for it; the form above scrolls, the cost does not).
  costPanel_ = new QWidget(this);
  costPanel_->setObjectName("designCost");
  costPanel_->hide();  // shown where the window docks it
  auto* costLayout = new QVBoxLayout(costPanel_);
  costLayout->setContentsMargins(6, 4, 6, 4);
  auto* costTitle = new QLabel("<b>Cost of one layer</b> against MHSA at the same F, H, D");
  costTitle->setWordWrap(true);
  costLayout->addWidget(costTitle);
  precision_ = new QComboBox;
  precision_->setObjectName("costPrecision");
  for (const auto& p : kPrecisions) precision_->addItem(p.name, p.bytes);
  precision_->setCurrentIndex(1);  // bfloat16: what a KV cache is usually kept in
  precision_->setToolTip("Bytes per cached element: float32 4, bfloat16 and float16 2");
  context_ = sizeBox(spec::kMaxSeqLen * 16, "L: context length — the sequence length of training, and the tokens "
                                            "already cached when a new one is decoded");
  context_->setObjectName("costContext");
  context_->setValue(4096);
  batch_ = sizeBox(1 << 16, "batch size B for the forward estimate");
  batch_->setValue(32);
  {
    auto* row = new QHBoxLayout;  // one row: the panel's height goes to the numbers
    row->addWidget(precision_);
    row->addWidget(new QLabel("L"));
    row->addWidget(context_, 1);
    row->addWidget(new QLabel("B"));
    row->addWidget(batch_, 1);
    costLayout->addLayout(row);
  }
  tokenCost_ = new QLabel;
  tokenCost_->setObjectName("tokenCost");
  tokenCost_->setWordWrap(true);
  tokenCost_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  costLayout->addWidget(tokenCost_);
  cost_ = new QLabel;
  cost_->setWordWrap(true);  // long lines would widen the dock past a laptop's share of the screen
  cost_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  costLayout->addWidget(cost_);
  buildMatchBudget(costLayout);
  costLayout->addStretch(1);
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

void DesignPanel::addSlotRow(const QString& label, SlotControl control) {
  control.widget->setObjectName(control.field);
  if (label.isEmpty()) slotsForm_->addRow(control.widget);
  else slotsForm_->addRow(label, control.widget);
  slotControls_.push_back(std::move(control));
  const size_t i = slotControls_.size() - 1;
  // Every slot edit is one undoable edit named by what it set.
  const auto edited = [this, i] {
    if (updating_) return;
    spec::AttentionSpec after = spec_;
    slotControls_[i].read(after);
    editedSlot_ = static_cast<int>(i);  // only this slot is read: the others keep the spec's values
    readControls(slotControls_[i].describe(after));
    editedSlot_ = -1;
  };
  if (auto* b = qobject_cast<QCheckBox*>(control.widget)) connect(b, &QCheckBox::toggled, this, edited);
  else if (auto* c = qobject_cast<QComboBox*>(control.widget)) connect(c, &QComboBox::currentIndexChanged, this, edited);
  else if (auto* n = qobject_cast<QSpinBox*>(control.widget)) connect(n, &QSpinBox::valueChanged, this, edited);
  else if (auto* d = qobject_cast<QDoubleSpinBox*>(control.widget)) connect(d, &QDoubleSpinBox::valueChanged, this, edited);
}

void DesignPanel::addSlotCheck(const QString& field, const QString& label, const QString& tip,
                               std::function<bool&(spec::AttentionSpec&)> member) {
  auto* box = new QCheckBox(label);
  box->setToolTip(tip);
  addSlotRow({}, {field, box,
                  [box, member](const spec::AttentionSpec& s) {
                    auto copy = s;
                    box->setChecked(member(copy));
                  },
                  [box, member](spec::AttentionSpec& s) { member(s) = box->isChecked(); },
                  [label, member](const spec::AttentionSpec& s) {
                    auto copy = s;
                    return label + (member(copy) ? " on" : " off");
                  }});
}

void DesignPanel::addSlotSpin(const QString& field, const QString& label, const QString& tip, int min, int max,
                              int step, const QString& zeroText, std::function<int&(spec::AttentionSpec&)> member) {
  auto* box = new QSpinBox;
  box->setRange(min, max);
  box->setSingleStep(step);
  box->setKeyboardTracking(false);
  box->setToolTip(tip);
  if (!zeroText.isEmpty() && min == 0) box->setSpecialValueText(zeroText);
  addSlotRow(label, {field, box,
                     [box, member](const spec::AttentionSpec& s) {
                       auto copy = s;
                       box->setValue(member(copy));
                     },
                     [box, member](spec::AttentionSpec& s) { member(s) = box->value(); },
                     [label, member, zeroText](const spec::AttentionSpec& s) {
                       auto copy = s;
                       const int v = member(copy);
                       return label + " " + (v == 0 && !zeroText.isEmpty() ? zeroText : QString::number(v));
                     }});
}

void DesignPanel::addSlotChoice(const QString& field, const QString& label, const QString& tip,
                                const QStringList& names, std::function<int(const spec::AttentionSpec&)> get,
                                std::function<void(spec::AttentionSpec&, int)> set) {
  auto* box = new QComboBox;
  box->addItems(names);
  box->setToolTip(tip);
  addSlotRow(label, {field, box, [box, get](const spec::AttentionSpec& s) { box->setCurrentIndex(get(s)); },
                     [box, set](spec::AttentionSpec& s) { set(s, std::max(0, box->currentIndex())); },
                     [label, names, get](const spec::AttentionSpec& s) { return label + " " + names.value(get(s)); }});
}

void DesignPanel::buildSlots() {
  using spec::AttentionSpec;
  // (a) K and V shared by groups of query heads: the divisors of H, from MQA to MHSA.
  {
    auto* groups = new QComboBox;
    groups->setToolTip("K/V groups G: the H query heads share G key and value heads (1: MQA, H: MHSA, between: "
                       "GQA-G); the KV cache shrinks with G");
    const auto label = [](int G, int H) {
      if (G == 0 || G == H) return QString("%1 (MHSA)").arg(H);
      if (G == 1) return QString("1 (MQA)");
      if (G > 0 && H % G == 0) return QString("%1 (GQA-%1)").arg(G);
      return QString("%1 (does not divide H = %2)").arg(G).arg(H);
    };
    addSlotRow("K/V groups",
               {"slots.kv_groups", groups,
                [groups, label](const AttentionSpec& s) {
                  const int H = std::max(1, s.sizes.H);
                  groups->clear();
                  for (int G = 1; G <= H; ++G)
                    if (H % G == 0) groups->addItem(label(G, H), G == H ? 0 : G);
                  if (groups->findData(s.slots.kv_groups) < 0) groups->addItem(label(s.slots.kv_groups, H), s.slots.kv_groups);
                  groups->setCurrentIndex(groups->findData(s.slots.kv_groups));
                },
                [groups](AttentionSpec& s) {
                  if (groups->currentIndex() >= 0) s.slots.kv_groups = groups->currentData().toInt();
                },
                [label](const AttentionSpec& s) {
                  return "K/V groups " + label(s.slots.kv_groups, s.sizes.H);
                }});
  }
  // (b), (c) talking heads: the heads mixed by trainable H x H matrices.
  addSlotCheck("slots.pre_mix", "mix heads before the softmax",
               "Talking heads, pre-softmax half: the scaled logits mixed across heads by a trainable H x H matrix "
               "(identity at first)",
               [](AttentionSpec& s) -> bool& { return s.slots.pre_mix; });
  addSlotCheck("slots.post_mix", "mix heads after the softmax",
               "Talking heads, post-softmax half: the attention weights mixed across heads by a trainable H x H "
               "matrix C′ (identity at first) before they meet V",
               [](AttentionSpec& s) -> bool& { return s.slots.post_mix; });
  // (d) the output gate.
  addSlotChoice("slots.gate", "Gate",
                "Gated attention: each head's output multiplied by σ(x·W^G) before W^O — one gate per head "
                "(headwise) or per element",
                enumNames(3, [](int i) { return spec::toString(static_cast<spec::Gate>(i)); }),
                [](const AttentionSpec& s) { return static_cast<int>(s.slots.gate); },
                [](AttentionSpec& s, int i) { s.slots.gate = static_cast<spec::Gate>(i); });
  addSlotCheck("slots.differential", "differential attention",
               "Differential attention (Diff Transformer): two softmax maps per head, A = P₁ − λ·P₂, a value head of "
               "size 2D; the diff preset halves H to keep the width",
               [](AttentionSpec& s) -> bool& { return s.slots.differential; });
  lambda_ = new QLabel;
  lambda_->setObjectName("diffLambda");
  lambda_->setWordWrap(true);
  lambda_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lambda_->setToolTip("λ weighs the second map: A = P₁ − λ·P₂. It starts at λ_init = 0.8 − 0.6·e^{−0.3·l} for the "
                      "block with index l and is learned from there (λ = e^{λq1·λk1} − e^{λq2·λk2} + λ_init); the "
                      "spec fixes the schedule, training moves λ");
  slotsForm_->addRow(lambda_);
  // Multi-head latent attention (DeepSeek MLA).
  addSlotSpin("slots.latent.kv_rank", "MLA latent", "kv_rank: the latent keys and values come from (kv_lora_rank); "
              "off: MHSA's keys and values",
              0, spec::kMaxWidth, 1, "off", [](AttentionSpec& s) -> int& { return s.slots.latent.kv_rank; });
  addSlotSpin("slots.latent.q_rank", "MLA query rank", "q_rank: the query latent size (q_lora_rank); full: a full W^Q",
              0, spec::kMaxWidth, 1, "full W^Q", [](AttentionSpec& s) -> int& { return s.slots.latent.q_rank; });
  addSlotSpin("slots.latent.rope_dim", "MLA rotary", "rope_dim: the rotary part of each query and of the shared key "
              "(qk_rope_head_dim); even",
              0, spec::kMaxWidth, 2, "none", [](AttentionSpec& s) -> int& { return s.slots.latent.rope_dim; });
  // MLA's other fields show once it has a latent (or any of them is set): one row while it is off.
  for (const char* f : {"slots.latent.q_rank", "slots.latent.rope_dim"})
    for (auto& c : slotControls_)
      if (c.field == f) c.shown = [](const AttentionSpec& s) { return s.slots.latent.enabled(); };
  addSlotChoice("slots.latent.order", "MLA order",
                "The order of MLA's contractions (the same layer): naive forms every head's key and value; absorbed "
                "folds W^UKV into the query and the output and caches only the latent",
                enumNames(2, [](int i) { return spec::toString(static_cast<spec::LatentOrder>(i)); }),
                [](const AttentionSpec& s) { return static_cast<int>(s.slots.latent.order); },
                [](AttentionSpec& s, int i) { s.slots.latent.order = static_cast<spec::LatentOrder>(i); });
  slotControls_.back().shown = [](const AttentionSpec& s) { return s.slots.latent.enabled(); };
  // Tensor Product Attention (T6, §8.7): queries, keys and values as sums of R outer products of a
  // head factor and a feature factor. One row (R_K) while it is off.
  addSlotSpin("slots.tpa.k_rank", "TPA key rank R_K",
              "R_K: each key head is the mean of R_K outer products a_r ⊗ b_r (head factor ⊗ feature factor); off: "
              "MHSA's keys and values. The KV cache holds the factors: R_K·(H + D) per token for the keys",
              0, spec::kMaxWidth, 1, "off", [](AttentionSpec& s) -> int& { return s.slots.tpa.k_rank; });
  {
    // "off" turns TPA off as a whole (every TPA field back to its default); turning it on from off
    // gives R_V = R_K, as T6 does. Other values are taken as they are: the validator names what
    // does not fit.
    auto* box = qobject_cast<QSpinBox*>(slotControls_.back().widget);
    slotControls_.back().read = [box](AttentionSpec& s) {
      const int r = box->value();
      if (r == 0) {
        s.slots.tpa = {};
        return;
      }
      if (!s.slots.tpa.enabled()) s.slots.tpa.v_rank = r;
      s.slots.tpa.k_rank = r;
    };
  }
  addSlotSpin("slots.tpa.v_rank", "TPA value rank R_V",
              "R_V: the rank of the value factorisation (T6: R_V = R_K); cached as R_V·(H + D) per token",
              0, spec::kMaxWidth, 1, "0 (needs ≥ 1)", [](AttentionSpec& s) -> int& { return s.slots.tpa.v_rank; });
  addSlotSpin("slots.tpa.q_rank", "TPA query rank R_Q",
              "R_Q: the rank of the query factorisation (T6: 6); as MHSA: queries x·W^Q (T6_kvonly)",
              0, spec::kMaxWidth, 1, "as MHSA", [](AttentionSpec& s) -> int& { return s.slots.tpa.q_rank; });
  addSlotCheck("slots.tpa.contextual_a", "TPA head factors depend on the token",
               "Contextual head factors A = x·W_A (TPA, T6); off: learned constants a[h, r] per rank and head "
               "(non-contextual TPA, paper §4: MHA is R = H, a_r = H·e_r; MQA is R_K = R_V = 1, a = 1)",
               [](AttentionSpec& s) -> bool& { return s.slots.tpa.contextual_a; });
  addSlotCheck("slots.tpa.rope", "TPA rotary on the feature factors",
               "Rotary positions on the feature factors B of q and k (T6 pairs d with d + D/2; on q itself when the "
               "queries are as MHSA); D must be even",
               [](AttentionSpec& s) -> bool& { return s.slots.tpa.rope; });
  {
    auto* base = new QDoubleSpinBox;
    base->setRange(0.0, 1e9);
    base->setDecimals(0);
    base->setSingleStep(1000);
    base->setKeyboardTracking(false);
    base->setToolTip("The rotary base θ of the feature factors (T6: 10 000): pair j turns by n·θ^(−2j/D); above 1");
    addSlotRow("TPA rotary base θ",
               {"slots.tpa.rope_base", base, [base](const AttentionSpec& s) { base->setValue(s.slots.tpa.rope_base); },
                [base](AttentionSpec& s) { s.slots.tpa.rope_base = base->value(); },
                [](const AttentionSpec& s) { return "TPA rotary base " + QString::number(s.slots.tpa.rope_base, 'g', 9); },
                [](const AttentionSpec& s) { return s.slots.tpa.enabled() && s.slots.tpa.rope; }});
  }
  for (const char* f : {"slots.tpa.v_rank", "slots.tpa.q_rank", "slots.tpa.contextual_a", "slots.tpa.rope"})
    for (auto& c : slotControls_)
      if (c.field == f) c.shown = [](const AttentionSpec& s) { return s.slots.tpa.enabled(); };
}

spec::AttentionSpec DesignPanel::matchBaseline() const {
  const QString name = matchBase_->currentData().toString();
  if (name.isEmpty()) return mhsaBaseline(spec_);
  // A design preset at this layer's width, heads and head size (its slots as the preset has them).
  auto b = spec::makeSpecPreset(name.toStdString());
  b.sizes.F = spec_.sizes.F;
  b.sizes.H = spec_.sizes.H;
  b.sizes.D = spec_.sizes.D;
  b.sizes.R = b.sizes.H * b.sizes.D;
  b.sizes.seq_len = spec_.sizes.seq_len;
  b.causal = spec_.causal;
  return b;
}

void DesignPanel::buildMatchBudget(QVBoxLayout* layout) {
  auto* box = new QGroupBox("Match budget");
  box->setObjectName("matchBudget");
  box->setToolTip("Solve one size of this design so that one of its costs equals a baseline's (the budget matcher, "
                  "`tensorscope spec match`; docs/cost-model.md): the closest integer within 1 %");
  auto* form = new QFormLayout(box);
  form->setContentsMargins(6, 4, 6, 4);
  matchOn_ = new QComboBox;
  matchOn_->setObjectName("matchOn");
  matchOn_->addItem("parameters", int(spec::BudgetCost::Parameters));
  matchOn_->addItem("KV cache per token", int(spec::BudgetCost::KvCache));
  matchOn_->addItem("training FLOPs per token at L", int(spec::BudgetCost::TrainingFlops));
  matchBase_ = new QComboBox;
  matchBase_->setObjectName("matchBaseline");
  matchBase_->addItem("MHSA at this F, H, D", QString());
  for (const auto& n : spec::designPresetNames())
    matchBase_->addItem(QString::fromStdString(n) + " at this F, H, D", QString::fromStdString(n));
  matchSize_ = new QComboBox;
  matchSize_->setObjectName("matchSize");
  matchSize_->addItem("any free size", QString());
  for (const auto& n : spec::budgetSizeNames()) matchSize_->addItem(QString::fromStdString(n), QString::fromStdString(n));
  matchSize_->setToolTip("The size the matcher solves; any: every free size, the closest kept");
  auto* sizeRow = new QHBoxLayout;
  sizeRow->addWidget(matchSize_, 1);
  matchRun_ = new QPushButton("Match");
  matchRun_->setObjectName("matchRun");
  matchRun_->setToolTip("Run the matcher on the design shown (nothing changes until you apply)");
  matchApply_ = new QPushButton("Apply");
  matchApply_->setObjectName("matchApply");
  matchApply_->setToolTip("Set the solved size in the design (one undo step; a trained run forks)");
  matchApply_->setEnabled(false);
  sizeRow->addWidget(matchRun_);
  sizeRow->addWidget(matchApply_);
  form->addRow("match", matchOn_);
  form->addRow("like", matchBase_);
  form->addRow("solve", sizeRow);
  matchResult_ = new QLabel;
  matchResult_->setObjectName("matchResult");
  matchResult_->setWordWrap(true);
  matchResult_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(matchResult_);
  layout->addWidget(box);
  const auto stale = [this] {
    matched_.reset();
    matchApply_->setEnabled(false);
    matchResult_->clear();
  };
  connect(matchOn_, &QComboBox::currentIndexChanged, this, stale);
  connect(matchBase_, &QComboBox::currentIndexChanged, this, stale);
  connect(matchSize_, &QComboBox::currentIndexChanged, this, stale);
  connect(matchRun_, &QPushButton::clicked, this, &DesignPanel::runMatch);
  connect(matchApply_, &QPushButton::clicked, this, &DesignPanel::applyMatch);
}

void DesignPanel::runMatch() {
  matched_.reset();
  matchApply_->setEnabled(false);
  const auto on = static_cast<spec::BudgetCost>(matchOn_->currentData().toInt());
  const std::string size = matchSize_->currentData().toString().toStdString();
  auto design = spec_, base = matchBaseline();
  if (on == spec::BudgetCost::KvCache) design.causal = base.causal = true;  // a KV cache is a decoder's
  try {
    const auto m = spec::matchBudget(design, base, on, size, 0.01, context_->value());
    const QString what = matchOn_->currentText();
    const QString baseName = matchBase_->currentText().section(" at this", 0, 0);
    if (!m.found) {
      matchResult_->setText("No match: " + QString::fromStdString(m.reason));
      return;
    }
    const auto& b = m.best;
    matchResult_->setText(QString("%1: %2 → %3. %4 %5 against %6 for %7 (residual %8 %).")
                              .arg(QString::fromStdString(b.size))
                              .arg(b.from)
                              .arg(b.value)
                              .arg(what.section(" at L", 0, 0), QString::number(b.cost, 'g', 6),
                                   QString::number(m.target, 'g', 6), baseName)
                              .arg(QString::number(100 * b.residual, 'f', 2)));
    auto matched = m.matched;
    matched.causal = spec_.causal;
    matched_ = matched;
    matchedFrom_ = spec_;
    matchText_ = QString("match %1 to %2: %3 %4").arg(what.section(" at L", 0, 0), baseName,
                                                        QString::fromStdString(b.size)).arg(b.value);
    matchApply_->setEnabled(editable_ && !(matched == spec_));
  } catch (const std::exception& e) {
    matchResult_->setText(QString("Refused: ") + e.what());
  }
}

void DesignPanel::applyMatch() {
  if (!matched_ || !(matchedFrom_ == spec_) || !editable_) return;
  const auto matched = *matched_;
  matchApply_->setEnabled(false);
  setSpec(matched);
  matchResult_->setText(matchResult_->text() + " Applied.");
  Q_EMIT specChanged(spec_, matchText_);
}

QString DesignPanel::matchBudget(const QString& cost, const QString& baseline, const QString& size) {
  const int on = matchOn_->findData(int(spec::parseBudgetCost(cost.toStdString())));
  matchOn_->setCurrentIndex(on);
  const int base = matchBase_->findData(baseline == "mhsa" ? QString() : baseline);
  if (base < 0) throw std::invalid_argument("no baseline " + baseline.toStdString() + " in Match budget");
  matchBase_->setCurrentIndex(base);
  const int free = matchSize_->findData(size);
  if (free < 0) throw std::invalid_argument("no size " + size.toStdString() + " in Match budget");
  matchSize_->setCurrentIndex(free);
  matchRun_->click();
  return matchResult_->text();
}

bool DesignPanel::applyMatchedBudget() {
  if (!matchApply_->isEnabled()) return false;
  matchApply_->click();
  return true;
}

QString DesignPanel::matchResultText() const { return matchResult_->text(); }

void DesignPanel::setModelContext(const ModelContext& context) {
  context_model_ = context;
  showModelContext();
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

void DesignPanel::showSlots() {
  const bool was = updating_;
  updating_ = true;
  for (const auto& c : slotControls_) {
    const QSignalBlocker block(c.widget);
    c.show(spec_);
    if (c.shown) slotsForm_->setRowVisible(c.widget, c.shown(spec_));
  }
  updating_ = was;
  slotsBox_->setVisible(spec::hasSlots(spec_.variant));
  if (lambda_) showModelContext();
}

QWidget* DesignPanel::slotWidget(const QString& field) const {
  for (const auto& c : slotControls_)
    if (c.field == field) return c.widget;
  return nullptr;
}

bool DesignPanel::slotsShown() const { return !slotsBox_->isHidden(); }

QString DesignPanel::designPresetOf(const spec::AttentionSpec& s) {
  if (s.variant != spec::Variant::Mhsa || s.slots.isMhsa()) return {};
  for (const auto& name : spec::designPresetNames())
    if (spec::makeSpecPreset(name).slots == s.slots) return QString::fromStdString(name);
  return {};
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

void DesignPanel::setPrecision(int bytesPerElement) {
  const int i = precision_->findData(bytesPerElement);
  if (i >= 0) precision_->setCurrentIndex(i);
}

void DesignPanel::setContext(int tokens) { context_->setValue(tokens); }

QString DesignPanel::costText() const { return tokenCost_->text() + "\n" + cost_->text(); }

DesignPanel::Costs DesignPanel::costs() const {
  Costs c;
  c.bytesPerElement = precision_->currentData().toInt();
  c.context = context_->value();
  if (!valid_) return c;
  c.valid = true;
  const auto perToken = [&](const spec::AttentionSpec& s, std::int64_t& params, double& training, double& cache,
                            double& state, double& decode, bool& decodes, QString* note) {
    // Multilinear's output projection fixes its length: it trains on seq_len tokens whatever L is.
    const std::int64_t tokens = s.variant == spec::Variant::Multilinear ? s.sizes.seq_len : c.context;
    const auto layer = spec::estimateCost(s, 1, tokens, c.bytesPerElement);
    params = layer.parameters;
    training = layer.training_flops / static_cast<double>(tokens);
    // A KV cache is a decoder's: a non-causal layer is costed as the same layer made causal.
    auto decoder = s;
    decoder.causal = true;
    const auto d = spec::estimateDecodeCost(decoder, c.context);
    decodes = d.supported;
    cache = d.cache_elements_per_token * c.bytesPerElement;
    state = d.state_elements * c.bytesPerElement;
    decode = d.flops;
    if (note) *note = QString::fromStdString(d.note) + (s.causal ? "" : " (decoded as a causal layer; this one is not causal)");
  };
  perToken(spec_, c.parameters, c.trainingFlopsPerToken, c.kvCacheBytesPerToken, c.stateBytes, c.decodeFlops,
           c.decodes, &c.decodeNote);
  const auto base = mhsaBaseline(spec_);
  c.hasBaseline = spec::validate(base).empty();
  if (c.hasBaseline) {
    double state = 0;
    bool decodes = true;
    perToken(base, c.mhsaParameters, c.mhsaTrainingFlopsPerToken, c.mhsaKvCacheBytesPerToken, state, c.mhsaDecodeFlops,
             decodes, nullptr);
  }
  return c;
}

void DesignPanel::applyPreset(const QString& name) {
  if (updating_) return;
  setSpec(spec::makeSpecPreset(name.toStdString()));
  Q_EMIT specChanged(spec_, "preset " + name);
}

void DesignPanel::setSpec(const spec::AttentionSpec& s) {
  if (!(s == spec_)) presetProblems_.clear();  // kept when the window echoes this panel's own edit
  spec_ = s;
  updating_ = true;
  const QString variant = QString::fromStdString(std::string(spec::toString(s.variant)));
  variant_->setCurrentText(variant);
  {
    // The preset this design is: a THSA core preset by its name (skip_left, …), a design preset
    // whose slots it has (gqa, mla, …), else the variant; the box never shows another design's preset.
    const QSignalBlocker block(preset_);
    const QString core = s.core ? QString::fromStdString(s.core->preset) : QString();
    const bool corePreset = s.variant == spec::Variant::Thsa && !core.isEmpty() && preset_->findText(core) >= 0;
    const QString design = designPresetOf(s);
    preset_->setCurrentText(corePreset ? core : !design.isEmpty() ? design : variant);
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
  spec_ = s;
  showSlots();  // K/V groups follow H; the section follows the variant
  {
    const QSignalBlocker block(preset_);
    const QString design = designPresetOf(s);
    if (!design.isEmpty()) preset_->setCurrentText(design);
    else if (spec::hasSlots(s.variant)) preset_->setCurrentText(variant_->currentText());
  }
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
}

QString DesignPanel::problemsText() const { return problems_->text(); }

void DesignPanel::refreshReadouts() {
  if (matched_ && !(spec_ == matchedFrom_) && !(spec_ == *matched_)) {
    matched_.reset();
    matchApply_->setEnabled(false);
    matchResult_->setText("(the design changed: press Match again)");
  }
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
    return;
  }
  name_->setText(describeDesigns(spec_));
  {
    QStringList why;
    for (const auto& n : spec::nameDesigns(spec_))
      why << QString::fromStdString(n.name + (n.equals ? " — equals: " : " — contains: ") + n.why);
    name_->setToolTip(why.join("\n"));
  }
  {
    const Costs k = costs();
    const QString precision = precision_->currentText();
    const auto vs = [&](double value, double base) {
      return k.hasBaseline ? QString(" (%1 MHSA)").arg(ratio(value, base)) : QString();
    };
    QStringList lines;
    lines << QString("parameters: %1%2").arg(k.parameters).arg(vs(k.parameters, k.mhsaParameters));
    if (!k.decodes)
      lines << "KV cache: none — " + k.decodeNote;
    else if (k.stateBytes > 0 && k.kvCacheBytesPerToken == 0)
      lines << QString("KV cache: none, a fixed state of %1 at %2").arg(human(k.stateBytes, "B", 1024.0), precision);
    else
      lines << QString("KV cache per token: %1 at %2%3 — %4")
                   .arg(human(k.kvCacheBytesPerToken, "B", 1024.0), precision,
                        vs(k.kvCacheBytesPerToken, k.mhsaKvCacheBytesPerToken), k.decodeNote);
    lines << QString("training: %1 per token at L = %2%3")
                 .arg(human(k.trainingFlopsPerToken, "FLOP"))
                 .arg(k.context)
                 .arg(vs(k.trainingFlopsPerToken, k.mhsaTrainingFlopsPerToken));
    if (k.decodes)
      lines << QString("decoding: %1 per new token after L = %2 cached%3")
                   .arg(human(k.decodeFlops, "FLOP"))
                   .arg(k.context)
                   .arg(vs(k.decodeFlops, k.mhsaDecodeFlops));
    if (k.hasBaseline) {
      const auto base = mhsaBaseline(spec_);
      lines << QString("MHSA here: F = %1, H = %2, D = %3").arg(base.sizes.F).arg(base.sizes.H).arg(base.sizes.D);
    }
    tokenCost_->setText(lines.join("\n"));
  }
  const auto c = spec::estimateCost(spec_, batch_->value(), spec_.sizes.seq_len);
  const auto mhsa = mhsaBaseline(spec_);
  const bool compare = spec::validate(mhsa).empty();
  const auto base = compare ? spec::estimateCost(mhsa, batch_->value(), spec_.sizes.seq_len) : spec::LayerCost{};
  QString text;
  if (c.frozen_parameters) text += QString("frozen parameters: %1 (fixed core values)\n").arg(c.frozen_parameters);
  text += QString("forward at B = %1, N = %2: ").arg(batch_->value()).arg(spec_.sizes.seq_len) +
          human(c.forward_flops, "FLOP") +
          (compare ? QString(" (%1 MHSA)\n").arg(ratio(c.forward_flops, base.forward_flops)) : QString("\n"));
  text += "activations: " + human(c.activation_bytes, "B", 1024.0) + ", largest tensor " +
          human(c.largest_intermediate_bytes, "B", 1024.0);
  cost_->setText(text);
}

}  // namespace tensorscope::app
