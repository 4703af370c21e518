#include "gui/teaching/tensor_inspector.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSlider>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "gui/teaching/probe_slots_view.h"
#include "spec/cost_model.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::app {
namespace {

QString grouped(double v) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(std::llround(v))); }

QString bytesText(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return QString("%1 %2").arg(bytes, 0, 'f', u == 0 || bytes >= 100 ? 0 : 1).arg(units[u]);
}

QString letter(char c) { return QString(QChar::fromLatin1(c)); }

std::int64_t product(const std::vector<spec::Leg>& legs) {
  std::int64_t n = 1;
  for (const auto& l : legs) n *= l.size;
  return n;
}

/// The index of the "Cost of orders" page.
constexpr int kOrdersPage = 1;

/// Sequence lengths of the cost-growth page.
const std::vector<std::int64_t> kScalingSeqs{128, 256, 512, 1024, 2048, 4096};

}  // namespace

QString legsText(const std::vector<spec::Leg>& legs) {
  QStringList parts;
  for (const auto& l : legs) parts << QString("%1 = %2").arg(QString::fromStdString(l.symbol)).arg(l.size);
  return parts.join(", ");
}

TensorInspector::TensorInspector(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  caption_ = new QLabel("Click a tensor, a leg or a softmax box on the diagram to see its value.");
  caption_->setWordWrap(true);
  layout->addWidget(caption_);

  // Contraction stepping: always visible above the pages.
  auto* stepRow = new QHBoxLayout;
  backButton_ = new QPushButton("◀ Back");
  nextButton_ = new QPushButton("Next ▶");
  playButton_ = new QPushButton("Play");
  playButton_->setCheckable(true);
  backButton_->setToolTip("The previous step of the evaluation plan (Left)");
  nextButton_->setToolTip("The next step of the evaluation plan: what it contracts, its result, FLOPs and memory (Right)");
  playButton_->setToolTip("Play the plan step by step (Space)");
  speed_ = new QComboBox;
  for (double s : {0.5, 1.0, 2.0, 4.0}) speed_->addItem(QString("%1 step/s").arg(s), s);
  speed_->setCurrentIndex(1);
  speed_->setToolTip("Playing speed");
  stepRow->addWidget(backButton_);
  stepRow->addWidget(nextButton_);
  stepRow->addWidget(playButton_);
  stepRow->addWidget(speed_);
  stepRow->addStretch(1);
  layout->addLayout(stepRow);
  stepLabel_ = new QLabel;
  stepLabel_->setWordWrap(true);
  stepLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(stepLabel_);

  tabs_ = new QTabWidget;
  auto* valuePage = new QWidget;
  auto* valueLayout = new QVBoxLayout(valuePage);
  valueLayout->setContentsMargins(0, 4, 0, 0);
  header_ = new QLabel;
  header_->setWordWrap(true);
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  valueLayout->addWidget(header_);
  logits_ = new QCheckBox("before the softmax (logits)");
  logits_->setToolTip("For a softmax, normalisation or φ step: show what the operation was applied to (masked "
                      "entries are −∞ and drawn blank)");
  logits_->setEnabled(false);
  valueLayout->addWidget(logits_);
  auto* axesRow = new QHBoxLayout;
  rows_ = new QComboBox;
  cols_ = new QComboBox;
  rows_->setToolTip("The leg drawn as rows");
  cols_->setToolTip("The leg drawn as columns");
  axesRow->addWidget(new QLabel("rows"));
  axesRow->addWidget(rows_, 1);
  axesRow->addWidget(new QLabel("columns"));
  axesRow->addWidget(cols_, 1);
  valueLayout->addLayout(axesRow);
  sliders_ = new QWidget;
  slidersLayout_ = new QVBoxLayout(sliders_);
  slidersLayout_->setContentsMargins(0, 0, 0, 0);
  valueLayout->addWidget(sliders_);
  heatmap_ = new viz::MatrixHeatmap;
  heatmap_->setExportName("inspector");
  heatmap_->setMinimumHeight(200);
  heatmap_->clear("No tensor chosen yet");
  valueLayout->addWidget(heatmap_, 1);
  tabs_->addTab(valuePage, "Value");

  auto* ordersPage = new QWidget;
  auto* ordersLayout = new QVBoxLayout(ordersPage);
  ordersLayout->setContentsMargins(0, 4, 0, 0);
  auto* ordersNote = new QLabel(
      "Each contraction of three or more tensors can be done in several orders. The plan's order, the "
      "cheapest and the most expensive, with the largest tensor each creates (at this input, batch 1):");
  ordersNote->setWordWrap(true);
  ordersLayout->addWidget(ordersNote);
  ordersTable_ = new QTableWidget(0, 7);
  ordersTable_->setHorizontalHeaderLabels({"result", "plan order", "FLOPs", "cheapest order", "FLOPs",
                                           "most expensive order", "FLOPs"});
  ordersTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ordersTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  ordersTable_->verticalHeader()->hide();
  ordersLayout->addWidget(ordersTable_, 1);
  scaling_ = new QLabel;
  scaling_->setWordWrap(true);
  scaling_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  ordersLayout->addWidget(scaling_);
  mlaTitle_ = new QLabel;
  mlaTitle_->setWordWrap(true);
  ordersLayout->addWidget(mlaTitle_);
  mlaOrders_ = new QTableWidget(0, 4);
  mlaOrders_->setObjectName("mlaOrders");
  mlaOrders_->setHorizontalHeaderLabels({"at this input, batch 1", "naive", "absorbed", "absorbed ÷ naive"});
  mlaOrders_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  mlaOrders_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  mlaOrders_->verticalHeader()->hide();
  ordersLayout->addWidget(mlaOrders_);
  tabs_->addTab(ordersPage, "Cost of orders");
  probeSlots_ = new ProbeSlotsView;
  probeSlots_->setObjectName("probeSlots");
  probeSlotsPage_ = tabs_->addTab(probeSlots_, "Slots on the probe");
  tabs_->setTabToolTip(probeSlotsPage_, "Differential attention's two maps and their difference, and the output "
                                        "gate's values, on the same probe and weights as the Value page");
  tabs_->setTabVisible(probeSlotsPage_, false);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { ensureOrders(); });
  layout->addWidget(tabs_, 1);

  timer_ = new QTimer(this);
  timer_->setInterval(1000);  // the speed box's 1 step/s
  connect(timer_, &QTimer::timeout, this, [this] {
    if (step_ + 1 >= stepCount()) {
      setPlaying(false);
      return;
    }
    next();
  });
  connect(backButton_, &QPushButton::clicked, this, &TensorInspector::back);
  connect(nextButton_, &QPushButton::clicked, this, &TensorInspector::next);
  connect(playButton_, &QPushButton::toggled, this, &TensorInspector::setPlaying);
  connect(speed_, &QComboBox::currentIndexChanged, this, [this] { setSpeed(speed_->currentData().toDouble()); });
  connect(logits_, &QCheckBox::toggled, this, &TensorInspector::setShowLogits);
  connect(rows_, &QComboBox::activated, this, [this](int i) { setAxes(rows_->itemData(i).toInt(), colLeg_); });
  connect(cols_, &QComboBox::activated, this, [this](int i) { setAxes(rowLeg_, cols_->itemData(i).toInt()); });
  updateStepText();
}

