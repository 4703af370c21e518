#pragma once
/// What a training run reports while it runs, as plain data: per-step metrics, evaluations and
/// inspections of the model's insides (cores, attention maps, TP roles). Torch-free.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model_core/host_tensor.h"
#include "model_core/network_values.h"

namespace tensorscope::model_core {

/// Per-step scalars.
struct MetricsSnapshot {
  std::int64_t step = 0;
  double loss = 0, lr = 0, grad_norm = 0;
  double tokens_per_second = 0;
  double elapsed_seconds = 0;
};

struct EvalSnapshot {
  std::int64_t step = 0;  ///< the step of the weights evaluated; -1 when unknown (a bare weights file)
  std::string split;
  double loss = 0;
  double accuracy = 0;     ///< token accuracy on loss positions (sequences) or class accuracy
  double exact_match = -1; ///< question-answer tasks (greedy decoding); -1 when not applicable
};

/// The TP role vectors of one head of one layer: [rows, D].
struct RoleVectors {
  int layer = 0;
  int head = 0;
  HostTensor vectors;
};

/// One named weight of a layer ("mix_post"), as a host copy.
struct NamedHostTensor {
  std::string name;
  HostTensor value;
};

/// The attention weights whose values no spec holds and that InspectionSnapshot::slot_weights
/// carries, in this order (the names the modules register and checkpoints keep).
inline const std::vector<std::string>& slotWeightNames() {
  static const std::vector<std::string> names = {"mix_post", "mix_pre", "mta_kernel", "mta_kernel_after_sm",
                                                 "head_kernel"};
  return names;
}

/// What the views show about the model's insides at one step.
struct InspectionSnapshot {
  std::int64_t step = 0;
  std::vector<int> core_layers;             ///< layers that have a core C
  std::vector<HostTensor> cores;            ///< their effective C, [R, R]
  std::vector<double> stable_ranks;         ///< ‖C‖_F²/‖C‖_2² per core
  std::vector<std::vector<double>> spectra; ///< singular values per core
  /// Attention maps for the probe input: per layer, one map per head/channel ([N, N] or [d, d]).
  std::vector<std::vector<HostTensor>> maps;
  std::vector<std::string> probe_tokens;    ///< token texts of the probe input
  /// What the probe input is, for captions: "validation example 0 “3142”", a typed question and
  /// the model's answer "“3142” → “1234”", typed text "“In the”", "validation image 3 (class 7)".
  std::string probe;
  /// TP role vectors of every head of every TP layer for a probe batch (empty for other variants):
  /// the same rows, one per (example, non-padding token), for every entry.
  std::vector<RoleVectors> roles;
  std::string role_probe;                   ///< what the role rows come from, for captions
  std::vector<std::string> role_tokens;     ///< token text of each role row
  std::vector<std::string> role_labels;     ///< structural label of each role row
  std::vector<std::string> role_contexts;   ///< the question around each token
  /// The head mixings and multi-token attention's kernels of every layer as the model holds them at
  /// this step (mix_post C′, mix_pre, mta_kernel, mta_kernel_after_sm, head_kernel: the
  /// weights the spec holds no values for), so a view follows them while the run trains instead of
  /// waiting for a checkpoint. slot_weights[l]: layer l's, in that order; empty for a layer without
  /// any. Not written to inspection files (the checkpoint keeps them).
  std::vector<std::vector<NamedHostTensor>> slot_weights;
  /// Every tensor of one layer's diagram on the same probe, when the run was asked for it
  /// (TrainerControl::setNetworkLayer); null otherwise. Not written to inspection files.
  std::shared_ptr<const NetworkValues> network;
  /// The role vectors of (layer, head), or null.
  const RoleVectors* rolesOf(int layer, int head) const {
    for (const auto& r : roles)
      if (r.layer == layer && r.head == head) return &r;
    return nullptr;
  }
};

}  // namespace tensorscope::model_core
