#include "viz/stable_rank_plot.h"

#include <QEvent>
#include <QTextStream>
#include <algorithm>
#include <cmath>

#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct StableRankPlot::Line {
  std::vector<double> steps, ranks;
  QCPGraph* graph = nullptr;
};

struct StableRankPlot::Items {
  QCPItemStraightLine* heads = nullptr;
  QCPItemText* headsLabel = nullptr;
  QCPItemTracer* tracer = nullptr;
};

int StableRankPlot::stepLabelCount() const {
  int n = 0;
  for (double t : plot()->xAxis->tickVector())
    if (plot()->xAxis->range().contains(t)) ++n;
  return n;
}

QRectF StableRankPlot::headsLabelRect() const {
  if (!items_->headsLabel->visible()) return {};
  const QPointF tl = items_->headsLabel->topLeft->pixelPosition(), br = items_->headsLabel->bottomRight->pixelPosition();
  return QRectF(tl, br).normalized();
}

double StableRankPlot::pixelOf(double value) const { return plot()->yAxis->coordToPixel(value); }

bool StableRankPlot::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot() && event->type() == QEvent::Resize)  // about 70 px per step label, three at least
    plot()->xAxis->ticker()->setTickCount(std::clamp(plot()->width() / 70, 3, 6));
  return PlotWidget::eventFilter(watched, event);
}

StableRankPlot::StableRankPlot(QWidget* parent) : PlotWidget(parent), items_(std::make_unique<Items>()) {
  setExportName(QStringLiteral("stable_rank"));
  auto* p = plot();
  p->xAxis->setLabel(tr("step"));
  p->yAxis->setLabel(tr("stable rank of C"));
  detail::placeLegendAbove(p, 6, 22);

  items_->heads = new QCPItemStraightLine(p);
  items_->heads->point1->setCoords(0, 0);
  items_->heads->point2->setCoords(1, 0);
  items_->heads->setVisible(false);
  items_->headsLabel = new QCPItemText(p);
  items_->headsLabel->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
  items_->headsLabel->position->setTypeY(QCPItemPosition::ptPlotCoords);
  items_->headsLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);  // above its line, off the data below
  items_->headsLabel->setVisible(false);
  items_->tracer = detail::addHoverTracer(p, 9, QString::fromLatin1(kHoverLayer));
  restyle();
  afterUpdate();
}

StableRankPlot::~StableRankPlot() = default;

StableRankPlot::Line& StableRankPlot::lineFor(int layer) {
  auto& slot = lines_[layer];
  if (!slot) {
    slot = std::make_unique<Line>();
    slot->graph = plot()->addGraph();
    slot->graph->setName(tr("layer %1").arg(layer));
    themeChanged();
  }
  return *slot;
}

void StableRankPlot::appendSnapshot(double step, const std::vector<int>& layers,
                                    const std::vector<double>& stableRanks) {
  const std::size_t n = std::min(layers.size(), stableRanks.size());
  for (std::size_t i = 0; i < n; ++i) {
    Line& line = lineFor(layers[i]);
    if (!line.steps.empty() && step <= line.steps.back()) {
      const auto cut = std::lower_bound(line.steps.begin(), line.steps.end(), step) - line.steps.begin();
      line.steps.resize(cut);
      line.ranks.resize(cut);
      line.graph->setData(QVector<double>(line.steps.begin(), line.steps.end()),
                          QVector<double>(line.ranks.begin(), line.ranks.end()), true);
    }
    line.steps.push_back(step);
    line.ranks.push_back(stableRanks[i]);
    line.graph->addData(step, stableRanks[i]);
  }
  afterUpdate();
}

void StableRankPlot::setLayerHistory(int layer, const std::vector<double>& steps,
                                     const std::vector<double>& stableRanks) {
  Line& line = lineFor(layer);
  const std::size_t n = std::min(steps.size(), stableRanks.size());
  line.steps.assign(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n));
  line.ranks.assign(stableRanks.begin(), stableRanks.begin() + static_cast<std::ptrdiff_t>(n));
  line.graph->setData(QVector<double>(line.steps.begin(), line.steps.end()),
                      QVector<double>(line.ranks.begin(), line.ranks.end()), true);
  afterUpdate();
}

void StableRankPlot::setHeadsReference(double heads) {
  heads_ = heads;
  afterUpdate();
}

void StableRankPlot::setEmptyText(const QString& text) {
  emptyText_ = text;
  afterUpdate();
}

void StableRankPlot::setHighlightedLayer(int layer) {
  if (layer == highlighted_) return;
  highlighted_ = layer;
  themeChanged();
  requestReplot();
}

