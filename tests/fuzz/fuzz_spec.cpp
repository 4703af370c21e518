// Attention specs: a spec or SpecError; a spec round-trips through its JSON; a valid one's cost and
// tensor network are computed from its structure within the time and memory bounds.
#include "fuzz_util.h"
#include "spec/cost_model.h"
#include "spec/spec_json.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::spec;
  AttentionSpec s;
  try {
    s = fromJson(std::string(fuzz::text(data, size)));
  } catch (const SpecError& e) {
    FUZZ_CHECK(!e.issues().empty());
    return 0;
  }
  FUZZ_CHECK(fromJson(toJson(s)) == s);
  if (validate(s).empty()) {
    const auto cost = estimateCost(s, 2, s.sizes.seq_len);
    FUZZ_CHECK(cost.parameters >= 0);
    const auto network = buildTensorNetwork(s, s.sizes.seq_len);
    FUZZ_CHECK(checkNetwork(network).empty());
  }
  return 0;
}
