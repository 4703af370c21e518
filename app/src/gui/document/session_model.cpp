#include "gui/document/session_model.h"

#include "spec/slot_values.h"

#include <algorithm>
#include <stdexcept>

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include "gui/document/run_status.h"
#include "gui/document/spec_command.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "spec/design_names.h"
#include "spec/validation.h"

namespace tensorscope::app {

SessionModel::SessionModel(QObject* parent) : QObject(parent) {
  connect(&undo_, &QUndoStack::cleanChanged, this, [this] { Q_EMIT modifiedChanged(isModified()); });
}

void SessionModel::markChanged() {
  Q_EMIT contentChanged();
  if (changed_) return;
  const bool was = isModified();
  changed_ = true;
  if (!was) Q_EMIT modifiedChanged(true);
}

void SessionModel::setUnchanged() {
  const bool was = isModified();
  changed_ = false;
  undo_.setClean();
  if (was) Q_EMIT modifiedChanged(false);
}

void SessionModel::reset(Session session) {
  if (trainingId_ != 0) {
    Q_EMIT refused("A run is training; stop it before replacing the session.");
    return;
  }
  if (session.runs.empty()) {
    Q_EMIT refused("A session needs at least one run: nothing was replaced.");
    return;
  }
  session_ = std::move(session);
  statuses_.clear();
  overlay_.clear();
  lockHolders_.clear();
  nameFollows_.clear();
  for (auto& r : session_.runs) {
    r.id = nextId_++;
    statuses_ << runStatusText(r.runDir);  // how its last training ended, not its path (finding N21)
    overlay_ << true;
  }
  session_.current = std::clamp(session_.current, 0, std::max(0, count() - 1));
  layer_ = 0;
  undo_.clear();
  setUnchanged();
  Q_EMIT sessionReset();
  Q_EMIT runsChanged();
  Q_EMIT currentChanged(currentRun().id);
}

void SessionModel::setPath(const QString& path) {
  if (path == path_) return;
  path_ = path;
  Q_EMIT pathChanged(path);
}

void SessionModel::open(const QString& path) {
  if (trainingId_ != 0) throw std::runtime_error("a run is training; stop it before opening another session");
  auto s = Session::load(path);
  setPath(path);
  reset(std::move(s));
}

void SessionModel::save(const QString& path) {
  session_.save(path);
  setPath(path);
  setUnchanged();
}

void SessionModel::detachFromFile(bool unsavedWork) {
  setPath({});
  if (unsavedWork) markChanged();
}

void SessionModel::setViewState(const QByteArray& windowState, const QString& theme) {
  session_.windowState = windowState;
  session_.theme = theme;
}

int SessionModel::indexOf(quint64 runId) const {
  const auto it = std::find_if(session_.runs.begin(), session_.runs.end(), [&](const RunEntry& r) { return r.id == runId; });
  return it == session_.runs.end() ? -1 : static_cast<int>(it - session_.runs.begin());
}

void SessionModel::select(int index) {
  if (index < 0 || index >= count()) return;
  const bool changed = index != session_.current;
  session_.current = index;
  if (changed) layer_ = std::clamp(layer_, 0, layerCount(index) - 1);
  Q_EMIT runsChanged();
  Q_EMIT currentChanged(currentRun().id);
}

quint64 SessionModel::addRun(RunEntry entry, const QString& status) {
  entry.id = nextId_++;
  const quint64 id = entry.id;
  session_.runs.push_back(std::move(entry));
  statuses_ << status;
  overlay_ << true;
  markChanged();
  select(count() - 1);
  return id;
}

bool SessionModel::removeRun(int index, QString* why) {
  QString reason;
  if (index < 0 || index >= count()) reason = "There is no such run.";
  else if (isTraining(index)) reason = "It is training; stop it first.";
  else if (count() <= 1) reason = "A session keeps at least one run.";
  if (!reason.isEmpty()) {
    if (why) *why = reason;
    return false;
  }
  const RunEntry removed = run(index);
  session_.runs.erase(session_.runs.begin() + index);
  statuses_.removeAt(index);
  overlay_.removeAt(index);
  markChanged();
  Q_EMIT runRemoved(removed.id, removed.name);
  session_.current = -1;  // select() below reports the new current run
  select(std::min(index, count() - 1));
  return true;
}

void SessionModel::setOverlay(int index, bool shown) {
  if (index < 0 || index >= count() || overlay_[index] == shown) return;
  overlay_[index] = shown;
  Q_EMIT overlayChanged(run(index).id, shown);
  Q_EMIT runsChanged();
}

void SessionModel::setStatus(quint64 runId, const QString& status) {
  const int i = indexOf(runId);
  if (i < 0) return;
  statuses_[i] = status;
  Q_EMIT statusChanged(runId);
  Q_EMIT runsChanged();
}

QString SessionModel::statusLine(int index) const {
  if (index < 0 || index >= count()) return {};
  if (isTraining(index)) return status(index);
  const RunEntry& r = run(index);
  if (const auto why = runProblems(r); !why.isEmpty()) {
    const QString first = why.front();  // "field: message"; the field is in the tooltip
    return "invalid design (fix it in the Design dock): " + first.mid(first.indexOf(": ") + 2);
  }
  if (const QString holder = lockHolders_.value(r.id); !holder.isEmpty()) return "training elsewhere: " + holder;
  if (!r.runDir.isEmpty() && !QFileInfo::exists(r.runDir))
    return "its run folder is gone (deleted or moved): " + r.runDir;
  return status(index);
}

void SessionModel::setLockHolder(quint64 runId, const QString& holder) {
  if (lockHolders_.value(runId) == holder) return;
  if (holder.isEmpty()) lockHolders_.remove(runId);
  else lockHolders_.insert(runId, holder);
  Q_EMIT runsChanged();
}

bool SessionModel::hasCheckpoint(int index) const {
  if (index < 0 || index >= count() || run(index).runDir.isEmpty()) return false;
  return model_core::inspectRunDirectory(QFile::encodeName(run(index).runDir).toStdString()).checkpoint_step >= 0;
}

void SessionModel::setRunDirectory(quint64 runId, const QString& dir) {
  const int i = indexOf(runId);
  if (i < 0 || session_.runs[static_cast<size_t>(i)].runDir == dir) return;
  session_.runs[static_cast<size_t>(i)].runDir = dir;
  markChanged();
}

void SessionModel::setCurrentConfig(const model_core::RunConfig& config) {
  auto& run = session_.runs[static_cast<size_t>(current())];
  if (isTraining(current())) return;  // what trains stays what is shown
  if (model_core::runConfigToJson(run.config) == model_core::runConfigToJson(config)) return;
  run.config = config;
  markChanged();
  layer_ = std::clamp(layer_, 0, layerCount(current()) - 1);
  Q_EMIT designChanged(run.id);
}

std::vector<spec::AttentionSpec> SessionModel::layerDesigns(const model_core::RunConfig& config) {
  std::vector<spec::AttentionSpec> out;
  const int n = std::max(1, config.model.layers);
  if (config.model.attention.size() != 1 && static_cast<int>(config.model.attention.size()) != n)
    return config.model.attention;  // inconsistent (validation names it): shown as it is
  for (int l = 0; l < n; ++l) out.push_back(model_core::layerSpec(config.model, l));
  return out;
}

int SessionModel::layerCount(int index) const {
  const auto& model = run(index).config.model;
  return model.attention.size() == 1 ? std::max(1, model.layers) : std::max<int>(1, static_cast<int>(model.attention.size()));
}

int SessionModel::currentLayer() const { return std::clamp(layer_, 0, layerCount(current()) - 1); }

void SessionModel::setCurrentLayer(int layer) {
  layer = std::clamp(layer, 0, layerCount(current()) - 1);
  if (layer == layer_) return;
  layer_ = layer;
  Q_EMIT currentLayerChanged(layer);
}

spec::AttentionSpec SessionModel::currentSpec() const {
  const auto& attention = currentRun().config.model.attention;
  return attention.size() == 1 ? attention.front() : attention.at(static_cast<size_t>(currentLayer()));
}

namespace {

/// A whole-design edit made on the shown layer reaches every layer, but each layer keeps what it
/// has of its own where the edit left the shown layer's unchanged: its C (a fork's learned C per
/// layer) and its drawn head mixings and MTA kernels (spec/slot_values.h).
void keepOwnLayerValues(spec::AttentionSpec& edited, const spec::AttentionSpec& own, const spec::AttentionSpec& shown) {
  if (edited.core == shown.core && spec::hasCore(edited.variant)) edited.core = own.core;
  auto& e = edited.slots;
  const auto& o = own.slots;
  const auto& w = shown.slots;
  if (e.pre_mixing == w.pre_mixing) e.pre_mixing = o.pre_mixing;
  if (e.post_mixing == w.post_mixing) e.post_mixing = o.post_mixing;
  if (e.mta.kernel_values == w.mta.kernel_values) e.mta.kernel_values = o.mta.kernel_values;
  if (e.mta.post_kernel_values == w.mta.post_kernel_values) e.mta.post_kernel_values = o.mta.post_kernel_values;
}

}  // namespace

void SessionModel::editDesign(const spec::AttentionSpec& after, const QString& what) {
  const auto shown = currentSpec();
  auto layers = layerDesigns(currentRun().config);
  for (auto& layer : layers) {
    const auto own = layer;
    layer = after;
    keepOwnLayerValues(layer, own, shown);
  }
  pushDesign(std::move(layers), what, -1);
}

void SessionModel::editCurrentLayer(const spec::AttentionSpec& after, const QString& what, int stroke) {
  // A C shared by every layer stays shared; a layer with its own C (a fork of a trained run) is
  // edited alone.
  const auto& config = currentRun().config;
  if (config.model.attention.size() == 1) return pushDesign({after}, what, stroke);
  auto layers = layerDesigns(config);
  layers[static_cast<size_t>(currentLayer())] = after;
  pushDesign(std::move(layers), what, stroke);
}

void SessionModel::pushDesign(std::vector<spec::AttentionSpec> after, const QString& what, int stroke) {
  // Drawn C′ and kernel values that no longer fit (H changed, the mixing switched off) are dropped:
  // the slot starts from its identity again, never from values of another shape.
  for (auto& layer : after) spec::dropStaleSlotValues(layer);
  if (isTraining(current())) {
    Q_EMIT refused(currentRun().name + " trains with this design: edit C to fork the run.");
    return;
  }
  // One shared spec when every layer has the same design (what presets and plain edits give).
  if (std::all_of(after.begin(), after.end(), [&](const spec::AttentionSpec& l) { return l == after.front(); }))
    after.resize(1);
  const auto& run = currentRun();
  if (after == run.config.model.attention) return;
  if (hasCheckpoint(current())) {
    // What the checkpoint holds must stay the run's design (a resume loads its weights): the edit
    // goes to a fork, as a C edit of a trained run does.
    const quint64 id = run.id;
    Q_EMIT forkNeeded(id, after, what);
    Q_EMIT designChanged(id);  // the docks show the run's own design again if it is still shown
    return;
  }
  undo_.push(new SpecCommand(this, run.id, run.config.model.attention, std::move(after), what, stroke));
}

QString SessionModel::designRunName(const spec::AttentionSpec& s) {
  if (!spec::validate(s).empty()) return {};
  const QString name = QString::fromStdString(spec::nameDesigns(s).front().name);
  // "multi-head latent attention (DeepSeek MLA)" → "MLA": a run is named by the acronym in the
  // name's brackets where there is one, else by the whole name.
  const auto acronym = [](const QString& word) {
    return word.size() >= 2 && word.contains(QRegularExpression("^[A-Z][A-Z0-9-]*$"));
  };
  const int open = name.lastIndexOf(" (");
  if (open > 0 && name.endsWith(')')) {
    const QString last = name.mid(open + 2).chopped(1).section(' ', -1);
    if (acronym(last)) return last;
  }
  // "THSA (Tuformer), dense core" → "THSA": an acronym that opens the name, before its brackets.
  const int first = name.indexOf(" (");
  if (first > 0 && acronym(name.left(first))) return name.left(first);
  return name;
}

bool SessionModel::followDesignName(RunEntry& run, const spec::AttentionSpec& after) {
  // The name the run's name follows: remembered across invalid designs (they have none).
  const QString follows = nameFollows_.contains(run.id) ? nameFollows_.value(run.id)
                                                        : designRunName(layerDesigns(run.config).front());
  if (follows.isEmpty()) return false;
  const bool named = run.name == follows || run.name.startsWith(follows + " fork@");
  if (!named) {
    nameFollows_.remove(run.id);  // a name of the user's own: it stays
    return false;
  }
  nameFollows_.insert(run.id, follows);
  const QString next = designRunName(after);
  if (next.isEmpty() || next == follows) return false;
  run.name = next + run.name.mid(follows.size());
  nameFollows_.insert(run.id, next);
  return true;
}

bool SessionModel::applyDesign(quint64 runId, const std::vector<spec::AttentionSpec>& attention) {
  const int index = indexOf(runId);
  if (index < 0) {
    Q_EMIT refused("The run this edit belonged to was removed: nothing changed.");
    return false;
  }
  if (isTraining(index)) {
    Q_EMIT refused(run(index).name + " trains with this design: the edit stays (edit C to fork the run).");
    return false;
  }
  if (hasCheckpoint(index)) {
    Q_EMIT refused(run(index).name + " has trained with this design since: it stays as it trained (edit its design "
                   "to fork it).");
    return false;
  }
  if (index != current()) select(index);
  auto& entry = session_.runs[static_cast<size_t>(index)];
  const bool renamed = followDesignName(entry, attention.front());
  auto& config = entry.config;
  config.model.attention = attention;
  config.model.d_model = attention.front().sizes.F;
  layer_ = std::clamp(layer_, 0, layerCount(index) - 1);
  if (renamed) Q_EMIT runsChanged();
  Q_EMIT designChanged(runId);
  Q_EMIT contentChanged();
  return true;
}

void SessionModel::carryDesignEdit(const std::vector<spec::AttentionSpec>& before,
                                   const std::vector<spec::AttentionSpec>& after, const QString& what) {
  auto layers = layerDesigns(currentRun().config);
  const auto layer = [](const std::vector<spec::AttentionSpec>& v, size_t i) { return v[std::min(i, v.size() - 1)]; };
  for (size_t i = 0; i < layers.size() && !before.empty() && !after.empty(); ++i) {
    auto edited = layer(after, i);
    keepOwnLayerValues(edited, layers[i], layer(before, i));
    layers[i] = std::move(edited);
  }
  pushDesign(std::move(layers), what, -1);
}

namespace {

/// Undo command of a positions edit (model.positions of one run).
class PositionsCommand : public QUndoCommand {
 public:
  PositionsCommand(SessionModel* model, quint64 runId, QString before, QString after, const QString& text)
      : model_(model), runId_(runId), before_(std::move(before)), after_(std::move(after)) {
    setText(text);
  }
  void undo() override {
    if (!model_->applyPositions(runId_, before_)) setObsolete(true);
  }
  void redo() override {
    if (!model_->applyPositions(runId_, after_)) setObsolete(true);
  }

