#pragma once
/// `tensorscope attention`: one layer in and out, through safetensors files.

#include <iosfwd>

#include "cli/args.h"

namespace tensorscope::app {

int runAttentionCommand(Args& args, std::ostream& out, std::ostream& err);

}  // namespace tensorscope::app