TensorInspector::~TensorInspector() = default;

void TensorInspector::setDesign(const spec::AttentionSpec& design, const spec::TensorNetwork& network) {
  design_ = design;
  if (!values_) setPlan(network);
  ordersStale_ = true;
  ensureOrders();
}

void TensorInspector::setPlan(const spec::TensorNetwork& network) {
  const bool samePlan = network.plan.size() == network_.plan.size() && network.title == network_.title;
  network_ = network;
  try {
    steps_ = spec::contractionSteps(network_, 1);
  } catch (const std::exception&) {
    steps_.clear();
  }
  if (!samePlan || step_ >= stepCount()) {
    // Another design's plan: its stepping highlight goes with it, so the diagram agrees with
    // "Next shows the first".
    const bool wasStepping = step_ >= 0;
    step_ = -1;
    if (wasStepping) {
      Q_EMIT highlightRequested(Highlight{});
      Q_EMIT stepChanged(step_);
    }
  }
  updateStepText();
  if (step_ >= 0) stepTo(step_);
}

void TensorInspector::setValues(std::shared_ptr<const model_core::NetworkValues> values, const QString& caption) {
  values_ = std::move(values);
  caption_->setText(caption);
  if (!values_) {
    clear(caption);
    return;
  }
  probeSlots_->setValues(values_);
  tabs_->setTabVisible(probeSlotsPage_, probeSlots_->hasSlots());
  setPlan(values_->network);
  ordersStale_ = true;
  ensureOrders();
  if (!shownId_.isEmpty() && values_->find(shownId_.toStdString())) {
    const auto rows = rowLeg_, cols = colLeg_;
    const auto slice = slice_;
    showTensor(shownId_);
    if (slice.size() == slice_.size()) slice_ = slice;
    setAxes(rows, cols);
  } else if (step_ >= 0) {
    showTensor(QString::fromStdString(steps_[static_cast<size_t>(step_)].output));
  } else {
    heatmap_->clear("Click a tensor, a leg or a softmax box on the diagram, or step through the plan.");
  }
}

