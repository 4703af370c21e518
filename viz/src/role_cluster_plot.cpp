#include "viz/role_cluster_plot.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTextStream>
#include <algorithm>
#include <cmath>
#include <limits>

#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct RoleClusterPlot::Items {
  QCPItemTracer* highlight = nullptr;
};

namespace {
QString at(const QStringList& list, int i) { return i < list.size() ? list[i] : QString(); }
}  // namespace

RoleClusterPlot::RoleClusterPlot(QWidget* parent) : PlotWidget(parent), items_(std::make_unique<Items>()) {
  setExportName(QStringLiteral("role_clusters"));
  auto* bar = controlBar();
  sourceBox_ = new QComboBox(this);
  sourceBox_->setToolTip(tr("Which TP layer and head the role vectors come from"));
  sourceBox_->setVisible(false);
  bar->addWidget(sourceBox_);
  bar->addWidget(new QLabel(tr("Colour by"), this));
  colourBox_ = new QComboBox(this);
  colourBox_->addItem(tr("k-means cluster"), static_cast<int>(ColourBy::Cluster));
  colourBox_->addItem(tr("structural label"), static_cast<int>(ColourBy::Label));
  bar->addWidget(colourBox_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("k"), this));
  kBox_ = new QSpinBox(this);
  kBox_->setRange(1, 32);
  kBox_->setValue(4);
  kBox_->setToolTip(tr("Number of k-means clusters"));
  bar->addWidget(kBox_);
  caption_ = new QLabel(this);
  caption_->hide();  // shown with a caption (a hidden label takes no room from a narrow dock)
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  caption_->setMinimumWidth(0);
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the dock
  bar->addWidget(caption_, 1);
  connect(sourceBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) Q_EMIT sourceChanged(i);
  });
  connect(colourBox_, &QComboBox::currentIndexChanged, this,
          [this] { setColourBy(static_cast<ColourBy>(colourBox_->currentData().toInt())); });
  connect(kBox_, &QSpinBox::valueChanged, this, &RoleClusterPlot::kChanged);

  auto* p = plot();
  p->xAxis->setLabel(tr("PC 1"));
  p->yAxis->setLabel(tr("PC 2"));
  p->legend->setVisible(true);
  detail::placeLegend(p, 0, 1, Qt::Vertical);
  p->plotLayout()->setColumnStretchFactor(1, 0.001);
  p->legend->setMargins(QMargins(6, 4, 6, 4));
  p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  connect(p, &QCustomPlot::mouseDoubleClick, this, [this] {
    rescale();
    requestReplot();
  });
  items_->highlight = new QCPItemTracer(p);
  items_->highlight->setStyle(QCPItemTracer::tsCircle);
  items_->highlight->setSize(14);
  items_->highlight->setVisible(false);
  items_->highlight->setLayer(QString::fromLatin1(kHoverLayer));
  showMessage(tr("No role vectors yet (the model needs a TP layer)"));
  restyle();
}

RoleClusterPlot::~RoleClusterPlot() = default;

