#pragma once
/// Common shell of the viz widgets: a QCustomPlot with an optional control bar above it, a
/// placeholder message, light/dark themes, hover read-out, and figure/data export (context menu
/// "Export PNG… / SVG… / PDF… / Export data (CSV)…" plus the programmatic exportXxx calls).

#include <QString>
#include <QWidget>
#include <memory>

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

  /// PNG at `dpi` (96 = the on-screen size; 192 doubles width and height). Every export is
  /// rendered in memory and written atomically: false on failure (the reason in exportError()),
  /// with a previous file at `path` left as it was.
  bool exportPng(const QString& path, double dpi = 192.0);
  /// Vector SVG of the plot (QSvgGenerator).
  bool exportSvg(const QString& path);
  /// Vector PDF of the plot.
  bool exportPdf(const QString& path);
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
  /// Mouse moved over the plot with no button held (pos in plot pixels).
  virtual void hoverAt(const QPointF& pos) { Q_UNUSED(pos); }
  /// The mouse left the plot.
  virtual void hoverLeft() {}
  /// The space returned by viewportSize() changed (scrollable plots re-fit their content here).
  virtual void viewportResized() {}
  /// Widget-specific actions put above the export entries of the context menu.
  virtual void addContextActions(QMenu& menu) { Q_UNUSED(menu); }

  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void showContextMenu(const QPoint& pos);
  bool writeExport(const QString& path, const QByteArray& bytes) const;
  bool failExport(const QString& why) const;

  struct Shell;
  std::unique_ptr<Shell> shell_;
  QCustomPlot* plot_ = nullptr;
  bool dark_ = false;
  QString hoverText_;
  QString exportName_ = QStringLiteral("figure");
  mutable QString exportError_;
};

}  // namespace tensorscope::viz
