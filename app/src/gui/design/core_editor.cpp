#include "gui/design/core_editor.h"

#include <tuple>

#include <QButtonGroup>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QEvent>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QRadioButton>
#include <QVBoxLayout>
#include <cmath>

#include "model_core/analysis.h"
#include "spec/cost_model.h"
#include "spec/validation.h"
#include "viz/matrix_heatmap.h"

namespace tensorscope::app {
namespace {

using spec::CoreStructure;
using spec::FactorKind;

QString spectrumText(const std::vector<double>& s) {
  QStringList parts;
  // A singular value below 1e-9 of the largest is the SVD's rounding of an exact zero (finding N22:
  // "8.04e-16" beside a rank-one C): shown as 0.
  const double noise = s.empty() ? 0.0 : 1e-9 * s.front();
  for (size_t i = 0; i < s.size() && i < 8; ++i) parts << (s[i] <= noise ? QString("0") : QString::number(s[i], 'g', 3));
  if (s.size() > 8) parts << QString("… (%1 values)").arg(s.size());
  return parts.join(", ");
}

/// Values for a factor switched to fixed/trainable: keep what it shows now.
std::vector<double> currentFactorValues(const spec::CoreFactor& f, int n) {
  std::vector<double> v(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double x = 0;
      switch (f.kind) {
        case FactorKind::Identity: x = i == j; break;
        case FactorKind::Ones: x = 1; break;
        case FactorKind::Rank1: x = f.values[i] * f.values[n + j]; break;
        default: x = f.values[static_cast<size_t>(i) * n + j];
      }
      v[static_cast<size_t>(i) * n + j] = x;
    }
  return v;
}

}  // namespace

CoreEditor::CoreEditor(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  banner_ = new QLabel;
  banner_->setWordWrap(true);
  updateBannerColours();
  banner_->hide();
  layout->addWidget(banner_);

  auto* form = new QFormLayout;
  preset_ = new QComboBox;
  preset_->addItem("(choose a preset)");
  for (const auto& n : spec::corePresetNames()) preset_->addItem(QString::fromStdString(n));
  structure_ = new QComboBox;
  structure_->addItems({"dense", "kronecker", "low_rank"});
  kindA_ = new QComboBox;
  kindA_->addItems({"identity", "ones", "fixed", "trainable"});
  kindB_ = new QComboBox;
  kindB_->addItems({"ones", "identity", "rank1", "fixed", "trainable"});
  scale_ = new QDoubleSpinBox;
  scale_->setRange(-1000, 1000);
  scale_->setDecimals(4);
  scale_->setToolTip("s in C = s·(A ⊗ B)");
  layer_ = new QSpinBox;
  layer_->setRange(0, 0);
  layer_->setToolTip("Layer: the layer whose C is shown and edited (every layer shares one C until a fork of "
                     "a trained run, or an edit here, gives each its own)");
  layerNote_ = new QLabel;
  auto* layerRow = new QHBoxLayout;
  layerRow->addWidget(layer_);
  layerRow->addWidget(layerNote_, 1);
  form->addRow("Layer", layerRow);
  connect(layer_, &QSpinBox::valueChanged, this, [this](int l) {
    if (!loading_) Q_EMIT layerChosen(l);
  });
  form->addRow("Preset", preset_);
  form->addRow("Structure", structure_);
  // Rows a laptop's dock (about 400 px) holds without scrolling sideways.
  auto* kinds = new QHBoxLayout;
  kinds->addWidget(new QLabel("A (H×H)"));
  kinds->addWidget(kindA_, 1);
  kinds->addWidget(new QLabel("B (D×D)"));
  kinds->addWidget(kindB_, 1);
  form->addRow("Factors", kinds);
  form->addRow("Scale s", scale_);
  for (QComboBox* c : {kindA_, kindB_}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(6);
  }
  rank_ = new QSpinBox;
  rank_->setRange(1, 4096);
  rank_->setToolTip("ρ of a low-rank core C = U·Vᵀ (U, V: R×ρ): its cost and its stable rank both follow ρ");
  form->addRow("Rank ρ", rank_);
  layout->addLayout(form);

  auto* toolsRow = new QHBoxLayout;
  tools_ = new QButtonGroup(this);
  const char* names[] = {"Set value", "Paint trainable", "Paint frozen"};
  for (int i = 0; i < 3; ++i) {
    auto* b = new QRadioButton(names[i]);
    b->setToolTip("Click a cell of C, drag across cells, or Shift+drag from corner to corner to fill a rectangle "
                  "(one undo step)");
    tools_->addButton(b, i);
    toolsRow->addWidget(b);
  }
  tools_->button(0)->setChecked(true);
  value_ = new QDoubleSpinBox;
  value_->setRange(-1000, 1000);
  value_->setDecimals(3);
  value_->setValue(1.0);
  value_->setToolTip("Value a click, a drag or a Shift+drag rectangle sets (dense C, or a fixed/trainable factor)");
  toolsRow->addStretch(1);
  layout->addLayout(toolsRow);
  auto* valueRow = new QHBoxLayout;
  valueRow->addWidget(new QLabel("Value"));
  valueRow->addWidget(value_);
  toDense_ = new QPushButton("Make dense");
  toDense_->setToolTip("Materialise C as a dense matrix with the trainable entries it has now");
  valueRow->addWidget(toDense_);
  valueRow->addStretch(1);
  layout->addLayout(valueRow);

  heatmap_ = new viz::MatrixHeatmap;
  heatmap_->setMinimumHeight(260);
  layout->addWidget(heatmap_, 3);
  auto* factors = new QHBoxLayout;
  factorA_ = new viz::MatrixHeatmap;
  factorB_ = new viz::MatrixHeatmap;
  factorA_->setMinimumHeight(140);
  factorB_->setMinimumHeight(140);
  factors->addWidget(factorA_);
  factors->addWidget(factorB_);
  layout->addLayout(factors, 1);
  readout_ = new QLabel;
  readout_->setWordWrap(true);
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(readout_);

  connect(tools_, &QButtonGroup::idClicked, this, [this](int id) { tool_ = static_cast<Tool>(id); });
  connect(preset_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (loading_ || i <= 0 || !spec_.core) return;
    auto s = spec_;
    const std::string name = preset_->currentText().toStdString();
    if ((name == "heads_only" || name == "trainable_heads_only") && s.sizes.D != 1) {
      s.sizes.D = 1;
      s.sizes.R = s.sizes.H;
    }
    if (s.sizes.H * s.sizes.D != s.sizes.R) s.sizes.R = s.sizes.H * s.sizes.D;
    if (refuse(spec::corePresetIssues(name, s.sizes))) return;
    s.core = spec::makeCorePreset(name, s.sizes.H, s.sizes.D);
    emitEdit(s, "apply preset " + preset_->currentText());
  });
  for (auto* c : {structure_, kindA_, kindB_})
    connect(c, &QComboBox::currentTextChanged, this, [this] { onStructureChanged(); });
  connect(scale_, &QDoubleSpinBox::editingFinished, this, [this] {
    if (loading_ || !spec_.core || spec_.core->structure != CoreStructure::Kronecker) return;
    if (scale_->value() == spec_.core->scale || scale_->value() == 0.0) return;
    auto s = spec_;
    s.core->scale = scale_->value();
    s.core->preset = "custom";
    emitEdit(s, "set scale s");
  });
  connect(rank_, &QSpinBox::editingFinished, this, [this] { setRank(rank_->value()); });
  connect(toDense_, &QPushButton::clicked, this, [this] {
    if (!spec_.core || spec_.core->structure == CoreStructure::Dense) return;
    auto s = spec_;
    const auto& z = s.sizes;
    if (refuse(spec::coreSizeIssues(CoreStructure::Dense, z.R))) return;
    spec::CoreSpec d;
    d.preset = "custom";
    d.structure = CoreStructure::Dense;
    d.dense_values = spec::materializeCore(*s.core, z.H, z.D, z.R);
    d.trainable_mask = spec::coreTrainableEntries(*s.core, z.H, z.D, z.R);
    s.core = d;
    emitEdit(s, "make C dense");
  });
  connect(heatmap_, &viz::MatrixHeatmap::cellClicked, this,
          [this](int r, int c, Qt::MouseButtons) { editCell(r, c, false); });
  connect(heatmap_, &viz::MatrixHeatmap::cellDragged, this, [this](int r, int c) { editCell(r, c, true); });
  connect(heatmap_, &viz::MatrixHeatmap::rectangleChosen, this,
          [this](int r0, int c0, int r1, int c1) { editRectangle(r0, c0, r1, c1); });
  auto factorEdit = [this](bool isA, int r, int c) {
    if (!spec_.core || spec_.core->structure == CoreStructure::Dense) return;
    if (!editable_) {
      pendingCell_.reset();  // a factor's click is not replayed on the fork (forkEditText says so)
      Q_EMIT forkRequested();
      return;
    }
    auto s = spec_;
    if (s.core->structure == CoreStructure::LowRank) {  // a click on U or V sets that entry
      auto& values = isA ? s.core->u_values : s.core->v_values;
      const size_t k = static_cast<size_t>(r) * s.core->rank + c;
      if (k >= values.size() || values[k] == value_->value()) return;
      values[k] = value_->value();
      s.core->preset = "custom";
      emitEdit(s, QString("set %1[%2,%3]").arg(isA ? "U" : "V").arg(r).arg(c));
      return;
    }
    auto& f = isA ? s.core->a : s.core->b;
    const int n = isA ? s.sizes.H : s.sizes.D;
    if (f.kind != FactorKind::Fixed && f.kind != FactorKind::Trainable) {
      banner_->setText("Set the factor's kind to fixed or trainable to edit its values.");
      banner_->show();
      return;
    }
    f.values[static_cast<size_t>(r) * n + c] = value_->value();
    s.core->preset = "custom";
    emitEdit(s, QString("set %1[%2,%3]").arg(isA ? "A" : "B").arg(r).arg(c));
  };
  connect(factorA_, &viz::MatrixHeatmap::cellClicked, this,
          [factorEdit](int r, int c, Qt::MouseButtons) { factorEdit(true, r, c); });
  connect(factorB_, &viz::MatrixHeatmap::cellClicked, this,
          [factorEdit](int r, int c, Qt::MouseButtons) { factorEdit(false, r, c); });
}

