#include "gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFontDatabase>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QVBoxLayout>
#include <cmath>

#include "cli/cli.h"
#include "gui/design_panel.h"
#include "model_core/runtime.h"
#include "spec/spec_json.h"
#include "spec/validation.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::app {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Tensorscope");
  setObjectName("MainWindow");
  setDockNestingEnabled(true);

  specText_ = new QPlainTextEdit;
  specText_->setReadOnly(true);
  specText_->setLineWrapMode(QPlainTextEdit::NoWrap);
  specText_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  specText_->setToolTip("The spec: the single source of truth that builds both the model and the diagram");
  setCentralWidget(specText_);

  design_ = new DesignPanel;
  addDock("Design", design_, Qt::LeftDockWidgetArea);
  core_ = new viz::MatrixHeatmap;
  QDockWidget* coreDock = addDock("Core matrix C", core_, Qt::RightDockWidgetArea);
  addDock("Diagram",
          plannedPanel("Tensor diagram of the current design: tensors as nodes with legs, contractions, "
                       "softmax boxes and batch hyperedges, laid out by Graphviz and exportable as "
                       "SVG, PDF, PNG, DOT and TikZ. Not built yet."),
          Qt::RightDockWidgetArea);
  addDock("Training",
          plannedPanel("Training controls: task, start / pause / step / stop, progress with ETA, "
                       "tokens per second, device and threads. Not built yet."),
          Qt::BottomDockWidgetArea);
  addDock("Plots",
          plannedPanel("Live plots: loss and accuracy curves, stable rank of C over steps, attention "
                       "maps and role-vector clusters. Not built yet."),
          Qt::BottomDockWidgetArea);

  resizeDocks({coreDock}, {520}, Qt::Horizontal);
  resizeDocks({coreDock}, {460}, Qt::Vertical);
  buildMenus();
  const auto info = model_core::runtimeInfo();
  statusBar()->showMessage(QString("LibTorch %1 · %2 · %3 threads · %4")
                               .arg(QString::fromStdString(info.torch_version),
                                    QString::fromStdString(info.default_device))
                               .arg(info.intra_op_threads)
                               .arg(info.blas_is_openblas ? "OpenBLAS" : "reference BLAS (slow)"));

  connect(design_, &DesignPanel::specChanged, this, &MainWindow::onSpecChanged);
  onSpecChanged(design_->spec());
  resize(1400, 900);
}

QWidget* MainWindow::plannedPanel(const QString& what) {
  auto* w = new QWidget;
  auto* l = new QVBoxLayout(w);
  auto* label = new QLabel(what);
  label->setWordWrap(true);
  label->setAlignment(Qt::AlignCenter);
  label->setStyleSheet("color: palette(mid); font-style: italic; padding: 12px;");
  l->addWidget(label);
  return w;
}

QDockWidget* MainWindow::addDock(const QString& title, QWidget* content, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(title);
  dock->setWidget(content);
  addDockWidget(area, dock);
  return dock;
}

QList<QDockWidget*> MainWindow::docks() const { return findChildren<QDockWidget*>(); }

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  QAction* open = file->addAction("&Open spec…", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open spec", {}, "Spec (*.json);;All files (*)");
    if (!p.isEmpty()) openSpec(p);
  });
  open->setShortcut(QKeySequence::Open);
  QAction* save = file->addAction("&Save spec as…", this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save spec", "spec.json", "Spec (*.json)");
    if (!p.isEmpty()) saveSpec(p);
  });
  save->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  QAction* quit = file->addAction("&Quit", qApp, &QApplication::closeAllWindows);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu("&View");
  for (QDockWidget* d : docks()) view->addAction(d->toggleViewAction());

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&About Tensorscope", this, [this] {
    QMessageBox::about(this, "About Tensorscope",
                       "<b>Tensorscope</b> explores attention mechanisms as tensor networks.<pre>" +
                           QString::fromStdString(versionText()).toHtmlEscaped() + "</pre>");
  });
}

bool MainWindow::openSpec(const QString& path) {
  try {
    const auto s = spec::readSpecFile(path.toStdString());
    const auto issues = spec::validate(s);
    if (!issues.empty()) {
      QMessageBox::warning(this, "Invalid spec",
                           path + " is not a valid spec:\n\n" + QString::fromStdString(spec::formatIssues(issues)));
      return false;
    }
    design_->setSpec(s);
    onSpecChanged(s);
    statusBar()->showMessage("Opened " + path, 5000);
    return true;
  } catch (const std::exception& e) {
    QMessageBox::warning(this, "Cannot open spec", path + ":\n\n" + QString::fromUtf8(e.what()));
    return false;
  }
}

bool MainWindow::saveSpec(const QString& path) {
  try {
    spec::writeSpecFile(path.toStdString(), design_->spec());
    statusBar()->showMessage("Saved " + path, 5000);
    return true;
  } catch (const std::exception& e) {
    QMessageBox::warning(this, "Cannot save spec", QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::onSpecChanged(const spec::AttentionSpec& s) {
  specText_->setPlainText(QString::fromStdString(spec::toJson(s)));
  if (!s.core) {
    core_->clear(QString("%1 has no core matrix C (THSA family only)")
                     .arg(QString::fromStdString(std::string(spec::toString(s.variant)))));
    return;
  }
  if (!spec::validate(s).empty()) {
    core_->clear("C is undefined until the design is valid");
    return;
  }
  const auto C = spec::effectiveCore(s);
  core_->setMatrix(C, s.sizes.R, s.sizes.R,
                   QString("C (%1, %2x%2)").arg(QString::fromStdString(s.core->preset)).arg(s.sizes.R));
}

}  // namespace tensorscope::app
