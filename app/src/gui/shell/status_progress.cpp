#include "gui/shell/status_progress.h"

#include <QEvent>
#include <QLabel>
#include <QMainWindow>
#include <QScreen>
#include <QStatusBar>
#include <QStyle>

#include "gui/training/training_panel.h"

namespace tensorscope::app {

void addStatusProgress(QMainWindow& window, TrainingPanel& panel) {
  auto* label = new QLabel(&window);
  label->setObjectName("StatusProgress");
  label->setToolTip("The training run's progress (the Training dock has its details)");
  label->hide();
  window.statusBar()->addPermanentWidget(label);
  QObject::connect(&panel, &TrainingPanel::progressChanged, label, [label](bool training, const QString& text) {
    label->setText(text);
    label->setVisible(training && !text.isEmpty());
  });
}

bool firstStartMaximised(QSize available, QSize preferred) {
  // A title bar of up to ~40 px and borders: a window that only just fits loses its status bar.
  const QSize frame(16, 64);
  return preferred.width() + frame.width() > available.width() || preferred.height() + frame.height() > available.height();
}

namespace {

/// Maximises its window when it is first shown, unless someone gave the window another size since
/// (`--size`, a test's resize): theirs wins.
class MaximiseOnFirstShow : public QObject {
 public:
  MaximiseOnFirstShow(QMainWindow* window, QSize size) : QObject(window), window_(window), size_(size) {
    window->installEventFilter(this);
  }
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == window_ && event->type() == QEvent::Show) {
      if (window_->size() == size_ && !(window_->windowState() & Qt::WindowFullScreen))
        window_->setWindowState(window_->windowState() | Qt::WindowMaximized);
      window_->removeEventFilter(this);
      deleteLater();
    }
    return false;
  }

 private:
  QMainWindow* window_;
  QSize size_;
};

}  // namespace

void applyFirstStartGeometry(QMainWindow& window, QSize preferred) {
  const QRect available = window.screen()->availableGeometry();
  if (firstStartMaximised(available.size(), preferred)) {
    // Its normal size (after un-maximising) fits as well.
    window.resize(preferred.boundedTo(available.size() - QSize(16, 64)).expandedTo(QSize(640, 480)));
    new MaximiseOnFirstShow(&window, window.size());
    return;
  }
  window.setGeometry(QStyle::alignedRect(Qt::LeftToRight, Qt::AlignCenter, preferred, available));
}

}  // namespace tensorscope::app