void TensorInspector::setShowLogits(bool logits) {
  if (shownId_.isEmpty() || !values_) return;
  const QString base = shownId_.endsWith(".logits") ? shownId_.chopped(7) : shownId_;
  showTensor(logits ? base + ".logits" : base);
}

bool TensorInspector::probeSlotsTabVisible() const { return tabs_->isTabVisible(probeSlotsPage_); }

void TensorInspector::clear(const QString& why) {
  values_.reset();
  probeSlots_->setValues(nullptr, why);
  tabs_->setTabVisible(probeSlotsPage_, false);
  caption_->setText(why);
  header_->clear();
  legs_.clear();
  rebuildAxes();
  heatmap_->clear(why);
}

const spec::TensorNode* TensorInspector::node(const QString& id) const {
  const auto& nodes = values_ ? values_->network.nodes : network_.nodes;
  for (const auto& n : nodes)
    if (QString::fromStdString(n.id) == id) return &n;
  return nullptr;
}

bool TensorInspector::showElement(Element kind, const QString& id) {
  lastElement_ = kind == Element::Leg ? "leg:" + id : id;
  if (kind == Element::Tensor) return showTensor(id);
  const auto& steps = steps_;
  if (kind == Element::SoftmaxBox) {
    for (const auto& s : steps)
      if (QString::fromStdString(s.box) == id) return showTensor(QString::fromStdString(s.output));
  } else if (kind == Element::Leg && id.size() == 1) {
    const char index = id.at(0).toLatin1();
    for (const auto& s : steps)
      for (const auto& l : s.summed)
        if (l.index == index) return showTensor(QString::fromStdString(s.output));
    // A leg no step sums (it dangles): the output carries it.
    return showTensor(QString::fromStdString((values_ ? values_->network : network_).output));
  }
  heatmap_->clear(QString("Nothing to show for %1").arg(id));
  return false;
}

