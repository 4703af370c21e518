#include "gui/teaching/probe_slots_view.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSpinBox>
#include <QStringList>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "model_core/network_values.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::app {
namespace {

// The ids the spec layer's network builders give these tensors (tensor_network_differential.cpp:
// the softmax step "P" [b, h, i, n, m], the mixing "Lam" = (1, −λ) and "A" [b, h, n, m]; the
// headed and MTA builders: the gate step "sg" [b, n, h] or [b, n, h, e]).
constexpr const char* kMaps = "P";
constexpr const char* kLambda = "Lam";
constexpr const char* kDifference = "A";
constexpr const char* kGates = "sg";

QStringList tokenLabels(const model_core::NetworkValues& v, std::int64_t n) {
  QStringList out;
  if (static_cast<std::int64_t>(v.tokens.size()) != n) return out;  // index ticks
  for (const auto& t : v.tokens) out << QString::fromStdString(t);
  return out;
}

viz::MatrixHeatmap* makeMap(const QString& exportName) {
  auto* m = new viz::MatrixHeatmap;
  m->setExportName(exportName);
  m->setMinimumSize(150, 150);
  m->setAxisTitles("m (key)", "n (query)");
  return m;
}

QString number(double v) { return QString::number(v, 'g', 3); }

/// The layer's output gate: the gate slot (σ(X·Wᴳ), from the layer's input) or multi-token
/// attention's own (σ of each head's output against Wᴳ, the official gate_1d).
spec::Gate gateOf(const spec::AttentionSpec& s, bool& fromHeads) {
  fromHeads = s.slots.mta.enabled() && s.slots.mta.out_gate != spec::Gate::None;
  return fromHeads ? s.slots.mta.out_gate : s.slots.gate;
}

}  // namespace

ProbeSlotsView::ProbeSlotsView(QWidget* parent) : QWidget(parent) {
  // Everything in a vertical scroll area: a dock of 450 x 450 pixels (1280 x 800) shows the two maps
  // and scrolls to their difference and the gates, never squeezing a map below a readable size.
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* content = new QWidget;
  scroll->setWidget(content);
  outer->addWidget(scroll);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(0, 4, 0, 0);
  caption_ = new QLabel;
  caption_->setWordWrap(true);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(caption_);

  mapsBox_ = new QWidget;
  auto* maps = new QVBoxLayout(mapsBox_);
  maps->setContentsMargins(0, 0, 0, 0);
  auto* headRow = new QHBoxLayout;
  headRow->addWidget(new QLabel("Differential attention, head"));
  head_ = new QSpinBox;
  head_->setObjectName("probeSlotsHead");
  head_->setToolTip("The head whose two maps and their difference are drawn");
  headRow->addWidget(head_);
  headRow->addStretch(1);
  maps->addLayout(headRow);
  mapsNote_ = new QLabel;
  mapsNote_->setWordWrap(true);
  maps->addWidget(mapsNote_);
  auto* grid = new QGridLayout;
  map1_ = makeMap("differential_map_1");
  map2_ = makeMap("differential_map_2");
  diff_ = makeMap("differential_difference");
  map1_->setMinimumHeight(210);
  map2_->setMinimumHeight(210);
  diff_->setMinimumHeight(260);
  map1_->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0.0, 1.0);
  map2_->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0.0, 1.0);
  diff_->setColourScale(viz::MatrixHeatmap::ColourScale::Diverging);
  grid->addWidget(map1_, 0, 0);
  grid->addWidget(map2_, 0, 1);
  grid->addWidget(diff_, 1, 0, 1, 2);
  maps->addLayout(grid, 1);
  layout->addWidget(mapsBox_);

  gatesBox_ = new QWidget;
  auto* gates = new QVBoxLayout(gatesBox_);
  gates->setContentsMargins(0, 0, 0, 0);
  gatesNote_ = new QLabel;
  gatesNote_->setWordWrap(true);
  gates->addWidget(gatesNote_);
  gates_ = new viz::MatrixHeatmap;
  gates_->setExportName("gate_values");
  gates_->setMinimumHeight(240);
  gates_->setColourScale(viz::MatrixHeatmap::ColourScale::Sequential, 0.0, 1.0);
  gates->addWidget(gates_, 1);
  layout->addWidget(gatesBox_);
  layout->addStretch(1);

  connect(head_, qOverload<int>(&QSpinBox::valueChanged), this, [this] { drawMaps(); });
  setValues(nullptr, "No values yet: choose a run or a design with differential attention or an output gate.");
}

