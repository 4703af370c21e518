#include "gui/document/session.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "spec/cost_model.h"
#include "spec/json_reader.h"
#include "spec/spec_json.h"

// Set by app/CMakeLists.txt; other builds of this file (the session fuzz harness) find resources
// only where an install puts them.
#ifndef TENSORSCOPE_BIN_TO_DATA
#define TENSORSCOPE_BIN_TO_DATA "../share"
#endif
#ifndef TENSORSCOPE_BUILD_DIR
#define TENSORSCOPE_BUILD_DIR ""
#endif

namespace tensorscope::app {
namespace {

using nlohmann::json;
constexpr const char* kFormat = "tensorscope.session";
constexpr int kVersion = 1;

/// A saved run's config. A design that does not validate (H·D too large, a core that no longer
/// fits H) is kept as it is, so that the session still opens and the user can fix the design: the
/// attention specs are read for their structure alone (spec::fromJson), the rest of the config
/// through the run-config reader with a stand-in design that fits it, and then the saved design is
/// put back (model_core::validateRunConfig names what is wrong with it). Anything else wrong
/// (malformed fields, bad training settings) throws with the run-config reader's reasons.
model_core::RunConfig readSavedRunConfig(const json& config) {
  std::string reasons;
  try {
    return model_core::runConfigFromJson(config.dump());
  } catch (const std::invalid_argument& e) {
    reasons = e.what();
  }
  const auto unreadable = [&] { return std::invalid_argument(reasons); };
  if (!config.is_object() || !config.contains("model") || !config["model"].is_object() ||
      !config["model"].contains("attention"))
    throw unreadable();
  const json& model = config["model"];
  const json& attention = model["attention"];
  std::vector<spec::AttentionSpec> design;
  for (const json& layer : attention.is_array() ? attention : json::array({attention})) {
    try {
      design.push_back(spec::fromJson(layer.dump()));
    } catch (const spec::SpecError&) {
      throw unreadable();
    }
  }
  if (design.empty()) throw unreadable();
  // The stand-in: one MHSA layer of width d_model. The Design dock sets d_model to F, so a design
  // whose F is out of d_model's range takes d_model with it: the stand-in then has the default width.
  json standIn = config;
  std::optional<int> width;
  if (model.contains("d_model") && model["d_model"].is_number_integer()) {
    const auto w = model["d_model"].get<std::int64_t>();
    if (w >= 1 && w <= spec::kMaxWidth) width = static_cast<int>(w);
  }
  auto placeholder = spec::makeSpecPreset("mhsa");
  placeholder.sizes = {width && *width <= 8192 ? *width : 64, 1, 1, 1, 1, 1, 1};
  placeholder.causal = true;
  standIn["model"]["d_model"] = placeholder.sizes.F;
  standIn["model"]["attention"] = json::parse(spec::toJson(placeholder));
  model_core::RunConfig c;
  try {
    c = model_core::runConfigFromJson(standIn.dump());
  } catch (const std::invalid_argument&) {
    throw unreadable();  // wrong beyond the design
  }
  if (model.contains("d_model") && !width) throw unreadable();
  c.model.attention = std::move(design);
  if (width) c.model.d_model = *width;
  return c;
}

}  // namespace

QString Session::toJson() const {
  json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["current"] = current;
  j["theme"] = theme.toStdString();
  j["window_state"] = windowState.toBase64().toStdString();
  json runsJson = json::array();
  for (const auto& r : runs) {
    json entry = {{"name", r.name.toStdString()},
                  {"run_dir", r.runDir.toStdString()},
                  {"config", json::parse(model_core::runConfigToJson(r.config))}};
    if (!r.initFrom.isEmpty()) entry["init_from"] = r.initFrom.toStdString();
    runsJson.push_back(entry);
  }
  j["runs"] = runsJson;
  return QString::fromStdString(j.dump(2));
}

Session Session::fromJson(const QString& text) {
  json j;
  try {
    j = spec::parseUntrustedJson(text.toStdString());
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(std::string("not a session file: malformed JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kFormat)
    throw std::invalid_argument(std::string("not a session file: \"format\" must be \"") + kFormat + "\"");
  if (!spec::hasEnvelope(j, kFormat, kVersion))
    throw std::invalid_argument("unsupported session version " + spec::jsonPreview(j.value("version", json(nullptr))) +
                                "; this Tensorscope reads version " + std::to_string(kVersion));
  // Every field through the shared field reader: unknown keys refused, kinds checked, every
  // problem reported at once with its place (runs[1].config.train.lr: …).
  spec::FieldReader r;
  r.rejectUnknown(j, "", {"format", "version", "current", "theme", "window_state", "runs"});
  if (!j.contains("runs") || !j["runs"].is_array() || j["runs"].empty())
    throw std::invalid_argument("session has no runs");
  Session s;
  for (size_t i = 0; i < j["runs"].size(); ++i) {
    const auto& rj = j["runs"][i];
    const std::string at = "runs[" + std::to_string(i) + "]";
    if (!rj.is_object()) {
      r.fail(at, "must be an object; got " + spec::kindName(rj));
      continue;
    }
    r.rejectUnknown(rj, at + ".", {"name", "run_dir", "init_from", "config"});
    std::string name, runDir, initFrom;
    if (!rj.contains("name")) r.fail(at + ".name", "is missing");
    r.read(rj, "name", at + ".", name);
    r.read(rj, "run_dir", at + ".", runDir);
    r.read(rj, "init_from", at + ".", initFrom);
    RunEntry e;
    if (!rj.contains("config")) {
      r.fail(at + ".config", "is missing");
    } else {
      try {
        e.config = readSavedRunConfig(rj["config"]);
      } catch (const std::exception& ex) {
        r.fail(at + ".config", spec::plainMessage(ex));
      }
    }
    e.name = QString::fromStdString(name);
    e.runDir = QString::fromStdString(runDir);
    e.initFrom = QString::fromStdString(initFrom);
    s.runs.push_back(std::move(e));
  }
  int current = 0;
  std::string theme = "light", windowState;
  r.read(j, "current", "", current);
  r.read(j, "theme", "", theme);
  r.read(j, "window_state", "", windowState);
  if (!r.empty()) {
    std::string m = "invalid session:";
    for (const auto& line : r.lines()) m += "\n  " + line;
    throw std::invalid_argument(m);
  }
  s.current = std::clamp(current, 0, static_cast<int>(s.runs.size()) - 1);
  s.theme = QString::fromStdString(theme);
  s.windowState = QByteArray::fromBase64(QByteArray::fromStdString(windowState));
  return s;
}

Session Session::load(const QString& path) {
  // readBoundedFile's errors already name the file and the reason.
  const std::string text = files::readBoundedFile(QFile::encodeName(path).toStdString());
  try {
    return fromJson(QString::fromStdString(text));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path.toStdString() + ": " + e.what());
  }
}

void Session::save(const QString& path) const {
  files::writeFileAtomically(path.toStdString(), toJson().toStdString() + "\n");
}

QStringList runProblems(const RunEntry& entry) {
  QStringList out;
  for (const auto& p : model_core::validateRunConfig(entry.config)) out << QString::fromStdString(p);
  return out;
}

QStringList invalidRuns(const Session& session) {
  QStringList out;
  for (const auto& run : session.runs)
    if (const auto problems = runProblems(run); !problems.isEmpty())
      out << QString("\u201c%1\u201d: %2%3")
                 .arg(run.name, problems.front(),
                      problems.size() > 1 ? QString(" (and %1 more)").arg(problems.size() - 1) : QString());
  return out;
}

model_core::RunConfig defaultRunConfig(const spec::AttentionSpec& s, const QString& task) {
  model_core::RunConfig c;
  c.task.name = task.toStdString();
  // Reversing 16 digits: MHSA and dense THSA reach 100% exact match by step 100, 64 heads of size
  // 1 (Tuformer's heads-only) only by step 300-400 (measured over three seeds, docs/decisions.md),
  // so the first runs learn within a minute and differ. Sorting 8 digits is learnt as quickly.
  const bool reverse = task == "reverse", sort = task == "sort";
  c.task.seq_len = reverse ? 56 : sort ? 32 : 64;
  c.task.algorithmic_length = reverse ? 16 : 8;
  c.task.algorithmic_alphabet = 10;
  c.model.layers = 2;
  c.model.d_model = s.sizes.F;
  c.model.ffn_multiplier = 4;
  auto spec = s;
  spec.causal = true;
  spec.sizes.seq_len = c.task.seq_len;
  c.model.attention = {spec};
  c.train.steps = reverse ? 600 : sort ? 1000 : 2000;
  c.train.batch = 32;
  c.train.lr = 2e-3;
  c.train.warmup = 100;
  c.train.eval_interval = reverse || sort ? 50 : 100;
  c.train.eval_examples = 128;
  c.train.checkpoint_interval = reverse ? 200 : 250;
  c.train.inspect_interval = 25;
  return c;
}

Session defaultSession() {
  // Three designs at MHSA's attention parameter count (F = 64, H = 4, D = 16): MHSA; dense THSA,
  // whose R = H·D is chosen so that its count is the closest (the dense core adds R² parameters);
  // and Tuformer's heads-only core, 64 heads of size 1, which learns visibly later (a head of size
  // 1 scores keys by one number: it cannot single out a middle position sharply).
  auto mhsa = spec::makeSpecPreset("mhsa");
  const auto target = spec::parameterCount(mhsa);
  spec::AttentionSpec best;
  std::int64_t bestGap = -1;
  for (int D = 1; D <= 32; ++D) {
    auto t = spec::makeSpecPreset("thsa");
    t.sizes.H = 4;
    t.sizes.D = D;
    t.sizes.R = 4 * D;
    t.core = spec::makeCorePreset("thsa", 4, D);
    const auto gap = std::llabs(spec::parameterCount(t) - target);
    if (bestGap < 0 || gap < bestGap) {
      bestGap = gap;
      best = t;
    }
  }
  auto headsOnly = spec::makeSpecPreset("thsa");
  headsOnly.sizes.H = 64;
  headsOnly.sizes.D = 1;
  headsOnly.sizes.R = 64;
  headsOnly.core = spec::makeCorePreset("heads_only", 64, 1);
  Session s;
  s.runs.push_back({"MHSA", defaultRunConfig(mhsa, "reverse"), {}, {}});
  s.runs.push_back({"THSA", defaultRunConfig(best, "reverse"), {}, {}});
  s.runs.push_back({"THSA heads-only (64 heads of size 1)", defaultRunConfig(headsOnly, "reverse"), {}, {}});
  s.runs.push_back(referenceDenseThsaRun());
  s.current = 1;
  return s;
}

RunEntry referenceDenseThsaRun() {
  auto t = spec::makeSpecPreset("thsa");
  t.sizes.F = 128;
  t.sizes.H = 4;
  t.sizes.D = 32;
  t.sizes.R = 128;
  t.core = spec::makeCorePreset("thsa", 4, 32);
  auto c = defaultRunConfig(t, "char_lm");
  c.task.seq_len = 128;
  c.model.attention.front().sizes.seq_len = 128;
  c.model.layers = 4;
  c.model.positions = "learned";
  c.model.tied_embeddings = true;
  c.train.lr = 1e-3;
  c.train.weight_decay = 0.01;
  c.train.grad_clip = 1.0;
  return {"THSA dense · reference size", c, {}, {}};
}

QString resourceDirectory(const QString& kind) {
  const QString bin = QCoreApplication::applicationDirPath();
  // Installed: DATADIR/tensorscope/KIND relative to the binary's BINDIR (GNUInstallDirs), wherever
  // the prefix was moved.
  const QDir installed(QDir(bin).filePath(QStringLiteral(TENSORSCOPE_BIN_TO_DATA "/tensorscope/") + kind));
  if (installed.exists()) return installed.canonicalPath();
  // A binary of this build tree (the explorer, the tests) reads the source tree's resources; an
  // installed one never does.
  const QString build = QFileInfo(QStringLiteral(TENSORSCOPE_BUILD_DIR)).canonicalFilePath();
  const QString here = QFileInfo(bin).canonicalFilePath();
  if (!build.isEmpty() && (here == build || here.startsWith(build + '/')))
    return QStringLiteral(TENSORSCOPE_SOURCE_DIR "/resources/") + kind;
  return {};
}

QStringList exampleSessionPaths() {
  QStringList out;
  const QDir d(resourceDirectory(QStringLiteral("sessions")));
  if (d.path().isEmpty() || !d.exists()) return out;
  for (const auto& f : d.entryList({"*.json"}, QDir::Files, QDir::Name)) out << d.absoluteFilePath(f);
  return out;
}

QString withSessionSuffix(const QString& path) {
  if (path.isEmpty() || path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) return path;
  return path + QString::fromLatin1(kSessionSuffix);
}

bool isExampleSession(const QString& path) {
  const QString canonical = QFileInfo(path).canonicalFilePath();
  if (canonical.isEmpty()) return false;
  for (const QString& e : exampleSessionPaths())
    if (QFileInfo(e).canonicalFilePath() == canonical) return true;
  return false;
}

QString autosavePath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/autosave.session.json";
}

bool autosaveWorthRestoring() {
  return QFileInfo::exists(autosavePath()) && !QSettings().value("cleanExit", true).toBool();
}

void setCleanExit(bool clean) { QSettings().setValue("cleanExit", clean); }

QStringList recentSessions() { return QSettings().value("recentSessions").toStringList(); }

void rememberRecentSession(const QString& path) {
  auto recent = recentSessions();
  recent.removeAll(path);
  recent.prepend(path);
  QSettings().setValue("recentSessions", recent.mid(0, 8));
}

}  // namespace tensorscope::app
