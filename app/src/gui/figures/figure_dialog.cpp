#include "gui/figures/figure_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace tensorscope::app {
namespace {

QListWidget* checkList() {
  auto* list = new QListWidget;
  list->setSelectionMode(QAbstractItemView::NoSelection);
  list->setMaximumHeight(140);
  return list;
}

void fill(QListWidget* list, const QStringList& names, const QStringList& chosen) {
  list->clear();
  for (const QString& n : names) {
    auto* item = new QListWidgetItem(n, list);
    item->setData(Qt::UserRole, n);
    item->setCheckState(chosen.isEmpty() || chosen.contains(n) ? Qt::Checked : Qt::Unchecked);
  }
}

// The checked names; empty when every one is checked (= all, also those that come later).
QStringList checked(const QListWidget* list, bool emptyWhenAll) {
  QStringList out;
  int enabled = 0;
  for (int i = 0; i < list->count(); ++i) {
    const QListWidgetItem* item = list->item(i);
    if (!(item->flags() & Qt::ItemIsEnabled)) continue;
    ++enabled;
    if (item->checkState() == Qt::Checked) out << item->data(Qt::UserRole).toString();
  }
  return emptyWhenAll && out.size() == enabled ? QStringList() : out;
}

}  // namespace

FigureDialog::FigureDialog(Mode mode, QWidget* parent) : QDialog(parent), mode_(mode) {
  setWindowTitle(mode == Mode::AllViews ? "Export figures" : "Export figure");
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  preset_ = new QComboBox;
  preset_->addItem("Single column (88 mm)", int(viz::ColumnPreset::Single));
  preset_->addItem("1.5 columns (120 mm)", int(viz::ColumnPreset::OneAndHalf));
  preset_->addItem("Double column (180 mm)", int(viz::ColumnPreset::Double));
  preset_->addItem("Custom", int(viz::ColumnPreset::Custom));
  form->addRow("Width", preset_);
  width_ = new QDoubleSpinBox;
  height_ = new QDoubleSpinBox;
  for (auto* box : {width_, height_}) {
    box->setRange(10, 1000);
    box->setDecimals(1);
    box->setSuffix(" mm");
  }
  auto* size = new QHBoxLayout;
  size->addWidget(width_);
  size->addWidget(new QLabel("×"));
  size->addWidget(height_);
  form->addRow("Size (w × h)", size);
  dpi_ = new QSpinBox;
  dpi_->setRange(72, 1200);
  dpi_->setSingleStep(50);
  dpi_->setSuffix(" dpi");
  dpi_->setToolTip("Resolution of PNG files (SVG and PDF are vector at the same size)");
  form->addRow("Resolution", dpi_);
  font_ = new QDoubleSpinBox;
  font_->setRange(5, 24);
  font_->setDecimals(1);
  font_->setSingleStep(0.5);
  font_->setSuffix(" pt");
  form->addRow("Font size", font_);
  legend_ = new QComboBox;
  for (auto p : {viz::LegendPosition::Top, viz::LegendPosition::Right, viz::LegendPosition::Bottom,
                 viz::LegendPosition::Inside, viz::LegendPosition::None})
    legend_->addItem(viz::toString(p), int(p));
  form->addRow("Legend", legend_);
  theme_ = new QComboBox;
  theme_->addItem("light", int(viz::FigureTheme::Light));
  theme_->addItem("dark", int(viz::FigureTheme::Dark));
  theme_->addItem("as shown", int(viz::FigureTheme::AsShown));
  form->addRow("Theme", theme_);
  layout->addLayout(form);

  if (mode == Mode::AllViews) {
    auto* formats = new QHBoxLayout;
    png_ = new QCheckBox("PNG");
    svg_ = new QCheckBox("SVG");
    pdf_ = new QCheckBox("PDF");
    data_ = new QCheckBox("Data (CSV; C and maps also safetensors)");
    for (auto* b : {png_, svg_, pdf_, data_}) formats->addWidget(b);
    formats->addStretch(1);
    form->addRow("Formats", formats);
    auto* box = new QGroupBox("Views");
    auto* v = new QVBoxLayout(box);
    views_ = checkList();
    v->addWidget(views_);
    layout->addWidget(box);
  }
  auto* curves = new QHBoxLayout;
  runs_ = checkList();
  metrics_ = checkList();
  auto* runBox = new QGroupBox("Curves: runs");
  (new QVBoxLayout(runBox))->addWidget(runs_);
  auto* metricBox = new QGroupBox("Curves: metrics");
  (new QVBoxLayout(metricBox))->addWidget(metrics_);
  curves->addWidget(runBox);
  curves->addWidget(metricBox);
  runBox->setObjectName("runsBox");
  metricBox->setObjectName("metricsBox");
  runBox->hide();
  metricBox->hide();
  layout->addLayout(curves);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(mode == Mode::AllViews ? "Export…" : "Export");
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);

  connect(preset_, &QComboBox::currentIndexChanged, this, &FigureDialog::presetChosen);
  connect(width_, &QDoubleSpinBox::valueChanged, this, [this](double w) {
    viz::FigureOptions o;
    o.widthMm = w;
    const QSignalBlocker block(preset_);
    preset_->setCurrentIndex(preset_->findData(int(o.column())));
  });
  setOptions(remembered());
}

