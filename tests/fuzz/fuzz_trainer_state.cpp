// The small state files of a run: trainer_state.json of a checkpoint (resume, warm start, snapshot)
// and run_status.json (how the run ended, read by the explorer's run list). Each input is read as
// both: a record or std::invalid_argument naming the file; a record round-trips exactly.
#include "fuzz_util.h"
#include "model_core/run_files.h"

namespace {

void runStatus(std::string_view text) {
  using namespace tensorscope::model_core;
  RunEnding e;
  try {
    e = parseRunEnding(text, "run_status.json");
  } catch (const std::invalid_argument& x) {
    FUZZ_CHECK(std::string(x.what()).rfind("run_status.json", 0) == 0);
    return;
  }
  FUZZ_CHECK(e.checkpoint_step >= -1 && e.checkpoint_step <= kMaxRunStep);
  FUZZ_CHECK(e.status == "finished" || e.status == "stopped" || e.status == "diverged" || e.status == "failed");
  FUZZ_CHECK(parseRunEnding(runEndingToJson(e), "again") == e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  runStatus(fuzz::text(data, size));
  TrainerState s;
  try {
    s = parseTrainerState(fuzz::text(data, size), "trainer_state.json");
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("trainer_state.json", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(0 <= s.optimizer_step && s.optimizer_step <= s.step && s.step <= kMaxRunStep);
  FUZZ_CHECK(parseTrainerState(trainerStateToJson(s), "again") == s);
  return 0;
}
