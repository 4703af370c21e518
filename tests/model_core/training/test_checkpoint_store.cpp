// model_core::CheckpointStore (crash-consistent checkpoint directories, docs/reliability.md): commits,
// verification against the manifest, fallback to the previous checkpoint with the reason, an
// unreadable pointer, litter removal, and a commit that fails leaving the last one in place.
// Torch-free: the sanitizer build runs it too. The kill-at-every-file-operation campaign on real
// training runs is tests/cli/test_crash_consistency.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "training/checkpoint_store.h"

using namespace tensorscope::files;
using namespace tensorscope::model_core;
namespace fs = std::filesystem;

namespace {

struct Dir {
  std::string path;
  explicit Dir(const std::string& name)
      : path((fs::temp_directory_path() / ("ts_store_" + name + "_" + std::to_string(::getpid()))).string()) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

CheckpointInfo commitStep(const CheckpointStore& store, std::int64_t step, const std::string& payload) {
  const std::string staged = store.stage();
  writeFileAtomically(staged + "/model.bin", payload);
  writeFileAtomically(staged + "/state.json", "{\"step\": " + std::to_string(step) + "}\n");
  return store.commit(staged, step, {{"metrics.jsonl", 10 * step}});
}

void overwrite(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace

TEST(CheckpointStore, CommitsVerifiesAndKeepsThePreviousCheckpoint) {
  Dir d("commit");
  const CheckpointStore store(d.path);
  EXPECT_FALSE(store.hasCommitted());
  EXPECT_FALSE(store.latest().has_value());
  EXPECT_EQ(checkpointFilesDir(d.path), d.path) << "no checkpoint directories: the run directory itself";
  const auto a = commitStep(store, 5, "weights of step 5");
  const auto b = commitStep(store, 10, "weights of step 10");
  const auto c = commitStep(store, 15, "weights of step 15");
  EXPECT_TRUE(store.hasCommitted());
  const auto found = store.latest();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 15);
  EXPECT_EQ(found->dir, c.dir);
  EXPECT_EQ(found->counters.at("metrics.jsonl"), 150);
  EXPECT_EQ(readWholeFile(checkpointFilesDir(d.path) + "/model.bin"), "weights of step 15");
  EXPECT_EQ(readWholeFile(d.path + "/latest/model.bin"), "weights of step 15");
  EXPECT_FALSE(fs::exists(a.dir)) << "checkpoints older than the previous one are removed";
  EXPECT_TRUE(fs::exists(b.dir));
  EXPECT_EQ(verifyCheckpoint(b.dir, nullptr), "");
}

TEST(CheckpointStore, ADamagedCheckpointFallsBackToThePreviousWithTheReason) {
  Dir d("damaged");
  const CheckpointStore store(d.path);
  commitStep(store, 5, "weights of step 5");
  const auto second = commitStep(store, 10, "weights of step 10");
  overwrite(second.dir + "/model.bin", "weights of step 1X");  // same size, other bytes
  std::vector<std::string> notes;
  const auto found = store.latest(&notes);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 5);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("does not match its manifest's digest"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("using the checkpoint of step 5"), std::string::npos) << notes[0];
  // Pointing at the survivor keeps it as the previous checkpoint of the next commit.
  store.pointAt(*found);
  commitStep(store, 15, "weights of step 15");
  EXPECT_TRUE(fs::exists(found->dir));
  // A truncated file and a missing one name themselves; nothing left that verifies is an error.
  overwrite(found->dir + "/model.bin", "short");
  fs::remove(store.latest()->dir + "/state.json");
  try {
    store.latest();
    FAIL() << "nothing verifies";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("has no complete checkpoint left"), std::string::npos) << m;
    EXPECT_NE(m.find("state.json is missing"), std::string::npos) << m;
    EXPECT_NE(m.find("holds 5 bytes, its manifest says 17"), std::string::npos) << m;
  }
}

TEST(CheckpointStore, AnUnreadablePointerFallsBackToTheNewestCheckpointThatVerifies) {
  Dir d("pointer");
  const CheckpointStore store(d.path);
  commitStep(store, 5, "five");
  commitStep(store, 10, "ten");
  overwrite(d.path + "/checkpoint.json", "{\"format\": \"tensorscope.checkpoint_pointer\", \"version\": 1, \"current\": \"../../etc\"}");
  std::vector<std::string> notes;
  const auto found = store.latest(&notes);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 10);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("checkpoint.json is damaged"), std::string::npos) << notes[0];
  // With the pointer unreadable, cleaning keeps every checkpoint directory.
  store.removeLitter();
  EXPECT_EQ(store.latest()->step, 10);
}

TEST(CheckpointStore, LitterOfInterruptedWritesIsRemovedAndCommittedCheckpointsAreKept) {
  Dir d("litter");
  const CheckpointStore store(d.path);
  const auto kept = commitStep(store, 5, "five");
  // What kills leave: a staging directory, an uncommitted checkpoint directory, temporary files.
  fs::create_directories(d.path + "/checkpoints/.stage-999");
  overwrite(d.path + "/checkpoints/.stage-999/model.bin", "half");
  fs::create_directories(d.path + "/checkpoints/step-000000000010.deadbeef");
  overwrite(d.path + "/.metrics.jsonl.tmp1234", "x");
  overwrite(kept.dir + "/.model.bin.tmp77", "y");
  overwrite(d.path + "/notes.txt", "the user's own file");
  const auto removed = store.removeLitter();
  EXPECT_EQ(removed.size(), 4u);
  EXPECT_FALSE(fs::exists(d.path + "/checkpoints/.stage-999"));
  EXPECT_FALSE(fs::exists(d.path + "/checkpoints/step-000000000010.deadbeef"));
  EXPECT_FALSE(fs::exists(d.path + "/.metrics.jsonl.tmp1234"));
  EXPECT_TRUE(fs::exists(d.path + "/notes.txt"));
  EXPECT_EQ(store.latest()->step, 5);
  // Without any commit, every checkpoint directory is litter.
  Dir e("litter_first");
  fs::create_directories(e.path + "/checkpoints/step-000000000000.0000abcd");
  const CheckpointStore fresh(e.path);
  EXPECT_EQ(fresh.removeLitter().size(), 1u);
}

