#include "diagram_view/diagram_view.h"

#include <QAction>
#include <QContextMenuEvent>
#include <QDir>
#include <QFileDialog>
#include <QGraphicsItem>
#include <QKeyEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QMenu>
#include <QScrollBar>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <set>

#include "label_text.h"

namespace tensorscope::diagram_view {
namespace {

constexpr double kMinZoom = 0.15;
constexpr double kMaxZoom = 12.0;
constexpr double kStep = 1.25;
constexpr double kMaxFitZoom = 1.5;  // a fit enlarges a small drawing this much at most (desktop)

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
  o.show_title = false;  // the header shows it, readable at any zoom
  scene_->setOptions(o);
  header_ = new QLabel(this);
  header_->setWordWrap(true);
  header_->setTextFormat(Qt::RichText);
  header_->setContentsMargins(8, 4, 8, 4);
  header_->setObjectName("DiagramHeader");
  header_->setFont(titleFont());
  noticeLabel_ = new QLabel(this);
  noticeLabel_->setWordWrap(true);
  noticeLabel_->setContentsMargins(8, 4, 8, 4);
  noticeLabel_->setObjectName("DiagramNotice");
  noticeLabel_->setStyleSheet("QLabel { background: #fdecea; color: #8a1c12; border-bottom: 1px solid #e0a39b; }");
  noticeLabel_->hide();

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
  const QRectF keptContent = scene_->contentRect();
  scene_->setNetwork(network);
  updateHeader();
  // A fitted view (the user has not zoomed) is fitted again when the drawing's bounds change, e.g.
  // a core preset adds "√R = 1/√D, causal" beside the softmax box; a view the user zoomed keeps it.
  const bool refit = fitted_ && scene_->contentRect() != keptContent;
  if (similar && !fitPending_ && !refit) {
    setTransform(keptTransform);
    centerOn(keptCentre);
  } else {
    fitToView();
  }
}

void DiagramView::setOptions(const DiagramOptions& options) {
  DiagramOptions o = options;
  o.cosmetic_pens = true;
  o.show_title = false;
  const QTransform keptTransform = transform();
  const QPointF keptCentre = mapToScene(viewport()->rect().center());
  scene_->setOptions(o);
  setTransform(keptTransform);
  centerOn(keptCentre);
  updateHeader();
}

DiagramOptions DiagramView::exportOptions() const {
  DiagramOptions o = scene_->options();
  o.cosmetic_pens = false;
  o.show_title = true;  // a figure carries its title and equation
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

std::pair<DiagramScene::Element, QString> DiagramView::elementAt(const QPoint& viewPos) const {
  // The topmost item that means something: a label over a leg wins, the background means nothing.
  for (QGraphicsItem* item : items(viewPos)) {
    const auto hit = DiagramScene::elementOf(item);
    if (hit.first != DiagramScene::Element::Title) return hit;
  }
  return {DiagramScene::Element::Title, {}};
}

void DiagramView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    const auto [kind, id] = elementAt(event->pos());
    if (kind != DiagramScene::Element::Title) Q_EMIT elementClicked(kind, id);
  }
  QGraphicsView::mousePressEvent(event);  // selection (core clicks) and panning as before
}

QList<QGraphicsItem*> DiagramView::tensorItemsInOrder() const {
  QList<QGraphicsItem*> tensors;
  for (QGraphicsItem* item : scene_->items())
    if (DiagramScene::elementOf(item).first == DiagramScene::Element::Tensor && item->isVisible() &&
        (item->flags() & QGraphicsItem::ItemIsSelectable))  // the tensor itself, not its label
      tensors << item;
  std::sort(tensors.begin(), tensors.end(), [](QGraphicsItem* a, QGraphicsItem* b) {
    const QPointF pa = a->sceneBoundingRect().center(), pb = b->sceneBoundingRect().center();
    return std::make_pair(pa.x(), pa.y()) < std::make_pair(pb.x(), pb.y());
  });
  return tensors;
}

QString DiagramView::selectedTensor() const {
  for (QGraphicsItem* item : scene_->selectedItems())
    if (const auto [kind, id] = DiagramScene::elementOf(item); kind == DiagramScene::Element::Tensor) return id;
  return {};
}

QString DiagramView::selectNextTensor(bool forward) {
  const QList<QGraphicsItem*> tensors = tensorItemsInOrder();
  if (tensors.isEmpty()) return {};
  int at = -1;
  for (int i = 0; i < tensors.size(); ++i)
    if (tensors[i]->isSelected()) at = i;
  const int next = at < 0 ? (forward ? 0 : int(tensors.size()) - 1) : at + (forward ? 1 : -1);
  scene_->clearSelection();
  if (next < 0 || next >= tensors.size()) return {};
  tensors[next]->setSelected(true);
  ensureVisible(tensors[next]);
  return DiagramScene::elementOf(tensors[next]).second;
}

void DiagramView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Right:
    case Qt::Key_Down:
    case Qt::Key_Left:
    case Qt::Key_Up:
      if (event->modifiers() & ~Qt::KeypadModifier) break;  // Ctrl/Shift+arrows: the view's own
      selectNextTensor(event->key() == Qt::Key_Right || event->key() == Qt::Key_Down);
      return;
    case Qt::Key_Return:
    case Qt::Key_Enter:
      if (const QString id = selectedTensor(); !id.isEmpty()) {
        Q_EMIT elementClicked(DiagramScene::Element::Tensor, id);
        return;
      }
      break;
    default:
      break;
  }
  QGraphicsView::keyPressEvent(event);
}

