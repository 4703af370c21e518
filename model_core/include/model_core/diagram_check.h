#pragma once
/// Checks that a layer's tensor diagram computes the layer (torch-free API for the app's
/// `tensorscope diagram --check`).

#include <cstdint>
#include <string>

#include "spec/attention_spec.h"

namespace tensorscope::model_core {

/// The outcome of checkDiagram.
struct DiagramCheck {
  bool ok = false;                 ///< both differences within tolerance and no error
  double max_abs_diff_y = 0;       ///< max |y_diagram - y_module|
  double max_abs_diff_maps = 0;    ///< max |maps_diagram - maps_module|
  std::string message;             ///< one line: what was compared, or the error
};

/// Builds the module of `spec` in float64 (weights from `seed`, then every trainable parameter
/// perturbed by N(0, 0.1²) so that structured initial values — identity-like cores — cannot hide
/// a transposed factor), a random input x [batch, seq, F] (multilinear: seq = sizes.seq_len),
/// evaluates the module's forward (inference: dropout off) and the tensor network of
/// spec::buildTensorNetwork, and compares y and the display maps. Tolerance: 1e-9 relative to the
/// largest magnitude of the module's tensor (at least 1). Never throws: an invalid spec or size
/// gives ok = false with the reason in `message`. Seeds torch's global generator.
/// `positions` "rotary" or "rotary_interleaved" (a model's `model.positions`) turns the module's
/// queries and keys and draws the turns on the diagram (spec/rotary_network.h); a layer that takes
/// no rotary positions then gives ok = false and the reason. Any other value: no turn.
DiagramCheck checkDiagram(const spec::AttentionSpec& spec, std::int64_t batch, std::int64_t seq, std::uint64_t seed,
                          const std::string& positions = "");

}  // namespace tensorscope::model_core
