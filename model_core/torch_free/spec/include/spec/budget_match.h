#pragma once
/// Budget matching (issue 37): the integer value of one free size of a design (heads, key/value
/// groups, head size, latent sizes, ranks, R, F, block terms, filters) that brings one of its costs
/// (trainable parameters, KV-cache elements per token, training FLOPs per token; the cost model's
/// figures) closest to a base design's. Generic: it knows the size fields of AttentionSpec, not the
/// designs; whether a size is free for a design is decided by the cost model and the validator (a
/// size is free when it is in use, i.e. not 0 = off, and some valid value of it changes the cost).
/// docs/cost-model.md, Budget matching.

#include <cstdint>
#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

enum class BudgetCost { Parameters, KvCache, TrainingFlops };
/// "params", "kv", "flops".
const char* budgetCostName(BudgetCost c);
/// Parses "params", "kv" or "flops"; throws std::invalid_argument naming the three.
BudgetCost parseBudgetCost(const std::string& text);

/// A design's cost: trainable parameters; KV-cache elements per token (decoding); training FLOPs
/// (forward and backward) per token at sequence length `seq` (batch 1). Throws std::invalid_argument
/// with the reason where the cost does not apply (a layer that does not decode token by token, or
/// keeps a fixed state instead of a per-token cache, has no KV cost to match).
double budgetCostOf(const AttentionSpec& spec, BudgetCost on, std::int64_t seq);

/// The size fields the matcher knows, in the order it tries them: H, kv_groups, D, R, F, P, c,
/// kv_rank, q_rank, rope_dim, core_rank, tpa_q_rank, tpa_k_rank, tpa_v_rank, mta_q_kernel, mta_k_kernel,
/// key_dim (collaborative attention's D̃).
const std::vector<std::string>& budgetSizeNames();

/// The best value of one size.
struct SizeSolution {
  std::string size;        ///< e.g. "D"
  int from = 0;            ///< its value in the design
  int value = 0;           ///< the best value found
  double cost = 0;         ///< the design's cost with it
  double residual = 0;     ///< (cost - target) / target; 0 where the target is 0 and so is the cost
  bool solvable = false;   ///< some valid value changes the cost (else `why` says why not)
  std::string why;         ///< why the size is not free for this design and cost
};

struct BudgetMatch {
  BudgetCost on = BudgetCost::Parameters;
  double target = 0;                 ///< the base's cost
  std::vector<SizeSolution> sizes;   ///< every size tried (solvable or with its reason)
  bool found = false;                ///< a solution within the tolerance
  SizeSolution best;                 ///< the closest over the sizes tried (the named one when named)
  AttentionSpec matched;             ///< the design with the best value (when found)
  std::string reason;                ///< why nothing fits (when !found)
};

/// Solves `size` (a name of budgetSizeNames(), or empty: every free size, keeping the closest; ties
/// go to the earlier size) of `design` so that its cost `on` is closest to `base`'s, trying every
/// integer from 1 to max(4 x the current value, 64) (at most 8192). A value is a candidate when the
/// design with it validates; R follows H and D where it was H x D, and a THSA core is rebuilt for
/// the new sizes (its preset, or its low rank). Nothing within `tolerance` (relative): found is
/// false and `reason` names the closest size, its cost, the gap and the tolerance. Throws
/// std::invalid_argument for an invalid design or base, an unknown size name, or a cost that does not
/// apply to either.
BudgetMatch matchBudget(const AttentionSpec& design, const AttentionSpec& base, BudgetCost on,
                        const std::string& size = "", double tolerance = 0.01, std::int64_t seq = 0);

}  // namespace tensorscope::spec
