#pragma once
/// A QGraphicsScene that draws one TensorNetwork in the Tuformer paper's notation: tensors as
/// circles (inputs shaded, the core C and its factors highlighted, constants dashed), legs as
/// labelled lines, batch-multiplication hyperedges as joining dots, softmax as a dotted box with
/// a filled ball on the normalised leg and its scale α, elementwise operations as small boxes,
/// output legs dangling, and the title and equation on top. Scene units are points.

#include <QGraphicsScene>
#include <QString>
#include <QStringList>

#include <utility>

#include "diagram_view/diagram_layout.h"
#include "diagram_view/diagram_style.h"
#include "spec/tensor_network.h"

class QGraphicsItem;
class QGraphicsTextItem;

namespace tensorscope::diagram_view {

class DiagramScene : public QGraphicsScene {
  Q_OBJECT

 public:
  /// What an item of the scene draws; stored in the item's data(kKindKey).
  enum class Element { Tensor, Leg, LegLabel, Hyperedge, SoftmaxBox, SoftmaxBall, ScaleLabel, Title, Equation };
  Q_ENUM(Element)
  static constexpr int kKindKey = 0;  ///< data key holding the Element (as int)
  static constexpr int kIdKey = 1;    ///< data key holding a tensor or box id (QString)

  explicit DiagramScene(QObject* parent = nullptr);

  /// Rebuilds the scene for `network` (layout through Graphviz, cached).
  void setNetwork(const spec::TensorNetwork& network);
  /// Rebuilds with new options (theme, symbols or sizes, title).
  void setOptions(const DiagramOptions& options);

  const spec::TensorNetwork& network() const { return network_; }
  const DiagramOptions& options() const { return options_; }
  const DiagramLayout& layout() const { return layout_; }

  /// Number of items drawing `element`.
  int count(Element element) const;
  /// The item of tensor `id` (selectable; its tooltip describes the tensor), or nullptr.
  QGraphicsItem* tensorItem(const QString& id) const;
  /// Everything drawn, with a margin: the page of an export.
  QRectF contentRect() const { return content_; }

  /// What a click at `item` means: (Tensor, node id), (Leg, index letter: a leg, its label or a
  /// hyperedge dot) or (SoftmaxBox, box id: its outline, ball or scale); (Title, "") for nothing.
  static std::pair<Element, QString> elementOf(const QGraphicsItem* item);

  /// Teaching highlights: the tensors, legs (index letters) and boxes given stay as drawn, every
  /// other tensor, leg and box is dimmed; the `emphasised` tensors get a ring in the accent
  /// colour. Empty lists (all three): no highlight, everything as drawn. Survives rebuilds.
  struct Highlight {
    QStringList tensors, legs, boxes, emphasised;
    bool active() const { return !tensors.isEmpty() || !legs.isEmpty() || !boxes.isEmpty(); }
    bool operator==(const Highlight&) const = default;
  };
  void setHighlight(const Highlight& highlight);
  const Highlight& highlight() const { return highlight_; }
  /// Whether the item of tensor, leg index or box `id` is drawn dimmed now (tests).
  bool isDimmed(Element element, const QString& id) const;

 Q_SIGNALS:
  /// A tensor was selected (clicked).
  void tensorSelected(QString nodeId);
  /// The core C or one of its factors (A, B, c2, c3, ...) was selected.
  void coreSelected(QString nodeId);

 private:
  void rebuild();
  void addLegs();
  void addBoxes();
  void addTitle();
  QGraphicsTextItem* addNote(const QString& text, const QFont& font, const QColor& colour);
  void onSelectionChanged();
  void applyHighlight();

  spec::TensorNetwork network_;
  DiagramOptions options_;
  DiagramLayout layout_;
  QRectF content_;
  Highlight highlight_;
  QList<QGraphicsItem*> rings_;  ///< the emphasis rings on show
};

}  // namespace tensorscope::diagram_view
