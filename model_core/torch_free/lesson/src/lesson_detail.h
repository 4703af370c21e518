#pragma once
// What the lesson library's sources share and nobody else sees: the names of the kinds in the file,
// small text helpers, and the element ids of a step's network as the reader checks them.

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/types.h"
#include "spec/attention_spec.h"
#include "spec/tensor_network.h"

namespace tensorscope::spec::lesson_detail {

using json = nlohmann::json;

inline constexpr std::array<std::string_view, 11> kActionNames = {
    "read",  "edit_core", "choose_variant", "choose_core_preset", "train",   "inspect",
    "step_plan", "open_lab", "run_lab", "set_slot", "zero_row"};
inline constexpr std::array<std::string_view, 14> kCheckNames = {
    "variant_is", "core_preset_is", "stable_rank_in", "heads_in", "trained_steps_at_least", "inspected",
    "plan_step_reached", "parameters_match", "lab_done", "loss_below", "slot_is", "cost_ratio_in", "row_zeroed",
    "all"};
inline constexpr std::array<std::string_view, 2> kLabNames = {"bottleneck", "stable_rank"};

/// The tags of a step's rich text, as problems name them.
inline constexpr const char* kTagList = "p, b, i, em, strong, sub, sup, code, br, ul, ol, li";

template <size_t N>
bool parseName(const std::array<std::string_view, N>& names, std::string_view text, int& out) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) {
      out = static_cast<int>(i);
      return true;
    }
  return false;
}

template <typename Names>
std::string joined(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

/// Code points of valid UTF-8 (the JSON parser has checked the encoding).
std::size_t codePoints(std::string_view s);
bool isSnakeCase(std::string_view s);
/// `s` as a short JSON string for a problem's sentence (jsonPreview).
std::string preview(std::string_view s);
/// A JSON whole number as int64, clamped to [-1, 2^30] (range checks follow; no overflow).
std::int64_t clampedWhole(const json& x);

// ---- the element ids of a design's network ---------------------------------------------------------

struct Elements {
  bool usable = false;  ///< a valid design whose network was built
  bool has_core = false;
  int R = 0;
  int plan_length = 0;
  std::vector<std::string> ids;  ///< node ids then box ids
  std::map<std::string, int> legs;  ///< node id -> leg count
  AttentionSpec design;             ///< the step's effective design (set_slot, zero_row check against it)
};

Elements elementsOf(const TensorNetwork& net, const AttentionSpec& design);
/// Why `id` names no element of `e` ("" when it does).
std::string elementProblem(const std::string& id, const Elements& e);

}  // namespace tensorscope::spec::lesson_detail
