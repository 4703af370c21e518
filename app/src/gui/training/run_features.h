#pragma once
/// What the explorer does with runs, outside the window (issue 12: feature logic leaves
/// MainWindow): where a run's directory goes, how a fork is made from a checkpoint snapshot, how
/// a metrics log becomes curves, and how TP role vectors are projected and clustered. Each is
/// plain data in, plain data out, and tested on its own (tests/gui/test_run_features.cpp).

#include <QDateTime>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gui/document/session.h"
#include "model_core/analysis.h"
#include "model_core/host_tensor.h"

namespace tensorscope::app {

/// The folder a session's runs go to: "<session>.runs" beside a saved session file, else
/// "<app data>/runs" for an unsaved one.
QString runsFolderFor(const QString& sessionPath);

/// Creates and returns a new directory "<base>/<name>-<yyyyMMdd-HHmmss>[-n]" (the name reduced to
/// [A-Za-z0-9_.-]); never an existing one, so runs started within the same second (two windows, a
/// quick restart) get their own. Empty when base cannot be created or written.
QString makeRunDirectory(const QString& base, const QString& name, const QDateTime& now);

/// The run a fork starts as: the design the parent's snapshot trained (`snapshot`/config.json)
/// with the parent's training settings, every layer's C replaced by what that layer learned (one
/// spec per layer), named "<parent> fork@<step>" (or "… (n)" when taken). Throws on a damaged
/// snapshot.
RunEntry forkEntry(const RunEntry& parent, const QString& snapshot, std::int64_t step, const QStringList& takenNames);

/// Reads a run directory written by `tensorscope train` into an entry named after it. Throws with
/// every problem of a damaged folder (model_core::inspectRunDirectory), so it is refused when
/// opened, not when it is trained. (Not in session.cpp: the session reader builds without
/// LibTorch for its fuzz harness.)
RunEntry runEntryFromDirectory(const QString& dir);

/// One curve of a run's metrics log: its points, and for the train curves the training time of
/// each (seconds; empty for evaluations, whose times the curves plot interpolates).
struct Series {
  std::vector<double> steps, values, times;
};
/// A metrics log as the curves dock shows it: "train loss", "lr", "eval loss (<split>)" and
/// "accuracy (<split>)" or "exact match (<split>)"; a record without a value adds no point.
///
/// Times: metrics.jsonl holds no clock, but every train record holds the step's throughput, so the
/// training time of step s is the sum over the logged steps up to s of
/// tokensPerStep × (step − previous step) / tokens_per_second (stepSeconds). That is the time spent
/// in training steps: pauses, evaluations and checkpoints are not counted, it goes on across a
/// resume, and the live curves count it the same way, so a reopened run looks as it did live.
/// Without a readable config.json (or throughput) the curves have no times.
struct MetricsCurves {
  std::map<std::string, Series> series;
  std::int64_t damaged = 0;     ///< lines skipped
  std::int64_t firstDamaged = 0;  ///< line number of the first
  std::string firstReason;
};
/// Reads RUN_DIR/metrics.jsonl through model_core's bounded reader (missing file: no curves).
MetricsCurves readMetricsCurves(const std::string& runDir);

/// What one training step of `config` counts in tokens_per_second: batch × seq_len tokens, or
/// batch images for Fashion-MNIST (as the trainer counts them).
std::int64_t tokensPerStep(const model_core::RunConfig& config);
/// Seconds a logged step took: tokensPerStep × steps / tokensPerSecond; NaN without a throughput.
double stepSeconds(std::int64_t tokensPerStep, double steps, double tokensPerSecond);

/// The step a fork starts from: the parent's step when the checkpoint it starts from was taken
/// (the trainer state of `run.initFrom`, else `source_step` of RUN_DIR/init.json). 0 for a run
/// trained from scratch, or when neither can be read. The fork's trainer counts its own steps
/// from 0 (a warm start restarts the optimizer and schedule), so the curves add this to them.
std::int64_t forkStartStep(const RunEntry& run);
/// The name of the run a fork was forked from: the run with id `run.forkParent`, else (a session
/// reopened: ids are not saved) the run whose name the fork's "<parent> fork@<step>" name starts
/// with. Empty when none is in `runs`.
QString forkParentName(const RunEntry& run, const std::vector<RunEntry>& runs);

/// TP role vectors on their first two principal components, clustered by k-means (k capped at the
/// number of vectors; seed 1, 4 starts, so a redraw gives the same picture).
struct RoleProjection {
  std::vector<double> xs, ys;
  std::vector<int> clusters;
  double explainedPc1 = 0, explainedPc2 = 0;  ///< fractions of the variance
};
RoleProjection projectRoles(const model_core::HostTensor& roles, int k);

/// Keeps successive role pictures of the same probe comparable (issue 13: PCA's axes come with
/// arbitrary signs and k-means with arbitrary labels, so the clusters jumped every inspection).
/// When `previous` has as many points: turns `next` by the orthogonal 2 x 2 map (rotation or
/// reflection) that best matches it to `previous` (orthogonal Procrustes, closed form in 2-D) and
/// renumbers its clusters by their largest overlap with the previous ones. Else leaves it.
void alignRoleProjection(RoleProjection& next, const RoleProjection& previous);

}  // namespace tensorscope::app
