#include "viz/spectrum_plot.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QTextStream>
#include <algorithm>
#include <cmath>
#include <functional>

#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct SpectrumPlot::Items {
  QCPBars* within = nullptr;  // i ≤ H
  QCPBars* beyond = nullptr;  // i > H
  QCPItemStraightLine* headsLine = nullptr;
  QCPItemText* headsLabel = nullptr;
  QCPItemStraightLine* rankLine = nullptr;
  QCPItemText* rankLabel = nullptr;
  QCPItemText* annotation = nullptr;
};

namespace {
void placeVertical(QCPItemStraightLine* line, double x) {
  line->point1->setCoords(x, 0);
  line->point2->setCoords(x, 1);
}

QCPItemText* topLabel(QCustomPlot* p, double yRatio) {
  auto* label = new QCPItemText(p);
  label->position->setTypeX(QCPItemPosition::ptPlotCoords);
  label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  label->position->setCoords(0, yRatio);
  label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  label->setPadding(QMargins(4, 1, 4, 1));
  return label;
}
}  // namespace

SpectrumPlot::SpectrumPlot(QWidget* parent) : PlotWidget(parent), items_(std::make_unique<Items>()) {
  setExportName(QStringLiteral("spectrum"));
  auto* bar = controlBar();
  bar->addWidget(new QLabel(tr("Core"), this));
  layerBox_ = new QComboBox(this);
  layerBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(layerBox_);
  bar->addStretch(1);
  connect(layerBox_, &QComboBox::currentIndexChanged, this, [this] {
    showSelected();
    Q_EMIT layerChanged(currentLayer());
  });

  auto* p = plot();
  p->xAxis->setLabel(tr("index i (descending)"));
  p->yAxis->setLabel(tr("singular value σ of C"));
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(1.0);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  p->xAxis->setTicker(ticker);
  p->xAxis->grid()->setVisible(false);
  items_->within = new QCPBars(p->xAxis, p->yAxis);
  items_->beyond = new QCPBars(p->xAxis, p->yAxis);
  for (QCPBars* bars : {items_->within, items_->beyond}) bars->setWidth(0.75);
  items_->headsLine = new QCPItemStraightLine(p);
  items_->headsLabel = topLabel(p, 0.02);
  items_->rankLine = new QCPItemStraightLine(p);
  items_->rankLabel = topLabel(p, 0.10);
  items_->annotation = new QCPItemText(p);
  items_->annotation->position->setType(QCPItemPosition::ptAxisRectRatio);
  items_->annotation->position->setCoords(0.98, 0.22);
  items_->annotation->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
  items_->annotation->setTextAlignment(Qt::AlignRight);
  items_->annotation->setPadding(QMargins(6, 4, 6, 4));
  showMessage(tr("No core matrix in this model"));
  restyle();
}

SpectrumPlot::~SpectrumPlot() = default;

void SpectrumPlot::setSpectra(const std::vector<CoreSpectrum>& spectra, double step) {
  const int keep = currentLayer();
  spectra_ = spectra;
  step_ = step;
  {
    const QSignalBlocker block(layerBox_);
    layerBox_->clear();
    for (const CoreSpectrum& s : spectra_) layerBox_->addItem(tr("layer %1").arg(s.layer), s.layer);
    const int index = layerBox_->findData(keep);
    layerBox_->setCurrentIndex(index >= 0 ? index : 0);
  }
  layerBox_->setEnabled(spectra_.size() > 1);
  showSelected();
}

void SpectrumPlot::setHeads(int heads) {
  heads_ = std::max(0, heads);
  showSelected();
}

void SpectrumPlot::setCurrentLayer(int layer) {
  const int index = layerBox_->findData(layer);
  if (index >= 0) layerBox_->setCurrentIndex(index);
}

int SpectrumPlot::currentLayer() const {
  return layerBox_->currentIndex() >= 0 ? layerBox_->currentData().toInt() : -1;
}

QString SpectrumPlot::annotation() const { return items_->annotation->text(); }

std::pair<double, double> SpectrumPlot::yRange() const {
  return {plot()->yAxis->range().lower, plot()->yAxis->range().upper};
}