void CoreEditor::setTool(Tool tool) {
  tool_ = tool;
  tools_->button(static_cast<int>(tool))->setChecked(true);
}

void CoreEditor::setPaintValue(double value) { value_->setValue(value); }

void CoreEditor::setLayers(int count, int current, bool perLayer) {
  const bool was = loading_;
  loading_ = true;
  layer_->setRange(0, std::max(0, count - 1));
  layer_->setValue(current);
  layer_->setEnabled(count > 1);
  layerNote_->setText(count <= 1 ? "one layer"
                      : perLayer ? QString("of %1: each layer has its own C").arg(count)
                                 : QString("of %1: all layers share this C").arg(count));
  loading_ = was;
}

int CoreEditor::layer() const { return layer_->value(); }

void CoreEditor::setEditable(bool editable) {
  editable_ = editable;
  learnedStep_ = -1;
  // Read-only until a learned C arrives (showLearnedCore names its run): the banner must not keep
  // naming the run shown before (finding N10).
  banner_->setText(spec_.core ? "This run is training: C is read-only. Its learned C appears here with its next inspection; "
                                "editing forks a new run from its latest checkpoint."
                              : "This run is training: its design is read-only.");
  banner_->setVisible(!editable);
  if (editable) refresh();
}

void CoreEditor::setSpec(const spec::AttentionSpec& s) {
  spec_ = s;
  refresh();
}

