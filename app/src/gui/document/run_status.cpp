#include "gui/document/run_status.h"

#include <QFile>

#include "model_core/run_directory.h"
#include "model_core/run_files.h"

namespace tensorscope::app {

QString runStatusText(const QString& runDir) {
  if (runDir.isEmpty()) return "not trained";
  const std::string dir = QFile::encodeName(runDir).toStdString();
  try {
    const auto state = model_core::inspectRunDirectory(dir);
    if (!state.problems.empty()) return "cannot be read: " + QString::fromStdString(state.problems.front());
    const auto ending = model_core::readRunEnding(dir);
    const qint64 step = state.checkpoint_step;
    if (!ending) return step >= 0 ? QString("trained to step %1 (its end was not recorded)").arg(step) : "not trained yet";
    const QString message = QString::fromStdString(ending->message);
    if (ending->status == "finished") return QString("finished %1 steps").arg(step);
    if (ending->status == "stopped") return QString("stopped at step %1").arg(step);
    if (ending->status == "diverged")
      return QString("diverged (kept step %1)").arg(ending->checkpoint_step) + (message.isEmpty() ? "" : ": " + message);
    return "failed" + (message.isEmpty() ? QString() : ": " + message);
  } catch (const std::exception& e) {
    return "cannot be read: " + QString::fromUtf8(e.what());
  }
}

}  // namespace tensorscope::app
