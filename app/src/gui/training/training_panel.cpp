#include "gui/training/training_panel.h"
#include "gui/training/run_cost.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>
#include <cmath>
#include <functional>
#include <thread>
#include <utility>

namespace tensorscope::app {
namespace {

/// The learning rate: typed as 0.002, 2e-3 or 3E-4 (scientific notation is how learning rates
/// are written; a plain spin box takes "1e-3" as 1), shown compactly, stepped by factors of two.
/// What does not read as a rate in range is not clamped: the previous rate stays and `rejected`
/// says what was typed.
class LearningRateBox : public QDoubleSpinBox {
 public:
  std::function<void(const QString& typed)> rejected;

  LearningRateBox() {
    setDecimals(12);  // the value is kept as typed (the text comes from textFromValue)
    setRange(1e-7, 10.0);
    setKeyboardTracking(false);
    connect(lineEdit(), &QLineEdit::textEdited, this, [this](const QString& t) { typed_ = t; });
    connect(this, &QAbstractSpinBox::editingFinished, this, [this] {
      const QString typed = std::exchange(typed_, QString());
      if (!typed.isEmpty() && !readable(typed) && rejected) rejected(typed);
    });
  }
  QValidator::State validate(QString& text, int&) const override {
    return readable(text) ? QValidator::Acceptable : QValidator::Intermediate;  // leaving the field decides
  }
  double valueFromText(const QString& text) const override { return text.trimmed().toDouble(); }
  QString textFromValue(double value) const override { return QString::number(value, 'g', 6); }
  void stepBy(int steps) override { setValue(value() * std::pow(2.0, steps)); }

 private:
  bool readable(const QString& text) const {
    bool ok = false;
    const double v = text.trimmed().toDouble(&ok);  // C locale: "2e-3" reads
    return ok && std::isfinite(v) && v >= minimum() && v <= maximum();
  }
  QString typed_;
};

}  // namespace

TrainingPanel::TrainingPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  task_ = new QComboBox;
  for (const auto& n : model_core::taskNames()) task_->addItem(QString::fromStdString(n));
  task_->setToolTip("Data the model trains on (real data from Debian packages, or generated)");
  steps_ = new QSpinBox;
  steps_->setRange(1, 10'000'000);
  batch_ = new QSpinBox;
  batch_->setRange(1, 4096);
  layers_ = new QSpinBox;
  layers_->setRange(1, 24);
  seqLen_ = new QSpinBox;
  seqLen_->setRange(8, 4096);
  auto* lr = new LearningRateBox;
  lr->setToolTip("Peak learning rate, e.g. 0.002 or 2e-3 (arrows: double, halve)");
  lr->rejected = [this, lr](const QString& typed) {
    inputNote_->setText(QString("Learning rate: “%1” is not a number from %2 to %3; it stays %4.")
                            .arg(typed, lr->textFromValue(lr->minimum()), lr->textFromValue(lr->maximum()),
                                 lr->textFromValue(lr->value())));
    inputNote_->show();
  };
  lr_ = lr;
  device_ = new QComboBox;
  device_->addItems({"cpu", "cuda"});
  threads_ = new QSpinBox;
  threads_->setRange(0, 256);
  threads_->setSpecialValueText(QString("all (%1)").arg(std::thread::hardware_concurrency()));
  form->addRow("Task", task_);
  form->addRow("Steps", steps_);
  form->addRow("Batch", batch_);
  form->addRow("Layers", layers_);
  form->addRow("Tokens N", seqLen_);
  form->addRow("Learning rate", lr_);
  auto* deviceRow = new QHBoxLayout;
  deviceRow->addWidget(device_);
  deviceRow->addWidget(new QLabel("threads"));
  deviceRow->addWidget(threads_);
  form->addRow("Device", deviceRow);
  layout->addLayout(form);
  inputNote_ = new QLabel;
  inputNote_->setWordWrap(true);
  inputNote_->setStyleSheet("color: #d0342c;");
  inputNote_->hide();
  layout->addWidget(inputNote_);

  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), "Train");
  pause_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPause), "Pause");
  step_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaSeekForward), "Step");
  stop_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), "Stop");
  start_->setToolTip("Train the current design (F5)");
  pause_->setToolTip("Pause or resume (F6)");
  step_->setToolTip("While paused: one training step (F7)");
  stop_->setToolTip("Stop after the current step and keep the checkpoint (Shift+F5)");
  for (auto* b : {start_, pause_, step_, stop_}) buttons->addWidget(b);
  layout->addLayout(buttons);
  progress_ = new QProgressBar;
  progress_->setFormat("%p%");
  layout->addWidget(progress_);
  status_ = new QLabel("Ready. Press Train to start the selected run.");
  status_->setWordWrap(true);
  runtime_ = new QLabel;
  runtime_->setWordWrap(true);
  runtime_->setStyleSheet("color: palette(mid);");
  layout->addWidget(status_);
  layout->addWidget(runtime_);
  layout->addStretch(1);

  connect(start_, &QPushButton::clicked, this, &TrainingPanel::startRequested);
  connect(pause_, &QPushButton::clicked, this, [this] {
    if (paused_) Q_EMIT resumeRequested();
    else Q_EMIT pauseRequested();
  });
  connect(step_, &QPushButton::clicked, this, &TrainingPanel::stepRequested);
  connect(stop_, &QPushButton::clicked, this, &TrainingPanel::stopRequested);
  auto changed = [this] {
    if (!loading_) Q_EMIT settingsChanged();
  };
  connect(task_, &QComboBox::currentTextChanged, this, changed);
  connect(device_, &QComboBox::currentTextChanged, this, changed);
  for (auto* b : {steps_, batch_, layers_, seqLen_, threads_}) connect(b, &QSpinBox::valueChanged, this, changed);
  connect(lr_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(lr_, &QDoubleSpinBox::valueChanged, inputNote_, &QLabel::hide);  // a good rate answers the note
  setState(false, false);
}