QString CoreEditor::factorName(int index) const {
  if (!spec_.core) return {};
  if (spec_.core->structure == CoreStructure::Kronecker) return index == 0 ? "A" : "B";
  if (spec_.core->structure == CoreStructure::LowRank) return index == 0 ? "U" : "V";
  return {};
}

void CoreEditor::showLearnedCore(const std::vector<float>& values, int R, qint64 step, const QString& whose,
                                 const spec::CoreSpec* factors) {
  editable_ = false;
  learnedStep_ = step;
  std::vector<double> v(values.begin(), values.end());
  heatmap_->setMatrix(v, R, R, QString("learned C at step %1").arg(step));
  // The design's factors beside a learned C would show another C: the learned ones, or why not.
  const bool structured = spec_.core && spec_.core->structure != CoreStructure::Dense;
  if (structured && factors && factors->structure == spec_.core->structure)
    showFactors(*factors, QString("learned (step %1) ").arg(step));
  else if (structured) {
    factorA_->clear(QString("The factors of the learned C are read from the run's checkpoint once training stops "
                            "(training reports C only)."));
    factorB_->clear("");
  }
  stableRank_ = model_core::stableRank(v, R, R);
  banner_->setText(whose.isEmpty() ? QString("Showing a learned C (read-only). Editing forks a new run from the latest checkpoint.") : whose);
  banner_->show();
  readout_->setText(QString("stable rank (number of heads) %1 · spectrum %2")
                        .arg(stableRank_, 0, 'f', 3)
                        .arg(spectrumText(model_core::singularValues(v, R, R))));
}

