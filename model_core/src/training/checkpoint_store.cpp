#include "training/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string_view>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPointer = "checkpoint.json";
constexpr const char* kManifest = "manifest.json";
constexpr const char* kDirectory = "checkpoints";
constexpr const char* kStagePrefix = ".stage-";

std::runtime_error sysError(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

/// `latest` -> the current checkpoint's directory: a convenience for people and scripts
/// (RUN/latest/model.safetensors), replaced by one rename after the pointer; Tensorscope itself
/// reads checkpoint.json. Best effort: a file system without symbolic links simply has none.
void linkLatest(const std::string& runDir, const std::string& relative) {
  const std::string link = runDir + "/latest", tmp = runDir + "/.latest.tmp" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  files::fileOperation("symlink");
  if (::symlink(relative.c_str(), tmp.c_str()) != 0) return;
  files::fileOperation("rename");
  if (::rename(tmp.c_str(), link.c_str()) != 0) ::unlink(tmp.c_str());
}

void fsyncPath(const std::string& path, bool directory) {
  files::fileOperation("fsync");
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw sysError("cannot open", path);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  errno = err;
  if (rc != 0) throw sysError("cannot flush", path);
}

std::string stepName(std::int64_t step) {
  char b[40];
  std::snprintf(b, sizeof b, "step-%012lld.", static_cast<long long>(step));
  std::random_device rd;
  char tag[16];
  std::snprintf(tag, sizeof tag, "%08x", rd());
  return std::string(b) + tag;
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// The temporary file of an atomic write of `target` (writeFileAtomically and the safetensors
/// writer: "." + target + ".tmp" + digits), or of any target when `target` is empty.
bool isTemporaryOf(const std::string& name, std::string_view target) {
  if (name.size() < 2 || name[0] != '.') return false;
  const auto at = name.rfind(".tmp");
  if (at == std::string::npos || at < 2 || !allDigits(std::string_view(name).substr(at + 4))) return false;
  return target.empty() || std::string_view(name).substr(1, at - 1) == target;
}

bool isTemporaryName(const std::string& name) { return isTemporaryOf(name, {}); }

/// "step-" + 12 digits + "." + 8 hex digits: a checkpoint directory stepName() made.
bool isStepName(const std::string& name) {
  if (name.size() != 5 + 12 + 1 + 8 || name.rfind("step-", 0) != 0 || name[17] != '.') return false;
  return allDigits(std::string_view(name).substr(5, 12)) &&
         std::all_of(name.begin() + 18, name.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

bool isStageName(const std::string& name) {
  return name.rfind(kStagePrefix, 0) == 0 && allDigits(std::string_view(name).substr(std::strlen(kStagePrefix)));
}

/// Every name Tensorscope writes at the top of a run folder (the legacy layout's files included).
constexpr const char* kRunFileNames[] = {
    "checkpoint.json", "config.json",    "metrics.jsonl",    "metrics.csv",         "run_status.json",
    "inspections.jsonl", "inspection.safetensors", "init.json", "train.lock", "latest",
    "model.safetensors", "optimizer.safetensors", "trainer_state.json"};

bool isRunFileName(const std::string& name) {
  for (const char* known : kRunFileNames)
    if (name == known) return true;
  return false;
}

/// A temporary file of one of the run folder's own files (or of the `latest` link).
bool isRunTemporary(const std::string& name) {
  for (const char* known : kRunFileNames)
    if (isTemporaryOf(name, known)) return true;
  return false;
}

struct Pointer {
  std::string current, previous;  // relative to the run directory
};

std::optional<Pointer> readPointer(const std::string& runDir, std::string* problem) {
  const std::string path = runDir + "/" + kPointer;
  if (!fs::exists(path)) return std::nullopt;
  try {
    const auto j = spec::parseUntrustedJson(files::readBoundedFile(path));
    if (!spec::hasEnvelope(j, "tensorscope.checkpoint_pointer", 1))
      throw std::invalid_argument("not a tensorscope.checkpoint_pointer of version 1");
    Pointer p;
    p.current = j.at("current").get<std::string>();
    if (j.contains("previous") && j["previous"].is_string()) p.previous = j["previous"].get<std::string>();
    for (const auto* name : {&p.current, &p.previous})
      if (!name->empty() && (name->rfind(std::string(kDirectory) + "/", 0) != 0 || name->find("..") != std::string::npos))
        throw std::invalid_argument("names " + *name + ", outside " + kDirectory + "/");
    return p;
  } catch (const std::exception& e) {
    if (problem) *problem = path + " is damaged: " + e.what();
    return Pointer{};
  }
}

}  // namespace

std::string fnv1a64Hex(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

CheckpointStore::CheckpointStore(std::string runDir) : runDir_(std::move(runDir)) {}

bool CheckpointStore::hasCommitted() const { return fs::exists(runDir_ + "/" + kPointer); }

void CheckpointStore::requireOwnCheckpointsFolder() const {
  const fs::path dir = fs::path(runDir_) / kDirectory;
  std::error_code ec;
  if (fs::is_symlink(dir, ec))
    throw std::invalid_argument(
        dir.string() + " is a symbolic link (to " + fs::read_symlink(dir, ec).string() +
        "); Tensorscope removes old checkpoints from a run's checkpoints folder and never does so through a "
        "link (two runs sharing one target would delete each other's checkpoints). Put the whole run folder on "
        "the other disk instead (the run folder itself may be a link), or remove the link");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw std::invalid_argument(dir.string() + " is not a folder; a run keeps its checkpoints in that folder");
}

std::string CheckpointStore::stage() const {
  requireOwnCheckpointsFolder();
  const std::string dir = runDir_ + "/" + kDirectory + "/" + kStagePrefix + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(dir, ec);
  files::fileOperation("mkdir");
  fs::create_directories(dir);
  return dir;
}

CheckpointInfo CheckpointStore::commit(const std::string& staged, std::int64_t step,
                                       const std::map<std::string, std::int64_t>& counters) const {
  requireOwnCheckpointsFolder();
  nlohmann::json files = nlohmann::json::array();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(staged))
    if (e.is_regular_file() && !isTemporaryName(e.path().filename().string())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string path = staged + "/" + name;
    fsyncPath(path, false);
    const std::string bytes = files::readWholeFile(path);  // also proves the file reads back whole
    files.push_back({{"name", name}, {"bytes", bytes.size()}, {"fnv1a64", fnv1a64Hex(bytes)}});
  }
  nlohmann::json manifest = {{"format", "tensorscope.checkpoint"}, {"version", 1}, {"step", step},
                             {"files", files},                   {"counters", counters}};
  files::writeFileAtomically(staged + "/" + kManifest, manifest.dump(2) + "\n");
  fsyncPath(staged, true);

  const std::string relative = std::string(kDirectory) + "/" + stepName(step);
  const std::string target = runDir_ + "/" + relative;
  files::fileOperation("rename");
  if (::rename(staged.c_str(), target.c_str()) != 0) throw sysError("cannot commit checkpoint", target);
  fsyncPath(runDir_ + "/" + kDirectory, true);

  std::string problem;
  const auto old = readPointer(runDir_, &problem);
  nlohmann::json pointer = {{"format", "tensorscope.checkpoint_pointer"}, {"version", 1}, {"current", relative}};
  pointer["previous"] = old && !old->current.empty() ? nlohmann::json(old->current) : nlohmann::json(nullptr);
  files::writeFileAtomically(runDir_ + "/" + kPointer, pointer.dump(2) + "\n");  // the commit point
  linkLatest(runDir_, relative);

  // Checkpoints older than the previous one are no longer needed; nothing else in the folder is
  // touched (only names stepName() makes go).
  for (const auto& e : fs::directory_iterator(runDir_ + "/" + kDirectory)) {
    const std::string name = e.path().filename().string(), rel = std::string(kDirectory) + "/" + name;
    if (!isStepName(name) || rel == relative || (old && rel == old->current)) continue;
    files::fileOperation("remove");
    std::error_code ec;
    fs::remove_all(e.path(), ec);
  }
  return CheckpointInfo{target, step, counters};
}

std::string verifyCheckpoint(const std::string& dir, CheckpointInfo* info) {
  try {
    if (!fs::is_directory(dir)) return dir + " is missing";
    const auto m = spec::parseUntrustedJson(files::readBoundedFile(dir + "/" + kManifest));
    if (!spec::hasEnvelope(m, "tensorscope.checkpoint", 1))
      return dir + "/" + kManifest + " is not a tensorscope.checkpoint manifest of version 1";
    const auto step = m.at("step").get<std::int64_t>();
    if (step < 0) return dir + "/" + kManifest + " gives a negative step";
    for (const auto& f : m.at("files")) {
      const auto name = f.at("name").get<std::string>();
      if (name.empty() || name.find('/') != std::string::npos || name == "..")
        return dir + "/" + kManifest + " names an invalid file \"" + name + "\"";
      const std::string path = dir + "/" + name;
      if (!fs::exists(path)) return path + " is missing";
      const std::string bytes = files::readWholeFile(path);
      if (bytes.size() != f.at("bytes").get<std::uint64_t>())
        return path + " holds " + std::to_string(bytes.size()) + " bytes, its manifest says " +
               std::to_string(f.at("bytes").get<std::uint64_t>());
      if (fnv1a64Hex(bytes) != f.at("fnv1a64").get<std::string>())
        return path + " does not match its manifest's digest (the file was changed or damaged)";
    }
    if (info) {
      info->dir = dir;
      info->step = step;
      info->counters.clear();
      if (m.contains("counters"))
        for (const auto& [k, v] : m["counters"].items()) info->counters[k] = v.get<std::int64_t>();
    }
    return "";
  } catch (const std::exception& e) {
    return dir + "/" + kManifest + " is damaged: " + e.what();
  }
}

std::optional<CheckpointInfo> CheckpointStore::latest(std::vector<std::string>* notes) const {
  std::string problem;
  const auto pointer = readPointer(runDir_, &problem);
  if (!pointer) return std::nullopt;
  std::vector<std::string> candidates, reasons;
  if (!problem.empty()) {
    reasons.push_back(problem);
    // The pointer is unreadable: every checkpoint directory, newest step first.
    std::vector<std::pair<std::string, std::int64_t>> found;
    if (fs::is_directory(runDir_ + "/" + kDirectory))
      for (const auto& e : fs::directory_iterator(runDir_ + "/" + kDirectory)) {
        CheckpointInfo info;
        if (e.is_directory() && verifyCheckpoint(e.path().string(), &info).empty())
          found.emplace_back(e.path().string(), info.step);
      }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& f : found) candidates.push_back(f.first);
  } else {
    candidates.push_back(runDir_ + "/" + pointer->current);
    if (!pointer->previous.empty()) candidates.push_back(runDir_ + "/" + pointer->previous);
  }
  for (const auto& dir : candidates) {
    CheckpointInfo info;
    const std::string why = verifyCheckpoint(dir, &info);
    if (why.empty()) {
      if (notes)
        for (const auto& r : reasons) notes->push_back(r + "; using the checkpoint of step " + std::to_string(info.step));
      return info;
    }
    reasons.push_back(why);
  }
  std::string m = runDir_ + " has no complete checkpoint left:";
  for (const auto& r : reasons) m += "\n  " + r;
  throw std::invalid_argument(m);
}

void CheckpointStore::pointAt(const CheckpointInfo& checkpoint) const {
  requireOwnCheckpointsFolder();
  const std::string relative = std::string(kDirectory) + "/" + fs::path(checkpoint.dir).filename().string();
  nlohmann::json pointer = {{"format", "tensorscope.checkpoint_pointer"}, {"version", 1}, {"current", relative},
                            {"previous", nullptr}};
  files::writeFileAtomically(runDir_ + "/" + kPointer, pointer.dump(2) + "\n");
  linkLatest(runDir_, relative);
}

std::vector<std::string> CheckpointStore::removeLitter() const {
  requireOwnCheckpointsFolder();
  std::vector<std::string> removed;
  std::error_code ec;
  auto remove = [&](const fs::path& p) {
    files::fileOperation("remove");
    if (fs::remove_all(p, ec) > 0) removed.push_back(p.string());
  };
  // Only names Tensorscope makes: the temporaries of its own files, staging directories and
  // checkpoint directories no pointer names. A user's file, folder or link stays where it is.
  if (fs::is_directory(runDir_))
    for (const auto& e : fs::directory_iterator(runDir_))
      if (isRunTemporary(e.path().filename().string())) remove(e.path());
  const std::string dir = runDir_ + "/" + kDirectory;
  if (!fs::is_directory(dir)) return removed;
  std::string problem;
  const auto pointer = readPointer(runDir_, &problem);
  const bool known = pointer && problem.empty();
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string(), rel = std::string(kDirectory) + "/" + name;
    if (isStageName(name)) {
      remove(e.path());
    } else if (isStepName(name)) {
      // With an unreadable pointer no checkpoint goes: the rest may be all that is left.
      if ((known && rel != pointer->current && rel != pointer->previous) || !pointer)
        remove(e.path());
      else if (e.is_directory() && !e.is_symlink())
        for (const auto& f : fs::directory_iterator(e.path()))
          if (isTemporaryName(f.path().filename().string())) remove(f.path());
    }
  }
  return removed;
}

std::vector<std::string> foreignRunFolderEntries(const std::string& runDir) {
  std::vector<std::string> foreign;
  std::error_code ec;
  if (!fs::is_directory(runDir, ec)) return foreign;
  for (const auto& e : fs::directory_iterator(runDir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == kDirectory) {
      if (e.is_symlink()) {
        foreign.push_back(name + " (a symbolic link)");
      } else if (!e.is_directory()) {
        foreign.push_back(name + " (not a folder)");
      } else {
        for (const auto& c : fs::directory_iterator(e.path(), ec)) {
          const std::string inner = c.path().filename().string();
          if (!isStepName(inner) && !isStageName(inner)) foreign.push_back(std::string(kDirectory) + "/" + inner);
        }
      }
    } else if (name == "config.json") {
      // A run's config says what it is; a user's config.json of another program is not ours.
      bool ours = false;
      try {
        const auto j = spec::parseUntrustedJson(files::readBoundedFile(e.path().string()));
        ours = j.is_object() && j.contains("format") && j["format"] == "tensorscope.run_config";
      } catch (const std::exception&) {
      }
      if (!ours) foreign.push_back(name + " (not a Tensorscope run config)");
    } else if (name == "latest") {
      if (!e.is_symlink()) foreign.push_back(name + " (not the link Tensorscope makes)");
    } else if (!isRunFileName(name) && !isRunTemporary(name)) {
      foreign.push_back(name);
    }
    if (foreign.size() >= 6) break;  // enough to say why
  }
  return foreign;
}

std::vector<std::string> removeUncommittedRunFiles(const std::string& runDir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const char* name : {"config.json", "metrics.jsonl", "metrics.csv", "run_status.json", "inspections.jsonl",
                           "inspection.safetensors", "init.json", "latest"}) {
    const fs::path p = fs::path(runDir) / name;
    if (!fs::is_symlink(p, ec) && !fs::exists(p, ec)) continue;
    files::fileOperation("remove");
    if (fs::remove(p, ec)) removed.push_back(name);
  }
  return removed;
}

bool CheckpointStore::repairLatest(const CheckpointInfo& checkpoint) const {
  const std::string relative = std::string(kDirectory) + "/" + fs::path(checkpoint.dir).filename().string();
  std::error_code ec;
  const fs::path link = fs::path(runDir_) / "latest";
  if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec).string() == relative) return false;
  if (fs::exists(link, ec) && !fs::is_symlink(link, ec)) return false;  // not ours to replace
  linkLatest(runDir_, relative);
  return true;
}

std::string checkpointFilesDir(const std::string& runDir) {
  const CheckpointStore store(runDir);
  const auto found = store.latest();
  return found ? found->dir : runDir;
}

}  // namespace tensorscope::model_core
