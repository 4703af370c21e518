#pragma once
/// The base of the teaching labs (issue 15): BottleneckLab (bottleneck_lab.h) and StableRankLab
/// (stable_rank_lab.h), each a plain QWidget the window puts in a dock. Their numbers come from
/// model_core/labs.h (torch-free header), computed on a worker thread (QtConcurrent) so the
/// window never freezes. A newer request supersedes a running one: its answer is dropped, the
/// newest request's answer is shown (the backends cannot be interrupted; a cancelled or
/// superseded computation finishes in the background and is thrown away).

#include <QString>
#include <QWidget>
#include <cstdint>

class QLabel;

namespace tensorscope::app {

/// What both labs share: a status line and an error line under their controls, the generations
/// of their worker computations (a newer request supersedes a running one: only the answer of
/// generation running_ is shown), waiting for that answer, the plots' theme and labDone().
class LabPanel : public QWidget {
  Q_OBJECT
 public:
  bool busy() const { return running_ != 0; }
  QString statusText() const;
  QString errorText() const;
  void setDarkTheme(bool dark);

 Q_SIGNALS:
  /// The lab has a new result (for lessons; the bottleneck lab emits it after fitted()).
  void labDone();

 protected:
  explicit LabPanel(QWidget* parent);
  /// Processes events until no computation is running (tests, lessons); false on timeout.
  bool waitUntilIdle(int timeoutMs);
  /// Shows `text` in the error line; an empty text hides it.
  void setError(const QString& text);

  QLabel* status_ = nullptr;
  QLabel* error_ = nullptr;
  std::uint64_t generation_ = 0;  ///< of the newest request; older answers are dropped
  std::uint64_t running_ = 0;     ///< generation of the computation being waited for (0: none)
};

}  // namespace tensorscope::app
