#pragma once
/// Interventions on a trained run's weights (issue 36), in their smallest honest form: the edit goes
/// into a fork's starting checkpoint (the directory snapshotCheckpoint wrote, a RunEntry's initFrom)
/// before the fork trains, so the parent's checkpoints and curves never change and the fork's own
/// curve starts from the edited weights (its warm start copies them, init.json records it).
///
/// What can be edited: a row of talking heads' H x H head mixings of one layer, mix_pre (logits,
/// before the softmax) or mix_post (weights, after it, C′ in the diagram), stored [to, from]: row w
/// zero means head w receives nothing from any head; for mix_post its attention weights U_w = Σ_l
/// C′[w, l]·P_l are 0, so head w's output is 0 (the head is switched off at that point of training).

#include <string>
#include <vector>

namespace tensorscope::model_core {

/// Sets row `row` of layer `layer`'s head mixing `parameter` ("mix_pre" or "mix_post") to 0 in
/// `snapshot_dir`/model.safetensors, rewritten atomically with its metadata (the checkpoint's step)
/// and every other tensor unchanged. Refuses (std::invalid_argument, with the reason) a directory
/// that is a run's own folder (it has checkpoint.json or metrics: its history would change), one
/// with no weights, a parameter other than the two, a layer without that mixing, and a row outside
/// 0..H-1. I/O failures throw std::runtime_error (model_core::SafetensorsError); the file is then
/// untouched.
void zeroMixingRow(const std::string& snapshot_dir, int layer, const std::string& parameter, int row);

/// The rows of layer `layer`'s head mixings that are exactly 0 in `dir`'s weights (the checkpoint
/// files of a run folder, or a snapshot's model.safetensors), as "mix_pre[0]", "mix_post[1]", in that
/// order. Empty when the directory holds no weights or the layer no mixing.
std::vector<std::string> zeroMixingRows(const std::string& dir, int layer);

}  // namespace tensorscope::model_core