void CoreEditor::emitEdit(const spec::AttentionSpec& after, const QString& what, int stroke) {
  const auto before = spec_;
  spec_ = after;
  refresh();
  Q_EMIT coreEdited(before, after, what, stroke);
}

QString CoreEditor::readoutText() const { return readout_->text(); }

void CoreEditor::updateBannerColours() {
  const QColor window = palette().color(QPalette::Window), amber(255, 193, 7);
  const auto mix = [&](int a, int b) { return (3 * a + b) / 4; };
  const QColor background(mix(window.red(), amber.red()), mix(window.green(), amber.green()), mix(window.blue(), amber.blue()));
  banner_->setStyleSheet(QString("background: %1; color: %2; padding: 4px;")
                             .arg(background.name(), palette().color(QPalette::WindowText).name()));
}

void CoreEditor::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if ((event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange) && banner_) updateBannerColours();
}

QString CoreEditor::bannerText() const { return banner_->isHidden() ? QString() : banner_->text(); }

bool CoreEditor::refuse(const std::vector<spec::Issue>& issues) {
  if (issues.empty()) return false;
  banner_->setText(QString::fromStdString("Not changed: " + spec::formatIssues(issues)));
  banner_->show();
  refresh();
  return true;
}

void CoreEditor::setStructure(const QString& name) { structure_->setCurrentText(name); }

void CoreEditor::setRank(int rank) {
  if (loading_ || !spec_.core || spec_.core->structure != CoreStructure::LowRank) return;
  if (!editable_) {
    pendingCell_.reset();
    Q_EMIT forkRequested();
    return;
  }
  const spec::CoreSpec& old = *spec_.core;
  const auto& z = spec_.sizes;
  if (rank == old.rank || rank < 1 || rank > z.R || z.H * z.D != z.R) return;
  if (refuse(spec::coreSizeIssues(CoreStructure::LowRank, z.R, rank))) return;
  // Keep the learned columns; new ones start as makeLowRankCore starts them.
  auto fresh = spec::makeLowRankCore(z.H, z.D, rank);
  for (int r = 0; r < z.R; ++r)
    for (int j = 0; j < std::min(rank, old.rank); ++j) {
      fresh.u_values[static_cast<size_t>(r) * rank + j] = old.u_values[static_cast<size_t>(r) * old.rank + j];
      fresh.v_values[static_cast<size_t>(r) * rank + j] = old.v_values[static_cast<size_t>(r) * old.rank + j];
    }
  fresh.factors_trainable = old.factors_trainable;
  fresh.preset = "custom";
  auto s = spec_;
  s.core = std::move(fresh);
  emitEdit(s, QString("set rank ρ = %1").arg(rank));
}

