// What a run directory keeps of the trainer's inspections (issue 13: a reopened run shows its
// stable rank history, spectrum, learned C, maps and roles): the file formats, their refusals, and
// the trainer writing them, resumed runs included.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/inspection_files.h"
#include "model_core/run_files.h"
#include "model_core/safetensors.h"
#include "model_core/trainer.h"
#include "training_test_util.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::testing::TempDir;
using tensorscope::model_core::testing::tinyRun;

namespace {

InspectionSnapshot sample() {
  InspectionSnapshot s;
  s.step = 40;
  s.core_layers = {1};
  s.cores = {{{2, 2}, {1.f, -2.f, 0.5f, 4.f}}};
  s.stable_ranks = {1.25};
  s.spectra = {{4.5, 1.25}};
  s.maps = {{{{3, 3}, std::vector<float>(9, 1.f / 3)}}, {{{3, 3}, std::vector<float>(9, 0.25f)}, {{3, 3}, std::vector<float>(9, 0.5f)}}};
  s.probe_tokens = {"1", "+", "2_x"};
  s.probe = "typed \u201c1+2\u201d";
  s.role_probe = "2 interpolation examples";
  s.roles = {{0, 0, {{2, 3}, {1, 2, 3, 4, 5, 6}}}, {0, 1, {{2, 3}, {6, 5, 4, 3, 2, 1}}}, {1, 0, {{2, 3}, {0, 1, 0, 1, 0, 1}}}};
  s.role_tokens = {"1", "+"};
  s.role_labels = {"operand", "operator"};
  s.role_contexts = {"1+2=", "1+2="};
  return s;
}

void expectSame(const InspectionSnapshot& a, const InspectionSnapshot& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.core_layers, b.core_layers);
  ASSERT_EQ(a.cores.size(), b.cores.size());
  for (size_t i = 0; i < a.cores.size(); ++i) {
    EXPECT_EQ(a.cores[i].shape, b.cores[i].shape);
    EXPECT_EQ(a.cores[i].values, b.cores[i].values);
  }
  EXPECT_EQ(a.stable_ranks, b.stable_ranks);
  EXPECT_EQ(a.spectra, b.spectra);
  ASSERT_EQ(a.maps.size(), b.maps.size());
  for (size_t l = 0; l < a.maps.size(); ++l) {
    ASSERT_EQ(a.maps[l].size(), b.maps[l].size()) << "layer " << l;
    for (size_t h = 0; h < a.maps[l].size(); ++h) {
      EXPECT_EQ(a.maps[l][h].shape, b.maps[l][h].shape);
      EXPECT_EQ(a.maps[l][h].values, b.maps[l][h].values);
    }
  }
  EXPECT_EQ(a.probe_tokens, b.probe_tokens);
  EXPECT_EQ(a.probe, b.probe);
  EXPECT_EQ(a.role_probe, b.role_probe);
  ASSERT_EQ(a.roles.size(), b.roles.size());
  for (size_t i = 0; i < a.roles.size(); ++i) {
    EXPECT_EQ(a.roles[i].layer, b.roles[i].layer);
    EXPECT_EQ(a.roles[i].head, b.roles[i].head);
    EXPECT_EQ(a.roles[i].vectors.shape, b.roles[i].vectors.shape);
    EXPECT_EQ(a.roles[i].vectors.values, b.roles[i].vectors.values);
  }
  EXPECT_EQ(a.role_tokens, b.role_tokens);
  EXPECT_EQ(a.role_labels, b.role_labels);
  EXPECT_EQ(a.role_contexts, b.role_contexts);
}

