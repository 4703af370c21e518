#include "gui/design/head_mixing_view.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model_core/analysis.h"
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

/// The key offset 0 of a c_k kernel under `pad` (model_core attention/mta.cpp leftKeyPad).
int keyOffsetZero(int ck, spec::MtaPad pad) {
  switch (pad) {
    case spec::MtaPad::Both: return (ck - 1) / 2;
    case spec::MtaPad::Left: return ck - 1;
    case spec::MtaPad::Right: return 0;
  }
  return 0;
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
  setToolTip("The head mixings and multi-token attention's kernels of this design as heatmaps (read-only: the "
             "spec holds no values for them; they start as the identity and are trained weights)");
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
  layout->addLayout(form);
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
  setVisible(false);
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
  if (name == "mix_post" || name == "mix_pre") {
    t.shape = {H, H};
    t.values.assign(static_cast<size_t>(H * H), 0.0);
    for (std::int64_t i = 0; i < H; ++i) t.values[static_cast<size_t>(i * H + i)] = 1.0;
  } else if (name == "head_kernel") {
    const std::int64_t g = s.slots.mta.head_group;
    t.shape = {H / g, g, g};
    t.values.assign(static_cast<size_t>(H * g), 0.0);
    for (std::int64_t c = 0; c < H / g; ++c)
      for (std::int64_t i = 0; i < g; ++i) t.values[static_cast<size_t>(c * g * g + i * g + i)] = 1.0;
  } else {
    const bool pre = name == "mta_kernel";
    const int cq = pre ? s.slots.mta.q_kernel : s.slots.mta.post_q_kernel;
    const int ck = pre ? s.slots.mta.k_kernel : s.slots.mta.post_k_kernel;
    t.shape = {H, cq, ck};
    t.values.assign(static_cast<size_t>(H * cq * ck), 0.0);
    const int p = keyOffsetZero(ck, s.slots.mta.pad);
    for (std::int64_t h = 0; h < H; ++h) t.values[static_cast<size_t>((h * cq + cq - 1) * ck + p)] = 1.0;
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
  const Tensor* shown = &init;
  for (const auto& t : trained_.tensors)
    if (t.name == name && t.shape == init.shape && t.values.size() == init.values.size()) shown = &t;
  showsTrained_ = shown != &init;
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
  title += !showsTrained_    ? QString(" — initial values")
           : trained_.live ? QString(" — training, step %1").arg(trained_.step)
                           : QString(" — trained, step %1").arg(trained_.step);
  heatmap_->setMatrix(values, rows, cols, title);
  if (mixing) heatmap_->setAxisTitles("l (head it takes from)", "w (head it gives to)");
  else if (name == "head_kernel") heatmap_->setAxisTitles("j (head it gives to, in the group)", "i (head it takes from)");
  else heatmap_->setAxisTitles("j (key offset)", "i (query offset; the last is the query itself)");
  if (mixing) {
    stableRank_ = model_core::stableRank(values, rows, cols);
    readout_->setText(QString("stable rank %1 of %2 heads; σ: %3")
                          .arg(QString::number(stableRank_, 'f', 3))
                          .arg(rows)
                          .arg(spectrum(model_core::singularValues(values, rows, cols))));
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
      !showsTrained_ ? QString("Initial values: %1, as every layer of this design starts.").arg(what)
      : trained_.live
          ? QString("Values of %1, layer %2, at step %3 while it trains: they follow its inspections (read-only).")
                .arg(trained_.run)
                .arg(trained_.layer)
                .arg(trained_.step)
          : QString("Trained values of %1, layer %2, at step %3 of its checkpoint (read-only: the run stays as trained).")
                .arg(trained_.run)
                .arg(trained_.layer)
                .arg(trained_.step);
  note += " Not editable: the spec holds no values for this weight, only whether it exists and its size; it starts "
          "as " + what + " and is learned in training.";
  if (!showsTrained_ && !trained_.why.isEmpty()) note += " " + trained_.why;
  note_->setText(note);
  updating_ = false;
}

}  // namespace tensorscope::app