void SpectrumPlot::showSelected() {
  const int index = layerBox_->currentIndex();
  if (index < 0 || index >= static_cast<int>(spectra_.size()) || spectra_[index].singular_values.empty()) {
    shown_.clear();
    showMessage(tr("No core matrix in this model"));
    return;
  }
  showPlot();
  const CoreSpectrum& s = spectra_[index];
  shown_ = s.singular_values;
  std::sort(shown_.begin(), shown_.end(), std::greater<>());
  const int n = static_cast<int>(shown_.size());
  QVector<double> ki, vi, kb, vb;
  for (int i = 0; i < n; ++i) {
    const bool inside = heads_ <= 0 || i < heads_;
    (inside ? ki : kb).append(i + 1);
    (inside ? vi : vb).append(shown_[i]);
  }
  items_->within->setData(ki, vi, true);
  items_->beyond->setData(kb, vb, true);
  items_->within->setName(heads_ > 0 ? tr("σᵢ, i ≤ H") : tr("σᵢ"));

  auto* p = plot();
  p->xAxis->setRange(0.3, n + 0.7);
  p->yAxis->setRange(0, (shown_.front() > 0 ? shown_.front() : 1.0) * 1.22);
  const bool ref = heads_ > 0 && heads_ < n;
  items_->headsLine->setVisible(ref);
  items_->headsLabel->setVisible(ref);
  placeVertical(items_->headsLine, heads_ + 0.5);
  items_->headsLabel->position->setCoords(heads_ + 0.5, 0.02);
  items_->headsLabel->setText(tr("H = %1").arg(heads_));
  const double srank = s.stable_rank;
  const bool rankShown = std::isfinite(srank) && srank > 0;
  items_->rankLine->setVisible(rankShown);
  items_->rankLabel->setVisible(rankShown);
  placeVertical(items_->rankLine, srank + 0.5);
  items_->rankLabel->position->setCoords(srank + 0.5, 0.10);
  items_->rankLabel->setText(tr("stable rank"));
  double energy = 0;
  for (double v : shown_) energy += v * v;
  QString text = tr("layer %1").arg(s.layer);
  if (step_ >= 0) text += tr(" · step %1").arg(QString::number(step_, 'g', 12));
  text += tr("\nstable rank Σσ² / σ₁² = %1").arg(detail::formatValue(srank));
  if (heads_ > 0 && energy > 0) {
    double top = 0;
    for (int i = 0; i < std::min(heads_, n); ++i) top += shown_[i] * shown_[i];
    text += tr("\ntop-%1 energy %2 %").arg(heads_).arg(100.0 * top / energy, 0, 'f', 1);
  }
  items_->annotation->setText(text);
  requestReplot();
}

void SpectrumPlot::writeCsv(QTextStream& out) const {
  out << "layer,index,singular_value,stable_rank\n";
  for (const CoreSpectrum& s : spectra_) {
    std::vector<double> sorted = s.singular_values;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    for (std::size_t i = 0; i < sorted.size(); ++i)
      out << s.layer << ',' << i + 1 << ',' << QString::number(sorted[i], 'g', 10) << ','
          << QString::number(s.stable_rank, 'g', 10) << '\n';
  }
}

void SpectrumPlot::themeChanged() {
  const auto& t = theme();
  const QColor c = detail::categoricalColour(0, t.dark);
  items_->within->setPen(QPen(c.darker(115), 1));
  items_->within->setBrush(c);
  QColor faded = c;
  faded.setAlpha(t.dark ? 90 : 80);
  items_->beyond->setPen(QPen(faded, 1));
  items_->beyond->setBrush(faded);
  items_->headsLine->setPen(QPen(t.reference, 1.2, Qt::DashLine));
  items_->headsLabel->setColor(t.mutedText);
  const QColor accent = detail::categoricalColour(1, t.dark);
  items_->rankLine->setPen(QPen(accent, 1.6, Qt::DotLine));
  items_->rankLabel->setColor(accent);
  // An opaque label hides the heads line where the two labels would otherwise cross.
  items_->rankLabel->setBrush(QBrush(t.panel));
  items_->annotation->setColor(t.text);
  items_->annotation->setBrush(QBrush(t.legendBackground));
  items_->annotation->setPen(QPen(t.legendBorder));
}

void SpectrumPlot::hoverAt(const QPointF& pos) {
  const int i = static_cast<int>(std::lround(plot()->xAxis->pixelToCoord(pos.x()))) - 1;
  if (shown_.empty() || i < 0 || i >= static_cast<int>(shown_.size()) ||
      !plot()->axisRect()->rect().contains(pos.toPoint())) {
    setHoverText(QString(), pos.toPoint());
    return;
  }
  double energy = 0;
  for (double v : shown_) energy += v * v;
  const double share = energy > 0 ? 100.0 * shown_[i] * shown_[i] / energy : 0.0;
  setHoverText(tr("σ%1 = %2\n%3 % of Σσ²").arg(i + 1).arg(detail::formatValue(shown_[i])).arg(share, 0, 'f', 1),
               pos.toPoint());
}

}  // namespace tensorscope::viz