/// The message parseInspection throws for `bytes` (empty when it accepts them).
std::string refusal(const std::string& bytes) {
  try {
    parseInspection(bytes, "x.safetensors");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

std::string withFile(const SafetensorsFile& f) { return serializeSafetensors(f); }

}  // namespace

TEST(InspectionFile, RoundTripsEveryPartOfASnapshot) {
  const auto s = sample();
  expectSame(parseInspection(serializeInspection(s)), s);
  InspectionSnapshot empty;  // a model without cores, maps or roles
  expectSame(parseInspection(serializeInspection(empty)), empty);
}

// Files of the first version (head 0 of the last layer as "roles", no captions) still read.
TEST(InspectionFile, ReadsTheFirstVersion) {
  auto f = parseSafetensors(serializeInspection(sample()));
  f.metadata["version"] = "1";
  f.metadata.erase("probe");
  f.metadata.erase("role_probe");
  f.tensors.erase("roles.0");
  f.tensors.erase("roles.1");
  f.tensors["roles"] = makeTensorData(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  const auto s = parseInspection(withFile(f));
  ASSERT_EQ(s.roles.size(), 1u);
  EXPECT_EQ(s.roles[0].layer, 1);  // the last of the file's two layers
  EXPECT_EQ(s.roles[0].head, 0);
  EXPECT_EQ(s.roles[0].vectors.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(s.probe.empty());
  EXPECT_EQ(s.role_tokens, sample().role_tokens);
}

TEST(InspectionFile, RefusesADamagedFileWithTheReason) {
  const auto good = parseSafetensors(serializeInspection(sample()));
  EXPECT_NE(refusal("not a file").find("x.safetensors: "), std::string::npos);
  {
    auto f = good;
    f.metadata["format"] = "tensorscope.something";
    EXPECT_NE(refusal(withFile(f)).find("not a Tensorscope inspection"), std::string::npos);
  }
  {
    auto f = good;
    f.tensors.erase("spectrum.1");
    EXPECT_NE(refusal(withFile(f)).find("tensor \"spectrum.1\" is missing"), std::string::npos);
  }
  {
    auto f = good;
    f.tensors["extra"] = makeTensorData(std::vector<float>{1.f}, {1});
    EXPECT_NE(refusal(withFile(f)).find("unknown tensor \"extra\""), std::string::npos);
  }
  {
    auto f = good;
    f.tensors["core.1"] = makeTensorData(std::vector<double>{1, 2, 3, 4}, {2, 2});
    EXPECT_NE(refusal(withFile(f)).find("\"core.1\" must be F32 of rank 2"), std::string::npos);
  }
  {
    auto f = good;
    f.tensors["core.1"] = makeTensorData(std::vector<float>{1, 2}, {1, 2});
    EXPECT_NE(refusal(withFile(f)).find("must be square"), std::string::npos);
  }
  {
    auto f = good;
    f.metadata["role_labels"] = "[\"operand\"]";
    EXPECT_NE(refusal(withFile(f)).find("one entry per row of the role vectors (2)"), std::string::npos);
  }
  {
    auto f = good;
    f.tensors["roles.1"] = makeTensorData(std::vector<float>{1, 2, 3, 4}, {1, 2, 2});
    EXPECT_NE(refusal(withFile(f)).find("the role tensors must all have the same rows and width"), std::string::npos);
  }
  {
    auto f = good;
    f.metadata["probe"] = std::string(5000, 'x');
    EXPECT_NE(refusal(withFile(f)).find("metadata \"probe\" is too long"), std::string::npos);
  }
  {
    auto f = good;
    f.metadata["core_layers"] = "[7]";
    EXPECT_NE(refusal(withFile(f)).find("\"core_layers\" must list layers in [0, layers)"), std::string::npos);
  }
  {
    auto f = good;
    f.metadata["step"] = "-3";
    EXPECT_NE(refusal(withFile(f)).find("\"step\" must be an integer"), std::string::npos);
  }
  {
    auto f = good;
    f.metadata["probe_tokens"] = "[1, 2";
    EXPECT_NE(refusal(withFile(f)).find("\"probe_tokens\" is not JSON"), std::string::npos);
  }
}

TEST(InspectionHistory, KeepsWhatAResumeDidNotOvertakeAndCountsDamagedLines) {
  TempDir dir("inspection_history");
  std::filesystem::create_directories(dir.path("run"));
  tensorscope::files::writeFileAtomically(
      dir.path("run/") + kInspectionLogName,
      "{\"kind\":\"inspection\",\"step\":4,\"layers\":[0,1],\"stable_ranks\":[3.0,2.0]}\n"
      "{\"kind\":\"inspection\",\"step\":8,\"layers\":[0,1],\"stable_ranks\":[2.5,1.5]}\n"
      "{\"kind\":\"inspection\",\"step\":12,\"layers\":[0,1],\"stable_ranks\":[2.0,1.0]}\n"
      "{\"kind\":\"inspection\",\"step\":9,\"layers\":[0,1],\"stable_ranks\"\n"  // cut by a kill
      "{\"kind\":\"inspection\",\"step\":8,\"layers\":[0,1],\"stable_ranks\":[2.4,null]}\n"
      "{\"kind\":\"inspection\",\"step\":12,\"layers\":[0,1],\"stable_ranks\":[1.9,0.9]}\n");
  const auto h = readInspectionHistory(dir.path("run"));
  EXPECT_EQ(h.steps, (std::vector<std::int64_t>{4, 8, 12}));
  EXPECT_EQ(h.layers, (std::vector<int>{0, 1}));
  ASSERT_EQ(h.stable_ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(h.stable_ranks[1][0], 2.4);  // the resumed run's record, not the overtaken one
  EXPECT_TRUE(std::isnan(h.stable_ranks[1][1]));
  EXPECT_DOUBLE_EQ(h.stable_ranks[2][1], 0.9);
  EXPECT_EQ(h.damaged, 1);
  EXPECT_NE(h.first_damage.find("line 4"), std::string::npos);
  EXPECT_TRUE(readInspectionHistory(dir.path("none")).steps.empty());  // no log yet: no history
}

// The trainer keeps every inspection's stable ranks and the newest inspection in full, and a run
// stopped and resumed ends with the same history as a straight one; its clock goes on.
TEST(InspectionFile, TheTrainerWritesThemAndAResumedRunEndsWithTheStraightRunsHistory) {
  TempDir dir("inspection_trainer");
  const auto c = tinyRun("thsa", 12);
  struct Last : ProgressSink {
    InspectionSnapshot last;
    void onInspection(const InspectionSnapshot& s) override { last = s; }
  } straight, first, second;
  TrainerControl c1, c2, c3;
  train(c, dir.path("straight"), c1, straight);
  train(c, dir.path("split"), c2, first, false, 6);
  const auto afterFirst = readInspectionHistory(dir.path("split"));
  EXPECT_EQ(afterFirst.steps, (std::vector<std::int64_t>{4, 6}));
  train(c, dir.path("split"), c3, second, /*resume=*/true, 12);

  const auto a = readInspectionHistory(dir.path("straight"));
  const auto b = readInspectionHistory(dir.path("split"));
  EXPECT_EQ(a.steps, (std::vector<std::int64_t>{4, 8, 12}));
  EXPECT_EQ(b.steps, (std::vector<std::int64_t>{4, 6, 8, 12}));  // the stop at 6 inspected too
  EXPECT_EQ(a.layers, (std::vector<int>{0, 1}));
  ASSERT_EQ(b.stable_ranks.size(), 4u);
  for (size_t i : {0, 1, 2})  // resume is bit-identical, so are its inspections
    EXPECT_EQ(b.stable_ranks[i == 0 ? 0 : i + 1], a.stable_ranks[i]) << "step " << a.steps[i];
  const auto file = readInspection(dir.path("straight"));
  ASSERT_TRUE(file.has_value());
  expectSame(*file, straight.last);
  EXPECT_EQ(file->step, 12);
  expectSame(*readInspection(dir.path("split")), second.last);

  // The wall clock of the resumed part continues the first part's.
  std::vector<double> elapsed;
  readMetrics(
      dir.path("split"),
      [&](std::int64_t, const MetricsRecord& r) {
        if (r.kind == MetricsRecord::Kind::Train) elapsed.push_back(r.elapsed_seconds.value());
      },
      [](std::int64_t, const std::string&) {});
  ASSERT_EQ(elapsed.size(), 12u);
  for (size_t i = 1; i < elapsed.size(); ++i) EXPECT_GE(elapsed[i], elapsed[i - 1]) << "step " << i + 1;
}
