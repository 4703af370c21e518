#pragma once
/// What a training run reports while it runs, as plain data: per-step metrics, evaluations and
/// inspections of the model's insides (cores, attention maps, TP roles). Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "model_core/host_tensor.h"

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

/// What the views show about the model's insides at one step.
struct InspectionSnapshot {
  std::int64_t step = 0;
  std::vector<int> core_layers;             ///< layers that have a core C
  std::vector<HostTensor> cores;            ///< their effective C, [R, R]
  std::vector<double> stable_ranks;         ///< ‖C‖_F²/‖C‖_2² per core
  std::vector<std::vector<double>> spectra; ///< singular values per core
  /// Attention maps for the probe example: per layer, one map per head/channel ([N, N] or [d, d]).
  std::vector<std::vector<HostTensor>> maps;
  std::vector<std::string> probe_tokens;    ///< token texts of the probe input
  /// TP role vectors of head 0 of the last TP layer for a probe batch: [rows, D], one row per
  /// (example, non-padding token); empty for other variants.
  HostTensor roles;
  std::vector<std::string> role_tokens;     ///< token text of each role row
  std::vector<std::string> role_labels;     ///< structural label of each role row
  std::vector<std::string> role_contexts;   ///< the question around each token
};

}  // namespace tensorscope::model_core