void FigureDialog::presetChosen() {
  const auto preset = static_cast<viz::ColumnPreset>(preset_->currentData().toInt());
  if (preset == viz::ColumnPreset::Custom) return;
  const QSignalBlocker block(width_);
  width_->setValue(viz::columnWidthMm(preset));
  height_->setValue(viz::columnHeightMm(preset));
}

void FigureDialog::setViews(const std::vector<View>& views) {
  if (!views_) return;
  views_->clear();
  for (const View& v : views) {
    auto* item = new QListWidgetItem(views_);
    item->setData(Qt::UserRole, v.name);
    if (v.emptyReason.isEmpty()) {
      item->setText(v.label);
      item->setCheckState(Qt::Checked);
    } else {  // skipped, and why
      item->setText(v.label + " — skipped: " + v.emptyReason);
      item->setCheckState(Qt::Unchecked);
      item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
      item->setToolTip(v.emptyReason);
    }
  }
}

void FigureDialog::setRunsAndMetrics(const QStringList& runs, const QStringList& metrics) {
  const auto current = options().figure;
  fill(runs_, runs, current.runs);
  fill(metrics_, metrics, current.metrics);
  findChild<QGroupBox*>("runsBox")->setVisible(!runs.isEmpty());
  findChild<QGroupBox*>("metricsBox")->setVisible(!metrics.isEmpty());
}

void FigureDialog::setOptions(const FigureExportOptions& o) {
  const auto& f = o.figure;
  {
    const QSignalBlocker block(width_);
    width_->setValue(f.widthMm);
  }
  height_->setValue(f.heightMm);
  {
    const QSignalBlocker block(preset_);
    preset_->setCurrentIndex(preset_->findData(int(f.column())));
  }
  dpi_->setValue(qRound(f.dpi));
  font_->setValue(f.fontPt);
  legend_->setCurrentIndex(legend_->findData(int(f.legend)));
  theme_->setCurrentIndex(theme_->findData(int(f.theme)));
  if (png_) {
    png_->setChecked(o.formats.contains("png"));
    svg_->setChecked(o.formats.contains("svg"));
    pdf_->setChecked(o.formats.contains("pdf"));
    data_->setChecked(o.data);
  }
}

FigureExportOptions FigureDialog::options() const {
  FigureExportOptions o;
  o.figure.widthMm = width_->value();
  o.figure.heightMm = height_->value();
  o.figure.dpi = dpi_->value();
  o.figure.fontPt = font_->value();
  o.figure.legend = static_cast<viz::LegendPosition>(legend_->currentData().toInt());
  o.figure.theme = static_cast<viz::FigureTheme>(theme_->currentData().toInt());
  o.figure.runs = checked(runs_, true);
  o.figure.metrics = checked(metrics_, true);
  if (png_) {
    o.formats.clear();
    if (png_->isChecked()) o.formats << "png";
    if (svg_->isChecked()) o.formats << "svg";
    if (pdf_->isChecked()) o.formats << "pdf";
    o.data = data_->isChecked();
  }
  if (views_) o.views = checked(views_, false);
  return o;
}

FigureExportOptions FigureDialog::remembered() {
  QSettings s;
  FigureExportOptions o;
  auto& f = o.figure;
  f = viz::FigureOptions::forColumn(viz::ColumnPreset::Single);
  f.widthMm = std::clamp(s.value("figures/widthMm", f.widthMm).toDouble(), 10.0, 1000.0);
  f.heightMm = std::clamp(s.value("figures/heightMm", f.heightMm).toDouble(), 10.0, 1000.0);
  f.dpi = std::clamp(s.value("figures/dpi", f.dpi).toDouble(), 72.0, 1200.0);
  f.fontPt = std::clamp(s.value("figures/fontPt", f.fontPt).toDouble(), 5.0, 24.0);
  f.legend = viz::parseLegendPosition(s.value("figures/legend").toString()).value_or(f.legend);
  f.theme = viz::parseFigureTheme(s.value("figures/theme").toString()).value_or(f.theme);
  if (s.contains("figures/formats")) o.formats = s.value("figures/formats").toStringList();
  o.data = s.value("figures/data", o.data).toBool();
  return o;
}

void FigureDialog::remember(const FigureExportOptions& o) {
  QSettings s;
  s.setValue("figures/widthMm", o.figure.widthMm);
  s.setValue("figures/heightMm", o.figure.heightMm);
  s.setValue("figures/dpi", o.figure.dpi);
  s.setValue("figures/fontPt", o.figure.fontPt);
  s.setValue("figures/legend", viz::toString(o.figure.legend));
  s.setValue("figures/theme", viz::toString(o.figure.theme));
  s.setValue("figures/formats", o.formats);
  s.setValue("figures/data", o.data);
}

}  // namespace tensorscope::app
