#include "cli/attention_command.h"

#include <ostream>

#include "cli/cli.h"
#include "model_core/attention_layer.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::app {

int runAttentionCommand(Args& args, std::ostream& out, std::ostream& err) {
  const std::string usage =
      "tensorscope attention --spec S.json [--seed N] [--weights W.safetensors] "
      "[--save-weights W.safetensors] [--input X.safetensors --output Y.safetensors [--maps]]";
  const auto specPath = args.takeOption("--spec");
  const auto seed = args.takeInt("--seed", 0, (1LL << 62));
  const auto weights = args.takeOption("--weights");
  const auto saveWeights = args.takeOption("--save-weights");
  const auto input = args.takeOption("--input");
  const auto output = args.takeOption("--output");
  const bool maps = args.takeFlag("--maps");
  args.positionals(0, 0, usage);
  if (!specPath) throw UsageError("attention needs --spec\nusage: " + usage);
  if (input.has_value() != output.has_value())
    throw UsageError("--input and --output go together\nusage: " + usage);
  if (!input && !saveWeights)
    throw UsageError("nothing to do: give --save-weights, or --input and --output\nusage: " + usage);
  if (maps && !input) throw UsageError("--maps needs --input and --output");

  spec::AttentionSpec s;
  try {
    s = spec::readSpecFile(*specPath);
  } catch (const spec::SpecError& e) {
    err << *specPath << ": invalid spec\n" << e.what() << "\n";
    return kExitFailure;
  }
  if (const auto issues = spec::validate(s); !issues.empty()) {
    err << *specPath << ": invalid spec\n" << spec::formatIssues(issues) << "\n";
    return kExitFailure;
  }
  model_core::AttentionLayer layer(s, static_cast<std::uint64_t>(seed.value_or(0)));
  if (weights) layer.loadWeights(*weights);
  if (saveWeights) {
    layer.saveWeights(*saveWeights);
    out << "wrote " << *saveWeights << ": " << layer.weights().size() << " tensors, "
        << layer.trainableParameterCount() << " trainable parameters\n";
  }
  if (input) {
    std::string names;
    for (const auto& name : layer.runOnFiles(*input, *output, maps)) names += (names.empty() ? "" : ", ") + name;
    out << "wrote " << *output << " (" << names << ")\n";
  }
  return kExitOk;
}

}  // namespace tensorscope::app
