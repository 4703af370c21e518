// Issue 19: the demo script is checked whole before the demo starts; each bad line is refused with
// its number and the reason (before, an unknown command stopped the demo midway, and a directory
// or /dev/zero was read as a script).
#include <gtest/gtest.h>

#include <string>

#include "gui/shell/demo_script.h"
#include "test_paths.h"

using tensorscope::app::DemoCommand;
using tensorscope::app::formatDemoScript;
using tensorscope::app::parseDemoScript;
using tensorscope::app::readDemoScript;

namespace {

std::string errorOf(const std::string& text) {
  try {
    parseDemoScript(text, "demo.txt");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(DemoScript, TheShippedScriptParses) {
  const auto script = readDemoScript(ts_test::sourceDir() + "/docs/demo_training.txt");
  ASSERT_EQ(script.size(), 8u);
  EXPECT_EQ(script[0].name, "run");
  EXPECT_EQ(script[0].arg, "1");
  EXPECT_EQ(script[0].line, 5);  // after the four comment lines
  EXPECT_EQ(script[3].name, "probe");
  EXPECT_EQ(script[5].arg, "docs/images/explorer_training.png") << "relative to where the demo runs, not one machine";
  EXPECT_EQ(script[7].name, "wait-end");
  const auto again = parseDemoScript(formatDemoScript(script), "again");
  ASSERT_EQ(again.size(), script.size());
  for (size_t i = 0; i < script.size(); ++i) {
    EXPECT_EQ(again[i].name, script[i].name);
    EXPECT_EQ(again[i].arg, script[i].arg);
  }
}

TEST(DemoScript, EveryBadLineIsRefusedWithItsNumber) {
  EXPECT_EQ(errorOf("run 1\n\n  # comment\ntrian 5\n"),
            "demo.txt line 4: unknown command 'trian' (known: preset, run, session, train, wait-step, wait-end, fork, "
            "wait-ms, dock, theme, screenshot, figures, stop, quit, probe, sweep, inspect, plan-step, lesson, lesson-do, "
            "lesson-next, lab, layout, presenter, roles-colour, slot, match, positions, mixing, mixing-draw)");
  EXPECT_EQ(errorOf("slot kv_groups 1\n"),
            "demo.txt line 1: slot needs a field and a value, e.g. 'slot slots.kv_groups 1'; got 'kv_groups 1'");
  EXPECT_EQ(errorOf("roles-colour token\n"), "demo.txt line 1: roles-colour is label or cluster; got 'token'");
  EXPECT_EQ(errorOf("wait-step\n"), "demo.txt line 1: wait-step needs a whole number");
  EXPECT_EQ(errorOf("wait-ms soon\n"), "demo.txt line 1: wait-ms needs a whole number >= 0; got 'soon'");
  EXPECT_EQ(errorOf("train -4\n"), "demo.txt line 1: train needs a whole number >= 0; got '-4'");
  EXPECT_EQ(errorOf("quit now\n"), "demo.txt line 1: quit takes no argument; got 'now'");
  EXPECT_EQ(errorOf("theme sepia\n"), "demo.txt line 1: theme is light or dark; got 'sepia'");
  EXPECT_EQ(errorOf("presenter maybe\n"), "demo.txt line 1: presenter is on or off; got 'maybe'");
  EXPECT_EQ(errorOf("preset tuformer\n"), "demo.txt line 1: unknown preset 'tuformer'");
  EXPECT_EQ(errorOf("screenshot\n"), "demo.txt line 1: screenshot needs an argument");
  EXPECT_EQ(errorOf(std::string("run 1\x00", 6)), "demo.txt line 1: a NUL byte; a demo script is text");
  EXPECT_EQ(errorOf("dock " + std::string(5000, 'x')), "demo.txt line 1: the line has 5005 bytes; at most 4096");
  EXPECT_EQ(errorOf("train\ntrain 40 # to step 40\r\ntheme dark\n"), "(accepted)");
}

TEST(DemoScript, DirectoriesAndDevicesAreNotScripts) {
  for (const char* path : {"/tmp", "/dev/zero"}) {
    try {
      readDemoScript(path);
      ADD_FAILURE() << path << " was read as a script";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

// The probe command: its text is optional (empty: back to the default probe).
TEST(DemoScript, ProbeTakesOptionalText) {
  const auto script = parseDemoScript("probe 52907314\nprobe\nprobe 12+7=\n", "demo.txt");
  ASSERT_EQ(script.size(), 3u);
  EXPECT_EQ(script[0].arg, "52907314");
  EXPECT_EQ(script[1].arg, "");
  EXPECT_EQ(script[2].arg, "12+7=");
}
