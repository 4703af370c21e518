#pragma once
// Graphics items of the tensor diagram that need their own painting or hover behaviour.

#include <QGraphicsItem>
#include <QString>

#include "diagram_view/diagram_style.h"
#include "spec/tensor_network.h"

namespace tensorscope::diagram_view {

/// A tensor: a circle (input, weight, core, constant, output) or a small box (elementwise
/// operation), with its label centred inside. Selectable; its tooltip describes the tensor.
class TensorItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 101 };

  TensorItem(const spec::TensorNode& node, double width, double height, const DiagramOptions& options);

  int type() const override { return Type; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  const QString& nodeId() const { return id_; }
  bool isCore() const { return core_; }

 protected:
  void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

 private:
  QRectF body() const;

  QString id_;
  spec::NodeKind kind_;
  bool core_ = false;
  bool op_ = false;
  double width_ = 0, height_ = 0;
  DiagramOptions options_;
  DiagramPalette palette_;
  bool hovered_ = false;
};

/// Hover text of a tensor: label, kind, shape with symbols and sizes, parameters and role.
QString tensorTooltip(const spec::TensorNode& node);

/// "4,096"-style grouping for parameter counts.
QString groupedNumber(std::int64_t value);

}  // namespace tensorscope::diagram_view
