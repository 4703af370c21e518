#pragma once
/// A heatmap of a dense matrix with a diverging colour map and a symmetric range, so that zero
/// is always white: the view used for the THSA core matrix C.

#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

namespace tensorscope::viz {

class MatrixHeatmap : public QWidget {
  Q_OBJECT
 public:
  explicit MatrixHeatmap(QWidget* parent = nullptr);
  ~MatrixHeatmap() override;

  /// Shows `values` (rows x cols, row-major). Colours span [-m, m] with m = max |value|.
  void setMatrix(const std::vector<double>& values, int rows, int cols, const QString& title);
  void clear(const QString& message);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  /// The symmetric colour range m in use.
  double colourRange() const { return range_; }

 private:
  struct Plot;
  std::unique_ptr<Plot> plot_;
  int rows_ = 0, cols_ = 0;
  double range_ = 0;
};

}  // namespace tensorscope::viz
