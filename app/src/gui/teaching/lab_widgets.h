#pragma once
/// Small pieces both teaching labs (BottleneckLab, StableRankLab) build their panels from: a
/// word-wrapped label, the end of a lab's controls column (error line, note, stretch), the
/// controls-beside-results layout, and running a computation on a worker thread with its answer
/// delivered on the lab's thread. Internal to the labs' sources (it pulls in QtConcurrent).

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>
#include <utility>

class QLabel;
class QVBoxLayout;
class QWidget;

namespace tensorscope::app::lab_widgets {

/// A QLabel showing `text` with word wrap on.
QLabel* wrapped(const QString& text, QWidget* parent);

/// Ends a lab's controls column: the error line (hidden while empty), `about` in italics, a
/// stretch; fixes the column's width. Returns the error line.
QLabel* finishControls(QWidget* controls, QVBoxLayout* left, const QString& about);

/// The controls column left of the results, which take the remaining width.
void placeSideBySide(QWidget* lab, QWidget* controls, QWidget* results);

/// Runs `work` on a worker thread (QtConcurrent); `done` gets its Outcome on `owner`'s thread.
/// The watcher is a child of `owner`, so no answer reaches a destroyed owner.
template <typename Outcome, typename Work, typename Done>
void runOnWorker(QObject* owner, Work work, Done done) {
  auto* watcher = new QFutureWatcher<Outcome>(owner);
  QObject::connect(watcher, &QFutureWatcherBase::finished, owner, [watcher, done] {
    const Outcome outcome = watcher->result();
    watcher->deleteLater();
    done(outcome);
  });
  watcher->setFuture(QtConcurrent::run(std::move(work)));
}

}  // namespace tensorscope::app::lab_widgets
