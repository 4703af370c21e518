#pragma once
/// Common shell of the viz widgets: a QCustomPlot with an optional control bar above it, a
/// placeholder message, light/dark themes, hover read-out, and figure/data export (context menu
/// "Export PNG… / SVG… / PDF… / Export data (CSV)…" plus the programmatic exportXxx calls).
/// Figures for papers (exportFigure and the FigureOptions overloads) are laid out at a physical
/// size in millimetres with fonts in points, independent of the widget's size on screen.

#include <QFont>
#include <QString>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>

#include "viz/figure_options.h"

class QCPAbstractPlottable;
class QCustomPlot;
class QHBoxLayout;
class QMenu;
class QTextStream;

namespace tensorscope::viz {

namespace detail {
struct Theme;
}

class PlotWidget : public QWidget {
  Q_OBJECT
 public:
  ~PlotWidget() override;

  /// Switches between the light (default) and dark look; restyles everything already plotted.
  void setDarkTheme(bool dark);
  bool isDarkTheme() const { return dark_; }
  /// Scales every font of the plot (axis and tick labels, titles, legend, text items) by `scale`
  /// from the fonts it had at scale 1, e.g. for a projector; 1 puts them back exactly.
  void setFontScale(double scale);
  double fontScale() const;
  /// The font of the bottom axis's tick labels, as drawn (tests).
  QFont tickLabelFont() const;

  /// PNG at `dpi` (96 = the on-screen size; 192 doubles width and height). Every export is
  /// rendered in memory and written atomically: false on failure (the reason in exportError()),
  /// with a previous file at `path` left as it was. A view with nothing to show exports nothing:
  /// false, and exportError() says why (emptyReason()).
  bool exportPng(const QString& path, double dpi = 192.0);
  /// Vector SVG of the plot (QSvgGenerator) at the widget's size.
  bool exportSvg(const QString& path);
  /// Vector PDF of the plot at the widget's size.
  bool exportPdf(const QString& path);

  /// The figure at `options`' physical size: PNG at options.dpi (88 mm at 300 dpi is 1039 px
  /// wide), SVG and PDF vector with width and height in millimetres; fonts at options.fontPt,
  /// titles wrapped and the legend wrapped to fit, placed where options.legend says.
  bool exportPng(const QString& path, const FigureOptions& options);
  bool exportSvg(const QString& path, const FigureOptions& options);
  bool exportPdf(const QString& path, const FigureOptions& options);
  /// By the suffix of `path`: .png, .svg or .pdf (anything else fails with the reason).
  bool exportFigure(const QString& path, const FigureOptions& options);
  /// Where the last figure export put its parts (for checks that nothing is clipped).
  const FigureLayout& lastFigureLayout() const { return figureLayout_; }
  /// Why this view has no figure to export (the message it shows, or "nothing plotted"); empty
  /// when it has one.
  virtual QString emptyReason() const;
  bool hasFigure() const { return emptyReason().isEmpty(); }

  /// Asks for the options of a context-menu export ("png", "svg" or "pdf"); nullopt cancels. The
  /// explorer installs its figure dialog here; without one the menu uses figureDefaults() (and
  /// asks for the DPI of a PNG).
  using FigureOptionsProvider = std::function<std::optional<FigureOptions>(PlotWidget& plot, const QString& format)>;
  static void setFigureOptionsProvider(FigureOptionsProvider provider);
  /// Options used by the context menu when no provider is installed.
  static FigureOptions& figureDefaults();
  /// The plotted data as CSV (header line, then one row per point; the format is per widget).
  bool exportCsv(const QString& path) const;
  /// Why the last failed export failed (empty after a success).
  QString exportError() const { return exportError_; }
  /// The CSV text exportCsv writes.
  QString csvText() const;

  /// Replaces the plot by a centred message (e.g. "No core in this model") until new data comes.
  void showMessage(const QString& message);
  bool isShowingMessage() const;

  /// The current hover read-out (empty when the mouse is not over a data point).
  QString hoverText() const { return hoverText_; }
  /// The plotting surface (a QCustomPlot), for event injection in tests and size queries.
  QWidget* plotArea() const;
  /// Lays out and draws now instead of on the next event-loop turn (before reading geometry).
  void replotNow();
  /// File name stem the export dialogs propose (e.g. "curves").
  void setExportName(const QString& stem) { exportName_ = stem; }
  const QString& exportName() const { return exportName_; }

