#include "gui/design/design_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

#include "gui/design/design_panel_parts.h"
#include "spec/slot_values.h"
#include "spec/validation.h"

// The slot editors of the Design dock: one row per field of spec::Slots (docs/attention-variants.md §8).

namespace tensorscope::app {

using design_parts::enumNames;

void DesignPanel::addSlotRow(const QString& label, SlotControl control) {
  control.widget->setObjectName(control.field);
  if (label.isEmpty()) slotsForm_->addRow(control.widget);
  else slotsForm_->addRow(label, control.widget);
  slotControls_.push_back(std::move(control));
  const size_t i = slotControls_.size() - 1;
  const auto edited = [this, i] { slotEdited(i); };
  if (auto* b = qobject_cast<QCheckBox*>(control.widget)) connect(b, &QCheckBox::toggled, this, edited);
  else if (auto* c = qobject_cast<QComboBox*>(control.widget)) connect(c, &QComboBox::currentIndexChanged, this, edited);
  else if (auto* n = qobject_cast<QSpinBox*>(control.widget)) connect(n, &QSpinBox::valueChanged, this, edited);
  else if (auto* d = qobject_cast<QDoubleSpinBox*>(control.widget)) connect(d, &QDoubleSpinBox::valueChanged, this, edited);
}

void DesignPanel::slotEdited(size_t i) {
  if (updating_) return;
  const SlotControl& c = slotControls_[i];
  spec::AttentionSpec after = spec_;
  c.read(after);
  spec::dropStaleSlotValues(after);  // a resized kernel or a mixing switched off starts from its identity
  if (c.refuseInvalid) {
    // Refused when the validator finds a problem the design did not have: nothing is applied, the
    // control shows the spec's value again and the reason stays under the slots until the next edit.
    const auto before = spec::validate(spec_);
    std::vector<spec::Issue> added;
    for (const auto& issue : spec::validate(after))
      if (std::find(before.begin(), before.end(), issue) == before.end()) added.push_back(issue);
    if (!added.empty()) {
      slotRefusal_->setText(c.describe(after) + " refused — " + QString::fromStdString(spec::formatIssues(added)));
      slotRefusal_->setVisible(true);
      showSlots();
      return;
    }
  }
  slotRefusal_->clear();
  slotRefusal_->setVisible(false);
  // Every slot edit is one undoable edit named by what it set.
  editedSlot_ = static_cast<int>(i);  // only this slot is read: the others keep the spec's values
  readControls(c.describe(after));
  editedSlot_ = -1;
}

QString DesignPanel::slotRefusal() const { return slotRefusal_->isHidden() ? QString() : slotRefusal_->text(); }

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
  addSlotCheck("slots.tpa.contextual_b", "TPA feature factors depend on the token",
               "Contextual feature factors B = x·W_B (TPA, T6); off: learned constants b[r, d] per rank, turned by "
               "position (paper Table 1, non-contextual B: the KV cache keeps only the head factors, (R_K + R_V)·H a "
               "token). The head factors must then be contextual",
               [](AttentionSpec& s) -> bool& { return s.slots.tpa.contextual_b; });
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
  addSlotCheck("slots.tpa.group_norm", "TPA head norm (T6 using_groupnorm)",
               "T6's optional group norm: each head's output RMS-normalised over its D features (ε 10⁻⁵) and scaled "
               "by one learned weight γ [D] shared by the heads, before W^O (off in every T6 config)",
               [](AttentionSpec& s) -> bool& { return s.slots.tpa.group_norm; });
  for (const char* f : {"slots.tpa.v_rank", "slots.tpa.q_rank", "slots.tpa.contextual_a", "slots.tpa.contextual_b",
                        "slots.tpa.rope", "slots.tpa.group_norm"})
    for (auto& c : slotControls_)
      if (c.field == f) c.shown = [](const AttentionSpec& s) { return s.slots.tpa.enabled(); };
  buildMtaSlots();
  buildCollaborativeSlots();
}

