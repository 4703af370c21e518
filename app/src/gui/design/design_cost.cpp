#include "gui/design/design_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QStyledItemDelegate>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>

#include "gui/design/design_panel_parts.h"
#include "spec/design_baseline.h"
#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "spec/validation.h"

// The Cost dock of the Design panel: the cost of one layer against MHSA (spec/cost_model.h) and
// "Match budget" (spec/budget_match.h).

namespace tensorscope::app {

using design_parts::human;
using design_parts::mhsaBaseline;
using design_parts::ratio;
using design_parts::sizeBox;

namespace {

/// The precisions the KV cache is counted at.
struct Precision {
  const char* name;
  int bytes;
};
constexpr Precision kPrecisions[] = {{"float32", 4}, {"bfloat16", 2}, {"float16", 2}};

/// Whether design `s` uses the size `name` of spec::budgetSizeNames(): a size of its variant, or a
/// slot's size that is on (not 0). The matcher says why a listed size cannot be solved.
bool usesSize(const spec::AttentionSpec& s, const std::string& name) {
  using spec::Variant;
  const Variant v = s.variant;
  const bool headed = v == Variant::Mhsa || v == Variant::FixedHead || v == Variant::Tp;
  const bool core = spec::hasCore(v);
  if (name == "F") return true;
  if (name == "H" || name == "D") return headed || core;
  if (name == "R") return core || v == Variant::Multilinear || v == Variant::Dimwise;
  if (name == "P") return v == Variant::Multilinear;
  if (name == "c") return v == Variant::Dimwise;
  if (name == "core_rank") return s.core && s.core->structure == spec::CoreStructure::LowRank;
  if (!spec::hasSlots(v)) return false;
  const auto& q = s.slots;
  if (name == "kv_groups") return q.kv_groups > 0;
  if (name == "kv_rank") return q.latent.kv_rank > 0;
  if (name == "q_rank") return q.latent.q_rank > 0;
  if (name == "rope_dim") return q.latent.rope_dim > 0;
  if (name == "tpa_q_rank") return q.tpa.q_rank > 0;
  if (name == "tpa_k_rank") return q.tpa.k_rank > 0;
  if (name == "tpa_v_rank") return q.tpa.v_rank > 0;
  if (name == "mta_q_kernel") return q.mta.q_kernel > 0;
  if (name == "mta_k_kernel") return q.mta.k_kernel > 0;
  return false;
}

/// One layer's cost per token (spec/cost_model.h): parameters, training FLOPs per token at L, the
/// KV cache (or fixed state) in bytes at the precision and the FLOPs of decoding one token after L.
struct TokenCost {
  std::int64_t parameters = 0;
  double training = 0, cache = 0, state = 0, decode = 0;
  bool decodes = true;
  QString note;  ///< what the cache holds, or why the layer does not decode
};

TokenCost tokenCost(const spec::AttentionSpec& s, std::int64_t context, int bytesPerElement) {
  TokenCost t;
  // Multilinear's output projection fixes its length: it trains on seq_len tokens whatever L is.
  const std::int64_t tokens = s.variant == spec::Variant::Multilinear ? s.sizes.seq_len : context;
  const auto layer = spec::estimateCost(s, 1, tokens, bytesPerElement);
  t.parameters = layer.parameters;
  t.training = layer.training_flops / static_cast<double>(tokens);
  // A KV cache is a decoder's: a non-causal layer is costed as the same layer made causal.
  auto decoder = s;
  decoder.causal = true;
  const auto d = spec::estimateDecodeCost(decoder, context);
  t.decodes = d.supported;
  t.cache = d.cache_elements_per_token * bytesPerElement;
  t.state = d.state_elements * bytesPerElement;
  t.decode = d.flops;
  t.note = QString::fromStdString(d.note) + (s.causal ? "" : " (decoded as a causal layer; this one is not causal)");
  return t;
}

/// The columns of the cost table after the design's name.
constexpr const char* kCostColumns[] = {"params", "KV cache", "training", "decoding"};

/// The item role holding a cell's ratio as a share (0 to 1) of its column's largest ratio.
constexpr int kBarRole = Qt::UserRole + 1;

/// Paints a cost cell's ratio as a bar from the left, under its text: the share in kBarRole.
class RatioBarDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    const QVariant share = index.data(kBarRole);
    if (share.isValid()) {
      QRectF bar = QRectF(option.rect).adjusted(1, 2, -1, -2);
      bar.setWidth(bar.width() * std::clamp(share.toDouble(), 0.0, 1.0));
      QColor fill = option.palette.color(QPalette::Highlight);
      fill.setAlpha(index.row() == 0 ? 120 : 60);  // the design in the dock stronger than the others
      painter->fillRect(bar, fill);
    }
    QStyledItemDelegate::paint(painter, option, index);
  }
};

}  // namespace

