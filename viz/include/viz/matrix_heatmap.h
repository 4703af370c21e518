#pragma once
/// A heatmap of a dense matrix: the view of the THSA core matrix C (diverging colour map with a
/// symmetric range, so zero is white) and of single attention maps (sequential, fixed [0, 1]).
/// Hovering shows the entry; a "frozen" mask is drawn desaturated (and struck through and outlined
/// where cells are large enough to carry it); clicks and drags report cells, so an editor for C
/// can be built on top.

#include <QStringList>
#include <vector>

#include "viz/plot_types.h"
#include "viz/plot_widget.h"

namespace tensorscope::viz {

class MatrixHeatmap : public PlotWidget {
  Q_OBJECT
 public:
  enum class ColourScale {
    Diverging,   ///< [-m, m] with m = max |value|, white at zero
    Sequential,  ///< fixed [lower, upper] (viridis)
  };
  /// A matrix entry; row -1 means "no cell".
  struct Cell {
    int row = -1, col = -1;
    bool valid() const { return row >= 0 && col >= 0; }
    bool operator==(const Cell&) const = default;
  };

  explicit MatrixHeatmap(QWidget* parent = nullptr);
  ~MatrixHeatmap() override;

  /// Shows `values` (rows x cols, row-major) under `title`.
  void setMatrix(const std::vector<double>& values, int rows, int cols, const QString& title);
  void setMatrix(const MatrixData& matrix, const QString& title);
  /// Replaces the plot by `message`.
  void clear(const QString& message);

  void setColourScale(ColourScale scale, double lower = 0.0, double upper = 1.0);
  ColourScale colourScale() const { return scale_; }
  /// Axis titles (default "s (channel Q and K share)" / "r (map Ω_r, channel of V)": in THSA's
  /// logits_r = Σ_s C[r,s]·Q_s·K_sᵀ/√R, q and k both carry s and r indexes the map and V).
  void setAxisTitles(const QString& x, const QString& y);
  /// Tick labels for rows / columns (e.g. probe tokens), thinned when they would overlap.
  /// Empty lists give index ticks.
  void setLabels(const QStringList& rowLabels, const QStringList& colLabels);

  /// Frozen entries (rows*cols, nonzero = frozen): a pale wash over each (the colour stays
  /// readable, desaturated), plus a diagonal stroke and an outline once cells are at least
  /// kFrozenStrokeMinCell pixels wide, so a 52×52 C is not drowned in hatching. Empty clears.
  void setMask(const std::vector<unsigned char>& mask);
  const std::vector<unsigned char>& mask() const { return mask_; }
  static constexpr double kFrozenStrokeMinCell = 12.0;
  /// Whether the last drawing stroked the frozen cells (false when they were too small or none).
  bool frozenCellsStroked() const;

  /// "No matrix to show" before setMatrix or after clear(), else empty.
  QString emptyReason() const override;

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  /// The colour range in use: m for the diverging scale, the upper bound for the sequential one.
  double colourRange() const { return range_; }
  double value(int row, int col) const { return values_[static_cast<std::size_t>(row) * cols_ + col]; }

  /// The cell under `pos` (pixels of plotArea()), or an invalid cell outside the matrix.
  Cell cellAt(const QPointF& pos) const;
  /// The pixel centre of a cell in plotArea() (valid after the plot has been laid out).
  QPointF cellCentre(int row, int col) const;
  /// The read-out text for a cell (labels, indices, value, frozen state).
  QString cellText(int row, int col) const;
  /// Every how many columns (Qt::Horizontal) or rows a label is drawn (1: all), after layout.
  int labelStep(Qt::Orientation orientation) const;

  /// The title as given to setMatrix (on screen it is wrapped to the plot's width).
  QString title() const;
  /// The title as drawn: wrapped into lines no wider than the plot, so a long title never makes
  /// the view (and the dock holding it) wider than its room (finding N30).
  QString shownTitle() const;

 Q_SIGNALS:
  /// A mouse press on a cell.
  void cellClicked(int row, int col, Qt::MouseButtons buttons);
  /// The mouse moved onto another cell with a button held after a press in the matrix; a fast
  /// move reports every cell on the line between, in order.
  void cellDragged(int row, int col);
  /// Shift+drag: the rectangle from the pressed cell to the released one (inclusive, row0 ≤ row1,
  /// col0 ≤ col1); it replaces that press's cellClicked.
  void rectangleChosen(int row0, int col0, int row1, int col1);

 protected:
  void writeCsv(QTextStream& out) const override;
  void themeChanged() override;
  void fontScaleChanged() override;
  void hoverAt(const QPointF& pos) override;
  void figureLaidOut() override;
  /// Re-wraps the title when the plot is resized.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void wrapTitle();
  void updateTicks();
  void applyColourRange();

  struct Parts;
  std::unique_ptr<Parts> parts_;
  int rows_ = 0, cols_ = 0;
  double range_ = 0;
  std::vector<double> values_;
  std::vector<unsigned char> mask_;
  QStringList rowLabels_, colLabels_;
  ColourScale scale_ = ColourScale::Diverging;
  double lower_ = 0, upper_ = 1;
  /// The cells after `from` up to and including `to` on the line between them (Bresenham).
  static std::vector<Cell> lineCells(const Cell& from, const Cell& to);
  void showRubberBand(const Cell& to);

  Cell dragCell_, rectStart_;
  bool dragging_ = false, rectangle_ = false;
};

}  // namespace tensorscope::viz