void ProbeSlotsView::setValues(std::shared_ptr<const model_core::NetworkValues> values, const QString& why) {
  values_ = std::move(values);
  const model_core::HostTensor* P = values_ ? values_->find(kMaps) : nullptr;
  const model_core::HostTensor* A = values_ ? values_->find(kDifference) : nullptr;
  const model_core::HostTensor* L = values_ ? values_->find(kLambda) : nullptr;
  differential_ = values_ && values_->spec.slots.differential && P && A && L && P->shape.size() == 5 &&
                  P->shape[2] == 2 && A->shape.size() == 4 && L->values.size() == 2;
  const model_core::HostTensor* G = values_ ? values_->find(kGates) : nullptr;
  bool fromHeads = false;
  gated_ = values_ && gateOf(values_->spec, fromHeads) != spec::Gate::None && G && G->shape.size() >= 3;
  heads_ = differential_ ? static_cast<int>(P->shape[1]) : 0;
  lambda_ = differential_ ? -static_cast<double>(L->values[1]) : std::numeric_limits<double>::quiet_NaN();
  if (!values_) {
    caption_->setText(why);
  } else {
    const QString whose = values_->step >= 0 ? QString("trained weights of step %1").arg(values_->step)
                                             : QString("random weights (the design has not trained)");
    const QString probe = values_->probe.empty() ? QString("a random input") : QString::fromStdString(values_->probe);
    caption_->setText(hasSlots() ? QString("Layer %1 on %2, %3.").arg(values_->layer + 1).arg(probe, whose)
                                 : QString("Layer %1 has no differential maps and no output gate: nothing acts on "
                                           "the probe here beyond the Value page. (Head mixings C′ and C^pre and "
                                           "MTA's kernels are weights: the Design dock's head-mixing view shows "
                                           "them with their spectra.)")
                                       .arg(values_->layer + 1));
  }
  mapsBox_->setVisible(differential_);
  gatesBox_->setVisible(gated_);
  {
    const QSignalBlocker block(head_);
    head_->setRange(1, std::max(1, heads_));  // shown 1-based, as the captions count heads
  }
  drawMaps();
  drawGates();
}

int ProbeSlotsView::head() const { return head_->value() - 1; }

void ProbeSlotsView::setHead(int head) { head_->setValue(head + 1); }

QString ProbeSlotsView::captionText() const { return caption_->text(); }

void ProbeSlotsView::drawMaps() {
  if (!differential_) {
    for (auto* m : {map1_, map2_, diff_}) m->clear("No differential maps");
    return;
  }
  const auto& P = *values_->find(kMaps);  // [1, H, 2, N, M]
  const auto& A = *values_->find(kDifference);  // [1, H, N, M]
  const int h = head();
  const std::int64_t N = P.shape[3], M = P.shape[4];
  const auto slice = [&](const model_core::HostTensor& t, std::int64_t offset) {
    std::vector<double> out(static_cast<size_t>(N * M));
    for (std::int64_t k = 0; k < N * M; ++k) out[static_cast<size_t>(k)] = t.values[static_cast<size_t>(offset + k)];
    return out;
  };
  const QStringList queries = tokenLabels(*values_, N), keys = tokenLabels(*values_, M);
  for (auto* m : {map1_, map2_, diff_}) m->setLabels(queries, keys);
  map1_->setMatrix(slice(P, (h * 2 + 0) * N * M), int(N), int(M), "map 1: P₁");
  map2_->setMatrix(slice(P, (h * 2 + 1) * N * M), int(N), int(M), "map 2: P₂");
  const auto d = slice(A, h * N * M);
  double lo = 0, hi = 0;
  for (double v : d) lo = std::min(lo, v), hi = std::max(hi, v);
  diff_->setMatrix(d, int(N), int(M),
                   QString("A = P₁ − λ·P₂ (λ = %1), from %2 to %3").arg(number(lambda_), number(lo), number(hi)));
  mapsNote_->setText(QString("Head %1 of %2. Each map is softmax(Q_i·K_iᵀ/√D) of its own half of the head's "
                             "queries and keys; the layer uses only their difference A, which meets V. What both "
                             "maps give (attention noise) cancels, so A can be negative.")
                         .arg(h + 1)
                         .arg(heads_));
}

void ProbeSlotsView::drawGates() {
  if (!gated_) {
    gates_->clear("No output gate");
    return;
  }
  const auto& G = *values_->find(kGates);  // [1, N, H] or [1, N, H, e]
  const std::int64_t N = G.shape[1];
  std::int64_t cols = 1;
  for (size_t i = 2; i < G.shape.size(); ++i) cols *= G.shape[i];
  bool fromHeads = false;
  const bool headwise = gateOf(values_->spec, fromHeads) == spec::Gate::Headwise;
  const QString what = fromHeads ? QString("σ(ō_h·Wᴳ), from each head's own output (MTA's gate)") : QString("σ(X·Wᴳ)");
  std::vector<double> v(G.values.begin(), G.values.end());
  double lo = 1, hi = 0, sum = 0;
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
  QStringList colLabels;
  if (headwise)
    for (std::int64_t h = 0; h < cols; ++h) colLabels << QString("head %1").arg(h + 1);
  gates_->setLabels(tokenLabels(*values_, N), colLabels);
  gates_->setAxisTitles(headwise ? "head" : "output feature (head-major: head h has features h·D … h·D + D − 1)",
                        "n (token)");
  gates_->setMatrix(v, int(N), int(cols),
                    what + (headwise ? QString(": one gate per head and token") : QString(": one gate per output feature and token")));
  gatesNote_->setText(QString("Output gate (%1): each token scales its own attention output; 0 shuts it, 1 passes "
                              "it. On this probe: mean %2, range %3 … %4.")
                          .arg(headwise ? "headwise" : "elementwise", number(sum / double(v.size())), number(lo), number(hi)));
}

}  // namespace tensorscope::app
