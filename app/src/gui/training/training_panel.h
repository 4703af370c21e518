#pragma once
/// The Training dock: task and optimisation settings of the current run, start / pause / step /
/// stop, a progress bar with ETA, tokens per second, device and threads.

#include <QElapsedTimer>
#include <QWidget>
#include <deque>
#include <utility>

#include "model_core/run_config.h"
#include "model_core/snapshots.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace tensorscope::app {

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  /// The status line (step, loss, steps/s, tokens/s, ETA while training; the summary after).
  QString statusText() const;
  /// The last step the running (or last) run reported.
  qint64 lastStep() const;
  explicit TrainingPanel(QWidget* parent = nullptr);

  /// Shows the task/training settings of `config` (without emitting settingsChanged).
  void setConfig(const model_core::RunConfig& config);
  /// Applies the panel's settings onto `config` (task, steps, batch, lr, layers, device, threads).
  void applyTo(model_core::RunConfig& config) const;

  /// Reflects the controller's state: idle, running, paused.
  void setState(bool running, bool paused);
  void onStarted(qint64 firstStep, qint64 totalSteps, const QString& device, int threads);
  /// Tokens one step trains on (batch × the model's sequence length), for tokens/s.
  void setTokensPerStep(qint64 tokens) { tokensPerStep_ = tokens; }
  void onMetrics(const model_core::MetricsSnapshot& last);
  void onFinished(const QString& summary);
  /// No run trains: shows the selected run's status (its last result, or "not trained") and an
  /// empty progress bar, so nothing of another run or session stays on show.
  void showIdle(const QString& runName, const QString& status);

  QPushButton* startButton() const { return start_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* stepButton() const { return step_; }
  QPushButton* stopButton() const { return stop_; }
  QDoubleSpinBox* learningRateBox() const { return lr_; }
  /// Why a typed setting was not taken (empty when none).
  QString inputNote() const;

 Q_SIGNALS:
  void startRequested();
  void pauseRequested();
  void resumeRequested();
  void stepRequested();
  void stopRequested();
  void settingsChanged();
  /// The run's progress line as the dock shows it ("step 120 / 600 · … · ETA 00:42", "Paused at
  /// step 120 / 600 · …"), on every change; `training` false (and the text the last word) when it ends.
  void progressChanged(bool training, const QString& text);

 private:
  QComboBox* task_ = nullptr;
  QComboBox* device_ = nullptr;
  QSpinBox *steps_ = nullptr, *batch_ = nullptr, *layers_ = nullptr, *seqLen_ = nullptr, *threads_ = nullptr;
  QDoubleSpinBox* lr_ = nullptr;
  QPushButton *start_ = nullptr, *pause_ = nullptr, *step_ = nullptr, *stop_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* inputNote_ = nullptr;  ///< why a typed setting was not taken
  QLabel* runtime_ = nullptr;
  QString costText_;  ///< runCostText of the settings shown, under the status while idle
  qint64 first_ = 0, total_ = 1;
  QElapsedTimer clock_;
  /// (seconds on clock_, step) of the last few seconds: steps/s, tokens/s and the ETA all come from
  /// this one window, so they agree with each other.
  std::deque<std::pair<double, qint64>> window_;
  qint64 tokensPerStep_ = 0;
  bool paused_ = false;
  bool loading_ = false;
};

}  // namespace tensorscope::app
