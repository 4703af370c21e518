#include "gui/training/run_features.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "files/read_file.h"
#include "model_core/run_files.h"

namespace tensorscope::app {

QString runsFolderFor(const QString& sessionPath) {
  if (sessionPath.isEmpty()) return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/runs";
  const QFileInfo info(sessionPath);
  return info.absolutePath() + "/" + info.completeBaseName() + ".runs";
}

QString makeRunDirectory(const QString& base, const QString& name, const QDateTime& now) {
  QString safe = name;
  safe.replace(QRegularExpression("[^A-Za-z0-9_.-]+"), "_");
  const QString stem = safe + "-" + now.toString("yyyyMMdd-HHmmss");
  if (!QDir().mkpath(base)) return {};
  // mkdir fails when the directory exists: a directory is never shared.
  for (int n = 1; n < 1000; ++n) {
    const QString leaf = n == 1 ? stem : stem + "-" + QString::number(n);
    if (QDir(base).mkdir(leaf)) return base + "/" + leaf;
  }
  return {};
}

RunEntry forkEntry(const RunEntry& parent, const QString& snapshot, std::int64_t step, const QStringList& takenNames) {
  RunEntry fork;
  fork.config = model_core::readRunConfig((snapshot + "/config.json").toStdString());  // what actually trained
  fork.config.train = parent.config.train;
  // Every layer starts from its own learned C (one spec per layer from here on).
  std::vector<spec::AttentionSpec> specs;
  for (int l = 0; l < std::max(1, fork.config.model.layers); ++l) {
    auto s = model_core::layerSpec(fork.config.model, l);
    if (s.core) s.core = model_core::learnedCoreSpec(snapshot.toStdString(), l);
    specs.push_back(std::move(s));
  }
  fork.config.model.attention = std::move(specs);
  fork.initFrom = snapshot;
  fork.forkParent = parent.id;
  fork.name = QString("%1 fork@%2").arg(parent.name).arg(step);
  for (int n = 2; takenNames.contains(fork.name); ++n) fork.name = QString("%1 fork@%2 (%3)").arg(parent.name).arg(step).arg(n);
  return fork;
}

RunEntry runEntryFromDirectory(const QString& dir) {
  // A folder is a run only when what it holds reads: a damaged trainer state or checkpoint is named
  // now, not when the run is trained or resumed.
  const auto state = model_core::inspectRunDirectory(dir.toStdString());
  if (!state.problems.empty()) {
    std::string m = "not a usable run directory:";
    for (const auto& p : state.problems) m += "\n  " + p;
    throw std::invalid_argument(m);
  }
  RunEntry e;
  e.config = model_core::readRunConfig((dir + "/config.json").toStdString());
  e.runDir = QDir(dir).absolutePath();
  // A sweep trial's run lives in trials/NAME/run: it is named by its trial, so two trials opened
  // side by side are not both "run" (finding N21).
  const QFileInfo info(e.runDir);
  const QDir parent = info.dir();
  e.name = info.fileName() == "run" && QFileInfo(parent.absolutePath()).dir().dirName() == "trials" ? "trial " + parent.dirName()
                                                                                                    : info.fileName();
  return e;
}

MetricsCurves readMetricsCurves(const std::string& runDir) {
  MetricsCurves out;
  // The throughput of a step times the tokens of a step is its duration (see run_features.h).
  std::int64_t tokens = 0;
  try {
    tokens = tokensPerStep(model_core::readRunConfig(runDir + "/config.json"));
  } catch (const std::exception&) {
    tokens = 0;  // no config: curves without times
  }
  double clock = 0, lastTrainStep = std::numeric_limits<double>::quiet_NaN();
  bool timed = tokens > 0;
  auto add = [&](const std::string& name, double step, const model_core::MetricsRecord& r, const char* key, double time) {
    const auto v = r.finite(key);
    if (!v) return;  // a record without this value: no point, not a zero
    auto& s = out.series[name];
    s.steps.push_back(step);
    s.values.push_back(*v);
    if (std::isfinite(time)) {
      s.times.resize(s.steps.size() - 1, std::numeric_limits<double>::quiet_NaN());
      s.times.push_back(time);
    }
  };
  model_core::readMetrics(
      runDir,
      [&](std::int64_t, const model_core::MetricsRecord& r) {
        const double step = double(r.step);
        if (r.kind == model_core::MetricsRecord::Kind::Train) {
          double time = std::numeric_limits<double>::quiet_NaN();
          if (timed) {
            const double tps = r.finite("tokens_per_second").value_or(0.0);
            const double previous = std::isfinite(lastTrainStep) && lastTrainStep < step ? lastTrainStep : step - 1;
            const double dt = stepSeconds(tokens, step - previous, tps);
            if (std::isfinite(dt)) clock += dt;
            time = clock;
          }
          lastTrainStep = step;
          add("train loss", step, r, "loss", time);
          add("lr", step, r, "lr", time);
          return;
        }
        const std::string& split = r.split;
        const double none = std::numeric_limits<double>::quiet_NaN();
        add("eval loss (" + split + ")", step, r, "loss", none);
        if (r.exact_match) add("exact match (" + split + ")", step, r, "exact_match", none);
        else add("accuracy (" + split + ")", step, r, "accuracy", none);
      },
      [&](std::int64_t line, const std::string& reason) {
        if (out.damaged++ == 0) out.firstDamaged = line, out.firstReason = reason;
      });
  for (auto& [name, s] : out.series)
    if (!s.times.empty()) s.times.resize(s.steps.size(), std::numeric_limits<double>::quiet_NaN());
  return out;
}

std::int64_t tokensPerStep(const model_core::RunConfig& config) {
  return config.train.batch * model_core::modelSequenceLength(config);  // the trainer's own count
}

double stepSeconds(std::int64_t tokensPerStep, double steps, double tokensPerSecond) {
  if (tokensPerStep <= 0 || !(steps > 0) || !(tokensPerSecond > 0) || !std::isfinite(tokensPerSecond))
    return std::numeric_limits<double>::quiet_NaN();
  return double(tokensPerStep) * steps / tokensPerSecond;
}

std::int64_t forkStartStep(const RunEntry& run) {
  if (run.initFrom.isEmpty()) return 0;
  try {
    const std::string path = (run.initFrom + "/trainer_state.json").toStdString();
    return model_core::parseTrainerState(files::readBoundedFile(path), path).step;
  } catch (const std::exception&) {
  }
  try {  // the snapshot is gone: the fork's own record of where it started
    if (run.runDir.isEmpty()) return 0;
    const std::string path = (run.runDir + "/" + model_core::kWarmStartFileName).toStdString();
    return std::max<std::int64_t>(0, model_core::parseWarmStartRecord(files::readBoundedFile(path), path).source_step);
  } catch (const std::exception&) {
  }
  return 0;
}

QString forkParentName(const RunEntry& run, const std::vector<RunEntry>& runs) {
  if (run.initFrom.isEmpty()) return {};
  if (run.forkParent)
    for (const RunEntry& r : runs)
      if (r.id == run.forkParent) return r.name;
  const auto at = run.name.lastIndexOf(" fork@");
  if (at <= 0) return {};
  const QString parent = run.name.left(at);
  for (const RunEntry& r : runs)
    if (r.name == parent && &r != &run) return r.name;
  return {};
}

RoleProjection projectRoles(const model_core::HostTensor& roles, int k) {
  RoleProjection out;
  const auto p = model_core::pca(roles.values, roles.rows(), roles.cols(), 2);
  for (int i = 0; i < roles.rows(); ++i) {
    out.xs.push_back(p.coordinates[static_cast<size_t>(i) * 2]);
    out.ys.push_back(p.coordinates[static_cast<size_t>(i) * 2 + 1]);
  }
  out.explainedPc1 = p.explained_variance_ratio[0];
  out.explainedPc2 = p.explained_variance_ratio[1];
  model_core::KMeansOptions opt;
  opt.seed = 1;
  opt.n_init = 4;
  out.clusters = model_core::kMeans(roles.values, roles.rows(), roles.cols(), std::clamp(k, 1, roles.rows()), opt).labels;
  return out;
}

void alignRoleProjection(RoleProjection& next, const RoleProjection& previous) {
  const size_t n = next.xs.size();
  if (n == 0 || previous.xs.size() != n || previous.clusters.size() != next.clusters.size()) return;
  // M = Qᵀ P for the new points Q and the previous P; the best orthogonal R maximises tr(Rᵀ M):
  // rotations [[c, -s], [s, c]] reach sqrt((M00 + M11)² + (M10 - M01)²), reflections
  // [[c, s], [s, -c]] reach sqrt((M00 - M11)² + (M01 + M10)²).
  double m00 = 0, m01 = 0, m10 = 0, m11 = 0;
  for (size_t i = 0; i < n; ++i) {
    m00 += next.xs[i] * previous.xs[i];
    m01 += next.xs[i] * previous.ys[i];
    m10 += next.ys[i] * previous.xs[i];
    m11 += next.ys[i] * previous.ys[i];
  }
  const double rotation = std::hypot(m00 + m11, m10 - m01), reflection = std::hypot(m00 - m11, m01 + m10);
  double r00, r01, r10, r11;
  if (rotation >= reflection) {
    const double t = std::atan2(m10 - m01, m00 + m11);
    r00 = std::cos(t), r01 = -std::sin(t), r10 = std::sin(t), r11 = std::cos(t);
  } else {
    const double t = std::atan2(m01 + m10, m00 - m11);
    r00 = std::cos(t), r01 = std::sin(t), r10 = std::sin(t), r11 = -std::cos(t);
  }
  for (size_t i = 0; i < n; ++i) {
    const double x = next.xs[i], y = next.ys[i];
    next.xs[i] = x * r00 + y * r10;  // the row (x, y) times R
    next.ys[i] = x * r01 + y * r11;
  }
  // Cluster labels: each new cluster, largest first, takes the free previous label it overlaps most.
  int k = 0;
  for (int c : next.clusters) k = std::max(k, c + 1);
  for (int c : previous.clusters) k = std::max(k, c + 1);
  std::vector<std::vector<int>> overlap(static_cast<size_t>(k), std::vector<int>(static_cast<size_t>(k), 0));
  std::vector<int> size(static_cast<size_t>(k), 0);
  for (size_t i = 0; i < n; ++i) {
    ++overlap[static_cast<size_t>(next.clusters[i])][static_cast<size_t>(previous.clusters[i])];
    ++size[static_cast<size_t>(next.clusters[i])];
  }
  std::vector<int> order(static_cast<size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size[size_t(a)] > size[size_t(b)]; });
  std::vector<int> relabel(static_cast<size_t>(k), -1);
  std::vector<bool> taken(static_cast<size_t>(k), false);
  for (int c : order) {
    int best = -1;
    for (int p = 0; p < k; ++p)
      if (!taken[size_t(p)] && (best < 0 || overlap[size_t(c)][size_t(p)] > overlap[size_t(c)][size_t(best)])) best = p;
    relabel[size_t(c)] = best;
    taken[size_t(best)] = true;
  }
  for (int& c : next.clusters) c = relabel[static_cast<size_t>(c)];
}

}  // namespace tensorscope::app
