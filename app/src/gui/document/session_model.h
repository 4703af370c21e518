#pragma once
/// The explorer's document: the session's runs, each with a stable id, its design (one attention
/// spec per layer, or one shared by every layer), status, curve overlay flag, run directory and fork
/// origin; which run is current, which layer the core editor shows, which run trains (read-only
/// while it does) and the undo stack of design edits. Docks observe it through its signals and
/// change it only through its functions; every design edit is an undo command that names its run.

#include <QHash>
#include <QObject>
#include <QUndoStack>

#include <vector>

#include "gui/document/session.h"
#include "spec/attention_spec.h"

namespace tensorscope::app {

class SessionModel : public QObject {
  Q_OBJECT
 public:
  explicit SessionModel(QObject* parent = nullptr);

  /// Replaces the document (a new, opened or restored session): ids, statuses ("not trained" or
  /// how the run folder says its training ended), every run overlaid, an empty undo stack. Emits sessionReset() and
  /// currentChanged(). Refused while a run trains (stop it first).
  void reset(Session session);
  const Session& session() const { return session_; }
  /// Opens a session file (reset() with its contents); throws with the file's problems, leaving
  /// the document as it was.
  void open(const QString& path);
  /// Saves the document atomically to `path` (then its path, and the undo stack's clean state);
  /// throws with the reason, leaving a previous file intact.
  void save(const QString& path);
  /// The session file it was opened from or saved to (empty: unsaved).
  const QString& path() const { return path_; }
  void setPath(const QString& path);
  /// Makes the document an untitled copy of its file (an example session, read-only once
  /// installed) or of an autosave: its runs then go under the user's data folder until it is
  /// saved. `unsavedWork`: the content itself is not saved anywhere (a recovered autosave).
  void detachFromFile(bool unsavedWork);
  /// Records the view state stored with the session (window layout, theme) before a save.
  void setViewState(const QByteArray& windowState, const QString& theme);
  QUndoStack* undoStack() { return &undo_; }
  /// True when the document differs from its file (or was never saved): a design edit not undone,
  /// a run added, removed or trained, changed settings. Emits modifiedChanged.
  bool isModified() const { return changed_ || !undo_.isClean(); }

  // --- Runs -----------------------------------------------------------------------------------
  int count() const { return static_cast<int>(session_.runs.size()); }
  const RunEntry& run(int index) const { return session_.runs.at(static_cast<size_t>(index)); }
  int current() const { return session_.current; }
  const RunEntry& currentRun() const { return run(current()); }
  /// The index of the run with this id; -1 when it was removed.
  int indexOf(quint64 runId) const;
  QString status(int index) const { return statuses_.value(index); }
  /// What the Runs and Training docks say about run `index`: why its design is invalid, that
  /// another writer trains its folder (setLockHolder) or that its folder is gone, else status().
  QString statusLine(int index) const;
  /// Who else trains run `runId`'s folder (files::runLockHolder; empty: nobody). Emits runsChanged
  /// when it changes.
  void setLockHolder(quint64 runId, const QString& holder);
  QString lockHolder(quint64 runId) const { return lockHolders_.value(runId); }
  /// True when run `index` has a checkpoint in its run directory: its design is what that
  /// checkpoint holds, so a design edit forks it (forkNeeded) instead of changing it.
  bool hasCheckpoint(int index) const;
  bool overlaid(int index) const { return overlay_.value(index); }
  /// Makes run `index` current (ignored when out of range). Emits currentChanged.
  void select(int index);
  /// Appends a run with `status`, selects it and returns its id.
  quint64 addRun(RunEntry entry, const QString& status);
  /// Removes run `index`; false with the reason for the training run, a bad index or the last run.
  bool removeRun(int index, QString* why);
  void setOverlay(int index, bool shown);
  void setStatus(quint64 runId, const QString& status);
  void setRunDirectory(quint64 runId, const QString& dir);
  /// Task and optimisation settings of the current run (the Training dock; not an undoable edit:
  /// the design is kept, except what the settings own, e.g. the layer count and sequence length).
  void setCurrentConfig(const model_core::RunConfig& config);