void RoleClusterPlot::setPoints(const std::vector<double>& xs, const std::vector<double>& ys,
                                const QStringList& tokens, const QStringList& contexts, const QStringList& labels) {
  const std::size_t n = std::min(xs.size(), ys.size());
  xs_.assign(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
  ys_.assign(ys.begin(), ys.begin() + static_cast<std::ptrdiff_t>(n));
  tokens_ = tokens;
  contexts_ = contexts;
  labels_ = labels;
  if (clusters_.size() != n) clusters_.clear();
  if (n == 0) {
    showMessage(tr("No role vectors yet (the model needs a TP layer)"));
    return;
  }
  showPlot();
  rebuildGroups();
  rescale();
}

void RoleClusterPlot::setClusters(const std::vector<int>& clusters) {
  clusters_ = clusters.size() == xs_.size() ? clusters : std::vector<int>{};
  rebuildGroups();
}

void RoleClusterPlot::setColourBy(ColourBy colourBy) {
  {
    const QSignalBlocker block(colourBox_);
    colourBox_->setCurrentIndex(colourBox_->findData(static_cast<int>(colourBy)));
  }
  if (colourBy == colourBy_) return;
  colourBy_ = colourBy;
  rebuildGroups();
}

void RoleClusterPlot::setK(int k) {
  const QSignalBlocker block(kBox_);
  kBox_->setValue(k);
}

int RoleClusterPlot::k() const { return kBox_->value(); }

void RoleClusterPlot::setAxisTitles(const QString& x, const QString& y) {
  plot()->xAxis->setLabel(x);
  plot()->yAxis->setLabel(y);
  requestReplot();
}

void RoleClusterPlot::setSources(const QStringList& names, int current) {
  const QSignalBlocker block(sourceBox_);
  QStringList now;
  for (int i = 0; i < sourceBox_->count(); ++i) now << sourceBox_->itemText(i);
  if (now != names) {
    sourceBox_->clear();
    sourceBox_->addItems(names);
  }
  sourceBox_->setCurrentIndex(current);
  sourceBox_->setVisible(names.size() > 1);
}

int RoleClusterPlot::source() const { return sourceBox_->currentIndex(); }

void RoleClusterPlot::setCaption(const QString& caption) {
  caption_->setText(caption);
  caption_->setToolTip(caption);
  caption_->setVisible(!caption.isEmpty());
}

QString RoleClusterPlot::caption() const { return caption_->text(); }

QStringList RoleClusterPlot::groupNames() const { return groups_; }

int RoleClusterPlot::groupPointCount(int group) const {
  return group >= 0 && group < static_cast<int>(members_.size()) ? static_cast<int>(members_[group].size()) : 0;
}

void RoleClusterPlot::rebuildGroups() {
  groups_.clear();
  members_.clear();
  const int n = pointCount();
  if (colourBy_ == ColourBy::Label) {
    QStringList names;
    for (int i = 0; i < n; ++i) {
      const QString label = at(labels_, i).isEmpty() ? tr("(none)") : at(labels_, i);
      if (!names.contains(label)) names.append(label);
    }
    names.sort(Qt::CaseInsensitive);
    groups_ = names;
    members_.resize(static_cast<std::size_t>(groups_.size()));
    for (int i = 0; i < n; ++i) {
      const QString label = at(labels_, i).isEmpty() ? tr("(none)") : at(labels_, i);
      members_[static_cast<std::size_t>(groups_.indexOf(label))].push_back(i);
    }
  } else if (!clusters_.empty()) {
    const int k = *std::max_element(clusters_.begin(), clusters_.end()) + 1;
    for (int c = 0; c < k; ++c) groups_.append(tr("cluster %1").arg(c));
    members_.resize(static_cast<std::size_t>(k));
    for (int i = 0; i < n; ++i)
      if (clusters_[i] >= 0) members_[static_cast<std::size_t>(clusters_[i])].push_back(i);
  } else {
    groups_.append(tr("not clustered"));
    members_.resize(1);
    for (int i = 0; i < n; ++i) members_[0].push_back(i);
  }
  auto* p = plot();
  items_->highlight->setVisible(false);
  p->clearGraphs();
  for (std::size_t g = 0; g < members_.size(); ++g) {
    QCPGraph* graph = p->addGraph();
    graph->setName(QStringLiteral("%1 (%2)").arg(groups_[static_cast<int>(g)]).arg(members_[g].size()));
    graph->setLineStyle(QCPGraph::lsNone);
    QVector<double> gx, gy;
    for (int i : members_[g]) {
      gx.append(xs_[i]);
      gy.append(ys_[i]);
    }
    graph->setData(gx, gy);
  }
  themeChanged();
  requestReplot();
}

void RoleClusterPlot::rescale() {
  auto* p = plot();
  p->rescaleAxes();
  for (QCPAxis* axis : {p->xAxis, p->yAxis}) {
    const QCPRange r = axis->range();
    const double pad = r.size() > 0 ? 0.06 * r.size() : 1.0;
    axis->setRange(r.lower - pad, r.upper + pad);
  }
  requestReplot();
}

QPointF RoleClusterPlot::pointPosition(int i) const {
  return {plot()->xAxis->coordToPixel(xs_[i]), plot()->yAxis->coordToPixel(ys_[i])};
}

QString RoleClusterPlot::pointText(int i) const {
  QString text = QStringLiteral("“%1”").arg(at(tokens_, i));
  if (!at(labels_, i).isEmpty()) text += tr(" · %1").arg(at(labels_, i));
  if (i < static_cast<int>(clusters_.size())) text += tr(" · cluster %1").arg(clusters_[i]);
  const QString context = at(contexts_, i);
  if (!context.isEmpty()) text += QLatin1Char('\n') + (context.size() > 90 ? context.left(87) + QStringLiteral("…") : context);
  return text;
}

void RoleClusterPlot::hoverAt(const QPointF& pos) {
  int best = -1;
  double bestDistance = 12.0;
  for (int i = 0; i < pointCount(); ++i) {
    const double d = std::hypot(pointPosition(i).x() - pos.x(), pointPosition(i).y() - pos.y());
    if (d < bestDistance) {
      best = i;
      bestDistance = d;
    }
  }
  items_->highlight->setVisible(best >= 0);
  if (best >= 0) {
    items_->highlight->position->setCoords(xs_[best], ys_[best]);
    setHoverText(pointText(best), pos.toPoint());
  } else {
    setHoverText(QString(), pos.toPoint());
  }
  replotHover();
}

void RoleClusterPlot::hoverLeft() {
  items_->highlight->setVisible(false);
  replotHover();
}

void RoleClusterPlot::writeCsv(QTextStream& out) const {
  out << "index,x,y,token,label,cluster,context\n";
  for (int i = 0; i < pointCount(); ++i)
    out << i << ',' << QString::number(xs_[i], 'g', 10) << ',' << QString::number(ys_[i], 'g', 10) << ','
        << csvField(at(tokens_, i)) << ',' << csvField(at(labels_, i)) << ','
        << (i < static_cast<int>(clusters_.size()) ? QString::number(clusters_[i]) : QString()) << ','
        << csvField(at(contexts_, i)) << '\n';
}

void RoleClusterPlot::themeChanged() {
  const auto& t = theme();
  auto* p = plot();
  for (int g = 0; g < p->graphCount(); ++g) {
    QColor c = detail::categoricalColour(g, t.dark);
    QColor fill = c;
    fill.setAlpha(190);
    p->graph(g)->setScatterStyle(
        QCPScatterStyle(detail::scatterShape(g), QPen(c.darker(t.dark ? 100 : 125), 1), QBrush(fill), 7.5));
  }
  items_->highlight->setPen(QPen(t.text, 1.5));
  items_->highlight->setBrush(Qt::NoBrush);
}

}  // namespace tensorscope::viz
