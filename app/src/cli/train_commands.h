#pragma once
/// `tensorscope train | eval | infer | export | task sample`.

#include <iosfwd>

#include "cli/args.h"

namespace tensorscope::app {

int runTrainCommand(Args& args, std::ostream& out, std::ostream& err);
int runEvalCommand(Args& args, std::ostream& out, std::ostream& err);
int runInferCommand(Args& args, std::ostream& out, std::ostream& err);
int runExportCommand(Args& args, std::ostream& out, std::ostream& err);
int runTaskCommand(Args& args, std::ostream& out, std::ostream& err);

}  // namespace tensorscope::app