void DesignPanel::buildCollaborativeSlots() {
  using spec::AttentionSpec;
  // Collaborative attention (§8.9; epfml/collaborative-attention): one shared query/key space of D̃
  // features read by each head through its mixing vector. One row (D̃, "off") while it is off.
  const size_t first = slotControls_.size();
  addSlotSpin("slots.collaborative.key_dim", "Collaborative key space D̃",
              "D̃ (dim_key_query_all): the width of the one query/key space all heads share; head h reads it "
              "through its mixing vector m_h, logits (q̃ ⊙ m_h)·k̃ᵀ/√(D̃/H). The paper shrinks it below H·D "
              "(D̃ = H·D with the concatenation mixing is MHSA); off: MHSA's keys",
              0, spec::kMaxWidth, 1, "off", [](AttentionSpec& s) -> int& { return s.slots.collaborative.key_dim; });
  {
    // "off" turns the whole slot off (every field back to its default).
    auto* box = qobject_cast<QSpinBox*>(slotControls_.back().widget);
    slotControls_.back().read = [box](AttentionSpec& s) {
      if (box->value() == 0) s.slots.collaborative = {};
      else s.slots.collaborative.key_dim = box->value();
    };
  }
  addSlotCheck("slots.collaborative.content_bias", "Collaborative content bias",
               "The key-only content bias x_m·w^c_h per head (content_bias, Linear(F, H) without bias): the part of "
               "MHSA's query bias that survives the softmax",
               [](AttentionSpec& s) -> bool& { return s.slots.collaborative.content_bias; });
  addSlotChoice("slots.collaborative.mixing_init", "Collaborative mixing init",
                "How the mixing matrix [H, D̃] starts: normal N(0, 0.2²) (the official default) or concatenate (head h "
                "reads its own block of ⌈D̃/H⌉ features: MHSA when D̃ = H·D)",
                enumNames(2, [](int i) { return spec::toString(static_cast<spec::MixingInit>(i)); }),
                [](const AttentionSpec& s) { return static_cast<int>(s.slots.collaborative.init); },
                [](AttentionSpec& s, int i) { s.slots.collaborative.init = static_cast<spec::MixingInit>(i); });
  for (size_t i = first; i < slotControls_.size(); ++i) {
    slotControls_[i].refuseInvalid = true;
    if (i > first) slotControls_[i].shown = [](const AttentionSpec& s) { return s.slots.collaborative.enabled(); };
  }
}