void CoreEditor::onStructureChanged() {
  if (loading_ || !spec_.core) return;
  auto s = spec_;
  auto& core = *s.core;
  const auto& z = s.sizes;
  const bool dense = structure_->currentText() == "dense";
  const bool lowRank = structure_->currentText() == "low_rank";
  if (dense && core.structure != CoreStructure::Dense) {
    toDense_->click();
    return;
  }
  if (lowRank != (core.structure == CoreStructure::LowRank) && z.H * z.D != z.R) {
    banner_->setText(QString("This structure starts from the MHSA preset, which needs R = H·D (R=%1, H=%2, D=%3); change "
                             "the sizes in the Design dock.")
                         .arg(z.R).arg(z.H).arg(z.D));
    banner_->show();
    refresh();
    return;
  }
  if (lowRank && core.structure != CoreStructure::LowRank) {
    if (refuse(spec::coreSizeIssues(CoreStructure::LowRank, z.R, z.H))) return;
    core = spec::makeLowRankCore(z.H, z.D, z.H);  // rank H: C starts as the mhsa preset
    emitEdit(s, "make C low rank (ρ = H)");
    return;
  }
  if (!dense && !lowRank && core.structure != CoreStructure::Kronecker) {
    core = spec::makeCorePreset("mhsa", z.H, z.D);
  }
  FactorKind ka, kb;
  spec::parseFactorKind(kindA_->currentText().toStdString(), ka);
  spec::parseFactorKind(kindB_->currentText().toStdString(), kb);
  if (core.structure == CoreStructure::Kronecker) {
    for (const auto& [kind, dim, name] : {std::tuple{ka, z.H, "A"}, std::tuple{kb, z.D, "B"}})
      if ((kind == FactorKind::Fixed || kind == FactorKind::Trainable) && static_cast<long long>(dim) * dim > spec::kMaxCoreValues &&
          refuse({{std::string("core.") + name + ".kind", "a " + std::string(spec::toString(kind)) + " factor " + name + " (" +
                                                             std::to_string(dim) + " x " + std::to_string(dim) +
                                                             ") would hold more than the 16,777,216 values a core may hold"}}))
        return;
    if (ka != core.a.kind) {
      if (ka == FactorKind::Fixed || ka == FactorKind::Trainable) core.a.values = currentFactorValues(core.a, z.H);
      else core.a.values.clear();
      core.a.kind = ka;
    }
    if (kb != core.b.kind) {
      if (kb == FactorKind::Fixed || kb == FactorKind::Trainable) core.b.values = currentFactorValues(core.b, z.D);
      else if (kb == FactorKind::Rank1) core.b.values.assign(2 * static_cast<size_t>(z.D), 1.0);
      else core.b.values.clear();
      core.b.kind = kb;
    }
  }
  core.preset = "custom";
  if (s == spec_) return;
  emitEdit(s, "change core structure");
}

QString CoreEditor::forkEditText() const {
  const QString schedule(" Its learning rate starts again from its warm-up, as a new run's does (the optimizer "
                         "and schedule are not carried over).");
  if (pendingCell_)
    return "The fork starts with every layer's learned C, with your edit applied, and with every other learned weight." +
           schedule;
  const bool factored = spec_.core && spec_.core->structure != CoreStructure::Dense;
  return QString("The fork starts with every layer's learned C as it is%1, and with every other learned weight: repeat "
                 "your edit on the fork.")
             .arg(factored ? QString(" (a %1 C is edited through its factors or Make dense, which this click was not)")
                                 .arg(QString::fromStdString(std::string(spec::toString(spec_.core->structure))))
                           : QString()) +
         schedule;
}

bool CoreEditor::replayPendingEdit() {
  if (!pendingCell_ || !editable_) return false;
  const auto [row, col] = *pendingCell_;
  pendingCell_.reset();
  editCell(row, col);
  return true;
}

void CoreEditor::editCell(int row, int col, bool continuingStroke) {
  if (!spec_.core) return;
  if (!editable_) {
    if (continuingStroke) return;  // one question per click, not one per cell of a drag
    // Only a dense C's cell can be replayed on the fork; a factored C's click is not (the fork's C
    // is factored too), and the question says so (forkEditText).
    if (spec_.core->structure == CoreStructure::Dense) pendingCell_ = std::make_pair(row, col);
    else pendingCell_.reset();
    Q_EMIT forkRequested();
    return;
  }
  if (!continuingStroke) ++stroke_;
  auto s = spec_;
  auto& core = *s.core;
  const int R = s.sizes.R;
  if (row < 0 || col < 0 || row >= R || col >= R) return;
  if (core.structure == CoreStructure::LowRank) {
    banner_->setText("C = U·Vᵀ is low rank: change its rank ρ, or press \"Make dense\" to edit C entry by entry.");
    banner_->show();
    return;
  }
  if (core.structure != CoreStructure::Dense) {
    banner_->setText("C is a Kronecker product: edit its factors A and B below, or press \"Make dense\" to edit C entry by entry.");
    banner_->show();
    return;
  }
  banner_->hide();
  const size_t k = static_cast<size_t>(row) * R + col;
  QString what;
  switch (tool_) {
    case Tool::SetValue:
      if (core.dense_values[k] == value_->value()) return;
      core.dense_values[k] = value_->value();
      what = QString("set C[%1,%2] = %3").arg(row).arg(col).arg(value_->value());
      break;
    case Tool::PaintTrainable:
    case Tool::PaintFrozen: {
      const unsigned char m = tool_ == Tool::PaintTrainable ? 1 : 0;
      if (core.trainable_mask[k] == m) return;
      core.trainable_mask[k] = m;
      what = m ? "paint trainable" : "paint frozen";
      break;
    }
  }
  core.preset = "custom";
  emitEdit(s, what, stroke_);
}