bool TensorInspector::showTensor(const QString& id) {
  if (!values_) {
    heatmap_->clear(caption_->text().isEmpty() ? QString("No values yet") : caption_->text());
    shownId_ = id;
    return false;
  }
  const model_core::HostTensor* value = values_->find(id.toStdString());
  if (!value) {
    // The values on show may be another design's (the Inspector was hidden, or the new values are
    // on their way): the clicked tensor is the one to show when the next values come.
    shownId_ = id;
    header_->setText(QString("%1: not part of this layer's network").arg(id));
    heatmap_->clear(QString("%1 is not a tensor of this layer's diagram").arg(id));
    return false;
  }
  shownId_ = id;
  // Legs: a drawn node's (its batch leg first), a step result's from the plan (its logits have the
  // same legs).
  legs_.clear();
  QString what;
  const bool logits = id.endsWith(".logits");
  const QString stepId = logits ? id.chopped(7) : id;
  {
    const QSignalBlocker block(logits_);
    logits_->setEnabled(values_->find((stepId + ".logits").toStdString()) != nullptr);
    logits_->setChecked(logits);
  }
  if (const spec::TensorNode* n = node(id)) {
    if (n->batched) legs_.push_back({'b', "B", 1});
    legs_.insert(legs_.end(), n->legs.begin(), n->legs.end());
    what = QString("%1 (%2): %3").arg(QString::fromStdString(n->label), id, QString::fromStdString(n->role));
  } else {
    for (const auto& s : steps_)
      if (QString::fromStdString(s.output) == stepId) {
        legs_ = s.result_legs;
        what = logits ? QString("%1: what the %2 of %3 is applied to (%4)")
                            .arg(id, s.op == spec::PlanStep::Op::EluPlusOne ? "φ" : "normalisation", stepId,
                                 QString::fromStdString(s.role))
                      : QString("%1: %2").arg(id, QString::fromStdString(s.role));
      }
  }
  std::int64_t count = 1;
  for (auto d : value->shape) count *= d;
  if (legs_.empty() || product(legs_) != count || legs_.size() != value->shape.size()) {
    legs_.clear();  // the value's own shape, unnamed
    for (size_t i = 0; i < value->shape.size(); ++i) legs_.push_back({static_cast<char>('i' + i), "axis", value->shape[i]});
  }
  header_->setText(QString("<b>%1</b><br>shape [%2] · %3 values").arg(what.toHtmlEscaped(), legsText(legs_), grouped(static_cast<double>(count))));
  slice_.assign(legs_.size(), 0);
  // The last two legs longer than 1 are the picture; the others get a slider.
  std::vector<int> wide;
  for (int i = 0; i < static_cast<int>(legs_.size()); ++i)
    if (legs_[static_cast<size_t>(i)].size > 1) wide.push_back(i);
  rowLeg_ = wide.size() >= 2 ? wide[wide.size() - 2] : -1;
  colLeg_ = !wide.empty() ? wide.back() : (legs_.empty() ? -1 : static_cast<int>(legs_.size()) - 1);
  rebuildAxes();
  redraw();
  Q_EMIT shown(id);
  return true;
}

QString TensorInspector::headerText() const { return header_->text(); }

QString TensorInspector::captionText() const { return caption_->text(); }

void TensorInspector::rebuildAxes() {
  const QSignalBlocker b1(rows_), b2(cols_);
  rows_->clear();
  cols_->clear();
  rows_->addItem("(one row)", -1);
  for (int i = 0; i < static_cast<int>(legs_.size()); ++i) {
    const auto& l = legs_[static_cast<size_t>(i)];
    const QString text = QString("%1 (%2 = %3)").arg(letter(l.index), QString::fromStdString(l.symbol)).arg(l.size);
    rows_->addItem(text, i);
    cols_->addItem(text, i);
  }
  rows_->setCurrentIndex(rows_->findData(rowLeg_));
  cols_->setCurrentIndex(cols_->findData(colLeg_));
  rows_->setEnabled(legs_.size() > 1);
  cols_->setEnabled(legs_.size() > 1);
  // One slider per other leg longer than 1.
  while (QLayoutItem* item = slidersLayout_->takeAt(0)) {
    delete item->widget();
    delete item->layout();
    delete item;
  }
  for (int i = 0; i < static_cast<int>(legs_.size()); ++i) {
    const auto& l = legs_[static_cast<size_t>(i)];
    if (i == rowLeg_ || i == colLeg_ || l.size <= 1) continue;
    auto* row = new QWidget;
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    auto* label = new QLabel;
    auto* slider = new QSlider(Qt::Horizontal);
    slider->setRange(0, static_cast<int>(l.size) - 1);
    slider->setValue(slice_[static_cast<size_t>(i)]);
    slider->setObjectName(QString("slice_%1").arg(letter(l.index)));
    const auto text = [label, l](int v) {
      label->setText(QString("%1 = %2 of %3").arg(letter(l.index)).arg(v).arg(l.size));
    };
    text(slider->value());
    connect(slider, &QSlider::valueChanged, this, [this, i, text](int v) {
      text(v);
      setSliceIndex(i, v);
    });
    h->addWidget(label);
    h->addWidget(slider, 1);
    slidersLayout_->addWidget(row);
  }
}

void TensorInspector::setAxes(int rowLeg, int colLeg) {
  const int n = static_cast<int>(legs_.size());
  if (colLeg < 0 || colLeg >= n || rowLeg >= n) return;
  if (rowLeg == colLeg) rowLeg = -1;
  rowLeg_ = rowLeg;
  colLeg_ = colLeg;
  rebuildAxes();
  redraw();
}

