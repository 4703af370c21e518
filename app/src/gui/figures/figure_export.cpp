#include "gui/figures/figure_export.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>

#include "diagram_view/diagram_export.h"
#include "gui/design/core_editor.h"
#include "model_core/safetensors.h"
#include "spec/tensor_network.h"
#include "viz/attention_map_grid.h"
#include "viz/matrix_heatmap.h"
#include "viz/plot_widget.h"

namespace tensorscope::app {
namespace {

struct Writer {
  const QString& dir;
  ExportReport& report;
  void note(bool ok, const QString& path, const QString& why) {
    ++report.files;
    if (ok)
      report.written << QFileInfo(path).fileName();
    else
      report.failures << path + ": " + why;
  }
  QString path(const QString& name) const { return dir + "/" + name; }
  // A figure in every format asked for; false (and the reason in the report) when the view is
  // empty.
  bool figure(viz::PlotWidget* w, const QString& stem, const FigureExportOptions& options) {
    if (!w->hasFigure()) {
      report.skipped << stem + ": " + w->emptyReason();
      return false;
    }
    for (const QString& format : options.formats) {
      const QString p = path(stem + "." + format);
      note(w->exportFigure(p, options.figure), p, w->exportError());
    }
    return true;
  }
  void safetensors(const QString& name, const model_core::SafetensorsFile& file) {
    const QString p = path(name);
    QString why;
    try {
      model_core::writeSafetensors(QFile::encodeName(p).toStdString(), file);
    } catch (const std::exception& e) {
      why = QString::fromUtf8(e.what());
    }
    note(why.isEmpty(), p, why);
  }
};

model_core::TensorData matrixTensor(const viz::MatrixHeatmap& m) {
  std::vector<double> values;
  values.reserve(static_cast<size_t>(m.rows()) * m.cols());
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) values.push_back(m.value(r, c));
  return model_core::makeTensorData(values, {m.rows(), m.cols()});
}

void exportMapsData(Writer& out, const viz::AttentionMapGrid& maps, const QString& run) {
  model_core::SafetensorsFile file;
  for (int l = 0; l < maps.layerCount(); ++l) {
    const int count = maps.mapCount(l);
    if (count == 0) continue;
    const auto& first = maps.displayedMap(l, 0);
    std::vector<float> values;
    for (int i = 0; i < count; ++i) {
      const auto& m = maps.displayedMap(l, i);
      if (m.rows != first.rows || m.cols != first.cols) break;
      values.insert(values.end(), m.values.begin(), m.values.end());
    }
    const int64_t shown = static_cast<int64_t>(values.size()) / std::max(1, first.rows * first.cols);
    file.tensors["maps.layer" + std::to_string(maps.layerId(l))] =
        model_core::makeTensorData(values, {shown, first.rows, first.cols});
  }
  if (file.tensors.empty()) return;
  file.metadata = {{"format", "tensorscope.attention_maps"},
                   {"run", run.toStdString()},
                   {"step", maps.step() >= 0 ? QString::number(maps.step(), 'g', 12).toStdString() : "unknown"},
                   {"shape", "[maps, query, key] per layer"},
                   {"maps", maps.aggregation() == viz::AttentionMapGrid::Aggregation::PerHeadMean && maps.groupSize() > 1
                                ? "head means"
                                : "one per head or channel"}};
  out.safetensors("attention_maps.safetensors", file);
}

}  // namespace

