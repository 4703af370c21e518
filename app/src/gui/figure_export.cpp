#include "gui/figure_export.h"

#include <QDir>
#include <QWidget>

#include <algorithm>

#include "diagram_view/diagram_export.h"
#include "gui/image_file.h"
#include "spec/tensor_network.h"
#include "viz/plot_widget.h"

namespace tensorscope::app {

ExportReport exportFigures(const QString& dir, const FigureSources& sources) {
  ExportReport report;
  const auto note = [&](bool ok, const QString& file, const QString& why) {
    ++report.files;
    if (!ok) report.failures << file + ": " + why;
  };
  if (!QDir().mkpath(dir)) {
    report.failures << dir + ": cannot create the folder";
    return report;
  }
  for (viz::PlotWidget* w : sources.plots) {
    const QString stem = dir + "/" + w->exportName();
    note(w->exportPng(stem + ".png", 300), stem + ".png", w->exportError());
    note(w->exportSvg(stem + ".svg"), stem + ".svg", w->exportError());
    note(w->exportPdf(stem + ".pdf"), stem + ".pdf", w->exportError());
  }
  if (sources.coreMatrix) {
    QString why;
    try {
      savePngAtomically(sources.coreMatrix->grab().toImage(), dir + "/core_matrix.png");
    } catch (const std::exception& e) {
      why = QString::fromUtf8(e.what());
    }
    note(why.isEmpty(), dir + "/core_matrix.png", why);
  }
  const diagram_view::ExportFormat formats[] = {diagram_view::ExportFormat::Svg, diagram_view::ExportFormat::Pdf,
                                                diagram_view::ExportFormat::Png, diagram_view::ExportFormat::Tikz,
                                                diagram_view::ExportFormat::Dot};
  try {
    const auto& s = sources.design;
    const auto net = spec::buildTensorNetwork(s, std::min(s.sizes.seq_len, 64));
    diagram_view::ExportOptions opt;
    opt.diagram.theme = sources.dark ? diagram_view::Theme::Dark : diagram_view::Theme::Light;
    for (auto f : formats) {
      const QString path = dir + "/diagram" + diagram_view::exportExtension(f);
      QString why;
      try {
        diagram_view::exportDiagram(net, f, path, opt);
      } catch (const std::exception& e) {
        why = QString::fromUtf8(e.what());
      }
      note(why.isEmpty(), path, why);
    }
  } catch (const std::exception& e) {  // the design has no diagram: none of its files is written
    for (auto f : formats) note(false, dir + "/diagram" + diagram_view::exportExtension(f), QString::fromUtf8(e.what()));
  }
  return report;
}

ExportReport exportPlotData(const QString& dir, const std::vector<viz::PlotWidget*>& plots) {
  ExportReport report;
  for (viz::PlotWidget* w : plots) {
    const QString path = dir + "/" + w->exportName() + ".csv";
    ++report.files;
    if (!w->exportCsv(path)) report.failures << path + ": " + w->exportError();
  }
  return report;
}

}  // namespace tensorscope::app