bool DiagramView::focusNextPrevChild(bool next) {
  // Tab walks the tensors, then leaves the view past the last (Shift+Tab: the first).
  if (hasFocus() && !selectNextTensor(next).isEmpty()) return true;
  return QGraphicsView::focusNextPrevChild(next);
}

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
  setZoom(std::min(fit * 0.98, kMaxFitZoom * presentationScale_));
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

void DiagramView::setPresentationScale(double scale) {
  if (!(scale > 0) || scale == presentationScale_) return;
  presentationScale_ = scale;
  QFont f = titleFont();  // in pixels
  if (scale != 1.0) f.setPixelSize(static_cast<int>(std::lround(f.pixelSize() * scale)));
  header_->setFont(f);
  updateHeader();
  if (fitPending_ || fitted_) fitToView();
}

void DiagramView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  updateHeader();
  if (fitPending_ || fitted_) fitToView();
}

// A dock laid out after the first show gives the viewport its real size only then: fit once the
// event loop has placed everything (the "diagram at 35%" of some starts).
void DiagramView::showEvent(QShowEvent* event) {
  QGraphicsView::showEvent(event);
  QTimer::singleShot(0, this, [this] {
    if (fitPending_ || fitted_) fitToView();
  });
}

void DiagramView::updateHeader() {
  const auto& net = scene_->network();
  QStringList parts;
  if (!net.title.empty()) parts << "<b>" + labelHtml(QString::fromStdString(net.title)) + "</b>";
  if (!net.equation.empty()) parts << labelHtml(QString::fromStdString(net.equation));
  if (!caption_.isEmpty()) parts << "<i>" + caption_.toHtmlEscaped() + "</i>";
  const auto palette = paletteFor(scene_->options().theme);
  header_->setText(parts.join("<br>"));
  header_->setStyleSheet(QString("QLabel { background: %1; color: %2; }").arg(palette.background.name(), palette.text.name()));
  header_->setVisible(!parts.isEmpty());
  noticeLabel_->setText(notice_);
  noticeLabel_->setVisible(!notice_.isEmpty());
  // Both labels live in the top margin of the view, above the zoomable drawing.
  const int width = std::max(1, this->width() - 2 * frameWidth());
  const int headerHeight = header_->isVisibleTo(this) ? header_->heightForWidth(width) : 0;
  const int noticeHeight = noticeLabel_->isVisibleTo(this) ? noticeLabel_->heightForWidth(width) : 0;
  header_->setGeometry(frameWidth(), frameWidth(), width, headerHeight);
  noticeLabel_->setGeometry(frameWidth(), frameWidth() + headerHeight, width, noticeHeight);
  setViewportMargins(0, headerHeight + noticeHeight, 0, 0);
}

QString DiagramView::headerText() const { return header_->isVisibleTo(this) ? header_->text() : QString(); }

void DiagramView::setCaption(const QString& text) {
  if (text == caption_) return;
  caption_ = text;
  updateHeader();
}

void DiagramView::setNotice(const QString& text) {
  if (text == notice_) return;
  notice_ = text;
  // The drawing stays (it is the last valid design) but is dimmed while the notice stands.
  const QColor veil = paletteFor(scene_->options().theme).background;
  scene_->setForegroundBrush(text.isEmpty() ? QBrush(Qt::NoBrush) : QBrush(QColor(veil.red(), veil.green(), veil.blue(), 170)));
  updateHeader();
}

bool DiagramView::exportTo(ExportFormat format, const QString& path, QString* error) const {
  try {
    ExportOptions o;
    o.diagram = exportOptions();
    exportDiagram(scene_->network(), format, path, o);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

QMenu* DiagramView::createContextMenu() {
  auto* menu = new QMenu(this);
  menu->addAction(tr("Fit to view"), QKeySequence(Qt::CTRL | Qt::Key_0), this, &DiagramView::fitToView);
  menu->addSeparator();
  const std::pair<ExportFormat, QString> formats[] = {{ExportFormat::Svg, tr("Export SVG (vector)…")},
                                                      {ExportFormat::Pdf, tr("Export PDF (vector)…")},
                                                      {ExportFormat::Png, tr("Export PNG (300 dpi)…")},
                                                      {ExportFormat::Tikz, tr("Export TikZ (LaTeX)…")},
                                                      {ExportFormat::Dot, tr("Export Graphviz DOT…")}};
  for (const auto& [format, text] : formats) {
    auto* action = menu->addAction(text, this, [this, format = format] {
      const QString ext = exportExtension(format);
      const QString proposal = QDir::home().filePath("diagram" + ext);
      const QString path = QFileDialog::getSaveFileName(this, tr("Export the diagram"), proposal, "*" + ext);
      if (path.isEmpty()) return;
      QString why;
      exportTo(format, path, &why);
      Q_EMIT exported(path, why);
    });
    action->setEnabled(!scene_->network().nodes.empty());
    action->setData(exportExtension(format));
  }
  return menu;
}

void DiagramView::contextMenuEvent(QContextMenuEvent* event) {
  QMenu* menu = createContextMenu();
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->popup(event->globalPos());
  event->accept();
}

}  // namespace tensorscope::diagram_view
