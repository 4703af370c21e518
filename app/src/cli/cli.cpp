#include "cli/cli.h"

#include <filesystem>
#include <ostream>
#include <set>

#include "cli/args.h"
#include "cli/attention_command.h"
#include "cli/diagram_command.h"
#include "cli/spec_commands.h"
#include "cli/sweep_commands.h"
#include "cli/train_commands.h"
#include "common/version.h"
#include "model_core/runtime.h"

namespace tensorscope::app {
namespace {
const std::set<std::string> kCommands = {"spec", "attention", "train", "eval", "infer", "export", "task", "diagram", "sweep"};
}

bool isHeadlessInvocation(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h" || a == "--version") return true;
  // The global option --threads T may come before the command.
  size_t first = 0;
  while (first + 1 < args.size() && args[first] == "--threads") first += 2;
  return first < args.size() && kCommands.count(args[first]) > 0;
}

std::string helpText() {
  return R"(Tensorscope - attention mechanisms as tensor networks

usage:
  tensorscope [--threads T] [--screenshot PNG]     open the explorer window
       [--demo SCRIPT] [--size WxH]                (a script of steps; the size of its pictures)
       [SESSION.json | RUN_DIR]                    (and open a session file or a run directory)
  tensorscope --version                            versions, device, threads and BLAS in use
  tensorscope spec preset NAME                     print a complete default spec as JSON
  tensorscope spec preset --list                   list the preset names
  tensorscope spec validate FILE                   check a spec: exit 0 if valid, 1 with every problem
  tensorscope spec cost FILE --batch B --seq N [--cache M] [--json]
                                                   parameters, forward and training FLOPs, activation
                                                   memory, KV cache and decoding FLOPs against M tokens
  tensorscope spec name FILE [--json]              the published designs a spec equals or contains, read
                                                   from its structure (MQA, GQA-G, talking heads, ...)
  tensorscope spec match SPEC --like BASE --on params|kv|flops [--size NAME] [--tolerance T] [--seq N]
       [--causal] [--out FILE] [--json]          the free size of SPEC (a file or preset) that matches
                                                   BASE's parameters, KV cache or training FLOPs per token
  tensorscope attention --spec S.json --seed 7 --save-weights W.safetensors
                                                   build one layer, save its weights (contract names)
  tensorscope attention --spec S.json --weights W.safetensors --input X.safetensors
                        --output Y.safetensors [--maps]
                                                   run one layer: x [B,N,F] -> y (+ maps, roles)
  tensorscope diagram --spec S.json|--preset NAME --format svg|pdf|png|dot|tikz --out FILE
                      [--dpi N] [--seq N] [--theme light|dark] [--sizes] [--no-title]
                                                   draw the layer's tensor diagram (Tuformer notation)
  tensorscope diagram --spec S.json|--preset NAME --check [--batch B] [--seq N] [--seed S]
                                                   check that the diagram computes the layer (exit 0/1)
  tensorscope train --config run.json --out RUN_DIR [--steps N] [--threads T] [--device cpu|cuda]
  tensorscope train --config run.json --out RUN_DIR --init-from RUN_DIR [--init-cores config|checkpoint]
                                                   a new run starting from another run's weights
  tensorscope train --resume RUN_DIR [--steps N]   continue a run bit-identically (CPU)
                                                   progress bar on a terminal, JSON lines otherwise;
                                                   Ctrl-C stops after the current step and checkpoints
  tensorscope eval --run RUN_DIR                   evaluate a run's checkpoint on its task's splits
  tensorscope infer --run RUN_DIR --input T.safetensors --output L.safetensors
                                                   tokens [B,N] I64 (or patches) -> logits
  tensorscope export --run RUN_DIR --format pytorch --out DIR
                                                   model.py + model.safetensors + config.json
                                                   (+ vocab.json for sequence tasks)
  tensorscope sweep plan SWEEP.json --out DIR     expand a sweep into trial directories; print the
                                                   trials, parameter counts and estimated cost
  tensorscope sweep run DIR [--jobs J] [--retry-failed]
                                                   train the pending trials, J at a time (resumable;
                                                   Ctrl-C stops and keeps their checkpoints)
  tensorscope sweep run DIR --until-settled [--alpha A] [--max-seeds K]
                                                   then add seeds, round by round, to the designs
                                                   whose verdict is open (each look at A / looks)
  tensorscope sweep submit DIR --slurm [--partition P] [--time T] [--cpus-per-task C] [--gpus G]
                           [--array-limit K] [--retry-failed] [--dry-run]
                           [--until-settled [--alpha A] [--max-seeds K]]
                                                   the pending trials as a Slurm job array (with
                                                   --until-settled, the next round once all ended)
  tensorscope sweep run-trial DIR INDEX [--device cpu|cuda]
                                                   train one trial (what run and Slurm jobs call)
  tensorscope sweep status DIR [--json]            each trial's state, step and result
  tensorscope sweep report DIR [--format md|csv|latex|json] [--out FILE]
                               [--figure FILE.svg|png|pdf] [--x parameters|AXIS]
                                                   per-design mean ± std over seeds, and a figure
  tensorscope task sample --task NAME [--seed N] [--count K]
                                                   show generated data (arithmetic, char_lm,
                                                   fashion_mnist, copy, reverse, sort)

options:
  --threads T      LibTorch intra-op threads (default: $TENSORSCOPE_THREADS, else all cores)
  --screenshot PNG render the window to PNG once it is shown, then exit
  -h, --help       this text

exit codes: 0 success, 1 invalid input or failure (with the reason), 2 usage error
docs: README.md, docs/spec-format.md, docs/cost-model.md, docs/sweeps.md (installed under share/doc/tensorscope);
man tensorscope
)";
}

int runCli(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
  Args args(words);
  try {
    if (args.takeFlag("--help") || args.takeFlag("-h")) {
      out << helpText();
      return kExitOk;
    }
    // --threads anywhere on the line (before or after the command) wins over a run config's threads.
    if (auto t = args.takeInt("--threads", 1, 4096)) model_core::setThreadsOverride(static_cast<int>(*t));
    else model_core::configureThreads(0);
    if (args.takeFlag("--version")) {
      out << versionText();
      return kExitOk;
    }
    const auto cmd = args.takeCommand();
    if (cmd == "spec") return runSpecCommand(args, out, err);
    if (cmd == "attention") return runAttentionCommand(args, out, err);
    if (cmd == "diagram") return runDiagramCommand(args, out, err);
    if (cmd == "train") return runTrainCommand(args, out, err);
    if (cmd == "eval") return runEvalCommand(args, out, err);
    if (cmd == "infer") return runInferCommand(args, out, err);
    if (cmd == "export") return runExportCommand(args, out, err);
    if (cmd == "task") return runTaskCommand(args, out, err);
    if (cmd == "sweep") return runSweepCommand(args, out, err);
    throw UsageError("unknown command '" + cmd.value_or("") + "'; see tensorscope --help");
  } catch (const UsageError& e) {
    err << "tensorscope: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::filesystem::filesystem_error& e) {
    // A sentence instead of the library's "filesystem error: cannot …: reason [path]" (the path
    // shortened: a name over NAME_MAX would otherwise be echoed whole).
    std::string path = e.path1().string();
    if (path.size() > 120) path = path.substr(0, 100) + "…(" + std::to_string(path.size()) + " bytes)";
    err << "tensorscope: cannot use " << (path.empty() ? std::string("a file") : path) << ": " << e.code().message()
        << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err << "tensorscope: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace tensorscope::app
