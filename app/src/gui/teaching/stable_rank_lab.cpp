/// StableRankLab (stable_rank_lab.h): the core C (generated or the design's), the THSA and MHSA
/// layers run with it on a worker thread, their maps, C's spectrum and the parameter counts.
#include "gui/teaching/stable_rank_lab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFont>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QStringList>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include "gui/teaching/lab_widgets.h"
#include "viz/attention_map_grid.h"
#include "viz/matrix_heatmap.h"
#include "viz/spectrum_plot.h"

namespace tensorscope::app {

using lab_widgets::finishControls;
using lab_widgets::placeSideBySide;
using lab_widgets::runOnWorker;
using lab_widgets::wrapped;

namespace {

QString grouped(std::int64_t value) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(value)); }

/// Slices [count, n, n] into `count` MatrixData.
std::vector<viz::MatrixData> slices(const model_core::HostTensor& t) {
  std::vector<viz::MatrixData> out;
  if (t.shape.size() != 3) return out;
  const int count = static_cast<int>(t.shape[0]), rows = static_cast<int>(t.shape[1]), cols = static_cast<int>(t.shape[2]);
  const std::size_t size = static_cast<std::size_t>(rows) * cols;
  if (t.values.size() != size * static_cast<std::size_t>(count)) return out;
  for (int i = 0; i < count; ++i) {
    viz::MatrixData m;
    m.rows = rows;
    m.cols = cols;
    m.values.assign(t.values.begin() + static_cast<std::ptrdiff_t>(size * i),
                    t.values.begin() + static_cast<std::ptrdiff_t>(size * (i + 1)));
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

StableRankLab::StableRankLab(QWidget* parent) : LabPanel(parent) { buildUi(); }

StableRankLab::~StableRankLab() = default;

void StableRankLab::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (!shownOnce_) {
    shownOnce_ = true;
    if (!result_ && !busy()) QTimer::singleShot(0, this, [this] {
      if (!result_ && !busy()) generate();
    });
  }
}

void StableRankLab::buildUi() {
  auto* controls = new QWidget(this);
  auto* left = new QVBoxLayout(controls);
  left->setContentsMargins(0, 0, 0, 0);
  left->addWidget(buildSizesBox(controls));
  left->addWidget(buildCoreBox(controls));
  status_ = wrapped(QString(), controls);
  left->addWidget(status_);
  error_ = finishControls(controls, left,
                          tr("Tuformer: THSA's core C mixes the R = H·D channels; an MHSA layer is THSA with a "
                             "block-diagonal C of stable rank H. A C of stable rank s behaves like about round(s) "
                             "heads."));
  placeSideBySide(this, controls, buildResults());
  connectControls();
  updating_ = true;  // nothing runs before the lab is shown (showEvent) or asked
  sizesChanged();
  updating_ = false;
}

/// The sizes group: F, H, D and N.
QGroupBox* StableRankLab::buildSizesBox(QWidget* controls) {
  auto* sizes = new QGroupBox(tr("Sizes"), controls);
  auto* form = new QFormLayout(sizes);
  auto spin = [&](int lo, int hi, int value, const QString& tip) {
    auto* s = new QSpinBox(sizes);
    s->setRange(lo, hi);
    s->setValue(value);
    s->setToolTip(tip);
    return s;
  };
  fSpin_ = spin(1, 1024, 32, tr("Model width F (the input x is N × F)"));
  hSpin_ = spin(1, 64, 4, tr("Heads H of the THSA layer (R = H·D channels)"));
  dSpin_ = spin(1, 64, 4, tr("Head size D, shared by THSA and the MHSA it is compared with"));
  nSpin_ = spin(2, 64, 8, tr("Tokens N of the random input: each map is N × N"));
  form->addRow(tr("Width F"), fSpin_);
  form->addRow(tr("Heads H"), hSpin_);
  form->addRow(tr("Head size D"), dSpin_);
  form->addRow(tr("Tokens N"), nSpin_);
  return sizes;
}

/// The core group: stable rank, spectrum shape, seed, q·k gain, the two buttons, live updates.
QGroupBox* StableRankLab::buildCoreBox(QWidget* controls) {
  auto* coreBox = new QGroupBox(tr("Core C"), controls);
  auto* coreForm = new QFormLayout(coreBox);
  auto* rankRow = new QHBoxLayout;
  rankSpin_ = new QDoubleSpinBox(coreBox);
  rankSpin_->setDecimals(2);
  rankSpin_->setSingleStep(0.25);
  rankSpin_->setRange(1.0, 16.0);
  rankSpin_->setValue(2.0);
  rankSpin_->setToolTip(tr("Stable rank ‖C‖²_F / ‖C‖²₂ of the generated C, from 1 (rank one) to R (orthogonal)"));
  rankSlider_ = new QSlider(Qt::Horizontal, coreBox);
  rankSlider_->setRange(100, 1600);
  rankSlider_->setValue(200);
  rankSlider_->setToolTip(rankSpin_->toolTip());
  rankRow->addWidget(rankSpin_);
  rankRow->addWidget(rankSlider_, 1);
  coreForm->addRow(tr("Stable rank"), rankRow);
  shapeBox_ = new QComboBox(coreBox);
  shapeBox_->addItem(tr("flat"), static_cast<int>(model_core::SpectrumShape::Flat));
  shapeBox_->addItem(tr("geometric"), static_cast<int>(model_core::SpectrumShape::Geometric));
  shapeBox_->setToolTip(tr("Flat: σ₁ = 1 and every other σ equal. Geometric: σᵢ = ρ^(i−1). Both reach the same "
                           "stable rank."));
  coreForm->addRow(tr("Spectrum"), shapeBox_);
  seedSpin_ = new QSpinBox(coreBox);
  seedSpin_->setRange(0, 1'000'000'000);
  seedSpin_->setValue(1);
  seedSpin_->setToolTip(tr("Seed of C's random singular vectors, the input and the weights"));
  coreForm->addRow(tr("Seed"), seedSpin_);
  gainSpin_ = new QDoubleSpinBox(coreBox);
  gainSpin_->setRange(0.1, 20.0);
  gainSpin_->setSingleStep(0.5);
  gainSpin_->setValue(4.0);
  gainSpin_->setToolTip(tr("Multiplies the q and k weights of both layers: 1 is the modules' own init (nearly uniform "
                           "maps); larger values give sharper maps"));
  coreForm->addRow(tr("q·k gain"), gainSpin_);
  auto* buttons = new QVBoxLayout;
  generateButton_ = new QPushButton(tr("Generate C"), coreBox);
  generateButton_->setToolTip(tr("A random C with exactly this stable rank (random orthogonal U, V; σ as chosen)"));
  designButton_ = new QPushButton(tr("Use the design's C"), coreBox);
  designButton_->setToolTip(tr("The core C of the current design (its H and D)"));
  designButton_->setEnabled(false);
  buttons->addWidget(generateButton_);
  buttons->addWidget(designButton_);
  coreForm->addRow(buttons);
  liveCheck_ = new QCheckBox(tr("Update as the controls change"), coreBox);
  liveCheck_->setChecked(true);
  liveCheck_->setToolTip(tr("Recompute a moment after any control changes"));
  coreForm->addRow(liveCheck_);
  return coreBox;
}

/// The results grid: C and its spectrum above, the THSA and MHSA maps below, the readout.
QWidget* StableRankLab::buildResults() {
  auto* results = new QWidget(this);
  auto* grid = new QGridLayout(results);
  grid->setContentsMargins(0, 0, 0, 0);
  coreView_ = new viz::MatrixHeatmap(results);
  coreView_->setExportName(QStringLiteral("stable_rank_lab_core"));
  coreView_->setMinimumSize(240, 200);
  coreView_->clear(tr("Generate C (left) or use the design's C"));
  spectrum_ = new viz::SpectrumPlot(results);
  spectrum_->setExportName(QStringLiteral("stable_rank_lab_spectrum"));
  spectrum_->setMinimumSize(240, 200);
  thsaTitle_ = new QLabel(tr("THSA maps"), results);
  mhsaTitle_ = new QLabel(tr("MHSA maps"), results);
  for (QLabel* title : {thsaTitle_, mhsaTitle_}) {
    QFont f = title->font();
    f.setBold(true);
    title->setFont(f);
    title->setWordWrap(true);
  }
  thsaMaps_ = new viz::AttentionMapGrid(results);
  mhsaMaps_ = new viz::AttentionMapGrid(results);
  thsaMaps_->setExportName(QStringLiteral("stable_rank_lab_thsa_maps"));
  mhsaMaps_->setExportName(QStringLiteral("stable_rank_lab_mhsa_maps"));
  for (viz::AttentionMapGrid* g : {thsaMaps_, mhsaMaps_}) {
    g->setMaxColumns(8);
    g->setMinimumSize(240, 200);
    g->clear(tr("The maps appear after Generate C"));
  }
  thsaMaps_->setToolTip(tr("The THSA layer's R per-channel maps on a random input (click one to enlarge)"));
  mhsaMaps_->setToolTip(tr("The MHSA layer with H′ = round(stable rank) heads on the same input"));
  readout_ = wrapped(QString(), results);
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  readout_->setMinimumHeight(readout_->fontMetrics().height() * 3);
  grid->addWidget(coreView_, 0, 0);
  grid->addWidget(spectrum_, 0, 1);
  grid->addWidget(thsaTitle_, 1, 0);
  grid->addWidget(mhsaTitle_, 1, 1);
  grid->addWidget(thsaMaps_, 2, 0);
  grid->addWidget(mhsaMaps_, 2, 1);
  grid->addWidget(readout_, 3, 0, 1, 2);
  grid->setRowStretch(0, 3);
  grid->setRowStretch(2, 7);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  return results;
}

/// The live timer (a moment after a control changes, the lab recomputes) and the controls' signals.
void StableRankLab::connectControls() {
  liveTimer_ = new QTimer(this);
  liveTimer_->setSingleShot(true);
  liveTimer_->setInterval(150);
  connect(liveTimer_, &QTimer::timeout, this, [this] {
    if (coreSource_ == CoreSource::Design && hasDesignCore() && H() == designH_ && D() == designD_)
      useDesignCore();
    else
      generate();
  });
  auto live = [this] {
    if (!updating_ && liveCheck_->isChecked()) liveTimer_->start();
  };
  for (QSpinBox* s : {fSpin_, hSpin_, dSpin_, nSpin_}) connect(s, &QSpinBox::valueChanged, this, [this] { sizesChanged(); });
  connect(rankSpin_, &QDoubleSpinBox::valueChanged, this, [this, live](double v) {
    {
      const QSignalBlocker block(rankSlider_);
      rankSlider_->setValue(static_cast<int>(std::lround(v * 100)));
    }
    if (!updating_) coreSource_ = CoreSource::Generated;
    live();
  });
  connect(rankSlider_, &QSlider::valueChanged, this, [this](int v) { rankSpin_->setValue(v / 100.0); });
  connect(shapeBox_, &QComboBox::currentIndexChanged, this, [this, live] {
    coreSource_ = CoreSource::Generated;
    live();
  });
  connect(seedSpin_, &QSpinBox::valueChanged, this, live);
  connect(gainSpin_, &QDoubleSpinBox::valueChanged, this, live);
  connect(generateButton_, &QPushButton::clicked, this, [this] { generate(); });
  connect(designButton_, &QPushButton::clicked, this, [this] { useDesignCore(); });
}

void StableRankLab::sizesChanged() {
  const int r = R();
  {
    const QSignalBlocker a(rankSpin_), b(rankSlider_);
    rankSpin_->setMaximum(std::max(1, r));
    rankSlider_->setMaximum(std::max(100, 100 * r));
    rankSlider_->setValue(static_cast<int>(std::lround(rankSpin_->value() * 100)));
  }
  if (coreSource_ == CoreSource::Design && (H() != designH_ || D() != designD_)) coreSource_ = CoreSource::Generated;
  if (r > 256)
    setError(tr("R = H·D = %1 is above the lab's 256 channels.").arg(r));
  else
    setError(QString());
  if (!updating_ && liveCheck_->isChecked()) liveTimer_->start();
}

void StableRankLab::setSizes(int F, int H, int D, int N) {
  updating_ = true;
  fSpin_->setValue(F);
  hSpin_->setValue(H);
  dSpin_->setValue(D);
  nSpin_->setValue(N);
  updating_ = false;
  sizesChanged();
  liveTimer_->stop();
}

int StableRankLab::F() const { return fSpin_->value(); }
int StableRankLab::H() const { return hSpin_->value(); }
int StableRankLab::D() const { return dSpin_->value(); }
int StableRankLab::N() const { return nSpin_->value(); }

void StableRankLab::setTargetStableRank(double stableRank) {
  rankSpin_->setValue(std::clamp(stableRank, 1.0, static_cast<double>(std::max(1, R()))));
  coreSource_ = CoreSource::Generated;
  liveTimer_->stop();
}

double StableRankLab::targetStableRank() const { return rankSpin_->value(); }

void StableRankLab::setShape(model_core::SpectrumShape shape) {
  shapeBox_->setCurrentIndex(shapeBox_->findData(static_cast<int>(shape)));
  liveTimer_->stop();
}

void StableRankLab::setSeed(std::uint64_t seed) {
  seedSpin_->setValue(static_cast<int>(std::min<std::uint64_t>(seed, 1'000'000'000)));
  liveTimer_->stop();
}

void StableRankLab::setQkGain(double gain) {
  gainSpin_->setValue(gain);
  liveTimer_->stop();
}

void StableRankLab::setCore(const model_core::HostTensor& core, int H, int D) {
  const int r = H * D;
  if (core.rows() <= 0 || H <= 0 || D <= 0 || core.rows() != r || core.cols() != r) {
    designCore_ = {};
    designH_ = designD_ = 0;
    designButton_->setEnabled(false);
    designButton_->setToolTip(core.shape.empty() ? tr("The current design has no core C (not a THSA layer)")
                                                 : tr("The design's C is not (H·D) × (H·D)"));
    if (coreSource_ == CoreSource::Design) coreSource_ = CoreSource::Generated;
    return;
  }
  designCore_ = core;
  designH_ = H;
  designD_ = D;
  designButton_->setEnabled(true);
  designButton_->setToolTip(tr("The core C of the current design: H = %1, D = %2, R = %3").arg(H).arg(D).arg(r));
  if (coreSource_ == CoreSource::Design && liveCheck_->isChecked() && result_) liveTimer_->start();
}

bool StableRankLab::generate() {
  liveTimer_->stop();
  coreSource_ = CoreSource::Generated;
  return start({}, false, rankSpin_->value());
}

bool StableRankLab::useDesignCore() {
  liveTimer_->stop();
  if (!hasDesignCore()) {
    setError(tr("The current design has no core C to use."));
    return false;
  }
  updating_ = true;
  hSpin_->setValue(designH_);
  dSpin_->setValue(designD_);
  updating_ = false;
  sizesChanged();
  liveTimer_->stop();
  coreSource_ = CoreSource::Design;
  return start(designCore_, true, 0);
}

bool StableRankLab::start(const model_core::HostTensor& core, bool designCore, double targetStableRank) {
  const int r = R(), n = N();
  if (r > 256) {
    setError(tr("R = H·D = %1 is above the lab's 256 channels.").arg(r));
    return false;
  }
  if (static_cast<double>(r) * n * n > double(1 << 24)) {
    setError(tr("R·N² = %1 is too large for the lab (at most 2^24).").arg(static_cast<double>(r) * n * n));
    return false;
  }
  setError(QString());
  model_core::StableRankLabInput input;
  input.F = F();
  input.H = H();
  input.D = D();
  input.N = n;
  input.core = core;
  input.seed = static_cast<std::uint64_t>(seedSpin_->value());
  input.qk_gain = gainSpin_->value();
  const auto shape = static_cast<model_core::SpectrumShape>(shapeBox_->currentData().toInt());
  const std::uint64_t generation = ++generation_;
  running_ = generation;
  status_->setText(tr("Computing…"));
  runOnWorker<StableRankOutcome>(this, [input, designCore, targetStableRank, shape, generation]() mutable {
    StableRankOutcome out;
    out.generation = generation;
    out.designCore = designCore;
    out.targetStableRank = targetStableRank;
    try {
      if (!designCore)
        input.core = model_core::coreWithStableRank(input.H * input.D, targetStableRank, input.seed, shape);
      out.result = model_core::stableRankLab(input);
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    return out;
  }, [this](const StableRankOutcome& outcome) { finished(outcome); });
  return true;
}

void StableRankLab::finished(const StableRankOutcome& outcome) {
  if (outcome.generation != running_) return;  // a newer request is on its way
  running_ = 0;
  if (!outcome.error.isEmpty() || !outcome.result) {
    setError(tr("The lab failed: %1").arg(outcome.error));
    status_->clear();
    return;
  }
  result_ = outcome.result;
  resultTarget_ = outcome.designCore ? 0.0 : outcome.targetStableRank;
  status_->setText(outcome.designCore ? tr("Showing the design's C.") : tr("Showing a generated C."));
  showResult();
  Q_EMIT labDone();
}

void StableRankLab::showResult() {
  if (!result_) return;
  const auto& r = *result_;
  const int R = r.R, Hp = r.mhsa_heads, D = r.mhsa_head_size;
  coreView_->setColourScale(viz::MatrixHeatmap::ColourScale::Diverging);
  {
    std::vector<double> c = r.thsa_spec.core ? r.thsa_spec.core->dense_values : std::vector<double>();
    if (c.size() != static_cast<std::size_t>(R) * R) c.assign(static_cast<std::size_t>(R) * R, 0.0);
    coreView_->setMatrix(c, R, R, tr("core C (%1 × %1), stable rank %2").arg(R).arg(r.stable_rank, 0, 'f', 2));
  }
  viz::CoreSpectrum spectrum;
  spectrum.layer = 0;
  spectrum.singular_values = r.singular_values;
  spectrum.stable_rank = r.stable_rank;
  spectrum_->setSpectra({spectrum});
  spectrum_->setHeads(Hp);

  QStringList tokens;
  const int n = static_cast<int>(r.input.shape.size() == 3 ? r.input.shape[1] : 0);
  for (int i = 0; i < n; ++i) tokens << QString::number(i);
  const int designH = r.thsa_spec.sizes.H;
  thsaMaps_->setGroupSize(std::max(1, R / std::max(1, designH)));
  // One grid row per head when it fits: row h holds head h's D channels, beside MHSA's map h.
  thsaMaps_->setMaxColumns(D >= 2 && D <= 8 ? D : 8);
  thsaMaps_->setAggregation(viz::AttentionMapGrid::Aggregation::PerChannel);
  thsaMaps_->setProbeName(tr("x ~ N(0, 1)"));
  thsaMaps_->setMaps({slices(r.thsa_maps)}, tokens);
  mhsaMaps_->setGroupSize(1);
  mhsaMaps_->setProbeName(tr("x ~ N(0, 1)"));
  mhsaMaps_->setMaps({slices(r.mhsa_maps)}, tokens);
  thsaTitle_->setText(tr("THSA, dense C: %1 channel maps (H = %2 heads × D = %3)").arg(R).arg(designH).arg(D));
  mhsaTitle_->setText(tr("MHSA: H′ = %1 head map%2 of size D = %3").arg(Hp).arg(Hp == 1 ? "" : "s").arg(D));

  const double ratio = r.mhsa_parameters > 0 ? static_cast<double>(r.thsa_parameters) / r.mhsa_parameters : 0.0;
  const int F = r.thsa_spec.sizes.F;
  QString text = tr("Stable rank ‖C‖²_F / ‖C‖²₂ = %1").arg(r.stable_rank, 0, 'f', 3);
  if (resultTarget_ > 0) text += tr(" (asked %1)").arg(resultTarget_, 0, 'f', 2);
  else text += tr(" (the design's C)");
  text += tr("  →  H′ = round(%1) = %2 MHSA heads of size D = %3.\n").arg(r.stable_rank, 0, 'f', 3).arg(Hp).arg(D);
  // (R² is spelled out: a superscript digit right after %2 would be read as part of the number.)
  text += tr("Parameters: THSA 4·F·R + R² = 4·%1·%2 + %3 = %4  ·  MHSA 4·F·H′·D = 4·%1·%5·%6 = %7  ·  "
             "THSA / MHSA = %8×\n")
              .arg(F)
              .arg(R)
              .arg(QString::number(R) + QStringLiteral("²"))
              .arg(grouped(r.thsa_parameters))
              .arg(Hp)
              .arg(D)
              .arg(grouped(r.mhsa_parameters))
              .arg(ratio, 0, 'f', 2);
  text += tr("Forward FLOPs (batch 1, N = %1): THSA %2  ·  MHSA %3")
              .arg(n)
              .arg(grouped(static_cast<std::int64_t>(r.thsa_cost.forward_flops)))
              .arg(grouped(static_cast<std::int64_t>(r.mhsa_cost.forward_flops)));
  if (resultTarget_ > 0 && !r.singular_values.empty())
    text += tr("\nThis C has ‖C‖₂ = σ₁ = %1 (the mhsa preset's is √H·D = %2), so THSA's logits are smaller than "
               "MHSA's and its maps flatter; the q·k gain sharpens both.")
                .arg(r.singular_values.front(), 0, 'g', 3)
                .arg(std::sqrt(static_cast<double>(designH)) * D, 0, 'g', 3);
  readout_->setText(text);
}

QString StableRankLab::readoutText() const { return readout_->text(); }

}  // namespace tensorscope::app
