#include "gui/experiments/sweep_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "model_core/sweep.h"

namespace tensorscope::app {

const QStringList kTuformerDesigns = {"mhsa", "skip_left", "skip_right", "heads_only", "trainable_heads_only", "thsa"};

namespace {

const char* describe(const QString& design) {
  if (design == "mhsa") return "MHSA: heads of size D, no mixing";
  // docs/attention-variants.md: skip-left is I_H ⊗ c₂c₃ᵀ, skip-right C₁ ⊗ 1_D1_Dᵀ.
  if (design == "skip_left") return "skip-left: heads kept apart; one trainable rank-one D×D block c₂c₃ᵀ (2D parameters)";
  if (design == "skip_right") return "skip-right: heads mixed by a trainable H×H core, shared across D (H² parameters)";
  if (design == "heads_only") return "heads-only: H·D heads of size 1, fixed";
  if (design == "trainable_heads_only") return "trainable heads-only: H·D heads of size 1 mixed by a dense core";
  return "dense THSA: a dense trainable R×R core";
}

}  // namespace

nlohmann::json designSweepJson(const model_core::RunConfig& base, const DesignSweepChoice& c) {
  using nlohmann::json;
  const auto& s = model_core::layerSpec(base.model, 0);
  const int H = s.sizes.H, D = s.sizes.D;
  json values = json::array({{{"label", "this design"}, {"set", json::object()}}});
  for (const auto& d : c.designs) {
    json set;
    const std::string preset = d.toStdString();
    if (d == "mhsa") {
      set = {{"model.attention.variant", "mhsa"}, {"model.attention.core", nullptr}, {"model.attention.sizes.R", H * D}};
    } else if (d == "heads_only" || d == "trainable_heads_only") {
      set = {{"model.attention.variant", "thsa"}, {"model.attention.core", {{"preset", preset}}},
             {"model.attention.sizes.H", H * D}, {"model.attention.sizes.D", 1}, {"model.attention.sizes.R", H * D}};
    } else {
      set = {{"model.attention.variant", "thsa"}, {"model.attention.core", {{"preset", preset}}},
             {"model.attention.sizes.R", H * D}};
    }
    json value = {{"label", preset}, {"set", set}};
    if (d == "heads_only" || d == "trainable_heads_only") value["solve"] = "heads";
    values.push_back(value);
  }
  json seeds = json::array();
  for (int i = 1; i <= c.seeds; ++i) seeds.push_back(i);
  json sweep = {{"format", model_core::kSweepFormat},
                {"version", 1},
                {"name", c.name.toStdString()},
                {"description", "The current design against Tuformer's designs, made by Experiments > Sweep this design."},
                {"base", nlohmann::json::parse(model_core::runConfigToJson(base))},
                {"axes", json::array({{{"name", "design"}, {"values", values}}})},
                {"seeds", seeds},
                {"budget", {{"steps", c.steps}}},
                {"metric", c.metric.toStdString()}};
  if (!c.alsoPath.trimmed().isEmpty()) {
    json values = json::array();
    for (const QString& v : c.alsoValues.split(',', Qt::SkipEmptyParts)) {
      const std::string text = v.trimmed().toStdString();
      json value;
      try {
        value = json::parse(text);  // numbers, true/false, "quoted strings"
      } catch (const json::exception&) {
        value = text;  // a bare word is a string (e.g. sinusoidal)
      }
      if (value.is_structured()) throw std::invalid_argument("the values of " + c.alsoPath.toStdString() + " are numbers or words; got " + text);
      values.push_back(value);
    }
    if (values.empty()) throw std::invalid_argument("give the values of " + c.alsoPath.toStdString() + ", separated by commas");
    sweep["axes"].push_back({{"path", c.alsoPath.trimmed().toStdString()}, {"values", values}});
  }
  if (c.matchParameters)
    sweep["match_parameters"] = {{"axis", "design"}, {"reference", "this design"}, {"solve", "head_size"},
                                 {"tolerance", c.tolerance}};
  return sweep;
}

SweepDialog::SweepDialog(const QString& runName, const model_core::RunConfig& base, const QString& defaultDir,
                         QWidget* parent)
    : QDialog(parent), base_(base) {
  setWindowTitle("Sweep this design");
  auto* column = new QVBoxLayout(this);
  auto* intro = new QLabel("Train <b>" + runName.toHtmlEscaped() +
                           "</b> (\"this design\") beside the designs chosen below, on its task and settings, over "
                           "seeds; the Experiments dock runs the trials and compares them.");
  intro->setWordWrap(true);
  column->addWidget(intro);
  auto* group = new QGroupBox("Compare with");
  auto* grid = new QGridLayout(group);
  for (int i = 0; i < kTuformerDesigns.size(); ++i) {
    auto* box = new QCheckBox(describe(kTuformerDesigns[i]));
    box->setObjectName(kTuformerDesigns[i]);
    box->setChecked(kTuformerDesigns[i] == "mhsa" || kTuformerDesigns[i] == "thsa");
    grid->addWidget(box, i, 0);
    designs_.append(box);
  }
  column->addWidget(group);
  auto* form = new QFormLayout;
  name_ = new QLineEdit(runName + " against Tuformer's designs");
  form->addRow("Name", name_);
  seeds_ = new QSpinBox;
  seeds_->setRange(1, 20);
  seeds_->setValue(3);
  form->addRow("Seeds", seeds_);
  steps_ = new QSpinBox;
  steps_->setRange(1, 10000000);
  steps_->setValue(static_cast<int>(std::min<std::int64_t>(base.train.steps, 10000000)));
  form->addRow("Steps per trial", steps_);
  metric_ = new QComboBox;
  metric_->addItems({"loss", "accuracy", "exact_match"});
  form->addRow("Compare by", metric_);
  auto* matchRow = new QHBoxLayout;
  match_ = new QCheckBox("at this design's attention parameter count, within");
  match_->setChecked(true);
  tolerance_ = new QDoubleSpinBox;
  tolerance_->setRange(0.1, 50);
  tolerance_->setSuffix(" %");
  tolerance_->setValue(3);
  matchRow->addWidget(match_);
  matchRow->addWidget(tolerance_);
  matchRow->addStretch(1);
  form->addRow("Parameters", matchRow);
  auto* alsoRow = new QHBoxLayout;
  alsoPath_ = new QLineEdit;
  alsoPath_->setPlaceholderText("config path, e.g. train.lr");
  alsoValues_ = new QLineEdit;
  alsoValues_->setPlaceholderText("values, e.g. 0.001, 0.002");
  alsoRow->addWidget(alsoPath_, 1);
  alsoRow->addWidget(alsoValues_, 1);
  form->addRow("Also vary", alsoRow);
  auto* dirRow = new QHBoxLayout;
  dir_ = new QLineEdit(defaultDir);
  auto* choose = new QPushButton("Choose…");
  dirRow->addWidget(dir_, 1);
  dirRow->addWidget(choose);
  form->addRow("Sweep folder", dirRow);
  column->addLayout(form);
  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #c62828");
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  column->addWidget(error_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText("Plan the sweep");
  column->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &SweepDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &SweepDialog::reject);
  connect(match_, &QCheckBox::toggled, tolerance_, &QWidget::setEnabled);
  connect(choose, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, "Sweep folder (new or empty)", dir_->text());
    if (!d.isEmpty()) dir_->setText(d);
  });
}