void TensorInspector::setSliceIndex(int leg, int index) {
  if (leg < 0 || leg >= static_cast<int>(slice_.size())) return;
  slice_[static_cast<size_t>(leg)] = std::clamp(index, 0, static_cast<int>(legs_[static_cast<size_t>(leg)].size) - 1);
  redraw();
}

std::int64_t TensorInspector::flatIndexOf(int row, int col) const {
  std::vector<std::int64_t> idx(slice_.begin(), slice_.end());
  if (rowLeg_ >= 0) idx[static_cast<size_t>(rowLeg_)] = row;
  if (colLeg_ >= 0) idx[static_cast<size_t>(colLeg_)] = col;
  std::int64_t flat = 0;
  for (size_t i = 0; i < legs_.size(); ++i) flat = flat * legs_[i].size + idx[i];
  return flat;
}

void TensorInspector::redraw() {
  const model_core::HostTensor* value = values_ ? values_->find(shownId_.toStdString()) : nullptr;
  if (!value) return;
  const int rows = rowLeg_ >= 0 ? static_cast<int>(legs_[static_cast<size_t>(rowLeg_)].size) : 1;
  const int cols = colLeg_ >= 0 ? static_cast<int>(legs_[static_cast<size_t>(colLeg_)].size) : 1;
  std::vector<double> m(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m[static_cast<size_t>(r) * cols + c] = value->values[static_cast<size_t>(flatIndexOf(r, c))];
  // Probabilities (a softmax or normalisation result) on [0, 1]; anything else centred on zero.
  bool probabilities = false;
  for (const auto& s : steps_)
    if (QString::fromStdString(s.output) == shownId_)
      probabilities = s.op == spec::PlanStep::Op::Softmax || s.op == spec::PlanStep::Op::Normalize;
  if (probabilities) heatmap_->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0.0, 1.0);
  else heatmap_->setColourScale(viz::MatrixHeatmap::ColourScale::Diverging);
  const auto axisTitle = [this](int leg) {
    if (leg < 0) return QString();
    const auto& l = legs_[static_cast<size_t>(leg)];
    return QString("%1 (%2)").arg(letter(l.index), QString::fromStdString(l.symbol));
  };
  heatmap_->setAxisTitles(axisTitle(colLeg_), axisTitle(rowLeg_));
  // Token positions are labelled with the probe's tokens.
  const auto tokenLabels = [this](int leg) {
    QStringList labels;
    if (leg < 0 || !values_) return labels;
    const auto& l = legs_[static_cast<size_t>(leg)];
    if ((l.symbol == "N" || l.symbol == "M") && static_cast<std::int64_t>(values_->tokens.size()) == l.size)
      for (const auto& t : values_->tokens) labels << QString::fromStdString(t);
    return labels;
  };
  heatmap_->setLabels(tokenLabels(rowLeg_), tokenLabels(colLeg_));
  QStringList where;
  for (size_t i = 0; i < legs_.size(); ++i)
    if (static_cast<int>(i) != rowLeg_ && static_cast<int>(i) != colLeg_ && legs_[i].size > 1)
      where << QString("%1 = %2").arg(letter(legs_[i].index)).arg(slice_[i]);
  heatmap_->setMatrix(m, rows, cols, shownId_ + (where.isEmpty() ? QString() : " at " + where.join(", ")));
}

// --- Stepping -----------------------------------------------------------------------------------

void TensorInspector::stepTo(int index) {
  if (index < -1 || index >= stepCount()) return;
  step_ = index;
  Highlight h;
  if (step_ >= 0) {
    const auto& s = steps_[static_cast<size_t>(step_)];
    for (const auto& n : s.drawn_nodes) h.tensors << QString::fromStdString(n);
    for (const auto& n : s.new_nodes) h.emphasised << QString::fromStdString(n);
    for (const auto& l : s.summed) h.legs << letter(l.index);
    for (const auto& l : s.result_legs) h.legs << letter(l.index);
    // Boxes whose tensors are all contracted by now, and the one this step evaluates.
    for (const auto& b : network_.boxes) {
      bool inside = !b.nodes.empty();
      for (const auto& n : b.nodes) inside = inside && std::count(s.drawn_nodes.begin(), s.drawn_nodes.end(), n);
      if (inside || b.id == s.box) h.boxes << QString::fromStdString(b.id);
    }
    if (values_) showTensor(QString::fromStdString(s.output));
  }
  updateStepText();
  Q_EMIT highlightRequested(h);
  Q_EMIT stepChanged(step_);
}