 private:
  SessionModel* model_;
  quint64 runId_;
  QString before_, after_;
};

}  // namespace

QString SessionModel::positionsRefusal(const model_core::RunConfig& config, const QString& positions) {
  auto c = config;
  c.model.positions = positions.toStdString();
  QStringList why;
  for (const auto& line : model_core::validateRunConfig(c))
    if (line.rfind("model.positions", 0) == 0 || line.rfind("model.tp_role_embedding", 0) == 0)
      why << QString::fromStdString(line);
  return why.join("; ");
}

bool SessionModel::editPositions(const QString& positions, const QString& what) {
  const RunEntry& run = currentRun();
  if (isTraining(current())) {
    Q_EMIT refused(run.name + " trains with these positions: stop it before changing them.");
    return false;
  }
  if (QString::fromStdString(run.config.model.positions) == positions) return true;
  if (const QString why = positionsRefusal(run.config, positions); !why.isEmpty()) {
    Q_EMIT refused("Positions " + positions + " refused for " + run.name + ": " + why);
    return false;
  }
  if (hasCheckpoint(current())) {
    auto config = run.config;
    config.model.positions = positions.toStdString();
    Q_EMIT settingsForkNeeded(run.id, config);
    Q_EMIT designChanged(run.id);  // the dock shows the run's own positions again if it is still shown
    return true;
  }
  undo_.push(new PositionsCommand(this, run.id, QString::fromStdString(run.config.model.positions), positions, what));
  return true;
}

bool SessionModel::applyPositions(quint64 runId, const QString& positions) {
  const int index = indexOf(runId);
  if (index < 0) {
    Q_EMIT refused("The run this edit belonged to was removed: nothing changed.");
    return false;
  }
  if (isTraining(index) || hasCheckpoint(index)) {
    Q_EMIT refused(run(index).name + (isTraining(index) ? " trains" : " has trained") +
                   " with its positions since: they stay (change them to fork it).");
    return false;
  }
  if (index != current()) select(index);
  session_.runs[static_cast<size_t>(index)].config.model.positions = positions.toStdString();
  Q_EMIT designChanged(runId);
  Q_EMIT contentChanged();
  return true;
}

void SessionModel::setTrainingRun(quint64 runId, bool resumed) {
  if (runId == trainingId_) return;
  trainingId_ = runId;
  trainingResumed_ = runId != 0 && resumed;
  const int i = runId ? indexOf(runId) : -1;
  if (i >= 0) trainingSpec_ = run(i).config.model.attention.front();
  Q_EMIT trainingChanged(runId);
}

}  // namespace tensorscope::app
