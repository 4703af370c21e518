// Sweep files (tensorscope sweep plan), trial results (result.json), a sweep's Slurm jobs
// (slurm.json) and its settle rule (settle.json, sweep run --until-settled): a sweep or
// std::invalid_argument naming the field; a sweep's JSON is a fixed point of parse ∘ serialise, and a
// small sweep expands into trials or is refused with a reason (never a crash).
#include "fuzz_util.h"
#include "model_core/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  const std::string text(fuzz::text(data, size));
  try {
    (void)parseTrialResult(text, "result.json");
  } catch (const std::invalid_argument&) {
  }
  try {
    for (const auto& job : parseSlurmJobs(text, "slurm.json")) FUZZ_CHECK(!job.id.empty());
  } catch (const std::invalid_argument&) {
  }
  try {
    const auto rule = parseSettleRule(text, "settle.json");
    FUZZ_CHECK(rule.looks() >= 1 && rule.alphaPerLook() > 0 && parseSettleRule(settleRuleToJson(rule), "settle.json").looks() == rule.looks());
  } catch (const std::invalid_argument&) {
  }
  SweepFile s;
  try {
    s = sweepFromJson(text, "/nonexistent");  // base_file is not read from the fuzzer's disk
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string once = sweepToJson(s);
  FUZZ_CHECK(sweepToJson(sweepFromJson(once)) == once);
  std::size_t trials = s.seeds.size();
  for (const auto& a : s.axes) trials *= a.values.size();
  if (trials <= 8) {  // expansion solves sizes by search: keep each input fast
    try {
      for (const auto& t : expandSweep(s)) FUZZ_CHECK(!t.name.empty() && t.attention_parameters >= 0);
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
