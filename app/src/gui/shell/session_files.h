#pragma once
/// The session's files as the explorer handles them: open (after offering to save unsaved
/// changes), open an example as an untitled copy, save and save as (feeding Open recent and the
/// last session), autosave about two seconds after the last change and on close, and the start:
/// the autosave after a crash, else the last session, else the default comparison. A session with
/// an invalid design saves and opens with a warning naming the run (it reopens marked invalid).

#include <QMessageBox>
#include <QObject>
#include <functional>
#include <memory>

class QMainWindow;

namespace tensorscope::app {

class SessionModel;
class TrainingDriver;

/// The "Save changes?" question: &Save, &Don't save and Cancel, with Cancel the default button
/// (Return and Esc cancel). askToSaveChanges shows it and answers Save, Discard or Cancel.
std::unique_ptr<QMessageBox> saveChangesBox(QWidget* parent);
QMessageBox::StandardButton askToSaveChanges(QWidget* parent);

class SessionFiles : public QObject {
  Q_OBJECT
 public:
  struct Questions {
    /// "Restore the autosaved session?"; empty: a dialog.
    std::function<bool()> askToRecover;
    /// "Save the changes?" (Save, Discard or Cancel); empty: a dialog, or Discard where no one
    /// can answer (offscreen).
    std::function<QMessageBox::StandardButton()> askToSave;
  };
  /// `window`: the parent of dialogs, whose dock layout is saved with the session; `darkTheme`
  /// tells the theme recorded in a saved file.
  SessionFiles(QMainWindow* window, SessionModel* model, TrainingDriver* driver, Questions questions,
               std::function<bool()> darkTheme, QObject* parent = nullptr);

  /// What a start opens: the autosave after a crash (when offered and accepted), else the last
  /// session (when asked and it opens), else the default session.
  void openAtStart(bool offerRecovery, bool reopenLastSession);
  /// Opens a session file (after offering to save unsaved changes); it becomes the last session.
  bool open(const QString& path);
  /// Opens a shipped example as an untitled copy (its folder is read-only once installed).
  bool openExample(const QString& path);
  bool save(const QString& path);
  /// Saves to the session's file, or asks for one; false when the user cancels or it fails.
  bool saveInteractively();
  /// Offers to save unsaved changes; false when the user cancels (stay), true to go on.
  bool confirmDiscardChanges();
  /// Writes the session to the autosave file (kAutosaveDelayMs after the last change, and on close).
  void autosave();
  /// How long the autosave waits after a change (edits in a burst are written once).
  static constexpr int kAutosaveDelayMs = 2000;

 Q_SIGNALS:
  void error(const QString& title, const QString& text);
  void message(const QString& text, int timeoutMs);
  /// Done, but the user must know something (a run saved or opened with an invalid design).
  void warning(const QString& title, const QString& text);

 private:
  /// Warns about the invalid designs of the session just saved or opened (`done`: "Saved FILE").
  void warnAboutInvalidRuns(const QString& done);

  QMainWindow* window_;
  SessionModel* model_;
  TrainingDriver* driver_;
  Questions questions_;
  std::function<bool()> darkTheme_;
};

}  // namespace tensorscope::app
