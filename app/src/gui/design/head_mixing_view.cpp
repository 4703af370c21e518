#include "gui/design/head_mixing_view.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model_core/analysis.h"
#include "spec/slot_values.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::app {

namespace {

struct WeightInfo {
  const char* name;
  const char* label;  ///< the Weight box's text
  const char* symbol; ///< the heatmap's title
};
constexpr WeightInfo kWeights[] = {
    {"mix_post", "C′ — heads mixed after the softmax", "C′ (mix_post)"},
    {"mix_pre", "C^pre — heads mixed before the softmax", "C^pre (mix_pre)"},
    {"mta_kernel", "θ — MTA kernel on the logits", "θ (mta_kernel)"},
    {"mta_kernel_after_sm", "θ′ — MTA kernel on the weights", "θ′ (mta_kernel_after_sm)"},
    {"head_kernel", "κ — MTA head convolution", "κ (head_kernel)"},
};

const WeightInfo* infoOf(const QString& name) {
  for (const auto& w : kWeights)
    if (name == w.name) return &w;
  return nullptr;
}

bool isMixing(const QString& name) { return name == "mix_post" || name == "mix_pre"; }
bool isDrawn(const QString& name) { return name != "head_kernel"; }  // the spec draws no κ

/// Whether the design draws its own values for weight `name` (else it starts as the identity).
bool drawnBy(const spec::AttentionSpec& s, const QString& name) {
  return spec::drawsSlotWeight(s, name.toStdString());
}

bool has(const spec::AttentionSpec& s, const QString& name) {
  if (!spec::hasSlots(s.variant)) return false;
  const auto& q = s.slots;
  if (name == "mix_post") return q.post_mix;
  if (name == "mix_pre") return q.pre_mix;
  if (name == "mta_kernel") return q.mta.q_kernel > 0 && q.mta.k_kernel > 0;
  if (name == "mta_kernel_after_sm") return q.mta.post_q_kernel > 0 && q.mta.post_k_kernel > 0;
  if (name == "head_kernel") return q.mta.head_group > 0 && s.sizes.H % q.mta.head_group == 0;
  return false;
}

QString spectrum(const std::vector<double>& sv) {
  QStringList parts;
  for (size_t i = 0; i < sv.size() && i < 8; ++i) parts << QString::number(sv[i], 'g', 3);
  if (sv.size() > 8) parts << "…";
  return parts.join(", ");
}

}  // namespace

