#pragma once
/// The explorer's main window. It wires docks together and delegates; features live in the docks.

#include <QMainWindow>

#include "spec/attention_spec.h"

class QDockWidget;
class QPlainTextEdit;

namespace tensorscope::viz {
class MatrixHeatmap;
}

namespace tensorscope::app {

class DesignPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  DesignPanel* designPanel() const { return design_; }
  viz::MatrixHeatmap* coreView() const { return core_; }
  /// The docks by title, for tests and View-menu toggles.
  QList<QDockWidget*> docks() const;

  /// Loads a spec file into the design; shows the reasons in a message box on failure.
  bool openSpec(const QString& path);
  /// Saves the current design atomically; shows the reason on failure.
  bool saveSpec(const QString& path);

 private:
  void buildMenus();
  void onSpecChanged(const spec::AttentionSpec& s);
  QDockWidget* addDock(const QString& title, QWidget* content, Qt::DockWidgetArea area);
  static QWidget* plannedPanel(const QString& what);

  DesignPanel* design_ = nullptr;
  viz::MatrixHeatmap* core_ = nullptr;
  QPlainTextEdit* specText_ = nullptr;
};

}  // namespace tensorscope::app