void TensorInspector::stopStepping() {
  setPlaying(false);
  if (step_ < 0) return;
  step_ = -1;
  updateStepText();
  Q_EMIT stepChanged(step_);
}

void TensorInspector::next() { stepTo(std::min(step_ + 1, stepCount() - 1)); }
void TensorInspector::back() { stepTo(std::max(step_ - 1, -1)); }

void TensorInspector::setPlaying(bool playing) {
  if (playing && stepCount() == 0) playing = false;
  {
    const QSignalBlocker block(playButton_);
    playButton_->setChecked(playing);
    playButton_->setText(playing ? "Pause" : "Play");
  }
  if (!playing) {
    timer_->stop();
    return;
  }
  if (step_ + 1 >= stepCount()) stepTo(-1);  // from the start again
  timer_->start();
}

bool TensorInspector::playing() const { return timer_->isActive(); }

void TensorInspector::setSpeed(double stepsPerSecond) {
  timer_->setInterval(static_cast<int>(1000.0 / std::max(0.1, stepsPerSecond)));
}

void TensorInspector::updateStepText() {
  backButton_->setEnabled(step_ >= 0);
  nextButton_->setEnabled(step_ + 1 < stepCount());
  if (steps_.empty()) {
    stepLabel_->setText("No evaluation plan: the design has no diagram.");
    return;
  }
  if (step_ < 0) {
    stepLabel_->setText(QString("The plan evaluates this layer in %1 steps. Next shows the first: what it "
                                "contracts, its result's shape, its FLOPs and memory.").arg(stepCount()));
    return;
  }
  const auto& s = steps_[static_cast<size_t>(step_)];
  QStringList summed;
  for (const auto& l : s.summed) summed << QString::fromStdString(l.symbol) + " (" + letter(l.index) + ")";
  QString text = QString("<b>Step %1 of %2</b> · %3<br><tt>%4</tt><br>result [%5]: %6 values, %7 · %8 FLOPs")
                     .arg(step_ + 1)
                     .arg(stepCount())
                     .arg(QString::fromStdString(s.role).toHtmlEscaped(), QString::fromStdString(s.equation).toHtmlEscaped(),
                          legsText(s.result_legs))
                     .arg(grouped(s.cost.result_elements), bytesText(s.result_bytes), grouped(s.cost.flops));
  if (!summed.isEmpty()) text += " · sums " + summed.join(", ");
  if (s.peak_bytes > s.result_bytes) text += QString(" · largest tensor on the way %1").arg(bytesText(s.peak_bytes));
  if (!s.cost.needed_for_y) text += " · for the display maps only (y does not need it)";
  text += " <i>(this input, batch 1)</i>";
  stepLabel_->setText(text);
}

QString TensorInspector::stepText() const { return stepLabel_->text(); }