HeadMixingView::HeadMixingView(QWidget* parent) : QGroupBox("Head mixing C′ and MTA kernels", parent) {
  setObjectName("headMixing");
  setToolTip("The head mixings and multi-token attention's kernels of this design: what they start as (drawn "
             "here, undoable), or a run's trained values");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  auto* form = new QFormLayout;
  weight_ = new QComboBox;
  weight_->setObjectName("headMixingWeight");
  weight_->setToolTip("Which weight of the layer to show");
  form->addRow("Weight", weight_);
  index_ = new QSpinBox;
  index_->setObjectName("headMixingIndex");
  index_->setKeyboardTracking(false);
  indexLabel_ = new QLabel("Head");
  form->addRow(indexLabel_, index_);
  preset_ = new QComboBox;
  preset_->setObjectName("headMixingPreset");
  preset_->setToolTip("Redraw the whole weight (one undo step): identity (MHSA until it learns), average (one head's "
                      "worth), swap (each head reads its neighbour), identity_frozen (exactly MHSA), diagonal_only "
                      "(each head rescales its own map); kernels: identity, average, key_blur");
  preset_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  preset_->setMinimumContentsLength(8);
  applyPreset_ = new QPushButton("Apply");
  applyPreset_->setObjectName("headMixingApplyPreset");
  auto* presetRow = new QHBoxLayout;
  presetRow->addWidget(preset_, 1);
  presetRow->addWidget(applyPreset_);
  form->addRow("Preset", presetRow);
  layout->addLayout(form);
  auto* toolsRow = new QHBoxLayout;
  tools_ = new QButtonGroup(this);
  // Short labels, so the row fits a narrow Design dock (1280 x 800); the tooltips say what they paint.
  const char* toolNames[] = {"Set value", "Trainable", "Frozen"};
  for (int i = 0; i < 3; ++i) {
    auto* b = new QRadioButton(toolNames[i]);
    b->setObjectName(QString("headMixingTool%1").arg(i));
    b->setToolTip(QString(i == 0 ? "Set cells to the value. " : i == 1 ? "Paint cells trainable. " : "Paint cells frozen. ") +
                  "Click a cell, drag across cells, or Shift+drag from corner to corner to fill a rectangle (one "
                  "undo step). Frozen entries of a mixing keep their value while training; kernels have none.");
    tools_->addButton(b, i);
    toolsRow->addWidget(b);
  }
  tools_->button(0)->setChecked(true);
  value_ = new QDoubleSpinBox;
  value_->setObjectName("headMixingValue");
  value_->setRange(-1000, 1000);
  value_->setDecimals(3);
  value_->setValue(1.0);
  value_->setToolTip("Value a click, a drag or a Shift+drag rectangle sets");
  toolsRow->addStretch(1);
  layout->addLayout(toolsRow);
  auto* valueRow = new QHBoxLayout;
  valueRow->addWidget(new QLabel("Value"));
  valueRow->addWidget(value_);
  valueRow->addStretch(1);
  layout->addLayout(valueRow);
  heatmap_ = new viz::MatrixHeatmap;
  heatmap_->setObjectName("headMixingHeatmap");
  heatmap_->setMinimumHeight(220);
  layout->addWidget(heatmap_);
  readout_ = new QLabel;
  readout_->setObjectName("headMixingReadout");
  readout_->setWordWrap(true);
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(readout_);
  note_ = new QLabel;
  note_->setObjectName("headMixingNote");
  note_->setWordWrap(true);
  note_->setStyleSheet("color: palette(placeholder-text);");
  layout->addWidget(note_);
  connect(weight_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) refresh();
  });
  connect(index_, &QSpinBox::valueChanged, this, [this] {
    if (!updating_) refresh();
  });
  connect(tools_, &QButtonGroup::idClicked, this, [this](int id) { tool_ = static_cast<Tool>(id); });
  connect(applyPreset_, &QPushButton::clicked, this, [this] { applyPreset(preset_->currentText()); });
  connect(heatmap_, &viz::MatrixHeatmap::cellClicked, this,
          [this](int r, int c, Qt::MouseButtons) { editCell(r, c, false); });
  connect(heatmap_, &viz::MatrixHeatmap::cellDragged, this, [this](int r, int c) { editCell(r, c, true); });
  connect(heatmap_, &viz::MatrixHeatmap::rectangleChosen, this,
          [this](int r0, int c0, int r1, int c1) { editRectangle(r0, c0, r1, c1); });
  setVisible(false);
}

void HeadMixingView::setEditable(bool editable) {
  if (editable_ == editable) return;
  editable_ = editable;
  refresh();
}

bool HeadMixingView::editsDesign() const {
  return editable_ && isDrawn(shownWeight()) && (!showsTrained_ || trained_.forkStart);
}

void HeadMixingView::setTool(Tool tool) {
  tool_ = tool;
  tools_->button(static_cast<int>(tool))->setChecked(true);
}

void HeadMixingView::setPaintValue(double value) { value_->setValue(value); }

QStringList HeadMixingView::presetNames() const {
  const QString name = shownWeight();
  QStringList out;
  if (!isDrawn(name)) return out;
  for (const auto& n : isMixing(name) ? spec::mixingPresetNames() : spec::mtaKernelPresetNames())
    out << QString::fromStdString(n);
  return out;
}

spec::AttentionSpec HeadMixingView::withValues(std::vector<double> values, std::vector<unsigned char> mask) const {
  auto s = spec_;
  const QString name = shownWeight();
  const int H = s.sizes.H;
  if (name == "mix_post") s.slots.post_mixing = spec::canonicalMixing(std::move(values), std::move(mask), H);
  else if (name == "mix_pre") s.slots.pre_mixing = spec::canonicalMixing(std::move(values), std::move(mask), H);
  else spec::setMtaKernelValues(s.slots.mta, H, name == "mta_kernel_after_sm", std::move(values));
  return s;
}