QCheckBox* SweepDialog::designBox(const QString& design) const {
  for (auto* b : designs_)
    if (b->objectName() == design) return b;
  return nullptr;
}

DesignSweepChoice SweepDialog::choice() const {
  DesignSweepChoice c;
  c.name = name_->text().trimmed();
  for (auto* b : designs_)
    if (b->isChecked()) c.designs.append(b->objectName());
  c.seeds = seeds_->value();
  c.steps = steps_->value();
  c.metric = metric_->currentText();
  c.matchParameters = match_->isChecked();
  c.tolerance = tolerance_->value() / 100.0;
  c.alsoPath = alsoPath_->text().trimmed();
  c.alsoValues = alsoValues_->text();
  return c;
}

QString SweepDialog::directory() const { return dir_->text().trimmed(); }

QString SweepDialog::error() const { return error_->isHidden() ? QString() : error_->text(); }

void SweepDialog::accept() {
  const auto c = choice();
  QString problem;
  if (c.designs.isEmpty()) problem = "Choose at least one design to compare with.";
  else if (directory().isEmpty()) problem = "Choose the sweep folder (new or empty).";
  if (problem.isEmpty()) {
    try {
      const auto sweep = model_core::sweepFromJson(designSweepJson(base_, c).dump());
      const auto trials = model_core::expandSweep(sweep);
      model_core::writeSweepDirectory(directory().toStdString(), sweep, trials);
      planned_ = directory();
    } catch (const std::exception& e) {
      problem = QString::fromStdString(e.what());
    }
  }
  if (!problem.isEmpty()) {
    error_->setText(problem);
    error_->show();
    return;
  }
  error_->hide();
  QDialog::accept();
}

}  // namespace tensorscope::app
