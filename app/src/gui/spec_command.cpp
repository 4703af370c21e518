#include "gui/spec_command.h"

#include "gui/main_window.h"

namespace tensorscope::app {

SpecCommand::SpecCommand(MainWindow* window, spec::AttentionSpec before, spec::AttentionSpec after, const QString& text,
                         int stroke)
    : window_(window), before_(std::move(before)), after_(std::move(after)), stroke_(stroke) {
  setText(text);
}

void SpecCommand::undo() { window_->applySpec(before_); }
void SpecCommand::redo() { window_->applySpec(after_); }

bool SpecCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = dynamic_cast<const SpecCommand*>(other);
  if (!o || o->stroke_ != stroke_ || stroke_ < 0) return false;
  after_ = o->after_;
  return true;
}

}  // namespace tensorscope::app
