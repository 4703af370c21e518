#include "gui/run_features.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model_core/run_config.h"
#include "model_core/run_directory.h"
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
  fork.name = QString("%1 fork@%2").arg(parent.name).arg(step);
  for (int n = 2; takenNames.contains(fork.name); ++n) fork.name = QString("%1 fork@%2 (%3)").arg(parent.name).arg(step).arg(n);
  return fork;
}

MetricsCurves readMetricsCurves(const std::string& runDir) {
  MetricsCurves out;
  auto add = [&](const std::string& name, double step, const nlohmann::json& j, const char* key) {
    if (!j.contains(key) || !j[key].is_number()) return;  // a record without this value: no point, not a zero
    auto& s = out.series[name];
    s.steps.push_back(step);
    s.values.push_back(j[key].get<double>());
  };
  model_core::readMetrics(
      runDir,
      [&](std::int64_t, const nlohmann::json& j) {
        const double step = j["step"].get<double>();
        if (j.contains("kind") && j["kind"] == "train") {
          add("train loss", step, j, "loss");
          add("lr", step, j, "lr");
          return;
        }
        const std::string split = j.contains("split") && j["split"].is_string() ? j["split"].get<std::string>() : "";
        add("eval loss (" + split + ")", step, j, "loss");
        if (j.contains("exact_match")) add("exact match (" + split + ")", step, j, "exact_match");
        else add("accuracy (" + split + ")", step, j, "accuracy");
      },
      [&](std::int64_t line, const std::string& reason) {
        if (out.damaged++ == 0) out.firstDamaged = line, out.firstReason = reason;
      });
  return out;
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

}  // namespace tensorscope::app
