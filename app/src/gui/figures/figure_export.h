#pragma once
/// Figures for papers and slides from what the explorer shows: every plot, the core matrix C and
/// its factors as PNG, SVG and PDF at a physical size (viz::FigureOptions: millimetres or a journal
/// column, DPI, font size in points, legend position), the current design's diagram as SVG, PDF,
/// PNG, TikZ and DOT; and the data behind them: each plot's CSV, C (and its factors) and the
/// attention maps as CSV and safetensors. C is the learned one when the core editor shows a trained
/// run's C, else the design's. Views with nothing to show are skipped, with the reason. Every file
/// is written atomically: one that fails leaves no empty or truncated file (and a previous export
/// of it intact); the others are still written.

#include <QString>
#include <QStringList>

#include <vector>

#include "spec/attention_spec.h"
#include "viz/figure_options.h"

namespace tensorscope::viz {
class PlotWidget;
}

namespace tensorscope::app {

class CoreEditor;

struct FigureSources {
  /// Each plot is written as "<its export name>.{png,svg,pdf}" (and .csv for the data).
  std::vector<viz::PlotWidget*> plots;
  CoreEditor* core = nullptr;     ///< C as core.*, its factors as core_A.* / core_B.* (U, V)
  spec::AttentionSpec design;     ///< drawn as diagram.*
  bool dark = false;              ///< the diagram's theme
  QString run;                    ///< the run's name, for the data files' metadata
};

/// What to export and how.
struct FigureExportOptions {
  viz::FigureOptions figure;
  QStringList formats{"png", "svg", "pdf"};  ///< of the plots and C
  /// Export names of the views to write ("curves", …, "core", "diagram"); empty: every one.
  QStringList views;
  bool data = true;  ///< CSV of every plot; C and the maps also as safetensors
  bool includes(const QString& view) const { return views.isEmpty() || views.contains(view); }
};

/// The outcome of an export: how many files it meant to write, "PATH: reason" for each that could
/// not be written, and "view: reason" for each view skipped because it had nothing to show.
struct ExportReport {
  int files = 0;
  QStringList failures;
  QStringList skipped;
  QStringList written;  ///< file names written
  bool ok() const { return failures.isEmpty(); }
};

/// Writes every figure (and, with options.data, the data) into `dir` (created when missing).
ExportReport exportFigures(const QString& dir, const FigureSources& sources, const FigureExportOptions& options = {});
/// Writes "<export name>.csv" of every plot into `dir`.
ExportReport exportPlotData(const QString& dir, const std::vector<viz::PlotWidget*>& plots);
/// C (and its factors) of the core editor as core.csv and core.safetensors ("core", "core.A", …,
/// metadata run, step, source, layer); false with the reason when the editor shows no C.
bool exportCoreData(const QString& dir, const CoreEditor& core, const QString& run, ExportReport& report);

}  // namespace tensorscope::app