void StableRankPlot::clear() {
  detail::detachTracer(items_->tracer);
  plot()->clearGraphs();
  lines_.clear();
  afterUpdate();
}

void StableRankPlot::afterUpdate() {
  auto* p = plot();
  if (lines_.empty())
    showMessage(emptyText_.isEmpty() ? tr("No stable rank yet: it is drawn while a model with a core C trains")
                                     : emptyText_);
  else showPlot();
  p->legend->setVisible(!lines_.empty());
  const bool ref = heads_ > 0;
  items_->heads->setVisible(ref);
  items_->headsLabel->setVisible(ref);
  if (ref) {
    items_->heads->point1->setCoords(0, heads_);
    items_->heads->point2->setCoords(1, heads_);
    items_->headsLabel->position->setCoords(0.01, heads_);
    items_->headsLabel->setText(tr("H = %1 heads").arg(detail::formatValue(heads_)));
  }
  // Stable rank is at least 1: the y range starts at 0 so growth reads in proportion.
  double lo = 0, hi = ref ? heads_ : 1.0;
  for (const auto& [layer, line] : lines_)
    for (double r : line->ranks)
      if (std::isfinite(r)) hi = std::max(hi, r);
  p->yAxis->setRange(lo, hi * 1.2);  // room above the top line for the "H heads" label
  // The step axis spans the data (a fork's from its first step), never the previous run's range: a
  // single point is centred in a small window, and no step before 0 is shown.
  double first = 0, last = 0;
  bool any = false;
  for (const auto& [layer, line] : lines_)
    for (double s : line->steps) {
      first = any ? std::min(first, s) : s;
      last = any ? std::max(last, s) : s;
      any = true;
    }
  if (any) {
    const double pad = last > first ? 0.02 * (last - first) : std::max(1.0, 0.05 * std::abs(first));
    p->xAxis->setRange(first >= 0 ? std::max(0.0, first - pad) : first - pad, last + pad);
  }
  requestReplot();
}

std::vector<int> StableRankPlot::layers() const {
  std::vector<int> out;
  for (const auto& [layer, line] : lines_) out.push_back(layer);
  return out;
}

int StableRankPlot::pointCount(int layer) const {
  const auto it = lines_.find(layer);
  return it == lines_.end() ? 0 : it->second->graph->dataCount();
}

double StableRankPlot::lineWidth(int layer) const {
  const auto it = lines_.find(layer);
  return it == lines_.end() ? 0.0 : it->second->graph->pen().widthF();
}

std::pair<double, double> StableRankPlot::xRange() const {
  return {plot()->xAxis->range().lower, plot()->xAxis->range().upper};
}
std::pair<double, double> StableRankPlot::yRange() const {
  return {plot()->yAxis->range().lower, plot()->yAxis->range().upper};
}

void StableRankPlot::writeCsv(QTextStream& out) const {
  out << "layer,step,stable_rank\n";
  for (const auto& [layer, line] : lines_)
    for (std::size_t i = 0; i < line->steps.size(); ++i)
      out << layer << ',' << QString::number(line->steps[i], 'g', 12) << ','
          << QString::number(line->ranks[i], 'g', 10) << '\n';
}

void StableRankPlot::themeChanged() {
  const auto& t = theme();
  auto* p = plot();
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setBrush(Qt::NoBrush);
  int i = 0;
  for (auto& [layer, line] : lines_) {
    QColor c = detail::categoricalColour(i++, t.dark);
    // The chosen layer stands out; the others stay readable for comparison.
    const bool chosen = highlighted_ < 0 || layer == highlighted_;
    if (!chosen) c.setAlpha(90);
    line->graph->setPen(QPen(c, highlighted_ >= 0 && chosen ? 3.0 : 1.8));
    line->graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, chosen ? 5.0 : 3.5));
  }
  items_->heads->setPen(QPen(t.reference, 1.2, Qt::DashLine));
  items_->headsLabel->setColor(t.mutedText);
  items_->tracer->setBrush(QBrush(t.background));
}

void StableRankPlot::hoverAt(const QPointF& pos) {
  const detail::NearestPoint hit = detail::nearestGraphPoint(plot(), pos, 24.0);
  detail::moveTracerTo(items_->tracer, hit);
  if (hit.graph) {
    setHoverText(tr("%1 · step %2\nstable rank %3")
                     .arg(hit.graph->name(), QString::number(hit.key, 'g', 12), detail::formatValue(hit.value)),
                 pos.toPoint());
  } else {
    setHoverText(QString(), pos.toPoint());
  }
  replotHover();
}

}  // namespace tensorscope::viz