void CoreEditor::editRectangle(int row0, int col0, int row1, int col1) {
  // What a single cell says (read-only: the fork question; a factored C: edit its factors) holds
  // for the rectangle too: its first cell asks.
  if (!spec_.core || !editable_ || spec_.core->structure != CoreStructure::Dense) return editCell(row0, col0);
  const int R = spec_.sizes.R;
  row0 = std::max(row0, 0), col0 = std::max(col0, 0), row1 = std::min(row1, R - 1), col1 = std::min(col1, R - 1);
  auto s = spec_;
  auto& core = *s.core;
  bool changed = false;
  for (int r = row0; r <= row1; ++r)
    for (int c = col0; c <= col1; ++c) {
      const size_t k = static_cast<size_t>(r) * R + c;
      if (tool_ == Tool::SetValue) {
        changed |= core.dense_values[k] != value_->value();
        core.dense_values[k] = value_->value();
      } else {
        const unsigned char m = tool_ == Tool::PaintTrainable ? 1 : 0;
        changed |= core.trainable_mask[k] != m;
        core.trainable_mask[k] = m;
      }
    }
  if (!changed) return;
  banner_->hide();
  core.preset = "custom";
  const QString cells = QString("C[%1..%2, %3..%4]").arg(row0).arg(row1).arg(col0).arg(col1);
  const QString what = tool_ == Tool::SetValue ? QString("set %1 = %2").arg(cells).arg(value_->value())
                       : tool_ == Tool::PaintTrainable ? "paint " + cells + " trainable"
                                                       : "paint " + cells + " frozen";
  emitEdit(s, what, ++stroke_);  // one undo step for the whole rectangle
}

void CoreEditor::showFactors(const spec::CoreSpec& core, const QString& learned) {
  const auto& z = spec_.sizes;
  // The factors' own rows and columns, not channels of C: C = s·(A ⊗ B), A is H×H, B is D×D.
  if (core.structure == CoreStructure::Kronecker) {
    factorA_->setMatrix(currentFactorValues(core.a, z.H), z.H, z.H,
                        QString("%1factor A of C = s·(A ⊗ B) (%2×%2, %3)").arg(learned).arg(z.H).arg(QString::fromStdString(std::string(spec::toString(core.a.kind)))));
    factorB_->setMatrix(currentFactorValues(core.b, z.D), z.D, z.D,
                        QString("%1factor B of C = s·(A ⊗ B) (%2×%2, %3)").arg(learned).arg(z.D).arg(QString::fromStdString(std::string(spec::toString(core.b.kind)))));
    factorA_->setAxisTitles("column of A (head h′)", "row of A (head h)");
    factorB_->setAxisTitles("column of B (d′)", "row of B (d)");
  } else if (core.structure == CoreStructure::LowRank) {
    factorA_->setMatrix(core.u_values, z.R, core.rank, QString("%1factor U of C = U·Vᵀ (R×ρ, ρ = %2)").arg(learned).arg(core.rank));
    factorB_->setMatrix(core.v_values, z.R, core.rank, QString("%1factor V of C = U·Vᵀ (R×ρ)").arg(learned));
    factorA_->setAxisTitles("column of U (base map j)", "row of U (map r)");
    factorB_->setAxisTitles("column of V (base map j)", "row of V (channel s of Q and K)");
  } else {
    factorA_->clear("dense C: no factors");
    factorB_->clear("");
  }
}