// Issue 33: clean-up removes only names Tensorscope makes; the reported case deleted a user's
// checkpoints/best/, a top-level .draft.tmp.txt and everything behind a linked checkpoints/.
TEST(CheckpointStore, CleanUpAndCommitsDeleteOnlyNamesTensorscopeMakes) {
  Dir d("foreign");
  const CheckpointStore store(d.path);
  commitStep(store, 5, "five");
  fs::create_directories(d.path + "/checkpoints/best");
  overwrite(d.path + "/checkpoints/best/model.pt", "the user's");
  overwrite(d.path + "/checkpoints/step-7.txt", "a user's file named like a step");
  overwrite(d.path + "/.draft.tmp.txt", "draft");
  fs::create_directories(d.path + "/.tmp");
  overwrite(d.path + "/.tmp/keep", "keep");
  overwrite(d.path + "/.notes.txt.tmp12", "a temporary of a name that is not ours");
  overwrite(d.path + "/.config.json.tmp12", "ours");
  const auto removed = store.removeLitter();
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(fs::path(removed[0]).filename(), ".config.json.tmp12");
  commitStep(store, 10, "ten");
  commitStep(store, 15, "fifteen");  // step 5's directory goes; nothing of the user's does
  for (const char* kept : {"/checkpoints/best/model.pt", "/checkpoints/step-7.txt", "/.draft.tmp.txt", "/.tmp/keep",
                           "/.notes.txt.tmp12"})
    EXPECT_TRUE(fs::exists(d.path + kept)) << kept;
  std::size_t steps = 0;
  for (const auto& e : fs::directory_iterator(d.path + "/checkpoints"))
    steps += e.path().filename().string().rfind("step-0", 0) == 0;
  EXPECT_EQ(steps, 2u);
  // Foreign entries: a new run refuses this folder and says what is in it.
  const auto foreign = foreignRunFolderEntries(d.path);
  EXPECT_FALSE(foreign.empty());
  Dir own("own_files");
  overwrite(own.path + "/config.json", "{\"format\": \"tensorscope.run_config\", \"version\": 1}");
  overwrite(own.path + "/metrics.jsonl", "");
  overwrite(own.path + "/.metrics.csv.tmp99", "");
  overwrite(own.path + "/train.lock", "");
  fs::create_directories(own.path + "/checkpoints/.stage-12");
  fs::create_directories(own.path + "/checkpoints/step-000000000000.0000abcd");
  EXPECT_TRUE(foreignRunFolderEntries(own.path).empty());
  overwrite(own.path + "/config.json", "{\"mine\": 1}");
  ASSERT_EQ(foreignRunFolderEntries(own.path).size(), 1u);
  EXPECT_EQ(foreignRunFolderEntries(own.path)[0], "config.json (not a Tensorscope run config)");
}

TEST(CheckpointStore, ALinkedCheckpointsFolderIsRefusedAndNothingBehindItIsDeleted) {
  Dir d("linked");
  Dir scratch("scratch");
  overwrite(scratch.path + "/README", "x");
  fs::create_directories(scratch.path + "/step-000000000001.0000abcd");
  fs::create_directory_symlink(scratch.path, d.path + "/checkpoints");
  const CheckpointStore store(d.path);
  const auto refusal = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  EXPECT_NE(refusal([&] { store.stage(); }).find("is a symbolic link"), std::string::npos);
  EXPECT_NE(refusal([&] { store.removeLitter(); }).find("is a symbolic link"), std::string::npos);
  EXPECT_TRUE(fs::exists(scratch.path + "/README"));
  EXPECT_TRUE(fs::exists(scratch.path + "/step-000000000001.0000abcd"));
  ASSERT_EQ(foreignRunFolderEntries(d.path).size(), 1u);
  EXPECT_EQ(foreignRunFolderEntries(d.path)[0], "checkpoints (a symbolic link)");
}

TEST(CheckpointStore, RepairLatestPointsTheLinkAtTheCurrentCheckpoint) {
  Dir d("latest");
  const CheckpointStore store(d.path);
  const auto first = commitStep(store, 5, "five");
  const auto second = commitStep(store, 10, "ten");
  EXPECT_FALSE(store.repairLatest(second));  // already right
  fs::remove(d.path + "/latest");
  fs::create_directory_symlink("checkpoints/" + fs::path(first.dir).filename().string(), d.path + "/latest");
  EXPECT_TRUE(store.repairLatest(second));
  EXPECT_EQ(readWholeFile(d.path + "/latest/model.bin"), "ten");
}

TEST(CheckpointStore, AFailedCommitLeavesTheLastCheckpointInPlace) {
  Dir d("failed");
  const CheckpointStore store(d.path);
  commitStep(store, 5, "five");
  const std::string staged = store.stage();
  writeFileAtomically(staged + "/model.bin", "ten");
  fs::remove_all(staged);  // the staged directory vanished (a full disk, another process)
  EXPECT_ANY_THROW(store.commit(staged, 10, {}));
  EXPECT_EQ(store.latest()->step, 5);
}

TEST(CheckpointStore, DigestIsFnv1a64) {
  EXPECT_EQ(fnv1a64Hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a64Hex("a"), "af63dc4c8601ec8c");
}
