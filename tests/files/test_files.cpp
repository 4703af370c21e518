// The files library: crash-safe writes and bounded reads (issue 19). The crash-consistency
// campaign through the file-operation hook is tests/cli/test_crash_consistency.py.
#include <gtest/gtest.h>

#include "error_of.h"
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <functional>
#include <string>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "files/run_lock.h"

using namespace tensorscope::files;
namespace fs = std::filesystem;

using tensorscope::test::errorOf;


TEST(AtomicFile, ReplacesTheTargetAndLeavesNoTemporaryFile) {
  const fs::path dir = fs::temp_directory_path() / ("ts_atomic_file_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "a.txt").string();
  writeFileAtomically(path, "first");
  writeFileAtomically(path, "second");
  EXPECT_EQ(readWholeFile(path), "second");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u) << "no temporary file may remain";
  fs::remove_all(dir);
}

TEST(AtomicFile, FailedWriteLeavesTargetIntact) {
  EXPECT_THROW(writeFileAtomically("/nonexistent/dir/x.json", "{}"), std::runtime_error);
}

// Item 4: `spec validate /dev/zero` read until memory ran out; a directory said "is empty".
TEST(BoundedFile, DevicesDirectoriesAndOversizedFilesAreRefusedByName) {
  const auto dev = errorOf([] { readBoundedFile("/dev/zero"); });
  EXPECT_NE(dev.find("/dev/zero is not a regular file"), std::string::npos) << dev;
  const auto dir = errorOf([] { readBoundedFile("/tmp"); });
  EXPECT_NE(dir.find("/tmp is a directory"), std::string::npos) << dir;
  const auto path = (fs::temp_directory_path() / "ts_bounded_file.json").string();
  writeFileAtomically(path, std::string(1000, ' '));
  EXPECT_EQ(readBoundedFile(path, 1000).size(), 1000u);
  const auto big = errorOf([&] { readBoundedFile(path, 999); });
  EXPECT_NE(big.find("is 1000 bytes; files of this kind may hold at most 999"), std::string::npos) << big;
  fs::remove(path);
  const auto missing = errorOf([] { readWholeFile("/nonexistent/dir/x.json"); });
  EXPECT_NE(missing.find("cannot open /nonexistent/dir/x.json"), std::string::npos) << missing;
}

// One writer per run folder (issue 33): the lock excludes a second holder in this process and in
// another, names its holder, is tested without being taken, and goes with its holder's death.
TEST(RunLock, OneHolderNamedInTheRefusalAndReleasedOnDestructionOrDeath) {
  const fs::path dir = fs::temp_directory_path() / ("ts_run_lock_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_FALSE(runLockHolder(dir.string()).has_value());  // no lock file yet
  {
    const RunLock held = RunLock::acquire(dir.string(), "test holder");
    const auto holder = runLockHolder(dir.string());
    ASSERT_TRUE(holder.has_value());
    EXPECT_NE(holder->find("test holder, process " + std::to_string(::getpid())), std::string::npos) << *holder;
    // A second holder in the same process (another open of the file) is refused, naming the first.
    try {
      RunLock::acquire(dir.string(), "second");
      ADD_FAILURE() << "a second lock was granted";
    } catch (const RunLockedError& e) {
      EXPECT_NE(std::string(e.what()).find("is being trained by test holder"), std::string::npos) << e.what();
      EXPECT_EQ(e.holder(), *holder);
    }
    // Probing is not taking: after many probes the holder still holds and a child is refused too.
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(runLockHolder(dir.string()).has_value());
    const pid_t child = ::fork();
    if (child == 0) {
      int code = 3;
      try {
        RunLock::acquire(dir.string(), "child");
        code = 1;
      } catch (const RunLockedError&) {
        code = 0;
      } catch (...) {
        code = 2;
      }
      ::_exit(code);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child process got the lock";
  }
  EXPECT_FALSE(runLockHolder(dir.string()).has_value());  // released with its holder
  // A holder that dies (here: a child killed while holding it) releases it.
  const pid_t child = ::fork();
  if (child == 0) {
    const RunLock held = RunLock::acquire(dir.string(), "doomed");
    ::pause();
    ::_exit(0);
  }
  for (int i = 0; i < 500 && !runLockHolder(dir.string()); ++i) ::usleep(2000);
  EXPECT_TRUE(runLockHolder(dir.string()).has_value());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(runLockHolder(dir.string()).has_value());
  EXPECT_NO_THROW(RunLock::acquire(dir.string(), "after"));
  fs::remove_all(dir);
}
