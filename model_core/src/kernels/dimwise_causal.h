#pragma once
// Causal dimension-wise attention (TensorCoder, docs/attention-variants.md §7) without any tensor of
// size N·d²: a fused CPU kernel, float32 and float64.
//
// Position i (0-based; t_i = 1/√(i+1)) reads the prefix state S⁽ⁱ⁾ = Σ_{n≤i} q_nᵀk_n [d, d],
//     p_i[j,:] = softmax(t_i·S⁽ⁱ⁾[j,:]),   O[i,c,j] = Σ_m W_c[j,m]·p_i[j,m]·v[i,m].
// Row j of S⁽ⁱ⁾ only ever meets row j of W and column j of O, so the rows are independent. Forward
// items are (sequence, range of rows), walked one panel of kDimwiseRowBlock rows at a time over the
// whole sequence, the panel's rows across the vector lanes (row_ops.h, DimwisePanel): its state and
// its filter rows are held transposed (column m of the 16 rows in one cache line) and stay in L1.
// Each position adds its rank-one update q[i,j]·k_i to every row and takes, in the same pass over
// the columns, the new row maxima, the softmax sums and the c filter products of p⊙v (the softmax
// shift from a bound on each new maximum, the row's previous one plus max q·k), all lane by lane:
// no sum across lanes, and the log-sum-exps and normalisations of the 16 rows are one vector each.
// The checkpoints are written back in row layout. It keeps for backward the
// log-sum-exp of every row [B, N, d], the state at every segment boundary, checkpoints
// [B, ⌈N/K⌉−1, d, d] (the state after positions K, 2K, …; never after the last one), and its output.
//
// Backward items are the same (sequence, row range); an item walks the segments from the last to
// the first, and inside each segment its blocks of kDimwiseRowBlock rows in turn (each row's suffix
// accumulator D carried from segment to segment). A block's states are recomputed forward from its
// checkpoint (additions only, the same order as the forward, so no rounding builds up over the
// sequence), each position's probabilities written to a per-thread buffer of K·kDimwiseRowBlock·d
// values (in L2); then the segment's positions are walked in reverse, each row in runs of up to
// kDimwiseRunMax positions whose D and ∂W stay in registers (row_ops.h, DimwiseBackwardRun). With
// G_i[j,:] = Σ_c gO[i,c,j]·W_c[j,:] and ∂p = v_i ⊙ G_i:
//     ∂v_i += Σ_j p_i[j,:] ⊙ G_i[j,:],      ∂W_c[j,:] += gO[i,c,j]·p_i[j,:] ⊙ v_i,
//     ∂S⁽ⁱ⁾[j,:] = t_i·p ⊙ (∂p − ⟨p, ∂p⟩),   D_i = Σ_{n≥i} ∂S⁽ⁿ⁾ (the suffix accumulator, rows × d),
//     ∂q[i,j] = ⟨D_i[j,:], k_i⟩,            ∂k_i += Σ_j q[i,j]·D_i[j,:],
// with ⟨p, ∂p⟩ = Σ_c gO[i,c,j]·O[i,c,j] from the forward's output (no pass over the row for it).
// The runs read and write tiles (row_ops.h, kDimwiseChunk): each row of d values as chunks of 16
// (zero past d) with a segment's positions side by side inside a chunk, so one pointer per array
// reaches the positions of a run (the loop keeps six pointers, its scalars broadcast from memory):
// the recomputed probabilities, the segment's v and k and its ∂v and ∂k (built once per segment,
// which is the outer loop of an item; the ∂ tile sums the item's rows in increasing order, then the
// target takes it), the filter rows and every row's ∂W. The recompute folds ln t_i into the
// log-sum-exp, writing t_i·p, so the runs save a product per entry; the ∂v tile holds t_i·∂v_i
// until it is added.
// ∂q of a row belongs to its item; ∂k and ∂v sum over rows: one group of rows per sequence when the
// sequences keep the threads busy, else per-group slabs added in group order (kernels/partials.h),
// and ∂W per thread range, added in range order: results do not depend on thread timing.
// A position's ∂k and ∂v take its rows in increasing row order whatever the blocking.
// Memory: O(B·⌈N/K⌉·d² + B·N·c·d) kept (the output among it); per thread in backward about
// K·kDimwiseRowBlock·d + 4·K·d + d² + 2·c·d² values (probabilities, v/k tiles, D, W and ∂W tiles).

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

/// Positions between two checkpoints unless the problem says otherwise.
constexpr int64_t kDimwiseSegment = 32;

/// State rows that the forward and the backward walk together over a sequence.
constexpr int64_t kDimwiseRowBlock = 16;

template <typename T>
struct DimwiseCausalProblem {
  int64_t B = 0, N = 0, d = 0, c = 0;
  int64_t segment = kDimwiseSegment;  ///< K, positions between checkpoints (>= 1)
  const T* qkv = nullptr;  ///< [B, N, 3, d], contiguous (q, k, v on axis 2)
  const T* W = nullptr;    ///< [c, d, d]: the filters
  int64_t segments() const { return (N + segment - 1) / segment; }
  /// Number of checkpoint states per sequence (⌈N/K⌉ − 1, never negative).
  int64_t checkpoints() const { return N > 0 ? segments() - 1 : 0; }
};

/// O [B, N, c, d], the row log-sum-exps lse [B, N, d] and the checkpoints [B, checkpoints(), d, d].
template <typename T>
void dimwiseCausalForward(const DimwiseCausalProblem<T>& p, T* O, T* lse, T* checkpoints, const Parallel& par);

/// From the forward's O and ∂O [B, N, c, d]: dqkv [B, N, 3, d] (overwritten) and dW [c, d, d]
/// (overwritten; may be null).
template <typename T>
void dimwiseCausalBackward(const DimwiseCausalProblem<T>& p, const T* lse, const T* checkpoints, const T* O,
                           const T* dO, T* dqkv, T* dW, const Parallel& par);

}  // namespace tensorscope::model_core::kernels