void DesignPanel::buildMtaSlots() {
  using spec::AttentionSpec;
  const size_t first = slotControls_.size();
  // Multi-token attention (§8.8; facebookresearch/RAM projects/mta/mta_transformer.py). On: the
  // fields of the `mta` preset (RAM's 300M_mta.yaml: 6 x 11 kernels before and after the softmax,
  // pad both, the gated head norm), the head mixings as they are; off: every MTA field back to off.
  {
    auto* box = new QCheckBox("multi-token attention (MTA)");
    box->setToolTip("Multi-token attention: each head's logits convolved over nearby queries and keys (c_q x c_k), "
                    "the weights again after the softmax, heads mixed, each head's output normalised and gated. On "
                    "starts from the mta preset's fields (6 x 11 kernels, pad both, gated head norm)");
    addSlotRow({}, {"slots.mta", box, [box](const AttentionSpec& s) { box->setChecked(s.slots.mta.enabled()); },
                    [box](AttentionSpec& s) {
                      if (box->isChecked() == s.slots.mta.enabled()) return;
                      s.slots.mta = box->isChecked() ? spec::makeSpecPreset("mta").slots.mta : spec::Mta{};
                    },
                    [](const AttentionSpec& s) {
                      return QString("multi-token attention ") + (s.slots.mta.enabled() ? "on" : "off");
                    }});
  }
  // The kernel sizes: 0 is no convolution; the two sizes of one convolution are on or off together
  // (the validator's rule), so a size turned on from 0 gives its partner 1 and a size turned off
  // turns its partner off.
  const auto kernel = [this](const char* field, const char* label, const char* tip, int spec::Mta::*own,
                             int spec::Mta::*partner) {
    addSlotSpin(field, label, tip, 0, 256, 1, "none", [own](AttentionSpec& s) -> int& { return s.slots.mta.*own; });
    auto* box = qobject_cast<QSpinBox*>(slotControls_.back().widget);
    slotControls_.back().read = [box, own, partner](AttentionSpec& s) {
      const int v = box->value();
      s.slots.mta.*own = v;
      if (v == 0) s.slots.mta.*partner = 0;
      else if (s.slots.mta.*partner == 0) s.slots.mta.*partner = 1;
    };
  };
  kernel("slots.mta.q_kernel", "MTA c_q (logits)",
         "c_q (query_kernel_size): the queries the pre-softmax kernel reads, the query itself and the c_q − 1 before it",
         &spec::Mta::q_kernel, &spec::Mta::k_kernel);
  kernel("slots.mta.k_kernel", "MTA c_k (logits)",
         "c_k (key_kernel_size): the keys the pre-softmax kernel reads around each key; odd with pad both",
         &spec::Mta::k_kernel, &spec::Mta::q_kernel);
  kernel("slots.mta.post_q_kernel", "MTA c_q′ (weights)",
         "c_q′ (after_sm_query_kernel_size): the queries the kernel after the softmax reads", &spec::Mta::post_q_kernel,
         &spec::Mta::post_k_kernel);
  kernel("slots.mta.post_k_kernel", "MTA c_k′ (weights)",
         "c_k′ (after_sm_key_kernel_size): the keys the kernel after the softmax reads; odd with pad both",
         &spec::Mta::post_k_kernel, &spec::Mta::post_q_kernel);
  addSlotChoice("slots.mta.pad", "MTA pad_key",
                "How both convolutions pad the key axis: both ((c_k − 1)/2 keys each side; c_k odd), left (c_k − 1 "
                "earlier keys) or right (c_k − 1 later keys). The query axis always reads earlier queries",
                enumNames(3, [](int i) { return spec::toString(static_cast<spec::MtaPad>(i)); }),
                [](const AttentionSpec& s) { return static_cast<int>(s.slots.mta.pad); },
                [](AttentionSpec& s, int i) { s.slots.mta.pad = static_cast<spec::MtaPad>(i); });
  addSlotSpin("slots.mta.head_group", "MTA head groups g",
              "head_kernel_size g: the weights mixed after the softmax within groups of g heads (κ, [H/g, g, g]); g "
              "divides H. Mixing all H heads is the full C′ (\"mix heads after the softmax\"), which the official code "
              "does not take together with a head convolution",
              0, spec::kMaxHeads, 1, "none", [](AttentionSpec& s) -> int& { return s.slots.mta.head_group; });
  addSlotCheck("slots.mta.group_norm", "MTA head norm",
               "group_norm: each head's output RMS-normalised over its D features (subln, ε 1e-5)",
               [](AttentionSpec& s) -> bool& { return s.slots.mta.group_norm; });
  addSlotCheck("slots.mta.norm_rescale", "MTA norm × (1 − λ_init)",
               "layer_norm_rescale: the head norm scaled by 1 − λ_init(layer), λ_init = 0.8 − 0.6·e^{−0.3·l}; needs "
               "the head norm",
               [](AttentionSpec& s) -> bool& { return s.slots.mta.norm_rescale; });
  addSlotChoice("slots.mta.out_gate", "MTA gate",
                "add_gating: each head's output multiplied by a sigmoid of its own normalised output — one per head "
                "(headwise, gate_1d) or per element; not the slot Gate, which reads x",
                enumNames(3, [](int i) { return spec::toString(static_cast<spec::Gate>(i)); }),
                [](const AttentionSpec& s) { return static_cast<int>(s.slots.mta.out_gate); },
                [](AttentionSpec& s, int i) { s.slots.mta.out_gate = static_cast<spec::Gate>(i); });
  // One row (on/off) while MTA is off; every MTA edit goes through the validator first.
  for (size_t i = first; i < slotControls_.size(); ++i) {
    slotControls_[i].refuseInvalid = true;
    if (i > first) slotControls_[i].shown = [](const AttentionSpec& s) { return s.slots.mta.enabled(); };
  }
}

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
  if (headMixing_) headMixing_->setSpec(spec_);
}

QWidget* DesignPanel::slotWidget(const QString& field) const {
  for (const auto& c : slotControls_)
    if (c.field == field) return c.widget;
  return nullptr;
}

bool DesignPanel::slotsShown() const { return !slotsBox_->isHidden(); }

}  // namespace tensorscope::app
