// trainer_state.json of a checkpoint (resume, warm start, snapshot): a state or std::invalid_argument
// naming the file; a state round-trips exactly.
#include "fuzz_util.h"
#include "model_core/run_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
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
