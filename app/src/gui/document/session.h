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

}  // namespace tensorscope::app
