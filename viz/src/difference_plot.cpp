#include "viz/difference_plot.h"

#include <QTextStream>
#include <algorithm>
#include <cmath>

#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct DifferencePlot::Items {
  std::vector<QCPGraph*> points;       ///< per row; nullptr for a row without a bar
  std::vector<QCPErrorBars*> bars;     ///< per row, as points
  std::vector<QCPItemText*> verdicts;  ///< per row
  QCPItemStraightLine* zero = nullptr;
  QCPItemTracer* tracer = nullptr;
  double wrappedAt = -1;  ///< the axis rect width the verdicts were last wrapped to
};

namespace {
/// Row i is drawn at y = n - 1 - i, so the first row is on top.
double rowY(std::size_t i, std::size_t n) { return double(n - 1 - i); }
}  // namespace

DifferencePlot::DifferencePlot(QWidget* parent) : PlotWidget(parent), items_(std::make_unique<Items>()) {
  setExportName(QStringLiteral("sweep_differences"));
  auto* p = plot();
  p->legend->setVisible(false);
  p->yAxis->grid()->setVisible(false);
  items_->zero = new QCPItemStraightLine(p);
  items_->zero->point1->setCoords(0, 0);
  items_->zero->point2->setCoords(0, 1);
  items_->tracer = detail::addHoverTracer(p, 10, QString::fromLatin1(kHoverLayer));
  // The verdicts are wrapped to the width of the axis rect, which only the layout knows.
  connect(p, &QCustomPlot::afterLayout, this, [this] { wrapVerdicts(); });
  restyle();
  rebuild();
}

DifferencePlot::~DifferencePlot() = default;

void DifferencePlot::setComparisons(const std::vector<Row>& rows, const QString& axisTitle) {
  rows_ = rows;
  plot()->xAxis->setLabel(axisTitle);
  rebuild();
}

void DifferencePlot::clear(const QString& why) {
  rows_.clear();
  emptyText_ = why;
  rebuild();
}

QString DifferencePlot::axisTitle() const { return plot()->xAxis->label(); }

QString DifferencePlot::emptyReason() const {
  if (!rows_.empty()) return {};
  return emptyText_.isEmpty() ? tr("No design is compared with a baseline yet: open a sweep with two designs or more")
                              : emptyText_;
}

void DifferencePlot::rebuild() {
  auto* p = plot();
  detail::detachTracer(items_->tracer);
  for (auto* b : items_->bars)
    if (b) p->removePlottable(b);
  for (auto* g : items_->points)
    if (g) p->removeGraph(g);
  for (auto* t : items_->verdicts) p->removeItem(t);
  items_->bars.clear();
  items_->points.clear();
  items_->verdicts.clear();
  items_->wrappedAt = -1;
  if (rows_.empty()) {
    showMessage(emptyReason());
    requestReplot();
    return;
  }
  showPlot();
  const std::size_t n = rows_.size();
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  double lo = 0, hi = 0;  // zero is always in view: the question is which side of it a bar lies
  for (std::size_t i = 0; i < n; ++i) {
    const Row& r = rows_[i];
    const double y = rowY(i, n);
    ticker->addTick(y, r.design);
    QCPGraph* g = nullptr;
    QCPErrorBars* bar = nullptr;
    if (r.tested && std::isfinite(r.difference) && std::isfinite(r.low) && std::isfinite(r.high)) {
      g = p->addGraph();
      g->setName(r.design);
      g->setProperty("tsRow", int(i));
      g->setLineStyle(QCPGraph::lsNone);
      g->setData(QVector<double>{r.difference}, QVector<double>{y}, true);
      bar = new QCPErrorBars(p->xAxis, p->yAxis);
      bar->setDataPlottable(g);
      bar->setErrorType(QCPErrorBars::etKeyError);
      bar->setData(QVector<double>{r.difference - r.low}, QVector<double>{r.high - r.difference});
      bar->setWhiskerWidth(10);
      bar->setSelectable(QCP::stNone);
      bar->removeFromLegend();
      lo = std::min({lo, r.low, r.difference}), hi = std::max({hi, r.high, r.difference});
    }
    auto* text = new QCPItemText(p);
    text->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    text->position->setTypeY(QCPItemPosition::ptPlotCoords);
    text->position->setCoords(0, y + 0.2);  // above its bar, from the left edge of the panel
    text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    text->setTextAlignment(Qt::AlignLeft);
    text->setPadding(QMargins(4, 0, 4, 1));
    text->setText(r.verdict);
    text->setProperty("tsFullText", r.verdict);
    items_->points.push_back(g);
    items_->bars.push_back(bar);
    items_->verdicts.push_back(text);
  }
  p->yAxis->setTicker(ticker);
  p->yAxis->setSubTicks(false);
  p->yAxis->setRange(-0.6, double(n) - 1 + 0.95);  // room above the top bar for its verdict
  const double span = hi - lo > 0 ? hi - lo : std::max(1e-3, std::max(std::abs(lo), std::abs(hi)));
  p->xAxis->setRange(lo - 0.12 * span, hi + 0.12 * span);
  themeChanged();
  requestReplot();
}

