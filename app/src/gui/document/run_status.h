#pragma once
/// What the run list says of a run read from disk (a reopened session, an opened run folder, a
/// sweep's trial): how its last training ended, from RUN/run_status.json and its checkpoint.

#include <QString>

namespace tensorscope::app {

/// "not trained", "finished 600 steps", "stopped at step 300", "diverged (kept step 120): …",
/// "failed: …", "trained to step 40 (its end was not recorded)", or why the folder cannot be read.
QString runStatusText(const QString& runDir);

}  // namespace tensorscope::app
