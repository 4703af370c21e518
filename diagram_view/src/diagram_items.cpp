#include "diagram_items.h"

#include <QGraphicsTextItem>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <QTextDocument>

#include "diagram_view/diagram_layout.h"
#include "label_text.h"

namespace tensorscope::diagram_view {
namespace {

QString kindName(const spec::TensorNode& node) {
  if (!node.adds_to.empty()) return "bias";
  if (isCoreNode(node) && node.kind != spec::NodeKind::Core) return "core factor";
  switch (node.kind) {
    case spec::NodeKind::Input: return "input";
    case spec::NodeKind::Weight: return "weight";
    case spec::NodeKind::Core: return node.id == "C" ? "core" : "core factor";
    case spec::NodeKind::Constant: return "constant";
    case spec::NodeKind::Intermediate: return "elementwise operation";
    case spec::NodeKind::Output: return "output";
  }
  return "tensor";
}

}  // namespace

QString groupedNumber(std::int64_t value) {
  QString digits = QString::number(value < 0 ? -value : value);
  for (int i = digits.size() - 3; i > 0; i -= 3) digits.insert(i, ',');
  return value < 0 ? "-" + digits : digits;
}

QString tensorTooltip(const spec::TensorNode& node) {
  QStringList symbols, sizes;
  if (node.batched) symbols << "<i>b</i>", sizes << "b";
  std::int64_t elements = 1;
  for (const auto& leg : node.legs) {
    symbols << "<i>" + labelHtml(QString::fromStdString(leg.symbol)) + "</i>";
    sizes << QString::number(leg.size);
    elements *= leg.size;
  }
  QString text = "<b><i>" + labelHtml(QString::fromStdString(node.label)) + "</i></b> &mdash; " + kindName(node);
  if (!node.legs.empty() || node.batched)
    text += "<br>shape " + symbols.join(" &times; ") + " = " + sizes.join(" &times; ");
  else
    text += "<br>scalar";
  if (node.parameters > 0)
    text += "<br>" + groupedNumber(node.parameters) + " trainable parameters";
  else if (node.kind == spec::NodeKind::Weight || node.kind == spec::NodeKind::Core ||
           node.kind == spec::NodeKind::Constant)
    text += "<br>fixed: no trainable parameters (" + groupedNumber(elements) + " values)";
  if (!node.role.empty()) text += "<br>" + QString::fromStdString(node.role).toHtmlEscaped();
  if (isCoreNode(node)) text += "<br><i>click to edit the core</i>";
  return text;
}

TensorItem::TensorItem(const spec::TensorNode& node, double width, double height, const DiagramOptions& options)
    : id_(QString::fromStdString(node.id)),
      kind_(node.kind),
      core_(isCoreNode(node)),
      op_(node.kind == spec::NodeKind::Intermediate),
      width_(width),
      height_(height),
      options_(options),
      palette_(paletteFor(options.theme)) {
  setFlag(ItemIsSelectable);
  setAcceptHoverEvents(true);
  setToolTip(tensorTooltip(node));
  setCursor(core_ ? Qt::PointingHandCursor : Qt::ArrowCursor);

  auto* text = new QGraphicsTextItem(this);
  text->document()->setDocumentMargin(0);
  text->setFont(op_ || !node.adds_to.empty() ? legFont(false) : tensorFont());
  text->setDefaultTextColor(palette_.text);
  text->setHtml(labelHtml(QString::fromStdString(node.label)));
  text->setAcceptHoverEvents(false);
  text->setAcceptedMouseButtons(Qt::NoButton);
  const QRectF r = text->boundingRect();
  // Superscripts push the box up; nudge down a little so the base letter looks centred.
  text->setPos(-r.width() / 2, -r.height() / 2 + (text->toPlainText().size() > 1 ? 1.0 : 0.0));
}

QRectF TensorItem::body() const { return QRectF(-width_ / 2, -height_ / 2, width_, height_); }

QRectF TensorItem::boundingRect() const {
  const double m = style::kCoreOutlineWidth + 3;
  return body().adjusted(-m, -m, m, m);
}

QPainterPath TensorItem::shape() const {
  QPainterPath p;
  if (op_) p.addRect(body());
  else p.addEllipse(body());
  return p;
}

void TensorItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  QColor fill = palette_.weight_fill;
  QColor outline = palette_.ink;
  double width = style::kOutlineWidth;
  Qt::PenStyle penStyle = Qt::SolidLine;
  switch (kind_) {
    case spec::NodeKind::Input: fill = palette_.input_fill; break;
    case spec::NodeKind::Constant: fill = palette_.constant_fill, penStyle = Qt::DashLine; break;
    case spec::NodeKind::Intermediate: fill = palette_.op_fill; break;
    case spec::NodeKind::Output: fill = palette_.output_fill; break;
    default: break;
  }
  if (core_) fill = palette_.core_fill, outline = palette_.core_outline, width = style::kCoreOutlineWidth;
  const bool selected = option->state & QStyle::State_Selected;
  if (selected) outline = palette_.selection, width += 1.0;
  else if (hovered_) width += 0.8;
  QPen pen(outline, width, penStyle);
  pen.setCosmetic(options_.cosmetic_pens);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(pen);
  painter->setBrush(fill);
  if (op_) painter->drawRoundedRect(body(), 3, 3);
  else painter->drawEllipse(body());
}

void TensorItem::hoverEnterEvent(QGraphicsSceneHoverEvent* event) {
  hovered_ = true;
  update();
  QGraphicsItem::hoverEnterEvent(event);
}

void TensorItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event) {
  hovered_ = false;
  update();
  QGraphicsItem::hoverLeaveEvent(event);
}

}  // namespace tensorscope::diagram_view