void HeadMixingView::applyTool(const std::vector<std::pair<int, int>>& cells, const QString& what, int stroke) {
  const QString name = shownWeight();
  const Tensor& t = shownTensor();
  const int rows = static_cast<int>(t.shape[t.shape.size() - 2]), cols = static_cast<int>(t.shape.back());
  const bool mixing = isMixing(name);
  if (!mixing && tool_ != Tool::SetValue) {
    note_->setText("A kernel has no frozen entries: choose Set value to draw it (only C′ and C^pre freeze entries).");
    return;
  }
  auto values = t.values;
  auto mask = mixing ? spec::mixingMask(name == "mix_post" ? spec_.slots.post_mixing : spec_.slots.pre_mixing, spec_.sizes.H)
                     : std::vector<unsigned char>{};
  const size_t offset = mixing ? 0 : static_cast<size_t>(shownIndex()) * rows * cols;
  bool changed = false;
  for (const auto& [r, c] : cells) {
    if (r < 0 || c < 0 || r >= rows || c >= cols) continue;
    const size_t k = offset + static_cast<size_t>(r) * cols + c;
    if (tool_ == Tool::SetValue) {
      changed |= values[k] != value_->value();
      values[k] = value_->value();
    } else {
      const unsigned char m = tool_ == Tool::PaintTrainable ? 1 : 0;
      changed |= mask[k] != m;
      mask[k] = m;
    }
  }
  if (!changed) return;
  Q_EMIT valuesEdited(withValues(std::move(values), std::move(mask)), what, stroke);
}

void HeadMixingView::editCell(int row, int col, bool continuingStroke) {
  const QString name = shownWeight();
  if (name.isEmpty()) return;
  if (!isDrawn(name)) {
    note_->setText("κ, the head convolution, starts as the identity in every group and is learned: the spec draws "
                   "no values for it.");
    return;
  }
  if (!editsDesign()) {
    if (continuingStroke) return;  // one question per click, not one per cell of a drag
    pending_ = PendingCell{name, shownIndex(), row, col};
    Q_EMIT forkRequested();
    return;
  }
  if (!continuingStroke) ++stroke_;
  const QString symbol = QString(infoOf(name)->symbol).section(' ', 0, 0);
  const QString cell = isMixing(name) ? QString("%1[%2,%3]").arg(symbol).arg(row).arg(col)
                                      : QString("%1[head %2][%3,%4]").arg(symbol).arg(shownIndex()).arg(row).arg(col);
  applyTool({{row, col}}, toolText(cell), stroke_);
}

QString HeadMixingView::toolText(const QString& cells) const {
  return tool_ == Tool::SetValue         ? QString("set %1 = %2").arg(cells).arg(value_->value())
         : tool_ == Tool::PaintTrainable ? "paint " + cells + " trainable"
                                         : "paint " + cells + " frozen";
}

void HeadMixingView::editRectangle(int row0, int col0, int row1, int col1) {
  if (!editsDesign()) return editCell(row0, col0);
  std::vector<std::pair<int, int>> cells;
  for (int r = row0; r <= row1; ++r)
    for (int c = col0; c <= col1; ++c) cells.emplace_back(r, c);
  const QString symbol = QString(infoOf(shownWeight())->symbol).section(' ', 0, 0);
  const QString range = QString("%1[%2..%3, %4..%5]").arg(symbol).arg(row0).arg(row1).arg(col0).arg(col1);
  applyTool(cells, toolText(range), ++stroke_);
}

bool HeadMixingView::applyPreset(const QString& preset) {
  const QString name = shownWeight();
  if (!presetNames().contains(preset)) return false;
  if (!editsDesign()) {
    note_->setText(editable_ ? "These are trained values: click a cell to fork the run, then apply the preset to the fork."
                             : "The run is training with this design: click a cell to fork it first.");
    return false;
  }
  const int H = spec_.sizes.H;
  const std::string p = preset.toStdString();
  spec::AttentionSpec after = spec_;
  if (isMixing(name)) {
    (name == "mix_post" ? after.slots.post_mixing : after.slots.pre_mixing) = spec::makeMixingPreset(p, H);
  } else {
    const bool post = name == "mta_kernel_after_sm";
    spec::setMtaKernelValues(after.slots.mta, H, post, spec::makeMtaKernelPreset(p, spec_.slots.mta, H, post));
  }
  if (after == spec_) return true;
  Q_EMIT valuesEdited(after, QString("%1 preset %2").arg(QString(infoOf(name)->symbol).section(' ', 0, 0), preset), ++stroke_);
  return true;
}

bool HeadMixingView::replayPendingEdit() {
  if (!pending_ || !editsDesign()) return false;
  const PendingCell cell = *pending_;
  pending_.reset();
  if (!choose(cell.weight, cell.index)) return false;
  editCell(cell.row, cell.col);
  return true;
}

QStringList HeadMixingView::weightsOf(const spec::AttentionSpec& s) {
  QStringList out;
  for (const auto& w : kWeights)
    if (has(s, w.name)) out << w.name;
  return out;
}