void DesignPanel::buildCostPanel() {
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
  // The design among the others at its width: the dock's remaining height goes to this table, which
  // scrolls on its own where a laptop leaves it a few rows (the window's minimum height unchanged).
  costTable_ = new QTableWidget(0, 1 + int(std::size(kCostColumns)));
  costTable_->setObjectName("costTable");
  QStringList header{"per token vs MHSA"};
  for (const char* c : kCostColumns) header << c;
  costTable_->setHorizontalHeaderLabels(header);
  const char* headerTips[] = {"This design, MHSA and the design presets at this F, H, D",
                              "Parameters of one layer", "KV cache per token at the precision chosen",
                              "Training FLOPs per token at L", "FLOPs of decoding one token after L cached"};
  for (int c = 0; c < costTable_->columnCount(); ++c) costTable_->horizontalHeaderItem(c)->setToolTip(headerTips[c]);
  costTable_->setToolTip("This design, MHSA and every design preset at this F, H, D (the presets' slots as they ship): "
                         "parameters, KV cache per token at the precision, training FLOPs per token at L and the "
                         "FLOPs of decoding one token after L cached, each divided by MHSA's; the bar is the ratio "
                         "against the column's largest. A cell's tooltip has the absolute value");
  costTable_->verticalHeader()->hide();
  costTable_->verticalHeader()->setDefaultSectionSize(costTable_->fontMetrics().height() + 4);
  costTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  costTable_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  costTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  costTable_->setSelectionMode(QAbstractItemView::NoSelection);
  costTable_->setFocusPolicy(Qt::NoFocus);
  costTable_->setItemDelegate(new RatioBarDelegate(costTable_));
  // Its header and two rows at least; no height of its own asked for (Ignored): the dock's scroll
  // area sizes the panel by its preferred height, which would otherwise be the table's full length.
  costTable_->setMinimumHeight(3 * costTable_->verticalHeader()->defaultSectionSize());
  costTable_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Ignored);
  costLayout->addWidget(costTable_, 1);
  buildMatchBudget(costLayout);
}

void DesignPanel::refreshCostTable(const Costs& k) {
  costTable_->setRowCount(0);
  if (!k.valid || !k.hasBaseline) return;
  struct Row {
    QString name;
    bool valid = true;
    QString why;
    TokenCost cost;
  };
  std::vector<Row> rows;
  rows.push_back({"this design", true, {}, tokenCost(spec_, k.context, k.bytesPerElement)});
  const auto base = mhsaBaseline(spec_);
  rows.push_back({"mhsa", true, {}, tokenCost(base, k.context, k.bytesPerElement)});
  for (const auto& n : spec::designPresetNames()) {
    const auto s = spec::presetAtSizeOf(n, spec_);
    const auto issues = spec::validate(s);
    // The preset in its naive order, whose cache holds every head's keys and values (DeepSeek-V3's
    // attn_impl "naive"); the absorbed order caches the latent and the rotary key: said, so a
    // teacher does not read MLA's row as "MLA's cache is larger than MHSA's".
    const bool naive = s.slots.latent.enabled() && s.slots.latent.order == spec::LatentOrder::Naive;
    Row r{QString::fromStdString(n) + (naive ? " (naive)" : ""), issues.empty(), {}, {}};
    if (r.valid) r.cost = tokenCost(s, k.context, k.bytesPerElement);
    else r.why = QString::fromStdString(spec::formatIssues(issues));
    rows.push_back(r);
  }
  const TokenCost& m = rows[1].cost;
  const auto values = [](const TokenCost& t) {
    return std::array<double, 4>{double(t.parameters), t.decodes && t.cache > 0 ? t.cache : -1, t.training,
                                 t.decodes ? t.decode : -1};
  };
  const auto mhsa = values(m);
  std::array<double, 4> largest{};
  for (const auto& r : rows)
    if (r.valid)
      for (size_t c = 0; c < 4; ++c)
        if (mhsa[c] > 0) largest[c] = std::max(largest[c], values(r.cost)[c] / mhsa[c]);
  const QString precision = precision_->currentText();
  const auto absolute = [&](size_t c, double v) {
    switch (c) {
      case 0: return QString("%1 parameters").arg(static_cast<std::int64_t>(v));
      case 1: return QString("%1 per token at %2").arg(human(v, "B", 1024.0), precision);
      case 2: return QString("%1 per token at L = %2").arg(human(v, "FLOP")).arg(k.context);
      default: return QString("%1 per new token after L = %2 cached").arg(human(v, "FLOP")).arg(k.context);
    }
  };
  costTable_->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const Row& r = rows[static_cast<size_t>(i)];
    auto* name = new QTableWidgetItem(r.name);
    if (i == 0) {
      QFont bold = name->font();
      bold.setBold(true);
      name->setFont(bold);
    }
    QString tip = r.valid ? (i == 0 ? "The design in the dock" : r.name + " at F = " + QString::number(base.sizes.F) +
                                                                    ", H = " + QString::number(base.sizes.H) +
                                                                    ", D = " + QString::number(base.sizes.D))
                          : "Not a valid layer at these sizes:\n" + r.why;
    if (r.name.endsWith(" (naive)"))
      tip += "\nThe naive order caches every head's keys and values; the absorbed order (MLA order in the "
             "Design dock) caches only the latent and the rotary key";
    name->setToolTip(tip);
    costTable_->setItem(i, 0, name);
    const auto v = values(r.cost);
    for (size_t c = 0; c < 4; ++c) {
      auto* item = new QTableWidgetItem;
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (!r.valid) {
        item->setText("—");
        item->setToolTip(r.why);
      } else if (v[c] < 0 || mhsa[c] <= 0) {
        // No KV cache (a fixed state) or no token-by-token decoding: nothing to divide.
        item->setText(c == 1 && r.cost.state > 0 ? "state" : "—");
        item->setToolTip(r.cost.note);
      } else {
        const double q = v[c] / mhsa[c];
        item->setText(ratio(v[c], mhsa[c]));
        item->setToolTip(absolute(c, v[c]) + (c == 1 ? " — " + r.cost.note : QString()));
        // The ratio as a bar under the number: its share of the column's largest ratio.
        item->setData(kBarRole, largest[c] > 0 ? q / largest[c] : 0.0);
      }
      if (i == 0) item->setFont(name->font());
      costTable_->setItem(i, static_cast<int>(c) + 1, item);
    }
  }
}