void CoreEditor::refresh() {
  loading_ = true;
  learnedStep_ = -1;
  const bool hasCore = spec_.core.has_value();
  for (QWidget* w : std::initializer_list<QWidget*>{preset_, structure_, kindA_, kindB_, scale_, value_, toDense_, rank_})
    w->setEnabled(hasCore && editable_);
  // A variant without C shows no factor panels and no stale preset of another design.
  // A dense C has no factors: its panels go, and C gets their room.
  const bool factored = hasCore && spec_.core->structure != CoreStructure::Dense;
  factorA_->setVisible(factored);
  factorB_->setVisible(factored);
  if (!hasCore) {
    preset_->setCurrentIndex(0);
    layerNote_->setText("no core C in this variant");
    heatmap_->clear(QString("%1 has no core matrix C. Choose thsa or thsa_linear in the Design dock to edit C.")
                        .arg(QString::fromStdString(std::string(spec::toString(spec_.variant)))));
    factorA_->clear("");
    factorB_->clear("");
    readout_->clear();
    loading_ = false;
    return;
  }
  const auto& core = *spec_.core;
  const auto& z = spec_.sizes;
  const int pi = preset_->findText(QString::fromStdString(core.preset));
  preset_->setCurrentIndex(pi > 0 ? pi : 0);
  structure_->setCurrentText(QString::fromStdString(std::string(spec::toString(core.structure))));
  const bool kron = core.structure == CoreStructure::Kronecker;
  kindA_->setEnabled(kron && editable_);
  kindB_->setEnabled(kron && editable_);
  scale_->setEnabled(kron && editable_);
  const bool lowRank = core.structure == CoreStructure::LowRank;
  toDense_->setEnabled((kron || lowRank) && editable_);
  rank_->setEnabled(lowRank && editable_);
  if (lowRank) rank_->setValue(core.rank);
  if (kron) {
    kindA_->setCurrentText(QString::fromStdString(std::string(spec::toString(core.a.kind))));
    kindB_->setCurrentText(QString::fromStdString(std::string(spec::toString(core.b.kind))));
    scale_->setValue(core.scale);
  }
  const bool valid = spec::validate(spec_).empty();
  if (!valid) {
    heatmap_->clear("C is undefined until the design is valid (see the Design dock).");
    readout_->clear();
    loading_ = false;
    return;
  }
  if (z.R > kMaxDrawnCoreWidth || z.H > kMaxDrawnCoreWidth || z.D > kMaxDrawnCoreWidth) {
    // C (and its spectrum) would be R x R doubles and an R x R SVD: seconds to minutes of a frozen
    // window past R = 1024 (268 M entries at R = 16384). The design stays valid and trainable.
    const QString why = QString("C is %1×%1 (%2 entries): the editor draws and analyses C, A and B up to %3×%3. "
                                "The design is valid; train it, or edit it in a spec file.")
                            .arg(z.R)
                            .arg(static_cast<double>(z.R) * z.R, 0, 'g', 3)
                            .arg(kMaxDrawnCoreWidth);
    heatmap_->clear(why);
    factorA_->clear("");
    factorB_->clear("");
    readout_->setText(QString("trainable entries of C: %1").arg(core.trainableCount(z.H, z.D, z.R)));
    loading_ = false;
    return;
  }
  const auto C = spec::materializeCore(core, z.H, z.D, z.R);
  heatmap_->setMatrix(C, z.R, z.R, QString("C (%1, %2×%2)").arg(QString::fromStdString(core.preset)).arg(z.R));
  auto frozen = spec::coreTrainableEntries(core, z.H, z.D, z.R);  // the heatmap hatches frozen entries
  for (auto& m : frozen) m = m ? 0 : 1;
  heatmap_->setMask(frozen);
  showFactors(core, "");
  const auto sv = model_core::singularValues(C, z.R, z.R);
  stableRank_ = model_core::stableRank(C, z.R, z.R);
  auto mhsa = spec::makeSpecPreset("mhsa");
  mhsa.sizes.F = z.F;
  mhsa.sizes.H = z.H;
  mhsa.sizes.D = std::max(1, z.F / z.H);
  const auto mine = spec::estimateCost(spec_, 32, z.seq_len), base = spec::estimateCost(mhsa, 32, z.seq_len);
  // The comparison names its MHSA: H heads of size F/H, whatever D this design has (finding N22).
  const QString reference = QString("MHSA with H=%1, D=F/H=%2").arg(z.H).arg(mhsa.sizes.D);
  readout_->setText(QString("stable rank ‖C‖²_F/‖C‖²₂ = %1 (number of heads) · spectrum %2\n"
                            "parameters %3 (%4%5 vs %8) · forward FLOPs ×%6 of it · trainable entries of C: %7")
                        .arg(stableRank_, 0, 'f', 3)
                        .arg(spectrumText(sv))
                        .arg(mine.parameters)
                        .arg(mine.parameters >= base.parameters ? "+" : "")
                        .arg(mine.parameters - base.parameters)
                        .arg(mine.forward_flops / std::max(1.0, base.forward_flops), 0, 'f', 2)
                        .arg(core.trainableCount(z.H, z.D, z.R))
                        .arg(reference));
  loading_ = false;
}

}  // namespace tensorscope::app
