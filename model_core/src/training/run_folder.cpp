#include "training/run_folder.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "files/atomic_file.h"
#include "model_core/inspection_files.h"
#include "model_core/run_files.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {
namespace {

namespace fs = std::filesystem;

/// Creates the run folder (and its parents), with a sentence for a name the file system cannot hold
/// instead of std::filesystem's text.
void createRunFolder(const std::string& runDir) {
  for (const auto& part : fs::path(runDir)) {
    const std::string name = part.string();
    if (name.size() > NAME_MAX)
      throw std::invalid_argument("the run folder " + spec::jsonPreview(runDir, 80) + " has a name of " +
                                  std::to_string(name.size()) + " bytes (" + spec::jsonPreview(name, 40) +
                                  "); a file or folder name may have at most " + std::to_string(NAME_MAX) +
                                  " bytes: choose a shorter --out");
  }
  std::error_code ec;
  fs::create_directories(runDir, ec);
  if (ec || !fs::is_directory(runDir))
    throw std::runtime_error("cannot create the run folder " + runDir + ": " +
                             (ec ? ec.message() : std::string("a file of that name is in the way")));
}

/// Who trains, for another writer's refusal: this process's command line, shortened.
std::string lockHolderName() {
  std::string cmd(4096, '\0');
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  in.read(cmd.data(), std::streamsize(cmd.size()));
  cmd.resize(std::size_t(std::max<std::streamsize>(in.gcount(), 0)));
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  if (const auto slash = cmd.rfind('/', cmd.find(' ')); slash != std::string::npos) cmd.erase(0, slash + 1);
  if (cmd.size() > 160) cmd = cmd.substr(0, 157) + "...";
  return cmd.empty() ? std::string("Tensorscope") : "\"" + cmd + "\"";
}

}  // namespace

std::int64_t inspectionStep(const std::string& runDir) {
  try {
    const auto snap = readInspection(runDir);
    return snap ? snap->step : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

void writeRunStatus(const std::string& runDir, const std::string& status, const std::string& message,
                    int64_t checkpointStep) {
  files::writeFileAtomically(runDir + "/" + kRunStatusFileName, runEndingToJson({status, message, checkpointStep}));
}

OpenedRunFolder openRunFolder(const std::string& runDir, bool resume) {
  if (resume && !fs::is_directory(runDir))  // nothing to resume: said, and no empty folder left behind
    throw std::invalid_argument(runDir + " is not a run folder (it does not exist); resume names the --out of a run");
  createRunFolder(runDir);
  // Nothing is written or deleted before these checks: a folder that is not a run of ours is
  // refused whole, and one writer holds the folder for the whole training (docs/reliability.md).
  if (!resume) {
    if (const auto foreign = foreignRunFolderEntries(runDir); !foreign.empty()) {
      std::string list;
      for (const auto& f : foreign) list += (list.empty() ? "" : ", ") + f;
      throw std::invalid_argument(runDir + " is neither empty nor a Tensorscope run (it holds " + list +
                                  "); a run replaces and deletes files of its folder, so a new run starts only in an "
                                  "empty or new folder: choose another --out");
    }
  }
  files::RunLock lock = files::RunLock::acquire(runDir, lockHolderName());
  const CheckpointStore store(runDir);
  store.requireOwnCheckpointsFolder();
  const bool committed = store.hasCommitted();
  const bool legacy = !committed && fs::exists(runDir + "/model.safetensors");  // before checkpoint directories
  if (!resume && (committed || legacy))
    throw std::invalid_argument(runDir + " already holds a run; resume it (--resume) or choose a new directory");
  if (resume && !committed && !legacy)
    throw std::invalid_argument(runDir + " holds no complete checkpoint to resume (a run stopped during its first "
                                "checkpoint leaves none); start it again: tensorscope train --config CONFIG --out " +
                                runDir);
  std::vector<std::string> notes;
  std::optional<CheckpointInfo> from;
  if (resume && committed) from = store.latest(&notes);  // invalid_argument with every reason when none verifies
  const bool fellBack = !notes.empty();  // the current checkpoint did not verify
  // What a killed write left: temporary files, staging and uncommitted checkpoint directories.
  if (const auto removed = store.removeLitter(); !removed.empty())
    notes.push_back("removed " + std::to_string(removed.size()) + " leftover file(s) of an interrupted write in " + runDir);
  // A start stopped before its first checkpoint commit left only Tensorscope's files: it starts
  // again in place (a sweep trial, or the same --out again).
  if (!resume)
    if (const auto removed = removeUncommittedRunFiles(runDir); !removed.empty()) {
      std::string list;
      for (const auto& r : removed) list += (list.empty() ? "" : ", ") + r;
      notes.push_back("starting again in " + runDir + ": a start before it stopped before its first checkpoint (removed " +
                      list + ")");
    }
  // `latest` names the checkpoint the pointer names (a kill between the two leaves it behind).
  if (from && !fellBack && store.repairLatest(*from))
    notes.push_back(runDir + "/latest named an older checkpoint; it names step " + std::to_string(from->step) + " again");

  return OpenedRunFolder{std::move(lock), std::move(from), fellBack, std::move(notes)};
}

}  // namespace tensorscope::model_core
