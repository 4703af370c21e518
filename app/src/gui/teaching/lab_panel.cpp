/// LabPanel (lab_panel.h): the status and error lines, waiting for a lab's worker, the theme.
#include "gui/teaching/lab_panel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QLabel>
#include <QThread>

#include "viz/plot_widget.h"

namespace tensorscope::app {

namespace {

/// Processes events until `done()` or the timeout.
template <typename F>
bool processUntil(F done, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < timeoutMs) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    if (!done()) QThread::msleep(2);  // leave the cores to the worker
  }
  return done();
}

}  // namespace

LabPanel::LabPanel(QWidget* parent) : QWidget(parent) {}

bool LabPanel::waitUntilIdle(int timeoutMs) { return processUntil([this] { return !busy(); }, timeoutMs); }

QString LabPanel::statusText() const { return status_->text(); }
QString LabPanel::errorText() const { return error_->isHidden() ? QString() : error_->text(); }

void LabPanel::setError(const QString& text) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

void LabPanel::setDarkTheme(bool dark) {
  for (viz::PlotWidget* w : findChildren<viz::PlotWidget*>()) w->setDarkTheme(dark);
}

}  // namespace tensorscope::app
