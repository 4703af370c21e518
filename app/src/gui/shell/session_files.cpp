#include "gui/shell/session_files.h"

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QPushButton>
#include <QSettings>
#include <QTimer>

#include "gui/document/session.h"
#include "gui/document/default_session.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_history.h"
#include "gui/document/session_model.h"
#include "gui/training/training_driver.h"

namespace tensorscope::app {

SessionFiles::SessionFiles(QMainWindow* window, SessionModel* model, TrainingDriver* driver, Questions questions,
                           std::function<bool()> darkTheme, QObject* parent)
    : QObject(parent),
      window_(window),
      model_(model),
      driver_(driver),
      questions_(std::move(questions)),
      darkTheme_(std::move(darkTheme)) {
  // The autosave follows every change within seconds (a crash loses at most the last ones), and
  // writes a burst of edits (a drag in the core editor) once.
  auto* timer = new QTimer(this);
  timer->setSingleShot(true);
  timer->setInterval(kAutosaveDelayMs);
  connect(timer, &QTimer::timeout, this, &SessionFiles::autosave);
  connect(model_, &SessionModel::contentChanged, timer, qOverload<>(&QTimer::start));
}

void SessionFiles::warnAboutInvalidRuns(const QString& done) {
  const QStringList invalid = invalidRuns(model_->session());
  if (invalid.isEmpty()) return;
  const bool one = invalid.size() == 1;
  Q_EMIT warning(one ? "A run has an invalid design" : "Runs have invalid designs",
                 done + ". " + (one ? "This run cannot train as it is designed:\n" : "These runs cannot train as they are designed:\n") +
                     invalid.join('\n') + "\n" + (one ? "It is kept as designed and reopens" : "They are kept as designed and reopen") +
                     " marked invalid in the Runs dock: select " + (one ? "it" : "each") +
                     " and fix the design in the Design dock.");
}

void SessionFiles::openAtStart(bool offerRecovery, bool reopenLastSession) {
  const auto ask = [this] {
    if (questions_.askToRecover) return questions_.askToRecover();
    return QMessageBox::question(window_, "Restore session?",
                                 "Tensorscope did not close cleanly last time. Restore the autosaved session?") == QMessageBox::Yes;
  };
  const bool recover = offerRecovery && autosaveWorthRestoring() && ask();
  setCleanExit(false);
  const QString last = QSettings().value("lastSession").toString();
  try {
    if (recover) {
      model_->reset(Session::load(autosavePath()));
      model_->detachFromFile(/*unsavedWork=*/true);
      warnAboutInvalidRuns("Restored the autosaved session");
    } else if (reopenLastSession && !last.isEmpty() && QFileInfo::exists(last)) {
      model_->open(last);
      warnAboutInvalidRuns("Reopened " + last);
    }
  } catch (const std::exception& e) {
    Q_EMIT error(recover ? "Cannot restore the autosave" : "Cannot reopen the last session", QString::fromUtf8(e.what()));
  }
  if (model_->count() == 0) model_->reset(defaultSession());
}

std::unique_ptr<QMessageBox> saveChangesBox(QWidget* parent) {
  auto box = std::make_unique<QMessageBox>(QMessageBox::Question, "Save changes?",
                                           "This session has changes that are not saved. Save them first?", QMessageBox::NoButton, parent);
  box->addButton(QMessageBox::Save)->setText("&Save");
  box->addButton(QMessageBox::Discard)->setText("&Don't save");
  QAbstractButton* cancel = box->addButton(QMessageBox::Cancel);
  cancel->setText("Cancel");
  // Return (and Esc) cancel: a key pressed out of habit keeps the window as it is and loses nothing;
  // saving or discarding takes a deliberate Alt+S / Alt+D or a click.
  box->setDefaultButton(qobject_cast<QPushButton*>(cancel));
  box->setEscapeButton(cancel);
  return box;
}

QMessageBox::StandardButton askToSaveChanges(QWidget* parent) {
  const auto box = saveChangesBox(parent);
  box->exec();
  return box->standardButton(box->clickedButton());
}

bool SessionFiles::confirmDiscardChanges() {
  if (!model_->isModified()) return true;
  QMessageBox::StandardButton answer = QMessageBox::Discard;
  if (questions_.askToSave) answer = questions_.askToSave();
  else if (QApplication::platformName() != "offscreen")
    answer = askToSaveChanges(window_);
  if (answer == QMessageBox::Cancel) return false;
  return answer != QMessageBox::Save || saveInteractively();
}

bool SessionFiles::open(const QString& path) {
  if (!confirmDiscardChanges()) return false;
  try {
    Session::load(path);  // a file that does not open leaves the training run alone
    driver_->stopAndWait();
    model_->open(path);
    rememberRecentSession(path);
    QSettings().setValue("lastSession", path);
    Q_EMIT message("Opened " + path, 5000);
    warnAboutInvalidRuns("Opened " + path);
    return true;
  } catch (const std::exception& e) {
    Q_EMIT error("Cannot open session", QString::fromUtf8(e.what()));
    return false;
  }
}

bool SessionFiles::openExample(const QString& path) {
  if (!confirmDiscardChanges()) return false;
  try {
    auto example = Session::load(path);
    driver_->stopAndWait();
    model_->reset(std::move(example));
    model_->detachFromFile(/*unsavedWork=*/false);
    Q_EMIT message("Opened the example " + QFileInfo(path).baseName() + " as an untitled session", 5000);
    warnAboutInvalidRuns("Opened the example " + QFileInfo(path).baseName());
    return true;
  } catch (const std::exception& e) {
    Q_EMIT error("Cannot open the example session", QString::fromUtf8(e.what()));
    return false;
  }
}

bool SessionFiles::save(const QString& path) {
  try {
    model_->setViewState(window_->saveState(), darkTheme_() ? "dark" : "light");
    model_->save(path);
    rememberRecentSession(path);
    QSettings().setValue("lastSession", path);
    Q_EMIT message("Saved " + path, 5000);
    warnAboutInvalidRuns("Saved " + path);
    return true;
  } catch (const std::exception& e) {
    Q_EMIT error("Cannot save session", QString::fromUtf8(e.what()));
    return false;
  }
}

bool SessionFiles::saveInteractively() {
  QString path = model_->path();
  if (path.isEmpty())
    path = withSessionSuffix(QFileDialog::getSaveFileName(window_, "Save session", QStringLiteral("session") + kSessionSuffix,
                                                          kSessionFileFilter));
  return !path.isEmpty() && save(path);
}

void SessionFiles::autosave() {
  try {
    QDir().mkpath(QFileInfo(autosavePath()).path());
    model_->session().save(autosavePath());
  } catch (const std::exception& e) {
    Q_EMIT message(QString("autosave failed: ") + e.what(), 10000);
  }
}

}  // namespace tensorscope::app