void TensorInspector::fillOrders() {
  const spec::TensorNetwork& net = values_ ? values_->network : network_;
  try {
    orders_ = spec::compareContractionOrders(net, 1);
  } catch (const std::exception&) {
    orders_.clear();
  }
  ordersTable_->setRowCount(static_cast<int>(orders_.size()));
  for (int r = 0; r < static_cast<int>(orders_.size()); ++r) {
    const auto& o = orders_[static_cast<size_t>(r)];
    const auto cell = [&](int c, const QString& text, const QString& tip = {}) {
      auto* item = new QTableWidgetItem(text);
      item->setToolTip(tip.isEmpty() ? text : tip);
      ordersTable_->setItem(r, c, item);
    };
    const auto tip = [](const spec::ContractionOrder& order) {
      return QString("%1\n%2 FLOPs, largest tensor %3 values (%4)")
          .arg(QString::fromStdString(order.expression), grouped(order.flops), grouped(order.largest_elements),
               QString::fromStdString(order.largest));
    };
    cell(0, QString::fromStdString(net.plan[static_cast<size_t>(o.step)].output),
         QString::fromStdString(o.einsum) + (o.note.empty() ? QString() : "\n" + QString::fromStdString(o.note)));
    cell(1, QString::fromStdString(o.plan.expression), tip(o.plan));
    cell(2, grouped(o.plan.flops), tip(o.plan));
    cell(3, QString::fromStdString(o.cheapest.expression), tip(o.cheapest));
    cell(4, grouped(o.cheapest.flops), tip(o.cheapest));
    cell(5, QString::fromStdString(o.most_expensive.expression), tip(o.most_expensive));
    cell(6, grouped(o.most_expensive.flops), tip(o.most_expensive));
  }
  // How the plan's cost grows with N, beside MHSA of the same sizes.
  QStringList lines;
  const auto describe = [&](const QString& name, const spec::AttentionSpec& s) {
    try {
      const auto sc = spec::costVersusSequence(s, kScalingSeqs, 1);
      if (sc.seq_fixed) {
        lines << QString("%1: %2").arg(name, QString::fromStdString(sc.note)).toHtmlEscaped();
        return;
      }
      const auto& last = sc.points.back();
      lines << QString("%1: FLOPs ∝ N^%2, largest tensor ∝ N^%3 (at N = %4: %5 FLOPs, largest %6 = %7)")
                   .arg(name)
                   .arg(sc.flops_exponent, 0, 'f', 2)
                   .arg(sc.memory_exponent, 0, 'f', 2)
                   .arg(last.seq)
                   .arg(grouped(last.flops), QString::fromStdString(last.largest_intermediate),
                        bytesText(last.largest_intermediate_elements * spec::kFloat32Bytes))
                   .toHtmlEscaped();
    } catch (const std::exception& e) {
      lines << QString("%1: %2").arg(name, e.what()).toHtmlEscaped();
    }
  };
  fillMlaOrders();
  if (!design_.sizes.F) {
    scaling_->clear();
    return;
  }
  describe("This design", design_);
  auto mhsa = spec::makeSpecPreset("mhsa");
  mhsa.sizes.F = design_.sizes.F;
  mhsa.sizes.H = std::max(1, design_.sizes.H);
  mhsa.sizes.D = std::max(1, design_.sizes.F / mhsa.sizes.H);
  mhsa.causal = design_.causal;
  describe("MHSA of the same width", mhsa);
  scaling_->setText("<b>Growth with the sequence length N</b> (slopes of log cost against log N from N = " +
                    QString::number(kScalingSeqs[kScalingSeqs.size() - 2]) + " to " + QString::number(kScalingSeqs.back()) +
                    "; 1: linear, 2: quadratic)<br>" + lines.join("<br>"));
}

