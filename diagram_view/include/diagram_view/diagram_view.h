#pragma once
/// DiagramView: the interactive tensor-diagram widget. Zoom with the wheel or Ctrl +/−
/// (Ctrl 0 fits), pan by dragging the background, hover a tensor for its shape, parameters and
/// role, click the core C (or a factor) to ask the app for the core editor.

#include <QGraphicsView>
#include <QString>

#include "diagram_view/diagram_scene.h"
#include "diagram_view/diagram_style.h"
#include "spec/tensor_network.h"

namespace tensorscope::diagram_view {

class DiagramView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit DiagramView(QWidget* parent = nullptr);

  /// Shows `network`. If its tensors are the same as the current network's (e.g. only sizes or
  /// the core preset changed), the zoom and scroll position are kept; otherwise the view fits.
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

 public Q_SLOTS:
  void zoomIn();
  void zoomOut();
  /// Scales so everything is visible (never above 1.5×). The view stays fitted through resizes
  /// (a dock or window growing) until the user zooms.
  void fitToView();
  void setZoom(double factor);

 Q_SIGNALS:
  void coreSelected(QString nodeId);
  void tensorSelected(QString nodeId);
  void zoomChanged(double factor);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  DiagramScene* scene_;
  bool fitPending_ = true;
  bool fitted_ = false;  ///< the zoom is fitToView's, not the user's: resizes refit
};

}  // namespace tensorscope::diagram_view
