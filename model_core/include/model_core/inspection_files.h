#pragma once
/// What a run directory keeps of the trainer's inspections, so that a reopened run shows its
/// stable rank history, spectrum, learned C, attention maps and role clusters as it trained
/// (issue 13). Torch-free, so the fuzz harnesses build the readers alone.
///
/// - inspections.jsonl: one line per inspection, appended as training goes:
///   `{"kind": "inspection", "step": S, "layers": [0, 1], "stable_ranks": [3.2, 2.9]}`.
///   A resumed run appends after its checkpoint's step again; the reader keeps the newest record of
///   each step and drops the records a resume overtook (as the curves do).
/// - inspection.safetensors: the newest inspection in full, written atomically with each checkpoint:
///   tensors `core.L` (F32 [R, R]), `spectrum.L` (F64 [k]) per layer L with a core, `maps.L`
///   (F32 [H, N, M]) per layer with maps, `roles.L` (F32 [heads, rows, D]) per TP layer; the step,
///   the layers, the stable ranks, every token text and the captions of the probes ("probe",
///   "role_probe") in `__metadata__` (format "tensorscope.inspection", version 2). Version 1 files
///   (one `roles` [rows, D]: head 0 of the last layer, no captions) still read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model_core/snapshots.h"

namespace tensorscope::model_core {

inline constexpr const char* kInspectionLogName = "inspections.jsonl";
inline constexpr const char* kInspectionFileName = "inspection.safetensors";
/// Largest inspection file read (the maps of a wide model at a long probe stay far below).
inline constexpr std::uint64_t kMaxInspectionFileBytes = 1ull << 30;

/// The line inspections.jsonl gets for `snap` (no newline).
std::string inspectionRecord(const InspectionSnapshot& snap);

/// The stable rank history of a run: one row per kept inspection step.
struct InspectionHistory {
  std::vector<std::int64_t> steps;
  std::vector<int> layers;                       ///< the layers with a core (of the newest record)
  std::vector<std::vector<double>> stable_ranks;  ///< [step][layer index]; NaN where a record lacks it
  std::int64_t damaged = 0;                       ///< lines skipped
  std::string first_damage;                       ///< "line N: reason" of the first one
};
/// Reads RUN_DIR/inspections.jsonl (bounded lines, damaged lines counted and skipped). No log yet:
/// an empty history.
InspectionHistory readInspectionHistory(const std::string& runDir);

/// The bytes of inspection.safetensors for `snap`.
std::string serializeInspection(const InspectionSnapshot& snap);
/// Writes RUN_DIR/inspection.safetensors atomically. Throws std::runtime_error on I/O failure.
void writeInspection(const std::string& runDir, const InspectionSnapshot& snap);
/// Parses an inspection file held in memory. Throws std::invalid_argument("SOURCE: reason") for a
/// damaged file: not safetensors, a wrong envelope, an unknown or missing tensor, a tensor of the
/// wrong dtype or shape, metadata that does not match the tensors.
InspectionSnapshot parseInspection(std::string_view bytes, const std::string& source = "<memory>");
/// Reads RUN_DIR/inspection.safetensors: nullopt when the run has none yet; throws as
/// parseInspection (or std::runtime_error when it cannot be read).
std::optional<InspectionSnapshot> readInspection(const std::string& runDir);

}  // namespace tensorscope::model_core
