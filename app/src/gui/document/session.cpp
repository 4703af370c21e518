#include "gui/document/session.h"

#include <QFile>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "spec/json_reader.h"
#include "spec/spec_json.h"

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

}  // namespace tensorscope::app