 protected:
  /// `scrollable`: the plot sits in a scroll area and keeps the size the subclass fixes for it.
  explicit PlotWidget(QWidget* parent = nullptr, bool scrollable = false);

  QCustomPlot* plot() const { return plot_; }
  const detail::Theme& theme() const;
  /// The row of controls above the plot, created on first use.
  QHBoxLayout* controlBar();
  /// The space the plot can occupy (for scrollable plots: the scroll area, scroll bars included).
  QSize viewportSize() const;
  /// Switches back from a message to the plot.
  void showPlot();
  /// Applies the current theme to everything in the plot (call after adding axes or items).
  void restyle();
  /// Coalesced replot on the next event-loop turn (QCustomPlot::rpQueuedReplot).
  void requestReplot();
  /// Hover markers live on this buffered layer, so moving them redraws only that layer.
  static constexpr const char* kHoverLayer = "overlay";
  /// Redraws just the hover layer (cheap even over 100k-point graphs).
  void replotHover();
  /// Sets the read-out and shows it as a tooltip at `pos` (plot coordinates); empty hides it.
  void setHoverText(const QString& text, const QPoint& pos);
  /// Standard CSV quoting of a text field.
  static QString csvField(const QString& text);

  /// Writes the CSV header and rows.
  virtual void writeCsv(QTextStream& out) const = 0;
  /// Called after the shared theme is applied, to restyle series, items and colour maps.
  virtual void themeChanged() {}
  /// Called after setFontScale changed the fonts (e.g. to re-wrap a title).
  virtual void fontScaleChanged() {}
  /// Mouse moved over the plot with no button held (pos in plot pixels).
  virtual void hoverAt(const QPointF& pos) { Q_UNUSED(pos); }
  /// The mouse left the plot.
  virtual void hoverLeft() {}
  /// The space returned by viewportSize() changed (scrollable plots re-fit their content here).
  virtual void viewportResized() {}
  /// Widget-specific actions put above the export entries of the context menu.
  virtual void addContextActions(QMenu& menu) { Q_UNUSED(menu); }

  // Figure exports. The shell lays the plot out at the figure's size with the figure's fonts and
  // legend, draws it and puts everything back; these hooks let a view take part.
  /// Before the layout: re-plan fixed geometry for `size` (layout units) and return the size to
  /// lay out at (default: `size`).
  virtual QSize beginFigure(const FigureOptions& options, const QSize& size);
  /// After the first layout pass at the figure's size, before the final one and the drawing (e.g.
  /// to re-plan tick labels for the new axis lengths).
  virtual void figureLaidOut() {}
  /// One layout pass of the plot at its current viewport (for a hook that moved an element).
  void layOutNow();
  /// After the drawing: undo what beginFigure changed.
  virtual void endFigure() {}
  /// Whether a figure sets the axes' fonts to the figure's point size (false for views whose
  /// margins are fitted to their own fonts).
  virtual bool figureRestylesFonts() const { return true; }
  /// Whether the figure draws `plottable` under options.runs / options.metrics. The default reads
  /// the plottable's "tsRun" / "tsMetric" properties when set (a plottable without them is drawn).
  virtual bool figureShows(const QCPAbstractPlottable* plottable, const FigureOptions& options) const;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void showContextMenu(const QPoint& globalPos);
  /// Lays the plot out as `options` asks, calls `draw(size)` with the layout size, puts it back.
  bool renderFigure(const FigureOptions& options, const std::function<bool(const QSize&, double dpi)>& draw);
  bool writeExport(const QString& path, const QByteArray& bytes) const;
  bool failExport(const QString& why) const;

  struct Shell;
  std::unique_ptr<Shell> shell_;
  QCustomPlot* plot_ = nullptr;
  bool dark_ = false;
  QString hoverText_;
  QString exportName_ = QStringLiteral("figure");
  mutable QString exportError_;
  FigureLayout figureLayout_;
};

}  // namespace tensorscope::viz
