#include "cli/train_commands.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <ostream>

#include "cli/cli.h"
#include "cli/progress_sinks.h"
#include "cli/stop_signals.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "model_core/trainer.h"

namespace tensorscope::app {

int runTrainCommand(Args& args, std::ostream& out, std::ostream& err) {
  const std::string usage =
      "tensorscope train --config run.json --out RUN_DIR [--steps N] [--threads T] [--device cpu|cuda]\n"
      "                  [--init-from RUN_DIR [--init-cores config|checkpoint]]\n"
      "       tensorscope train --resume RUN_DIR [--steps N] [--threads T] [--device cpu|cuda]";
  const auto configPath = args.takeOption("--config");
  const auto outDir = args.takeOption("--out");
  const auto resumeDir = args.takeOption("--resume");
  const auto steps = args.takeInt("--steps", 1, 1LL << 40);
  const auto device = args.takeOption("--device");
  const auto initFrom = args.takeOption("--init-from");
  const auto initCores = args.takeOption("--init-cores");
  const bool jsonLines = args.takeFlag("--json") || !isatty(fileno(stdout));
  args.positionals(0, 0, usage);
  if (resumeDir && (configPath || outDir)) throw UsageError("--resume takes the run's own config; drop --config/--out\nusage: " + usage);
  if (!resumeDir && (!configPath || !outDir)) throw UsageError("train needs --config and --out (or --resume)\nusage: " + usage);

  if (initFrom && resumeDir) throw UsageError("--init-from starts a new run; a resumed run continues its own checkpoint\nusage: " + usage);
  if (initCores && !initFrom) throw UsageError("--init-cores needs --init-from\nusage: " + usage);
  if (initCores && *initCores != "config" && *initCores != "checkpoint")
    throw UsageError("--init-cores takes config or checkpoint, not '" + *initCores + "'\nusage: " + usage);
  model_core::WarmStart warm;
  if (initFrom) warm = {*initFrom, !initCores || *initCores == "config"};

  const std::string runDir = resumeDir ? *resumeDir : *outDir;
  if (resumeDir && !std::filesystem::exists(runDir + "/config.json"))
    throw std::invalid_argument(runDir + " holds no complete checkpoint to resume (no config.json: the run was stopped "
                                "before it wrote one); start it again: tensorscope train --config CONFIG --out " + runDir);
  auto config = model_core::readRunConfig(resumeDir ? runDir + "/config.json" : *configPath);
  if (device) config.train.device = *device;

  model_core::TrainerControl control;
  // Ctrl-C or kill: the trainer checkpoints and returns within a step (cli/stop_signals.h says why
  // no signal handler runs on the training thread).
  stopsignals::Scope stopOnSignal([&control](int) { control.requestStop(); });
  JsonLinesSink jsonSink(out);
  TerminalSink termSink(out);
  model_core::ProgressSink& sink = jsonLines ? static_cast<model_core::ProgressSink&>(jsonSink) : termSink;
  const auto result = model_core::train(config, runDir, control, sink, resumeDir.has_value(), steps.value_or(-1), warm);
  if (jsonLines)
    out << "{\"event\": \"end\", \"steps\": " << result.steps_done << ", \"diverged\": " << (result.diverged ? "true" : "false")
        << ", \"stopped\": " << (result.stopped_early ? "true" : "false") << "}" << std::endl;
  else
    out << "\n" << result.message << " (" << runDir << ")\n";
  if (result.diverged) {
    err << "tensorscope: " << result.message << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

int runEvalCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto run = args.takeOption("--run");
  args.positionals(0, 0, "tensorscope eval --run RUN_DIR");
  if (!run) throw UsageError("eval needs --run RUN_DIR");
  // One JSON object per split. JSON has no NaN or Inf: such a value is written as null and named
  // in "non_finite" (e.g. a model that overflows on this data), and the exit status is 1.
  bool allFinite = true;
  for (const auto& e : model_core::evaluateRun(*run)) {
    nlohmann::json j = {{"split", e.split}, {"step", e.step >= 0 ? nlohmann::json(e.step) : nlohmann::json()}};
    nlohmann::json nonFinite = nlohmann::json::array();
    const auto put = [&](const char* key, double v) {
      if (std::isfinite(v)) {
        j[key] = v;
      } else {
        j[key] = nullptr;
        nonFinite.push_back(key);
      }
    };
    put("loss", e.loss);
    put("accuracy", e.accuracy);
    if (e.exact_match >= 0 || std::isnan(e.exact_match)) put("exact_match", e.exact_match);
    if (!nonFinite.empty()) {
      j["non_finite"] = nonFinite;
      allFinite = false;
    }
    out << j.dump() << "\n";
  }
  if (!allFinite) {
    err << "tensorscope: evaluation gave non-finite values (written as null, listed in \"non_finite\")\n";
    return kExitFailure;
  }
  return kExitOk;
}

int runInferCommand(Args& args, std::ostream& out, std::ostream&) {
  const std::string usage = "tensorscope infer --run RUN_DIR --input T.safetensors --output L.safetensors";
  const auto run = args.takeOption("--run");
  const auto input = args.takeOption("--input");
  const auto output = args.takeOption("--output");
  args.positionals(0, 0, usage);
  if (!run || !input || !output) throw UsageError("infer needs --run, --input and --output\nusage: " + usage);
  model_core::inferFiles(*run, *input, *output);
  out << "wrote " << *output << " (logits)\n";
  return kExitOk;
}

int runExportCommand(Args& args, std::ostream& out, std::ostream&) {
  const std::string usage = "tensorscope export --run RUN_DIR --format pytorch --out DIR";
  const auto run = args.takeOption("--run");
  const auto format = args.takeOption("--format");
  const auto dir = args.takeOption("--out");
  args.positionals(0, 0, usage);
  if (!run || !dir) throw UsageError("export needs --run and --out\nusage: " + usage);
  if (format.value_or("pytorch") != "pytorch")
    throw UsageError("unknown export format '" + *format + "'; the format is pytorch");
  const auto written = model_core::exportPyTorch(*run, *dir);
  out << "wrote " << *dir << "/";
  for (size_t i = 0; i < written.size(); ++i) out << (i ? ", " : "") << written[i];
  out << "\n";
  return kExitOk;
}

int runTaskCommand(Args& args, std::ostream& out, std::ostream&) {
  const std::string usage = "tensorscope task sample --task NAME [--seed N] [--count K] [--seq-len N]";
  const auto sub = args.takeCommand();
  if (sub != "sample") throw UsageError("task needs the sub-command sample\nusage: " + usage);
  model_core::TaskConfig config;
  if (auto name = args.takeOption("--task")) config.name = *name;
  if (auto seed = args.takeInt("--seed", 0, 1LL << 62)) config.seed = static_cast<std::uint64_t>(*seed);
  if (auto n = args.takeInt("--seq-len", 1, 1 << 16)) config.seq_len = static_cast<int>(*n);
  const auto count = args.takeInt("--count", 1, 1000).value_or(5);
  args.positionals(0, 0, usage);
  const auto task = model_core::makeTask(config);
  out << task->describeSamples(static_cast<int>(count), config.seed);
  return kExitOk;
}

}  // namespace tensorscope::app
