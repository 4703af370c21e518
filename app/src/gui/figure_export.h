#pragma once
/// Figures for papers and slides from what the explorer shows: every plot as PNG (300 dpi), SVG
/// and PDF, the core matrix as PNG, the current design's diagram as SVG, PDF, PNG, TikZ and DOT;
/// and the data behind the plots as CSV. Every file is written atomically: one that fails leaves no
/// empty or truncated file (and a previous export of it intact); the others are still written.

#include <QString>
#include <QStringList>

#include <vector>

#include "spec/attention_spec.h"

class QWidget;

namespace tensorscope::viz {
class PlotWidget;
}

namespace tensorscope::app {

struct FigureSources {
  /// Each plot is written as "<its export name>.{png,svg,pdf}" (and .csv for the data).
  std::vector<viz::PlotWidget*> plots;
  QWidget* coreMatrix = nullptr;  ///< grabbed as core_matrix.png (none: skipped)
  spec::AttentionSpec design;     ///< drawn as diagram.*
  bool dark = false;              ///< the diagram's theme
};

/// The outcome of an export: how many files it meant to write and "PATH: reason" for each that
/// could not be written.
struct ExportReport {
  int files = 0;
  QStringList failures;
  bool ok() const { return failures.isEmpty(); }
};

/// Writes every figure into `dir` (created when missing).
ExportReport exportFigures(const QString& dir, const FigureSources& sources);
/// Writes "<export name>.csv" of every plot into `dir`.
ExportReport exportPlotData(const QString& dir, const std::vector<viz::PlotWidget*>& plots);

}  // namespace tensorscope::app
