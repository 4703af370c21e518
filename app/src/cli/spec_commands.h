#pragma once
/// `tensorscope spec preset|validate|cost`.

#include <iosfwd>

#include "cli/args.h"

namespace tensorscope::app {

int runSpecCommand(Args& args, std::ostream& out, std::ostream& err);

}  // namespace tensorscope::app
