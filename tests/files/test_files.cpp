// The files library: crash-safe writes and bounded reads (issue 19). The crash-consistency
// campaign through the file-operation hook is tests/cli/test_crash_consistency.py.
#include <gtest/gtest.h>

#include "error_of.h"
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "files/atomic_file.h"
#include "files/read_file.h"

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
