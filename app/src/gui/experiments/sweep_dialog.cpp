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
#include <QHeaderView>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <map>
#include <set>

#include "model_core/sweep.h"
#include "model_core/sweep_report_text.h"
#include "spec/design_baseline.h"
#include "spec/budget_match.h"
#include "spec/spec_json.h"

namespace tensorscope::app {

const QStringList kTuformerDesigns = {"mhsa", "skip_left", "skip_right", "heads_only", "trainable_heads_only", "thsa"};
const QStringList kModernDesigns = {"mqa", "gqa", "mla", "tpa", "diff", "talking_heads", "gated", "mta", "collaborative"};

namespace {

const char* describe(const QString& design) {
  if (design == "mhsa") return "MHSA: heads of size D, no mixing";
  // docs/attention-variants.md: skip-left is I_H ⊗ c₂c₃ᵀ, skip-right C₁ ⊗ 1_D1_Dᵀ.
  if (design == "skip_left") return "skip-left: heads kept apart; one trainable rank-one D×D block c₂c₃ᵀ (2D parameters)";
  if (design == "skip_right") return "skip-right: heads mixed by a trainable H×H core, shared across D (H² parameters)";
  if (design == "heads_only") return "heads-only: H·D heads of size 1, fixed";
  if (design == "trainable_heads_only") return "trainable heads-only: H·D heads of size 1 mixed by a dense core";
  if (design == "thsa") return "dense THSA: a dense trainable R×R core";
  // The modern presets as spec/attention_spec.h (designPresetNames) defines them.
  if (design == "mqa") return "MQA: one key/value head shared by every head";
  if (design == "gqa") return "GQA: key/value heads shared in 2 groups";
  if (design == "mla") return "MLA: keys and values from a latent of size 2D";
  if (design == "tpa") return "TPA: tensor-product factors (R_Q 6, R_K = R_V 2)";
  if (design == "diff") return "differential attention";
  if (design == "talking_heads") return "talking heads: heads mixed before and after the softmax";
  if (design == "gated") return "gated: an elementwise sigmoid output gate";
  if (design == "collaborative") return "collaborative: one query/key space of H·D/2 shared by the heads";
  return "MTA: multi-token attention (causal)";
}

/// A modern preset at the current design's width, heads, head size, sequence length and causality
/// (its slots as the preset has them): what the Design dock's budget matcher calls a preset "at
/// this F, H, D" (DesignPanel::matchBaseline).
nlohmann::json presetAt(const std::string& preset, const spec::AttentionSpec& current) {
  const auto b = spec::presetAtSizeOf(preset, current);
  return nlohmann::json::parse(spec::toJson(b, -1));
}

}  // namespace

nlohmann::json designSweepJson(const model_core::RunConfig& base, const DesignSweepChoice& c) {
  using nlohmann::json;
  const auto& s = model_core::layerSpec(base.model, 0);
  const int H = s.sizes.H, D = s.sizes.D;
  const bool attentionMatch = c.matchOn == "attention";
  QStringList designs = c.designs;
  if (c.baseline != "this design" && !designs.contains(c.baseline)) designs.prepend(c.baseline);  // the duel needs it
  json values = json::array({{{"label", "this design"}, {"set", json::object()}}});
  for (const auto& d : designs) {
    json set;
    const std::string preset = d.toStdString();
    if (kModernDesigns.contains(d)) {
      set = {{"model.attention", presetAt(preset, s)}};
    } else if (d == "mhsa") {
      set = {{"model.attention.variant", "mhsa"}, {"model.attention.core", nullptr}, {"model.attention.sizes.R", H * D}};
    } else if (d == "heads_only" || d == "trainable_heads_only") {
      set = {{"model.attention.variant", "thsa"}, {"model.attention.core", {{"preset", preset}}},
             {"model.attention.sizes.H", H * D}, {"model.attention.sizes.D", 1}, {"model.attention.sizes.R", H * D}};
    } else if (kTuformerDesigns.contains(d)) {
      set = {{"model.attention.variant", "thsa"}, {"model.attention.core", {{"preset", preset}}},
             {"model.attention.sizes.R", H * D}};
    } else {
      throw std::invalid_argument("unknown design '" + preset + "'");
    }
    json value = {{"label", preset}, {"set", set}};
    // The D = 1 designs keep D = 1: the attention parameter match solves their heads instead.
    if (attentionMatch && (d == "heads_only" || d == "trainable_heads_only")) value["solve"] = "heads";
    values.push_back(value);
  }
  json seeds = json::array();
  for (int i = 1; i <= c.seeds; ++i) seeds.push_back(i);
  json sweep = {{"format", model_core::kSweepFormat},
                {"version", 1},
                {"name", c.name.toStdString()},
                {"description", "The current design against the chosen designs, made by Experiments > Sweep this design."},
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
  const std::string reference = c.baseline.toStdString();
  sweep["baseline"] = {{"axis", "design"}, {"label", reference}};
  if (attentionMatch)
    sweep["match_parameters"] = {{"axis", "design"}, {"reference", reference}, {"solve", "head_size"},
                                 {"tolerance", c.tolerance}};
  else if (!c.matchOn.isEmpty())
    sweep["match"] = {{"axis", "design"}, {"reference", reference}, {"on", c.matchOn.toStdString()},
                      {"size", c.matchSize.isEmpty() ? std::string("any") : c.matchSize.toStdString()},
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
  for (int i = 0; i < kModernDesigns.size(); ++i) {  // the modern presets, beside them
    auto* box = new QCheckBox(describe(kModernDesigns[i]));
    box->setObjectName(kModernDesigns[i]);
    box->setToolTip("The " + kModernDesigns[i] + " design preset at this design's F, H and D (spec preset " +
                    kModernDesigns[i] + ")");
    grid->addWidget(box, i % 4, 1 + i / 4);
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
  baseline_ = new QComboBox;
  baseline_->setObjectName("sweepBaseline");
  baseline_->addItem("this design", "this design");
  for (const QString& d : kTuformerDesigns + kModernDesigns) baseline_->addItem(d, d);
  baseline_->setToolTip("The design every other is compared with (the verdicts) and whose budget the others match; "
                        "a baseline not ticked above is added to the sweep");
  form->addRow("Baseline", baseline_);
  auto* matchRow = new QHBoxLayout;
  matchOn_ = new QComboBox;
  matchOn_->setObjectName("sweepMatchOn");
  matchOn_->addItem("attention parameters (Tuformer's sizes)", "attention");
  matchOn_->addItem("trainable parameters (cost model)", "params");
  matchOn_->addItem("KV cache per token", "kv");
  matchOn_->addItem("training FLOPs per token", "flops");
  matchOn_->addItem("no budget match", "");
  matchOn_->setToolTip("Every design gets the size that brings this cost closest to the baseline's. Attention "
                       "parameters: the head size (the D = 1 designs: their heads); the others go through the cost "
                       "model's matcher (tensorscope spec match, docs/cost-model.md) on the size chosen");
  matchSize_ = new QComboBox;
  matchSize_->setObjectName("sweepMatchSize");
  matchSize_->addItem("any free size", "any");
  for (const auto& n : spec::budgetSizeNames())
    if (n != "F") matchSize_->addItem("solve " + QString::fromStdString(n), QString::fromStdString(n));  // F is the model's width
  matchSize_->setToolTip("The size the matcher solves; any: every free size, the closest kept");
  tolerance_ = new QDoubleSpinBox;
  tolerance_->setRange(0.1, 50);
  tolerance_->setPrefix("within ");
  tolerance_->setSuffix(" %");
  tolerance_->setValue(3);
  matchRow->addWidget(matchOn_, 2);
  matchRow->addWidget(matchSize_, 1);
  matchRow->addWidget(tolerance_);
  form->addRow("Equal budget", matchRow);
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
  auto* previewRow = new QHBoxLayout;
  auto* preview = new QPushButton("Preview the plan");
  preview->setObjectName("previewPlan");
  preview->setToolTip("Expand the sweep here: each design's solved size, its cost, the baseline's and the residual");
  previewRow->addWidget(preview);
  previewRow->addStretch(1);
  column->addLayout(previewRow);
  plan_ = new QTableWidget(0, 6);
  plan_->setObjectName("planPreview");
  plan_->setHorizontalHeaderLabels({"Design", "Matched", "Cost", "Baseline's", "Residual", "Attention params"});
  plan_->verticalHeader()->hide();
  plan_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  plan_->horizontalHeader()->setStretchLastSection(true);
  plan_->setMinimumHeight(fontMetrics().height() * 6);
  column->addWidget(plan_, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText("Plan the sweep");
  column->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &SweepDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &SweepDialog::reject);
  const auto budgetChanged = [this] {
    const QString on = matchOn_->currentData().toString();
    tolerance_->setEnabled(!on.isEmpty());
    matchSize_->setEnabled(on == "params" || on == "kv" || on == "flops");
  };
  connect(matchOn_, &QComboBox::currentIndexChanged, this, budgetChanged);
  budgetChanged();
  connect(preview, &QPushButton::clicked, this, [this] { previewPlan(); });
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
  c.matchOn = matchOn_->currentData().toString();
  c.matchSize = matchSize_->currentData().toString();
  c.baseline = baseline_->currentData().toString();
  c.tolerance = tolerance_->value() / 100.0;
  c.alsoPath = alsoPath_->text().trimmed();
  c.alsoValues = alsoValues_->text();
  return c;
}

QString SweepDialog::directory() const { return dir_->text().trimmed(); }

QString SweepDialog::error() const { return error_->isHidden() ? QString() : error_->text(); }

void SweepDialog::showProblem(const QString& problem) {
  if (problem.isEmpty()) {
    error_->hide();
    return;
  }
  error_->setText(problem);
  error_->show();
}

bool SweepDialog::previewPlan() {
  plan_->setRowCount(0);
  const auto c = choice();
  if (c.designs.isEmpty()) {
    showProblem("Choose at least one design to compare with.");
    return false;
  }
  std::vector<model_core::Trial> trials;
  try {
    trials = model_core::expandSweep(model_core::sweepFromJson(designSweepJson(base_, c).dump()));
  } catch (const std::exception& e) {
    showProblem(QString::fromStdString(e.what()));  // a refused match says the matcher's reason, naming the trial
    return false;
  }
  showProblem({});
  // One row per design (its first seed), in the plan's order; the residual of the attention
  // parameter match is the parameter count's relative gap to the baseline's (what it matched).
  const auto label = [](const model_core::Trial& t) { return t.labels.empty() ? t.design : t.labels.front().second; };
  std::map<std::string, const model_core::Trial*> reference;  // the baseline's trial for each other label
  const std::string base = c.baseline.toStdString();
  for (const auto& t : trials)
    if (label(t) == base) {
      auto others = t.labels;
      if (!others.empty()) others.erase(others.begin());
      std::string key;
      for (const auto& [a, l] : others) key += l + "\x1f";
      reference.emplace(key, &t);
    }
  std::set<std::string> shown;
  for (const auto& t : trials) {
    if (!shown.insert(t.design).second) continue;
    auto others = t.labels;
    if (!others.empty()) others.erase(others.begin());
    std::string key;
    for (const auto& [a, l] : others) key += l + "\x1f";
    const auto ref = reference.find(key);
    const int row = plan_->rowCount();
    plan_->insertRow(row);
    QStringList cells = {QString::fromStdString(t.design), "", "", "", "", QString::number(t.attention_parameters)};
    if (label(t) == base) {
      cells[1] = "(the baseline)";
    } else if (!t.match_on.empty()) {
      cells[1] = QString::fromStdString(t.matched);
      cells[2] = QString::number(t.match_cost, 'g', 10) + " " + QString::fromStdString(t.match_on);
      cells[3] = QString::number(t.match_target, 'g', 10);
      cells[4] = QString::fromStdString(model_core::matchResidualText(t.match_residual));
    } else if (c.matchOn == "attention" && ref != reference.end() && ref->second->attention_parameters > 0) {
      const double target = double(ref->second->attention_parameters);
      cells[1] = t.matched.empty() ? "(as it is)" : QString::fromStdString(t.matched);
      cells[2] = QString::number(t.attention_parameters) + " attention params";
      cells[3] = QString::number(ref->second->attention_parameters);
      cells[4] = QString::fromStdString(model_core::matchResidualText((double(t.attention_parameters) - target) / target));
    } else {
      cells[1] = "(no budget match)";
    }
    for (int k = 0; k < cells.size(); ++k) {
      auto* item = new QTableWidgetItem(cells[k]);
      if (k >= 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      plan_->setItem(row, k, item);
    }
  }
  plan_->resizeColumnsToContents();
  return true;
}

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
    showProblem(problem);
    return;
  }
  showProblem({});
  QDialog::accept();
}

}  // namespace tensorscope::app
