#pragma once
/// The head mixings and multi-token attention's kernels of a design as heatmaps, under the slots of
/// the Design dock: C′ (`mix_post`, slots.post_mix: the attention weights mixed across heads after
/// the softmax, H x H, [to, from]), C^pre (`mix_pre`, slots.pre_mix), MTA's key-query kernels θ
/// (`mta_kernel`, [H, c_q, c_k], one c_q x c_k grid per head) and θ′ (`mta_kernel_after_sm`), and
/// its head convolution κ (`head_kernel`, [H/g, g, g], [group, from, to]); the H x H mixings with
/// their singular spectrum and stable rank (model_core/analysis.h), as the core editor gives for C.
///
/// Where the values live: the spec holds none of them. spec::Slots says only whether each weight
/// exists and its sizes (docs/attention-variants.md §8, §8.8); every one starts as the identity (a
/// kernel: a single 1 at the newest query and key offset 0) and is a trained parameter of the
/// checkpoint. So the view is read-only: it shows the design's initial values, the values of a
/// training run at its latest inspection (they follow it live, spectrum and stable rank with them),
/// or the trained values of the selected run's checkpoint, and says which. Editing C′ as C is
/// edited would need a field for its values in the spec format (attention_spec.h), which this view
/// does not invent. Its weight names are model_core::slotWeightNames(), in that order.

#include <QGroupBox>
#include <QStringList>

#include <cstdint>
#include <vector>

#include "spec/attention_spec.h"

class QComboBox;
class QLabel;
class QSpinBox;

namespace tensorscope::viz {
class MatrixHeatmap;
}

namespace tensorscope::app {

class HeadMixingView : public QGroupBox {
  Q_OBJECT
 public:
  /// One weight of the layer: its name in the module ("mix_post"), shape and values (row-major).
  struct Tensor {
    QString name;
    std::vector<std::int64_t> shape;
    std::vector<double> values;
  };
  /// The trained weights of the selected run's shown layer, read from its checkpoint (step) or, while
  /// it trains, from its latest inspection (live), or why there are none (not trained yet, no
  /// inspection yet, unreadable).
  struct Trained {
    QString run;
    qint64 step = -1;
    int layer = 0;
    std::vector<Tensor> tensors;
    QString why;
    bool live = false;  ///< the values of a run that is training, at its latest inspection
  };

  explicit HeadMixingView(QWidget* parent = nullptr);

  /// The design whose weights are shown; the view hides itself when it has none of them.
  void setSpec(const spec::AttentionSpec& s);
  /// The selected run's trained values (an empty `tensors`: the design's initial values).
  void setTrained(const Trained& trained);

  /// The weights this design has, in the order of the Weight box: "mix_post", "mix_pre",
  /// "mta_kernel", "mta_kernel_after_sm", "head_kernel".
  QStringList weights() const { return weightsOf(spec_); }
  static QStringList weightsOf(const spec::AttentionSpec& s);
  /// Shows weight `name`, head (kernel) or group (κ) `index`; false when the design has no such
  /// weight or index.
  bool choose(const QString& name, int index = 0);
  QString shownWeight() const;
  int shownIndex() const;
  /// Whether the values on show are trained ones, a checkpoint's or a training run's (else the
  /// initial values).
  bool showsTrained() const { return showsTrained_; }
  viz::MatrixHeatmap* heatmap() const { return heatmap_; }
  /// "stable rank …, σ: …" for an H x H mixing; the kernel's entries otherwise.
  QString readoutText() const;
  /// Where the values come from and why they are not edited here.
  QString noteText() const;
  double stableRank() const { return stableRank_; }

  /// The initial values of weight `name` in a layer of design `s`, as the module sets them
  /// (model_core attention/mhsa.cpp, attention/mta.cpp): identity mixings and group kernels, a
  /// single 1 at [h, c_q − 1, p] of each convolution kernel, p the key offset 0 of the pad.
  /// Throws std::invalid_argument for a weight the design does not have.
  static Tensor initialValues(const spec::AttentionSpec& s, const QString& name);

 private:
  void refresh();

  spec::AttentionSpec spec_;
  Trained trained_;
  bool showsTrained_ = false;
  double stableRank_ = 0;
  bool updating_ = false;
  QComboBox* weight_ = nullptr;
  QSpinBox* index_ = nullptr;
  QLabel* indexLabel_ = nullptr;
  viz::MatrixHeatmap* heatmap_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* note_ = nullptr;
};

}  // namespace tensorscope::app
