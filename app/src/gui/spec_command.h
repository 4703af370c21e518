#pragma once
/// Undo command for a design edit: holds the spec before and after. Consecutive cells of one
/// drag in the core editor (same stroke) merge into one command.

#include <QUndoCommand>

#include "spec/attention_spec.h"

namespace tensorscope::app {

class MainWindow;

class SpecCommand : public QUndoCommand {
 public:
  SpecCommand(MainWindow* window, spec::AttentionSpec before, spec::AttentionSpec after, const QString& text,
              int stroke = -1);
  void undo() override;
  void redo() override;
  int id() const override { return stroke_ >= 0 ? 0x5EC : -1; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  MainWindow* window_;
  spec::AttentionSpec before_, after_;
  int stroke_;
};

}  // namespace tensorscope::app