bool exportCoreData(const QString& dir, const CoreEditor& core, const QString& run, ExportReport& report) {
  Writer out{dir, report};
  viz::MatrixHeatmap* c = core.heatmap();
  if (!c->hasFigure()) {
    report.skipped << "core data: " + c->emptyReason();
    return false;
  }
  const bool learned = core.learnedStep() >= 0;
  model_core::SafetensorsFile file;
  file.tensors["core"] = matrixTensor(*c);
  out.note(c->exportCsv(out.path("core.csv")), out.path("core.csv"), c->exportError());
  if (!c->mask().empty()) {
    std::vector<int64_t> frozen(c->mask().begin(), c->mask().end());
    file.tensors["core.frozen"] = model_core::makeTensorData(frozen, {c->rows(), c->cols()}, model_core::DType::U8);
  }
  for (int i = 0; i < 2; ++i) {  // the factors shown: the design's, or the learned C's own
    const QString name = core.factorName(i);
    viz::MatrixHeatmap* f = i == 0 ? core.factorA() : core.factorB();
    if (name.isEmpty() || !f->hasFigure()) continue;
    file.tensors["core." + name.toStdString()] = matrixTensor(*f);
    const QString csv = out.path("core_" + name + ".csv");
    out.note(f->exportCsv(csv), csv, f->exportError());
  }
  file.metadata = {{"format", "tensorscope.core"},
                   {"run", run.toStdString()},
                   {"source", learned ? "learned" : "design"},
                   {"step", learned ? std::to_string(core.learnedStep()) : "design"},
                   {"layer", std::to_string(core.layer())}};
  out.safetensors("core.safetensors", file);
  return true;
}

ExportReport exportFigures(const QString& dir, const FigureSources& sources, const FigureExportOptions& options) {
  ExportReport report;
  Writer out{dir, report};
  if (!QDir().mkpath(dir)) {
    report.failures << dir + ": cannot create the folder";
    return report;
  }
  for (viz::PlotWidget* w : sources.plots) {
    if (!options.includes(w->exportName())) continue;
    if (!out.figure(w, w->exportName(), options) || !options.data) continue;
    const QString csv = out.path(w->exportName() + ".csv");
    out.note(w->exportCsv(csv), csv, w->exportError());
    if (auto* maps = qobject_cast<viz::AttentionMapGrid*>(w)) exportMapsData(out, *maps, sources.run);
  }
  if (sources.core && options.includes("core")) {
    const CoreEditor& core = *sources.core;
    if (out.figure(core.heatmap(), "core", options)) {
      for (int i = 0; i < 2; ++i) {
        const QString name = core.factorName(i);
        if (name.isEmpty()) continue;
        out.figure(i == 0 ? core.factorA() : core.factorB(), "core_" + name, options);  // skipped with the reason when empty
      }
      if (options.data) exportCoreData(dir, core, sources.run, report);
    }
  }
  if (!options.includes("diagram")) return report;
  const diagram_view::ExportFormat formats[] = {diagram_view::ExportFormat::Svg, diagram_view::ExportFormat::Pdf,
                                                diagram_view::ExportFormat::Png, diagram_view::ExportFormat::Tikz,
                                                diagram_view::ExportFormat::Dot};
  try {
    const auto& s = sources.design;
    const auto net = spec::buildTensorNetwork(s, std::min(s.sizes.seq_len, 64));
    diagram_view::ExportOptions opt;
    opt.diagram.theme = sources.dark ? diagram_view::Theme::Dark : diagram_view::Theme::Light;
    opt.widthMm = options.figure.widthMm;  // the column the dialog chose, as every plot
    opt.dpi = options.figure.dpi;
    for (auto f : formats) {
      const QString path = dir + "/diagram" + diagram_view::exportExtension(f);
      QString why;
      try {
        diagram_view::exportDiagram(net, f, path, opt);
      } catch (const std::exception& e) {
        why = QString::fromUtf8(e.what());
      }
      out.note(why.isEmpty(), path, why);
    }
  } catch (const std::exception& e) {  // the design has no diagram: none of its files is written
    for (auto f : formats) out.note(false, dir + "/diagram" + diagram_view::exportExtension(f), QString::fromUtf8(e.what()));
  }
  return report;
}

ExportReport exportPlotData(const QString& dir, const std::vector<viz::PlotWidget*>& plots) {
  ExportReport report;
  for (viz::PlotWidget* w : plots) {
    if (!w->hasFigure()) {
      report.skipped << w->exportName() + ": " + w->emptyReason();
      continue;
    }
    const QString path = dir + "/" + w->exportName() + ".csv";
    ++report.files;
    if (!w->exportCsv(path)) report.failures << path + ": " + w->exportError();
  }
  return report;
}

}  // namespace tensorscope::app