void TensorInspector::fillMlaOrders() {
  // MLA (docs/attention-variants.md §8.6): one layer, two orders of its contractions. The naive
  // order forms every head's key and value from the latent (a cache of H keys and values); the
  // absorbed one folds W^UK into the query and W^UV after the softmax, so the latent and the rotary
  // key are the cache, and every head's query meets the latent. The numbers are the cost model's
  // (spec::estimateCost, spec::estimateDecodeCost) for the design in each order.
  const bool mla = spec::hasSlots(design_.variant) && design_.slots.latent.kv_rank != 0 && spec::validate(design_).empty();
  mlaTitle_->setVisible(mla);
  mlaOrders_->setVisible(mla);
  mlaOrders_->setRowCount(0);
  if (!mla) {
    mlaTitle_->clear();
    return;
  }
  const std::int64_t N = std::max(1, design_.sizes.seq_len);
  spec::AttentionSpec naive = design_, absorbed = design_;
  naive.slots.latent.order = spec::LatentOrder::Naive;
  absorbed.slots.latent.order = spec::LatentOrder::Absorbed;
  struct Order {
    spec::LayerCost cost;
    spec::DecodeCost decode;
    std::size_t steps = 0;
    QString terms;
  };
  const auto measure = [&](const spec::AttentionSpec& s) {
    Order o;
    o.cost = spec::estimateCost(s, 1, N);
    auto decoder = s;  // a KV cache is a decoder's: an encoder's design is costed as its causal twin
    decoder.causal = true;
    o.decode = spec::estimateDecodeCost(decoder, N);
    o.steps = spec::buildTensorNetwork(s, static_cast<int>(N)).plan.size();
    QStringList lines;
    for (const auto& t : o.cost.terms) lines << QString("%1: %2 FLOPs").arg(QString::fromStdString(t.name), grouped(t.flops));
    o.terms = lines.join("\n");
    return o;
  };
  Order a, b;
  try {
    a = measure(naive);
    b = measure(absorbed);
  } catch (const std::exception& e) {
    mlaTitle_->setText(QString("MLA's two orders: %1").arg(e.what()).toHtmlEscaped());
    mlaOrders_->setVisible(false);
    return;
  }
  const QString shown = design_.slots.latent.order == spec::LatentOrder::Absorbed ? "absorbed" : "naive";
  mlaTitle_->setText(QString("<b>MLA's two orders side by side</b> (this design is in the %1 order; both compute "
                             "the same layer, at N = %2 and after %2 cached tokens%3; KV cache in float32)")
                         .arg(shown)
                         .arg(N)
                         .arg(design_.causal ? QString() : QString(", decoding as the causal layer")));
  const auto ratio = [](double x, double y) { return y > 0 ? QString("%1×").arg(x / y, 0, 'f', 3) : QString("–"); };
  const auto row = [&](const QString& what, const QString& n, const QString& ab, const QString& r, const QString& tipN = {},
                       const QString& tipA = {}) {
    const int i = mlaOrders_->rowCount();
    mlaOrders_->insertRow(i);
    const QStringList cells{what, n, ab, r};
    for (int c = 0; c < 4; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      item->setToolTip(c == 1 && !tipN.isEmpty() ? tipN : c == 2 && !tipA.isEmpty() ? tipA : cells[c]);
      mlaOrders_->setItem(i, c, item);
    }
  };
  row("forward FLOPs", grouped(a.cost.forward_flops), grouped(b.cost.forward_flops),
      ratio(b.cost.forward_flops, a.cost.forward_flops), a.terms, b.terms);
  row("largest tensor", bytesText(a.cost.largest_intermediate_bytes), bytesText(b.cost.largest_intermediate_bytes),
      ratio(b.cost.largest_intermediate_bytes, a.cost.largest_intermediate_bytes));
  row("contraction steps", QString::number(a.steps), QString::number(b.steps), b.steps == a.steps ? QString("same") : QString::asprintf("%+lld", qlonglong(b.steps) - qlonglong(a.steps)));
  const double bytes = spec::kFloat32Bytes;
  row("KV cache per token", bytesText(a.decode.cache_elements_per_token * bytes), bytesText(b.decode.cache_elements_per_token * bytes),
      ratio(b.decode.cache_elements_per_token, a.decode.cache_elements_per_token), QString::fromStdString(a.decode.note),
      QString::fromStdString(b.decode.note));
  row("decoding FLOPs per new token", grouped(a.decode.flops), grouped(b.decode.flops), ratio(b.decode.flops, a.decode.flops));
  mlaOrders_->setFixedHeight(mlaOrders_->horizontalHeader()->sizeHint().height() + 2 * mlaOrders_->frameWidth() +
                             mlaOrders_->rowCount() * mlaOrders_->verticalHeader()->defaultSectionSize());
}

QTableWidget* TensorInspector::mlaOrdersTable() {
  orderComparisons();
  return mlaOrders_;
}

void TensorInspector::ensureOrders() {
  // Only a page on show is worth filling: painting C edits the design many times a second.
  if (!ordersStale_ || tabs_->currentIndex() != kOrdersPage) return;
  fillOrders();
  ordersStale_ = false;
}

const std::vector<spec::OrderComparison>& TensorInspector::orderComparisons() {
  if (ordersStale_) {
    fillOrders();
    ordersStale_ = false;
  }
  return orders_;
}

QTableWidget* TensorInspector::ordersTable() {
  orderComparisons();
  return ordersTable_;
}

QString TensorInspector::scalingText() {
  orderComparisons();
  return scaling_->text();
}

void TensorInspector::setFontScale(double scale) {
  fontScale_ = scale;
  // The heatmap's tick labels, titles and message too, read from the back of a room (first: its
  // message scales from the desktop's size, not from the inspector's larger one).
  heatmap_->setFontScale(scale);
  QFont f = font();
  f.setPointSizeF(QApplication::font().pointSizeF() * scale);
  setFont(f);
}

}  // namespace tensorscope::app
