#pragma once
/// A Tensorscope session: the designs (runs) being compared, their run directories and the view
/// state. Saved as versioned JSON ("tensorscope.session", version 1), atomically.

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <vector>

#include "model_core/run_config.h"

namespace tensorscope::app {

struct RunEntry {
  QString name;                  ///< e.g. "MHSA", "THSA"
  model_core::RunConfig config;  ///< design, task and training settings
  QString runDir;                ///< where it trains (empty until first trained)
  /// A fork: the checkpoint snapshot its weights start from (THSA cores come from `config`);
  /// empty for a run trained from a fresh initialisation.
  QString initFrom;
  /// Stable within one window (undo commands name their run by it; indices shift when runs are
  /// removed); given by the SessionModel, not saved.
  quint64 id = 0;
  /// The run this one was forked from (its id; 0: not a fork, or its parent is of an earlier
  /// window — `initFrom` and the name say where a saved fork came from).
  quint64 forkParent = 0;
};

struct Session {
  std::vector<RunEntry> runs;
  int current = 0;
  QByteArray windowState;        ///< QMainWindow::saveState
  QString theme = "light";

  /// Serialises to JSON text.
  QString toJson() const;
  /// Parses a session file's text. Throws std::invalid_argument with every problem of a file that
  /// cannot be read; a run whose design is invalid is read as it was saved (runProblems names
  /// what is wrong with it), so a session always reopens.
  static Session fromJson(const QString& text);
  /// Reads and writes files (atomic write). Throw std::runtime_error / std::invalid_argument.
  static Session load(const QString& path);
  void save(const QString& path) const;
};

/// Why run `entry` cannot train as it is (an invalid design, e.g. H·D too large): one "field:
/// message" line per problem (model_core::validateRunConfig); empty when it can.
QStringList runProblems(const RunEntry& entry);
/// Every run of `session` with an invalid design, one line each: its name and first problem.
QStringList invalidRuns(const Session& session);

/// The default session: MHSA, dense THSA and heads-only THSA (64 heads of size 1) at (nearly) equal
/// attention parameter count on reversing 16 digits, and dense THSA at the benchmark's reference
/// size (referenceDenseThsaRun).
Session defaultSession();

/// Dense THSA at the reference size of bench/train_bench (KJV char LM, F = 128, 4 layers, H = 4,
/// D = 32, R = 128, N = 128, batch 32): what the fused dense kernel makes trainable live.
RunEntry referenceDenseThsaRun();

/// A run config for `spec` with the default model, task and training settings of the explorer.
model_core::RunConfig defaultRunConfig(const spec::AttentionSpec& spec, const QString& task = "reverse");


/// Example sessions shipped in resources/sessions (names and paths).
QStringList exampleSessionPaths();
/// Session files are JSON named NAME.tensorscope.json: the longer glob gives them their own MIME
/// type (application/x-tensorscope-session) while they stay .json files; any .json opens.
inline constexpr const char* kSessionSuffix = ".tensorscope.json";
inline constexpr const char* kSessionFileFilter = "Tensorscope session (*.tensorscope.json *.json);;All files (*)";
/// `path` as a session file name: a name without ".json" gets ".tensorscope.json".
QString withSessionSuffix(const QString& path);
/// True when `path` is one of exampleSessionPaths() (they open as untitled copies).
bool isExampleSession(const QString& path);
/// Where the resources of `kind` ("sessions", "examples") are: the installed
/// DATADIR/tensorscope/KIND next to the binary's prefix, else (a binary of the build tree) the source
/// tree's resources/KIND; empty when neither.
QString resourceDirectory(const QString& kind);

/// Where the explorer autosaves the open session (every minute and on close).
QString autosavePath();
/// True when the last explorer did not close cleanly and left an autosave to offer.
bool autosaveWorthRestoring();
/// Marks the explorer as running (false) or closed cleanly (true).
void setCleanExit(bool clean);
/// The recently opened session files, newest first (at most 8), and recording one.
QStringList recentSessions();
void rememberRecentSession(const QString& path);

}  // namespace tensorscope::app