  // --- Designs --------------------------------------------------------------------------------
  /// Every layer's design of a run config (a shared spec repeated per layer).
  static std::vector<spec::AttentionSpec> layerDesigns(const model_core::RunConfig& config);
  /// Number of layers of run `index` with their own design slot (layers when shared).
  int layerCount(int index) const;
  /// True when the layers of run `index` have different designs (one spec per layer).
  bool perLayer(int index) const { return run(index).config.model.attention.size() > 1; }
  /// The layer the core editor and the stable-rank views show (clamped to the current run).
  int currentLayer() const;
  void setCurrentLayer(int layer);
  /// The current run's design of the current layer.
  spec::AttentionSpec currentSpec() const;
  /// A Design-dock edit of the current run, applied to every layer as one undoable edit named
  /// `what` (nothing when unchanged). A layer keeps its own C unless the edit changed the C on show
  /// (a preset chosen, or re-expanded at new sizes): then every layer takes the new one.
  void editDesign(const spec::AttentionSpec& after, const QString& what);
  /// A core-editor edit of the current layer (every layer when they share one design); `stroke`
  /// merges the cells of one drag into one undo step.
  void editCurrentLayer(const spec::AttentionSpec& after, const QString& what, int stroke = -1);
  /// Sets the designs of run `runId` (what undo and redo call) and selects it. False, with the
  /// reason in refused(), for a removed run or one that trains (its design is what it trains with).
  bool applyDesign(quint64 runId, const std::vector<spec::AttentionSpec>& attention);
  /// Applies to the current run (a fork of a run whose layers were `before`) an edit that made
  /// `before` into `after` (one spec, or one per layer): every layer takes the edit and keeps its
  /// own C (the fork's learned C) where the edit left C alone.
  /// The name a run gets from its design: spec::nameDesigns' first name, or the acronym in its
  /// brackets ("MLA", "TPA"); empty for an invalid design.
  static QString designRunName(const spec::AttentionSpec& s);
  void carryDesignEdit(const std::vector<spec::AttentionSpec>& before, const std::vector<spec::AttentionSpec>& after,
                       const QString& what);

  /// Sets the current run's position scheme (`model.positions`: learned, sinusoidal, rotary,
  /// rotary_interleaved) as one undoable edit named `what`. Refused (false, the reason in
  /// refused()) while it trains, or when the run validator refuses the choice for its layers; a
  /// run with a checkpoint asks for a fork (settingsForkNeeded) instead.
  bool editPositions(const QString& positions, const QString& what);
  /// What undo and redo call: sets run `runId`'s positions (false, with the reason, for a removed,
  /// training or trained run).
  bool applyPositions(quint64 runId, const QString& positions);
  /// Why `config` with `positions` is not a valid run (the validator's lines about the positions,
  /// joined); empty when it is.
  static QString positionsRefusal(const model_core::RunConfig& config, const QString& positions);

  // --- Training lock --------------------------------------------------------------------------
  /// The run that trains (0: none). It is read-only in every dock until released.
  quint64 trainingRunId() const { return trainingId_; }
  int trainingIndex() const { return trainingId_ ? indexOf(trainingId_) : -1; }
  bool isTraining(int index) const { return trainingId_ != 0 && index == trainingIndex(); }
  /// The design the training run started with (layer 0): inspections are read with it.
  const spec::AttentionSpec& trainingSpec() const { return trainingSpec_; }
  /// Locks run `runId` while it trains (`resumed`: it continues its history); 0 releases. Emits
  /// trainingChanged.
  void setTrainingRun(quint64 runId, bool resumed = false);
  /// True while the training run continues from its checkpoint (its curves and views go on).
  bool trainingResumed() const { return trainingResumed_; }

 Q_SIGNALS:
  /// The document was replaced.
  void sessionReset();
  /// Runs were added, removed or renamed, or a status or overlay flag changed.
  void runsChanged();
  void currentChanged(quint64 runId);
  void designChanged(quint64 runId);
  void statusChanged(quint64 runId);
  void overlayChanged(quint64 runId, bool shown);
  /// The run removed (its curves go with it).
  void runRemoved(quint64 runId, const QString& name);
  void currentLayerChanged(int layer);
  /// A run started (runId) or stopped (0) training.
  void trainingChanged(quint64 runId);
  /// A design edit of run `runId`, which has a checkpoint: the run stays as it trained, and the
  /// edit (`after`: one spec, or one per layer) asks for a fork that carries it.
  void forkNeeded(quint64 runId, const std::vector<tensorscope::spec::AttentionSpec>& after, const QString& what);
  /// A settings edit (the positions) of run `runId`, which has a checkpoint: `config` goes to a fork.
  void settingsForkNeeded(quint64 runId, const model_core::RunConfig& config);
  /// An edit was refused (the reason, for the status bar).
  void refused(const QString& reason);
  void modifiedChanged(bool modified);
  /// The saved content changed (a design edit, its undo or redo, a run added, removed or trained,
  /// changed settings): what the autosave follows.
  void contentChanged();
  /// The session file changed (opened, saved as, or detached).
  void pathChanged(const QString& path);

 private:
  /// A run named by its design ("MHSA", or "MHSA fork@300") is renamed by the design it gets
  /// ("MLA", "MLA fork@300"); a name of the user's own stays. True when renamed.
  bool followDesignName(RunEntry& run, const spec::AttentionSpec& after);
  void pushDesign(std::vector<spec::AttentionSpec> after, const QString& what, int stroke);
  /// Records a change the undo stack does not hold (runs, run directories, settings).
  void markChanged();
  void setUnchanged();

  Session session_;
  QString path_;
  QStringList statuses_;
  QList<bool> overlay_;
  QHash<quint64, QString> lockHolders_;
  QHash<quint64, QString> nameFollows_;  ///< the design name a run's name follows (across invalid designs)
  QUndoStack undo_;
  quint64 nextId_ = 1;
  quint64 trainingId_ = 0;
  bool trainingResumed_ = false;
  spec::AttentionSpec trainingSpec_;
  int layer_ = 0;
  bool changed_ = false;
};

}  // namespace tensorscope::app
