#include "diagram_view/diagram_scene.h"

#include <QGraphicsEllipseItem>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QPen>
#include <QTextDocument>
#include <algorithm>
#include <cmath>

#include "diagram_items.h"
#include "label_text.h"

namespace tensorscope::diagram_view {
namespace {

constexpr double zBox = -3, zLeg = -2, zDot = 1, zTensor = 2, zLabel = 3;

void tag(QGraphicsItem* item, DiagramScene::Element element, const QString& id = {}) {
  item->setData(DiagramScene::kKindKey, static_cast<int>(element));
  if (!id.isEmpty()) item->setData(DiagramScene::kIdKey, id);
}

QString symbolHtml(const QString& symbol) { return "<i>" + labelHtml(symbol) + "</i>"; }

QPen makePen(const QColor& color, double width, const DiagramOptions& options, Qt::PenStyle style = Qt::SolidLine) {
  QPen pen(color, width, style, Qt::RoundCap, Qt::RoundJoin);
  pen.setCosmetic(options.cosmetic_pens);
  return pen;
}

}  // namespace

DiagramScene::DiagramScene(QObject* parent) : QGraphicsScene(parent) {
  connect(this, &QGraphicsScene::selectionChanged, this, &DiagramScene::onSelectionChanged);
}

void DiagramScene::setNetwork(const spec::TensorNetwork& network) {
  network_ = network;
  rebuild();
}

void DiagramScene::setOptions(const DiagramOptions& options) {
  options_ = options;
  rebuild();
}

void DiagramScene::rebuild() {
  clear();
  layout_ = network_.nodes.empty() ? DiagramLayout{} : layoutNetwork(network_, options_);
  const DiagramPalette palette = paletteFor(options_.theme);
  setBackgroundBrush(palette.background);

  for (const auto& t : layout_.tensors) {
    const auto it = std::find_if(network_.nodes.begin(), network_.nodes.end(), [&](const auto& n) { return n.id == t.id; });
    if (it == network_.nodes.end()) continue;
    auto* item = new TensorItem(*it, t.width, t.height, options_);
    item->setPos(t.center);
    item->setZValue(zTensor);
    tag(item, Element::Tensor, QString::fromStdString(t.id));
    addItem(item);
  }
  for (const auto& h : layout_.hyperedges) {
    const double r = style::kHyperedgeDot / 2;
    auto* dot = addEllipse(QRectF(h.center.x() - r, h.center.y() - r, 2 * r, 2 * r), Qt::NoPen, palette.ink);
    dot->setZValue(zDot);
    QStringList joined;
    for (const auto& id : h.tensors) {
      const auto it = std::find_if(network_.nodes.begin(), network_.nodes.end(), [&](const auto& n) { return n.id == id; });
      joined << "<i>" + labelHtml(QString::fromStdString(it != network_.nodes.end() ? it->label : id)) + "</i>";
    }
    dot->setToolTip("batch multiplication along " + symbolHtml(h.symbol) + " = " + QString::number(h.size) +
                    "<br>elementwise over " + symbolHtml(h.symbol) + ", shared by " + joined.join(", ") +
                    (h.output ? "<br>and kept in the output (dangling leg)" : ""));
    tag(dot, Element::Hyperedge, QString(QChar::fromLatin1(h.index)));
    if (!h.has_label) continue;
    auto* label = addNote(h.label, legFont(options_.show_sizes), palette.muted_text);
    label->setPos(h.label_pos - QPointF(label->boundingRect().width() / 2, label->boundingRect().height() / 2));
    label->setToolTip(dot->toolTip());
    tag(label, Element::LegLabel, QString(QChar::fromLatin1(h.index)));
  }
  addLegs();
  addBoxes();
  if (options_.show_title) addTitle();

  content_ = itemsBoundingRect().adjusted(-style::kMargin, -style::kMargin, style::kMargin, style::kMargin);
  setSceneRect(content_);
  rings_.clear();  // clear() deleted them
  applyHighlight();
}

std::pair<DiagramScene::Element, QString> DiagramScene::elementOf(const QGraphicsItem* item) {
  for (; item; item = item->parentItem()) {
    if (item->type() == TensorItem::Type) return {Element::Tensor, static_cast<const TensorItem*>(item)->nodeId()};
    if (!item->data(kKindKey).isValid()) continue;
    const auto e = static_cast<Element>(item->data(kKindKey).toInt());
    const QString id = item->data(kIdKey).toString();
    switch (e) {
      case Element::Leg:
      case Element::LegLabel:
      case Element::Hyperedge: return {Element::Leg, id};
      case Element::SoftmaxBox:
      case Element::SoftmaxBall:
      case Element::ScaleLabel: return {Element::SoftmaxBox, id};
      default: return {Element::Title, {}};
    }
  }
  return {Element::Title, {}};
}

void DiagramScene::setHighlight(const Highlight& highlight) {
  if (highlight == highlight_) return;
  highlight_ = highlight;
  applyHighlight();
}

bool DiagramScene::isDimmed(Element element, const QString& id) const {
  for (const QGraphicsItem* item : items()) {
    const auto [e, itemId] = elementOf(item);
    if (e == element && itemId == id) return item->opacity() < 1.0;
  }
  return false;
}

void DiagramScene::applyHighlight() {
  for (QGraphicsItem* ring : rings_) {
    removeItem(ring);
    delete ring;
  }
  rings_.clear();
  const bool on = highlight_.active();
  constexpr double kDim = 0.22;
  for (QGraphicsItem* item : items()) {
    const auto [e, id] = elementOf(item);
    bool keep = true;
    if (on && e == Element::Tensor) keep = highlight_.tensors.contains(id);
    else if (on && e == Element::Leg) keep = highlight_.legs.contains(id);
    else if (on && e == Element::SoftmaxBox) keep = highlight_.boxes.contains(id);
    item->setOpacity(keep ? 1.0 : kDim);
  }
  const DiagramPalette palette = paletteFor(options_.theme);
  for (const QString& id : highlight_.emphasised) {
    QGraphicsItem* tensor = tensorItem(id);
    if (!tensor) continue;
    const QRectF r = tensor->mapRectToScene(tensor->boundingRect()).adjusted(-5, -5, 5, 5);
    auto* ring = addEllipse(r, makePen(palette.selection, 3.0, options_), Qt::NoBrush);
    ring->setZValue(zLabel + 1);
    ring->setAcceptedMouseButtons(Qt::NoButton);
    rings_ << ring;
  }
}

void DiagramScene::addLegs() {
  const DiagramPalette palette = paletteFor(options_.theme);
  const QPen pen = makePen(palette.ink, style::kLineWidth, options_);
  const QPen biasPen = makePen(palette.muted_text, style::kLineWidth * 0.8, options_, Qt::DashLine);
  for (const auto& leg : layout_.legs) {
    const bool bias = leg.kind == LegPlacement::Kind::Bias;
    auto* line = addPath(leg.path, bias ? biasPen : pen);
    line->setZValue(zLeg);
    QString tip;
    switch (leg.kind) {
      case LegPlacement::Kind::Contraction: tip = "contraction over "; break;
      case LegPlacement::Kind::Spoke: tip = "batch-multiplication leg "; break;
      case LegPlacement::Kind::Dangling: tip = "output leg "; break;
      case LegPlacement::Kind::Bias: tip = "bias, added to the projection"; break;
    }
    if (!bias) tip += symbolHtml(leg.symbol) + " = " + QString::number(leg.size);
    line->setToolTip(tip);
    tag(line, Element::Leg, QString(QChar::fromLatin1(leg.index)));
    if (!leg.has_label) continue;
    auto* text = new QGraphicsTextItem;
    text->document()->setDocumentMargin(0);
    text->setFont(legFont(options_.show_sizes || bias));
    text->setDefaultTextColor(palette.muted_text);
    text->setHtml(options_.show_sizes || bias ? leg.label.toHtmlEscaped() : labelHtml(leg.label));
    const QRectF r = text->boundingRect();
    text->setPos(leg.label_pos - QPointF(r.width() / 2, r.height() / 2));
    text->setZValue(zLabel);
    text->setToolTip(tip);
    tag(text, Element::LegLabel, QString(QChar::fromLatin1(leg.index)));
    addItem(text);
  }
}

QGraphicsTextItem* DiagramScene::addNote(const QString& text, const QFont& font, const QColor& colour) {
  auto* item = new QGraphicsTextItem;
  item->document()->setDocumentMargin(0);
  item->setFont(font);
  item->setDefaultTextColor(colour);
  item->setHtml(labelHtml(text));  // "1/√d_p" -> 1/√d<sub>p</sub>
  item->setZValue(zLabel);
  addItem(item);
  return item;
}

void DiagramScene::addBoxes() {
  using Kind = spec::SoftmaxBox::Kind;
  const DiagramPalette palette = paletteFor(options_.theme);
  for (const auto& box : layout_.boxes) {
    const QString id = QString::fromStdString(box.id);
    QGraphicsItem* outline = nullptr;
    if (box.kind == Kind::Elementwise) {
      QPainterPath rounded;
      rounded.addRoundedRect(box.rect, 6, 6);
      outline = addPath(rounded, makePen(palette.muted_text, style::kLineWidth * 0.8, options_));
      auto* label = addNote(box.label, legFont(true), palette.muted_text);
      label->setPos(box.label_pos - QPointF(label->boundingRect().width() / 2, label->boundingRect().height() / 2));
      label->setToolTip(box.role.toHtmlEscaped());
      tag(label, Element::ScaleLabel, id);
    } else {
      outline = addRect(box.rect, makePen(palette.box_outline, style::kLineWidth + 0.3, options_, Qt::DotLine));
    }
    outline->setZValue(zBox - box.depth * 0.01);
    QString normalised;
    for (const auto& leg : layout_.legs)
      if (leg.index == box.normalized && leg.kind != LegPlacement::Kind::Bias) normalised = leg.symbol;
    QString tip = "<b>" + box.label.toHtmlEscaped() + "</b>";
    if (box.kind == Kind::Softmax)
      tip += ": normalised along " + symbolHtml(normalised) + " (filled ball), scaled by α = " + box.scale_label.toHtmlEscaped();
    else if (box.kind == Kind::Normalize)
      tip += ": divided by the sum along " + symbolHtml(normalised) + " (open ball), no exponential";
    if (!box.role.isEmpty()) tip += "<br>" + box.role.toHtmlEscaped();
    if (box.causal) tip += "<br>causal mask: later tokens get −∞";
    outline->setToolTip(tip);
    tag(outline, Element::SoftmaxBox, id);
    if (!box.has_ball) continue;

    const double r = style::kBallDiameter / 2;
    const bool open = box.kind == Kind::Normalize;
    auto* ball = addEllipse(QRectF(box.ball.x() - r, box.ball.y() - r, 2 * r, 2 * r),
                            open ? makePen(palette.ink, style::kLineWidth * 1.3, options_) : QPen(Qt::NoPen),
                            open ? palette.background : palette.ink);
    ball->setZValue(zLabel);
    ball->setToolTip(tip);
    tag(ball, Element::SoftmaxBall, id);

    if (box.ball_text.isEmpty()) continue;
    auto* scale = addNote(box.ball_text, legFont(true), palette.text);
    // Centred in the place the layout kept free for it.
    const QRectF s = scale->boundingRect();
    const QPointF at = box.ball_text_rect.center() - QPointF(s.width() / 2, s.height() / 2);
    scale->setPos(at);
    scale->setToolTip(tip);
    tag(scale, Element::ScaleLabel, id);
  }
}

void DiagramScene::addTitle() {
  const DiagramPalette palette = paletteFor(options_.theme);
  const QRectF drawing = itemsBoundingRect();
  double y = drawing.top() - 8;
  if (!network_.equation.empty()) {
    auto* eq = new QGraphicsTextItem;
    eq->document()->setDocumentMargin(0);
    eq->setFont(equationFont());
    eq->setDefaultTextColor(palette.muted_text);
    eq->setHtml(labelHtml(QString::fromStdString(network_.equation)));
    eq->setTextWidth(std::max(drawing.width(), 420.0));
    if (eq->document()->idealWidth() < eq->textWidth()) eq->setTextWidth(eq->document()->idealWidth() + 1);
    y -= eq->boundingRect().height();
    eq->setPos(drawing.left(), y);
    tag(eq, Element::Equation);
    addItem(eq);
    y -= 4;
  }
  if (!network_.title.empty()) {
    auto* title = new QGraphicsTextItem;
    title->document()->setDocumentMargin(0);
    title->setFont(titleFont());
    title->setDefaultTextColor(palette.text);
    title->setHtml(labelHtml(QString::fromStdString(network_.title)));
    y -= title->boundingRect().height();
    title->setPos(drawing.left(), y);
    tag(title, Element::Title);
    addItem(title);
  }
}

int DiagramScene::count(Element element) const {
  int n = 0;
  for (const QGraphicsItem* item : items())
    if (item->data(kKindKey).isValid() && item->data(kKindKey).toInt() == static_cast<int>(element)) ++n;
  return n;
}

QGraphicsItem* DiagramScene::tensorItem(const QString& id) const {
  for (QGraphicsItem* item : items())
    if (item->type() == TensorItem::Type && static_cast<TensorItem*>(item)->nodeId() == id) return item;
  return nullptr;
}

void DiagramScene::onSelectionChanged() {
  for (QGraphicsItem* item : selectedItems()) {
    if (item->type() != TensorItem::Type) continue;
    auto* tensor = static_cast<TensorItem*>(item);
    Q_EMIT tensorSelected(tensor->nodeId());
    if (tensor->isCore()) Q_EMIT coreSelected(tensor->nodeId());
    return;
  }
}

}  // namespace tensorscope::diagram_view