void DifferencePlot::wrapVerdicts() {
  const double width = plot()->axisRect()->width() - 10;
  if (width < 40 || std::abs(width - items_->wrappedAt) < 0.5) return;
  items_->wrappedAt = width;
  for (auto* t : items_->verdicts) t->setText(detail::wrapText(t->property("tsFullText").toString(), t->font(), width));
}

int DifferencePlot::barCount() const {
  return int(std::count_if(items_->points.begin(), items_->points.end(), [](QCPGraph* g) { return g != nullptr; }));
}

QRectF DifferencePlot::barRect(int index) const {
  if (index < 0 || index >= int(rows_.size()) || !items_->points[std::size_t(index)]) return {};
  const Row& r = rows_[std::size_t(index)];
  const double y = plot()->yAxis->coordToPixel(rowY(std::size_t(index), rows_.size()));
  const double x0 = plot()->xAxis->coordToPixel(r.low), x1 = plot()->xAxis->coordToPixel(r.high);
  return QRectF(QPointF(x0, y - 5), QPointF(x1, y + 5)).normalized();
}

double DifferencePlot::zeroPixelX() const { return plot()->xAxis->coordToPixel(0); }

QRectF DifferencePlot::verdictRect(int index) const {
  if (index < 0 || index >= int(items_->verdicts.size())) return {};
  const auto* t = items_->verdicts[std::size_t(index)];
  return QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition()).normalized();
}

std::pair<double, double> DifferencePlot::xRange() const { return {plot()->xAxis->range().lower, plot()->xAxis->range().upper}; }

void DifferencePlot::writeCsv(QTextStream& out) const {
  out << "design,tested,difference,ci95_low,ci95_high,verdict\n";
  for (const Row& r : rows_) {
    out << csvField(r.design) << ',' << (r.tested ? "true" : "false") << ',';
    if (r.tested)
      out << QString::number(r.difference, 'g', 10) << ',' << QString::number(r.low, 'g', 10) << ','
          << QString::number(r.high, 'g', 10);
    else
      out << ",,";
    out << ',' << csvField(r.verdict) << '\n';
  }
}

void DifferencePlot::themeChanged() {
  const auto& t = theme();
  items_->zero->setPen(QPen(t.reference, 1.2, Qt::DashLine));
  for (std::size_t i = 0; i < rows_.size() && i < items_->verdicts.size(); ++i) {
    // An established difference in the palette's first colours (lower, higher), none in grey.
    const int dir = rows_[i].direction;
    const QColor c = dir < 0 ? detail::categoricalColour(0, t.dark) : dir > 0 ? detail::categoricalColour(1, t.dark) : t.mutedText;
    if (auto* g = items_->points[i]) g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, 8.0));
    if (auto* b = items_->bars[i]) b->setPen(QPen(c, 2.0));
    items_->verdicts[i]->setColor(dir != 0 ? t.text : t.mutedText);
  }
  items_->tracer->setBrush(QBrush(t.background));
}

void DifferencePlot::hoverAt(const QPointF& pos) {
  const detail::NearestPoint hit = detail::nearestGraphPoint(plot(), pos, 24.0);
  detail::moveTracerTo(items_->tracer, hit);
  if (hit.graph) {
    const Row& r = rows_[std::size_t(hit.graph->property("tsRow").toInt())];
    setHoverText(tr("%1: %2 [%3, %4]\n%5")
                     .arg(r.design, detail::formatValue(r.difference), detail::formatValue(r.low),
                          detail::formatValue(r.high), r.verdict),
                 pos.toPoint());
  } else {
    setHoverText(QString(), pos.toPoint());
  }
  replotHover();
}

}  // namespace tensorscope::viz