HeadMixingView::Tensor HeadMixingView::initialValues(const spec::AttentionSpec& s, const QString& name) {
  if (!has(s, name)) throw std::invalid_argument("the design has no weight " + name.toStdString());
  const std::int64_t H = s.sizes.H;
  Tensor t;
  t.name = name;
  if (isMixing(name)) {
    t.shape = {H, H};
    t.values = spec::mixingValues(name == "mix_post" ? s.slots.post_mixing : s.slots.pre_mixing, s.sizes.H);
  } else if (name == "head_kernel") {
    const std::int64_t g = s.slots.mta.head_group;
    t.shape = {H / g, g, g};
    t.values.assign(static_cast<size_t>(H * g), 0.0);
    for (std::int64_t c = 0; c < H / g; ++c)
      for (std::int64_t i = 0; i < g; ++i) t.values[static_cast<size_t>(c * g * g + i * g + i)] = 1.0;
  } else {
    const bool post = name == "mta_kernel_after_sm";
    t.shape = {H, post ? s.slots.mta.post_q_kernel : s.slots.mta.q_kernel, post ? s.slots.mta.post_k_kernel : s.slots.mta.k_kernel};
    t.values = spec::mtaKernelValues(s.slots.mta, s.sizes.H, post);
  }
  return t;
}

void HeadMixingView::setSpec(const spec::AttentionSpec& s) {
  spec_ = s;
  refresh();
}

void HeadMixingView::setTrained(const Trained& trained) {
  trained_ = trained;
  refresh();
}

bool HeadMixingView::choose(const QString& name, int index) {
  const int i = weight_->findData(name);
  if (i < 0) return false;
  weight_->setCurrentIndex(i);
  if (index < index_->minimum() || index > index_->maximum()) return false;
  index_->setValue(index);
  return true;
}

QString HeadMixingView::shownWeight() const { return weight_->currentData().toString(); }
int HeadMixingView::shownIndex() const { return index_->isHidden() ? 0 : index_->value(); }
QString HeadMixingView::readoutText() const { return readout_->text(); }
QString HeadMixingView::noteText() const { return note_->text(); }