QString TrainingPanel::inputNote() const { return inputNote_->isHidden() ? QString() : inputNote_->text(); }

void TrainingPanel::setConfig(const model_core::RunConfig& c) {
  loading_ = true;
  task_->setCurrentText(QString::fromStdString(c.task.name));
  steps_->setValue(static_cast<int>(c.train.steps));
  batch_->setValue(static_cast<int>(c.train.batch));
  layers_->setValue(c.model.layers);
  seqLen_->setValue(c.task.seq_len);
  lr_->setValue(c.train.lr);
  device_->setCurrentText(QString::fromStdString(c.train.device));
  threads_->setValue(c.train.threads);
  loading_ = false;
  costText_ = runCostText(c);
}

void TrainingPanel::applyTo(model_core::RunConfig& c) const {
  c.task.name = task_->currentText().toStdString();
  c.train.steps = steps_->value();
  c.train.batch = batch_->value();
  c.model.layers = layers_->value();
  c.task.seq_len = seqLen_->value();
  for (auto& s : c.model.attention) s.sizes.seq_len = c.task.seq_len;
  c.train.lr = lr_->value();
  c.train.device = device_->currentText().toStdString();
  c.train.threads = threads_->value();
  c.model.kind = c.task.name == "fashion_mnist" ? "encoder_classifier" : "decoder";
}

void TrainingPanel::setState(bool running, bool paused) {
  paused_ = paused;
  start_->setEnabled(!running);
  pause_->setEnabled(running);
  pause_->setText(paused ? "Resume" : "Pause");
  step_->setEnabled(running && paused);
  stop_->setEnabled(running);
  for (QWidget* w : std::initializer_list<QWidget*>{task_, steps_, batch_, layers_, seqLen_, lr_, device_, threads_})
    w->setEnabled(!running);
  if (!running) Q_EMIT progressChanged(false, {});
  if (!running || !paused) return;  // running: onStarted and onMetrics say where it is
  status_->setText(QString("Paused at step %1 / %2").arg(progress_->value()).arg(total_));
  Q_EMIT progressChanged(true, status_->text());
}

void TrainingPanel::onStarted(qint64 firstStep, qint64 totalSteps, const QString& device, int threads) {
  first_ = firstStep;
  total_ = std::max<qint64>(1, totalSteps);
  clock_.start();
  window_.clear();
  window_.emplace_back(0.0, firstStep);
  progress_->setRange(0, static_cast<int>(total_));
  progress_->setValue(static_cast<int>(firstStep));
  runtime_->setText(QString("device %1 · %2 threads").arg(device).arg(threads));
  status_->setText(QString("Training from step %1 of %2…").arg(firstStep).arg(totalSteps));
  Q_EMIT progressChanged(true, status_->text());
}

void TrainingPanel::onMetrics(const model_core::MetricsSnapshot& m) {
  progress_->setValue(static_cast<int>(m.step));
  // The rate over the last 5 s (at least the last two updates): smooth, yet it follows a change.
  const double now = clock_.isValid() ? clock_.elapsed() / 1000.0 : 0;
  window_.emplace_back(now, m.step);
  while (window_.size() > 2 && now - window_[1].first >= 5.0) window_.pop_front();
  const double span = window_.back().first - window_.front().first;
  const double stepsPerSecond = span > 0 ? double(window_.back().second - window_.front().second) / span : 0;
  const double tokensPerSecond = stepsPerSecond * double(tokensPerStep_);
  const double eta = stepsPerSecond > 0 ? double(total_ - m.step) / stepsPerSecond : 0;
  if (paused_) {  // a step (F7) while paused: no rate, no ETA
    status_->setText(QString("Paused at step %1 / %2 · loss %3").arg(m.step).arg(total_).arg(m.loss, 0, 'f', 4));
    Q_EMIT progressChanged(true, status_->text());
    return;
  }
  status_->setText(QString("step %1 / %2 · loss %3 · %4 steps/s · %5 tokens/s · ETA %6:%7")
                       .arg(m.step)
                       .arg(total_)
                       .arg(m.loss, 0, 'f', 4)
                       .arg(stepsPerSecond, 0, 'f', stepsPerSecond < 10 ? 2 : 1)
                       .arg(tokensPerSecond, 0, 'f', 0)
                       .arg(int(eta) / 60, 2, 10, QChar('0'))
                       .arg(int(eta) % 60, 2, 10, QChar('0')));
  Q_EMIT progressChanged(true, status_->text());
}

void TrainingPanel::onFinished(const QString& summary) {
  status_->setText(summary);
  Q_EMIT progressChanged(false, summary);
}

void TrainingPanel::showIdle(const QString& runName, const QString& status) {
  progress_->setRange(0, 1);
  progress_->setValue(0);
  runtime_->setText(costText_);  // what training it costs, before F5
  status_->setText(runName + ": " + status);
}

QString TrainingPanel::statusText() const { return status_->text(); }
qint64 TrainingPanel::lastStep() const { return progress_->value(); }

}  // namespace tensorscope::app