spec::AttentionSpec DesignPanel::matchBaseline() const {
  const QString name = matchBase_->currentData().toString();
  if (name.isEmpty()) return mhsaBaseline(spec_);
  // A design preset at this layer's width, heads and head size (its slots as the preset has them).
  return spec::presetAtSizeOf(name.toStdString(), spec_);
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
  // The sizes of the design shown: followDesignInMatch() fills them in and keeps them current.
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
  if (free < 0) {
    QStringList listed;
    for (int i = 1; i < matchSize_->count(); ++i) listed << matchSize_->itemData(i).toString();
    throw std::invalid_argument("no size " + size.toStdString() + " in Match budget for this design (it lists " +
                                listed.join(", ").toStdString() + ")");
  }
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
  const auto t = tokenCost(spec_, c.context, c.bytesPerElement);
  c.parameters = t.parameters;
  c.trainingFlopsPerToken = t.training;
  c.kvCacheBytesPerToken = t.cache;
  c.stateBytes = t.state;
  c.decodeFlops = t.decode;
  c.decodes = t.decodes;
  c.decodeNote = t.note;
  const auto base = mhsaBaseline(spec_);
  c.hasBaseline = spec::validate(base).empty();
  if (c.hasBaseline) {
    const auto m = tokenCost(base, c.context, c.bytesPerElement);
    c.mhsaParameters = m.parameters;
    c.mhsaTrainingFlopsPerToken = m.training;
    c.mhsaKvCacheBytesPerToken = m.cache;
    c.mhsaDecodeFlops = m.decode;
  }
  return c;
}

void DesignPanel::followDesignInMatch() {
  {
    // "solve" lists the sizes this design uses; a choice the new design does not use goes back to
    // "any free size" (it named a size of the design before, e.g. kv_rank after MLA became MHSA).
    const QString chosen = matchSize_->currentData().toString();
    QStringList sizes;
    for (const auto& n : spec::budgetSizeNames())
      if (usesSize(spec_, n)) sizes << QString::fromStdString(n);
    QStringList listed;
    for (int i = 1; i < matchSize_->count(); ++i) listed << matchSize_->itemData(i).toString();
    if (listed != sizes) {
      const QSignalBlocker block(matchSize_);
      while (matchSize_->count() > 1) matchSize_->removeItem(1);
      for (const auto& n : sizes) matchSize_->addItem(n, n);
      const int i = matchSize_->findData(chosen);
      matchSize_->setCurrentIndex(i >= 0 ? i : 0);
    }
  }
  if (matched_ && !(spec_ == matchedFrom_) && !(spec_ == *matched_)) {
    matched_.reset();
    matchApply_->setEnabled(false);
    matchResult_->setText("(the design changed: press Match again)");
  }
}

void DesignPanel::refreshCost() {
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
    refreshCostTable(k);
  }
  const auto c = spec::estimateCost(spec_, batch_->value(), spec_.sizes.seq_len);
  const auto mhsa = mhsaBaseline(spec_);
  const bool compare = spec::validate(mhsa).empty();
  const auto base = compare ? spec::estimateCost(mhsa, batch_->value(), spec_.sizes.seq_len) : spec::LayerCost{};
  QString text;
  if (c.frozen_parameters) text += QString("frozen parameters: %1 (stored, not trained: fixed entries of C, C′ or C^pre)\n").arg(c.frozen_parameters);
  text += QString("forward at B = %1, N = %2: ").arg(batch_->value()).arg(spec_.sizes.seq_len) +
          human(c.forward_flops, "FLOP") +
          (compare ? QString(" (%1 MHSA)\n").arg(ratio(c.forward_flops, base.forward_flops)) : QString("\n"));
  text += "activations: " + human(c.activation_bytes, "B", 1024.0) + ", largest tensor " +
          human(c.largest_intermediate_bytes, "B", 1024.0);
  cost_->setText(text);
}

}  // namespace tensorscope::app
