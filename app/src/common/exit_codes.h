#pragma once
/// Exit codes shared by every command of `tensorscope` (and by the explorer where it runs one).

namespace tensorscope::app {

enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

}  // namespace tensorscope::app
