#pragma once
/// Undo command for a design edit: holds the spec before and after. Consecutive cells of one
/// drag in the core editor (same stroke) merge into one command.

#include <QUndoCommand>

#include "spec/attention_spec.h"

namespace tensorscope::app {

class SessionModel;

class SpecCommand : public QUndoCommand {
 public:
  /// An edit of run `runId`'s design: undo and redo apply to that run (selecting it), whichever run
  /// is selected when they are invoked.
  /// `before` and `after` are the run's attention specs (one shared, or one per layer).
  SpecCommand(SessionModel* model, quint64 runId, std::vector<spec::AttentionSpec> before,
              std::vector<spec::AttentionSpec> after, const QString& text, int stroke = -1);
  void undo() override;
  void redo() override;
  int id() const override { return stroke_ >= 0 ? 0x5EC : -1; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  SessionModel* model_;
  quint64 runId_;
  std::vector<spec::AttentionSpec> before_, after_;
  int stroke_;
};

}  // namespace tensorscope::app
