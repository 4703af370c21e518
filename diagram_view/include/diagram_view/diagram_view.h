#pragma once
/// DiagramView: the interactive tensor-diagram widget. Zoom with the wheel or Ctrl +/−
/// (Ctrl 0 fits), pan by dragging the background, hover a tensor for its shape, parameters and
/// role, click the core C (or a factor) to ask the app for the core editor, right-click to fit or
/// export (SVG, PDF, PNG, TikZ, DOT). The title and equation sit in a header above the zoomable
/// drawing, wrapped to the view's width (exports draw them in the picture); a notice (e.g. "this
/// design is invalid") shows under the header and dims the drawing.

#include <QGraphicsView>
#include <QString>

#include "diagram_view/diagram_export.h"
#include "diagram_view/diagram_scene.h"

class QLabel;
class QMenu;
#include "diagram_view/diagram_style.h"
#include "spec/tensor_network.h"

namespace tensorscope::diagram_view {

class DiagramView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit DiagramView(QWidget* parent = nullptr);

  /// Shows `network`. If its tensors are the same as the current network's (e.g. only sizes or
  /// the core preset changed), the zoom and scroll position are kept when the user has zoomed, or
  /// when the drawing's bounds are unchanged; otherwise the view fits.
  void setNetwork(const spec::TensorNetwork& network);
  const spec::TensorNetwork& network() const { return scene_->network(); }

  /// Theme, leg labels and title; lines always stay one pixel-ish wide on screen (cosmetic).
  void setOptions(const DiagramOptions& options);
  /// The options of what is on screen, for exports (cosmetic pens off).
  DiagramOptions exportOptions() const;
  const DiagramOptions& options() const { return scene_->options(); }
  void setTheme(Theme theme);
  void setShowSizes(bool sizes);

  DiagramScene* diagramScene() const { return scene_; }
  /// Current scale: view pixels per scene point.
  double zoom() const;

  /// Shows `text` under the header and dims the drawing (empty: no notice).
  void setNotice(const QString& text);
  QString notice() const { return notice_; }
  /// A line under the title and equation saying what the network is ("Equals GQA-2"; empty: none).
  void setCaption(const QString& text);
  QString caption() const { return caption_; }
  /// The header's text (title, equation and caption) as shown.
  QString headerText() const;
  /// Writes the diagram in `format` (the screen's theme and labels, lines scaled). False with the
  /// reason in `error` on failure.
  bool exportTo(ExportFormat format, const QString& path, QString* error = nullptr) const;
  /// The right-click menu (Fit, then one export per format), built fresh.
  QMenu* createContextMenu();
  /// See DiagramScene::setHighlight (teaching: what a plan step contracts, what a lesson points at).
  void setHighlight(const DiagramScene::Highlight& highlight) { scene_->setHighlight(highlight); }
  /// The element a click at `viewPos` (viewport pixels) reaches; (Title, "") for none.
  std::pair<DiagramScene::Element, QString> elementAt(const QPoint& viewPos) const;
  /// Keyboard selection (the view focused): Tab / Right / Down select the next tensor (left to
  /// right, then top to bottom), Shift+Tab / Left / Up the previous one; Return or Enter "clicks"
  /// the selected tensor (elementClicked, as a mouse click). Tab past the last tensor leaves the
  /// view. Returns the id now selected ("" when none).
  QString selectNextTensor(bool forward);
  /// The selected tensor's id ("" when none).
  QString selectedTensor() const;

 public Q_SLOTS:
  void zoomIn();
  void zoomOut();
  /// Scales so everything is visible (never above 1.5×). The view stays fitted through resizes
  /// (a dock or window growing) until the user zooms.
  void fitToView();
  void setZoom(double factor);
  /// For a projector (1: the desktop): the header's type `scale` times larger, and a fit that may
  /// enlarge the drawing up to `scale` times as much as on the desktop (refits a fitted view).
  void setPresentationScale(double scale);
  double presentationScale() const { return presentationScale_; }

 Q_SIGNALS:
  void coreSelected(QString nodeId);
  void tensorSelected(QString nodeId);
  /// A left click on a tensor (kind Tensor, its node id), a leg, its label or a joining dot (Leg,
  /// the index letter) or a softmax / elementwise box (SoftmaxBox, the box id).
  void elementClicked(tensorscope::diagram_view::DiagramScene::Element kind, QString id);
  void zoomChanged(double factor);
  /// An export from the context menu: written to `path`, or failed with `error` (empty on success).
  void exported(QString path, QString error);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool focusNextPrevChild(bool next) override;

 private:
  /// The tensors' items in reading order (left to right, then top to bottom).
  QList<QGraphicsItem*> tensorItemsInOrder() const;

  void updateHeader();

  DiagramScene* scene_;
  QLabel* header_ = nullptr;
  QLabel* noticeLabel_ = nullptr;
  QString notice_;
  QString caption_;
  bool fitPending_ = true;
  bool fitted_ = false;  ///< the zoom is fitToView's, not the user's: resizes refit
  double presentationScale_ = 1.0;
};

}  // namespace tensorscope::diagram_view
