#pragma once
/// The figure export dialog: size in millimetres or a journal column (88, 120, 180 mm), DPI of
/// PNGs, font size in points, legend position, theme; for File > Export figures also the formats,
/// the views (empty ones listed as skipped, with why) and the data files; for the curves the runs
/// and metrics to draw. The choices are remembered (QSettings, "figures/…").

#include <QDialog>
#include <vector>

#include "gui/figures/figure_export.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QListWidget;
class QSpinBox;

namespace tensorscope::app {

class FigureDialog : public QDialog {
  Q_OBJECT
 public:
  enum class Mode {
    AllViews,  ///< File > Export figures: formats, views and data too
    OnePlot,   ///< a plot's context menu: the figure's size, type and legend (and runs/metrics)
  };
  struct View {
    QString name;         ///< export name ("curves", "core", "diagram", …)
    QString label;        ///< shown in the list
    QString emptyReason;  ///< non-empty: nothing to show, listed unchecked and disabled
  };

  explicit FigureDialog(Mode mode, QWidget* parent = nullptr);
  void setViews(const std::vector<View>& views);
  /// The curves' runs and metrics to choose from (none: the lists stay hidden).
  void setRunsAndMetrics(const QStringList& runs, const QStringList& metrics);
  void setOptions(const FigureExportOptions& options);
  FigureExportOptions options() const;

  /// The options last accepted (defaults: single column, 300 dpi, 8 pt, legend on top, light).
  static FigureExportOptions remembered();
  static void remember(const FigureExportOptions& options);

 private:
  void presetChosen();

  Mode mode_;
  QComboBox *preset_ = nullptr, *legend_ = nullptr, *theme_ = nullptr;
  QDoubleSpinBox *width_ = nullptr, *height_ = nullptr, *font_ = nullptr;
  QSpinBox* dpi_ = nullptr;
  QCheckBox *png_ = nullptr, *svg_ = nullptr, *pdf_ = nullptr, *data_ = nullptr;
  QListWidget *views_ = nullptr, *runs_ = nullptr, *metrics_ = nullptr;
};

}  // namespace tensorscope::app
