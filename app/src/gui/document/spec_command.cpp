#include "gui/document/spec_command.h"

#include "gui/document/session_model.h"

namespace tensorscope::app {

SpecCommand::SpecCommand(SessionModel* model, quint64 runId, std::vector<spec::AttentionSpec> before,
                         std::vector<spec::AttentionSpec> after, const QString& text, int stroke)
    : model_(model), runId_(runId), before_(std::move(before)), after_(std::move(after)), stroke_(stroke) {
  setText(text);
}

// A refused edit (its run was removed, or trains with this design) leaves the stack: an undo that
// does nothing would otherwise stay on it and put the stack out of step with the session.
void SpecCommand::undo() {
  if (!model_->applyDesign(runId_, before_)) setObsolete(true);
}
void SpecCommand::redo() {
  if (!model_->applyDesign(runId_, after_)) setObsolete(true);
}

bool SpecCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = dynamic_cast<const SpecCommand*>(other);
  if (!o || o->stroke_ != stroke_ || stroke_ < 0 || o->runId_ != runId_) return false;
  after_ = o->after_;
  return true;
}

}  // namespace tensorscope::app