void HeadMixingView::refresh() {
  const QStringList names = weights();
  setVisible(!names.isEmpty());
  if (names.isEmpty()) return;
  updating_ = true;
  {
    // The Weight box lists this design's weights and keeps the one chosen while the design has it.
    const QString current = weight_->currentData().toString();
    const QSignalBlocker block(weight_);
    weight_->clear();
    for (const auto& n : names) weight_->addItem(infoOf(n)->label, n);
    const int i = weight_->findData(current);
    weight_->setCurrentIndex(i >= 0 ? i : 0);
  }
  const QString name = weight_->currentData().toString();
  const Tensor init = initialValues(spec_, name);
  // The checkpoint's values where the run has this weight at this design's shape (an edit since
  // training changes the shape, and then the design's initial values are what it would start from).
  // A fork that has not trained starts from its snapshot's values until its design draws its own.
  const Tensor* shown = &init;
  if (!(trained_.forkStart && drawnBy(spec_, name)))
    for (const auto& t : trained_.tensors)
      if (t.name == name && t.shape == init.shape && t.values.size() == init.values.size()) shown = &t;
  showsTrained_ = shown != &init;
  shownInit_ = init;
  shownTrained_ = showsTrained_ ? *shown : Tensor{};
  {
    const QSignalBlocker block(preset_);
    const QString chosen = preset_->currentText();
    preset_->clear();
    preset_->addItems(presetNames());
    if (const int i = preset_->findText(chosen); i >= 0) preset_->setCurrentIndex(i);
  }
  const bool edits = editsDesign();
  preset_->setEnabled(edits);
  applyPreset_->setEnabled(edits);
  for (auto* b : tools_->buttons()) b->setEnabled(isDrawn(name) && (tools_->id(b) == 0 || isMixing(name)));
  if (!isMixing(name) && tool_ != Tool::SetValue) setTool(Tool::SetValue);
  const bool mixing = init.shape.size() == 2;
  const int count = mixing ? 1 : static_cast<int>(init.shape[0]);
  {
    const QSignalBlocker block(index_);
    index_->setRange(0, std::max(0, count - 1));
  }
  index_->setVisible(!mixing);
  indexLabel_->setVisible(!mixing);
  indexLabel_->setText(name == "head_kernel" ? "Group" : "Head");
  const int rows = static_cast<int>(init.shape[init.shape.size() - 2]);
  const int cols = static_cast<int>(init.shape.back());
  const size_t offset = mixing ? 0 : static_cast<size_t>(index_->value()) * rows * cols;
  const std::vector<double> values(shown->values.begin() + static_cast<std::ptrdiff_t>(offset),
                                   shown->values.begin() + static_cast<std::ptrdiff_t>(offset + size_t(rows) * cols));
  const WeightInfo* info = infoOf(name);
  QString title = info->symbol;
  if (!mixing) title += QString(name == "head_kernel" ? ", group %1" : ", head %1").arg(index_->value());
  title += !showsTrained_       ? QString(drawnBy(spec_, name) ? " — as drawn" : " — initial values")
           : trained_.forkStart ? QString(" — fork start, step %1").arg(trained_.step)
           : trained_.live      ? QString(" — training, step %1").arg(trained_.step)
                                : QString(" — trained, step %1").arg(trained_.step);
  heatmap_->setMatrix(values, rows, cols, title);
  // Frozen entries of a mixing (the design's mask, which the run trains with too) are hatched.
  std::vector<unsigned char> frozen;
  if (isMixing(name)) {
    frozen = spec::mixingMask(name == "mix_post" ? spec_.slots.post_mixing : spec_.slots.pre_mixing, spec_.sizes.H);
    for (auto& m : frozen) m = m ? 0 : 1;
  }
  heatmap_->setMask(frozen);
  if (mixing) heatmap_->setAxisTitles("l (head it takes from)", "w (head it gives to)");
  else if (name == "head_kernel") heatmap_->setAxisTitles("j (head it gives to, in the group)", "i (head it takes from)");
  else heatmap_->setAxisTitles("j (key offset)", "i (query offset; last: itself)");
  if (mixing) {
    stableRank_ = model_core::stableRank(values, rows, cols);
    const long long trained = std::count(frozen.begin(), frozen.end(), 0);
    readout_->setText(QString("stable rank %1 of %2 heads; σ: %3; %4 of %5 entries trained")
                          .arg(QString::number(stableRank_, 'f', 3))
                          .arg(rows)
                          .arg(spectrum(model_core::singularValues(values, rows, cols)))
                          .arg(trained)
                          .arg(frozen.size()));
  } else {
    stableRank_ = 0;
    double sum = 0, largest = 0;
    int at = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      sum += values[i];
      if (std::abs(values[i]) > largest) largest = std::abs(values[i]), at = static_cast<int>(i);
    }
    readout_->setText(QString("%1 × %2 entries; sum %3; largest |entry| %4 at (%5, %6)")
                          .arg(rows)
                          .arg(cols)
                          .arg(QString::number(sum, 'g', 4), QString::number(largest, 'g', 4))
                          .arg(at / cols)
                          .arg(at % cols));
  }
  const QString what = mixing ? "the identity" : name == "head_kernel" ? "the identity in each group"
                                                                        : "a single 1 at the query itself and key offset 0";
  QString note =
      !showsTrained_ ? (drawnBy(spec_, name) ? QString("Values drawn into this design: every layer starts from them.")
                                             : QString("Initial values: %1, as every layer of this design starts.").arg(what))
      : trained_.forkStart
          ? QString("%1 starts from these values (its parent's checkpoint, step %2), layer %3.")
                .arg(trained_.run)
                .arg(trained_.step)
                .arg(trained_.layer)
      : trained_.live
          ? QString("Values of %1, layer %2, at step %3 while it trains: they follow its inspections (read-only).")
                .arg(trained_.run)
                .arg(trained_.layer)
                .arg(trained_.step)
          : QString("Trained values of %1, layer %2, at step %3 of its checkpoint (read-only: the run stays as trained).")
                .arg(trained_.run)
                .arg(trained_.layer)
                .arg(trained_.step);
  if (!isDrawn(name))
    note += " κ is not drawn: it starts as " + what + " and is learned.";
  else if (editsDesign())
    note += isMixing(name) ? " Click or drag to set entries, Shift+drag for a rectangle, paint entries frozen (they keep "
                             "their value while training) or trainable; Edit ▸ Undo takes an edit back."
                           : " Click or drag to set entries, Shift+drag for a rectangle; Edit ▸ Undo takes an edit back.";
  else
    note += editable_ || showsTrained_ ? " Editing forks the run: the fork starts from these values, with the edit."
                                       : " Read-only while the run trains with this design.";
  if (!showsTrained_ && !trained_.why.isEmpty()) note += " " + trained_.why;
  note_->setText(note);
  updating_ = false;
}

}  // namespace tensorscope::app
