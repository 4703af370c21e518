#pragma once
/// The design docks as observers of the document: the Design dock, the core editor, the spec text
/// and the diagram show the current run's design (the chosen layer's) and send their edits to the
/// SessionModel, which puts them on the undo stack. While the current run trains, every one of them
/// is read-only and the core editor shows the learned C of the chosen layer.

#include <QObject>
#include <memory>

#include "gui/design/head_mixing_view.h"

class QPlainTextEdit;

namespace tensorscope::diagram_view {
class DiagramView;
}
namespace tensorscope::model_core {
struct InspectionSnapshot;
}

namespace tensorscope::app {

class CoreEditor;
class DesignPanel;
class SessionModel;

class DesignDocks : public QObject {
  Q_OBJECT
 public:
  DesignDocks(SessionModel* model, DesignPanel* design, CoreEditor* core, QPlainTextEdit* specText,
              diagram_view::DiagramView* diagram, QObject* parent = nullptr);
  /// A training inspection: the core editor shows the learned C of its layer, and the head-mixing
  /// view its C′ and MTA kernels, when the training run is the current one.
  void showInspection(quint64 runId, std::shared_ptr<const model_core::InspectionSnapshot> snap);

 Q_SIGNALS:
  /// Something the user should read in the status bar (a diagram that cannot be built).
  void message(const QString& text);

 private:
  void refresh();
  /// The run around the shown layer: positions, why rotary is refused, λ of differential attention.
  void showModelContext();
  void showLearnedCore();
  /// The shown layer's head mixings and MTA kernels as trained: the training run's latest
  /// inspection, or a stopped run's checkpoint, or why there are none.
  HeadMixingView::Trained trainedMixing() const;

  SessionModel* model_;
  DesignPanel* design_;
  CoreEditor* core_;
  QPlainTextEdit* specText_;
  diagram_view::DiagramView* diagram_;
  std::shared_ptr<const model_core::InspectionSnapshot> last_;
  quint64 lastRun_ = 0;  ///< the run last_ belongs to
  quint64 shownRun_ = 0;  ///< the run the docks showed at the last refresh
};

}  // namespace tensorscope::app
