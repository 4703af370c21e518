#include "diagram_view/diagram_view.h"

#include <QAction>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <set>

namespace tensorscope::diagram_view {
namespace {

constexpr double kMinZoom = 0.15;
constexpr double kMaxZoom = 12.0;
constexpr double kStep = 1.25;

std::set<std::string> tensorIds(const spec::TensorNetwork& n) {
  std::set<std::string> ids;
  for (const auto& node : n.nodes) ids.insert(node.id);
  return ids;
}

}  // namespace

DiagramView::DiagramView(QWidget* parent) : QGraphicsView(parent), scene_(new DiagramScene(this)) {
  setObjectName("DiagramView");
  setScene(scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  setDragMode(ScrollHandDrag);
  setTransformationAnchor(AnchorUnderMouse);
  setResizeAnchor(AnchorViewCenter);
  setViewportUpdateMode(SmartViewportUpdate);
  DiagramOptions o;
  o.cosmetic_pens = true;
  scene_->setOptions(o);

  auto addShortcut = [this](const QList<QKeySequence>& keys, auto slot) {
    auto* a = new QAction(this);
    a->setShortcuts(keys);
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(a, &QAction::triggered, this, slot);
    addAction(a);
  };
  addShortcut({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)}, &DiagramView::zoomIn);
  addShortcut({QKeySequence::ZoomOut}, &DiagramView::zoomOut);
  addShortcut({QKeySequence(Qt::CTRL | Qt::Key_0)}, &DiagramView::fitToView);

  connect(scene_, &DiagramScene::coreSelected, this, &DiagramView::coreSelected);
  connect(scene_, &DiagramScene::tensorSelected, this, &DiagramView::tensorSelected);
}

void DiagramView::setNetwork(const spec::TensorNetwork& network) {
  const bool similar = !scene_->network().nodes.empty() && tensorIds(network) == tensorIds(scene_->network());
  const QTransform keptTransform = transform();
  const QPointF keptCentre = mapToScene(viewport()->rect().center());
  scene_->setNetwork(network);
  if (similar && !fitPending_) {
    setTransform(keptTransform);
    centerOn(keptCentre);
  } else {
    fitToView();
  }
}

void DiagramView::setOptions(const DiagramOptions& options) {
  DiagramOptions o = options;
  o.cosmetic_pens = true;
  const QTransform keptTransform = transform();
  const QPointF keptCentre = mapToScene(viewport()->rect().center());
  scene_->setOptions(o);
  setTransform(keptTransform);
  centerOn(keptCentre);
}

DiagramOptions DiagramView::exportOptions() const {
  DiagramOptions o = scene_->options();
  o.cosmetic_pens = false;
  return o;
}

void DiagramView::setTheme(Theme theme) {
  DiagramOptions o = scene_->options();
  o.theme = theme;
  setOptions(o);
}

void DiagramView::setShowSizes(bool sizes) {
  DiagramOptions o = scene_->options();
  o.show_sizes = sizes;
  setOptions(o);
}

double DiagramView::zoom() const { return transform().m11(); }

void DiagramView::setZoom(double factor) {
  fitted_ = false;
  factor = std::clamp(factor, kMinZoom, kMaxZoom);
  if (std::abs(factor - zoom()) < 1e-9) return;
  setTransform(QTransform::fromScale(factor, factor));
  Q_EMIT zoomChanged(factor);
}

void DiagramView::zoomIn() { setZoom(zoom() * kStep); }
void DiagramView::zoomOut() { setZoom(zoom() / kStep); }

void DiagramView::fitToView() {
  const QRectF content = scene_->contentRect();
  const QSize area = viewport()->size();
  if (content.isEmpty() || area.width() < 20 || area.height() < 20) {
    fitPending_ = true;
    return;
  }
  fitPending_ = false;
  const double fit = std::min(area.width() / content.width(), area.height() / content.height());
  setZoom(std::min(fit * 0.98, 1.5));
  fitted_ = true;
  centerOn(content.center());
}

void DiagramView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  setZoom(zoom() * std::pow(kStep, steps));
  event->accept();
}

void DiagramView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (fitPending_ || fitted_) fitToView();
}

}  // namespace tensorscope::diagram_view
