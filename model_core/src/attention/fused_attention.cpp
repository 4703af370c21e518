#include "attention/fused_attention.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <sstream>
#include <string>
#include <stdexcept>
#include <vector>

#include "attention/head_view.h"
#include "kernels/gemm.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Query rows per block: 32 for a causal layer (finer blocks skip more of the masked triangle);
/// a full layer takes as many rows as keep a block of scores (rows × M keys) within 64 Ki values
/// (fewer, larger products; the whole head at N = M = 128).
int64_t rowBlock(int64_t M, bool causal) {
  return causal ? 32 : std::max<int64_t>(32, (int64_t(1) << 16) / std::max<int64_t>(M, 1));
}

using kernels::gemm;

/// Sizes of one call: q [B, N, H, Dk], k [B, M, G, Dk], v [B, M, G, Dv]; head h reads group h / (H/G).
struct Dims {
  int64_t B, N, M, H, G, Dk, Dv;
  int64_t perGroup() const { return H / G; }
};

/// One of q, k, v (or its gradient) read in place (head_view.h: positions on axis 1).
template <typename P>
using Heads = HeadView<P>;

template <typename T>
Heads<const T> headsOf(const torch::Tensor& t) {
  return headView<T>(t, 1);
}
template <typename T>
Heads<T> gradHeadsOf(torch::Tensor& t) {
  return headView<T, T>(t, 1);
}

/// Calls f(i0, rows, cols) for each block of query rows [i0, i0+rows): a causal layer's rows see
/// the first `cols` = min(i0+rows, M) keys (row i sees keys 0 … i, SDPA's is_causal), a full
/// layer's every key. `lastFirst` visits the blocks from the bottom up, so the first block visited
/// spans the most keys.
template <typename F>
void forEachRowBlock(int64_t N, int64_t M, bool causal, F&& f, bool lastFirst = false) {
  const int64_t step = rowBlock(M, causal);
  const int64_t blocks = (N + step - 1) / step;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i0 = (lastFirst ? blocks - 1 - b : b) * step;
    const int64_t rows = std::min(step, N - i0);
    f(i0, rows, causal ? std::min(i0 + rows, M) : M);
  }
}

/// Rows [i0, i0+rows) of a block of scores [N, M] become softmax rows in place, on the vectorised
/// row operations while the block is still in cache: row r over its keys (0 … r when causal), the
/// keys it does not see set to 0 (what softmax gives them at −∞).
template <typename T>
void softmaxRows(T* m, int64_t M, int64_t i0, int64_t rows, bool causal) {
  for (int64_t r = i0; r < i0 + rows; ++r) kernels::softmaxRowInPlace(m + r * M, causal ? std::min(r + 1, M) : M, M);
}

/// The softmax's backward on `rows` rows of a block: w [rows, cols] holds dP = dO·vᵀ and becomes
/// dS = P ⊙ (dP − δ), δ_n = Σ_m P_nm dP_nm = dO_n·o_n (Dv values; P, dO and o rows ldp, ldg apart).
template <typename T>
void softmaxGradientRows(T* w, const T* p, int64_t ldp, const T* g, const T* o, int64_t ldg, int64_t rows,
                         int64_t cols, int64_t Dv) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* gr = g + r * ldg;
    const T* orow = o + r * ldg;
    T delta = 0;
    for (int64_t j = 0; j < Dv; ++j) delta += gr[j] * orow[j];
    const T* prow = p + r * ldp;
    T* wr = w + r * cols;
    for (int64_t j = 0; j < cols; ++j) wr[j] = prow[j] * (wr[j] - delta);
  }
}

/// Whether the heads of one key/value head are stacked as rows: one group (MQA, MLA's absorbed
/// order), several query heads, the query's heads side by side at each position (rows (n, h) of Dk
/// values, Dk apart). Then each block of query rows is one product for all heads (M = rows·H) instead
/// of H products of `rows` rows each: the shared keys and values are read once a block, and the
/// products are large enough for the BLAS's blocked kernels.
bool stackedHeads(const Dims& d, int64_t sh, int64_t sn) { return d.G == 1 && d.H > 1 && sh == d.Dk && sn == d.H * d.Dk; }

/// The forward with stacked heads (stackedHeads): per (batch, block of query rows) the scores of
/// every head as one product into a per-thread block [rows·H, cols], their softmax rows there, the
/// rows copied into P [B, H, N, M] (zero past the keys a causal row sees), and o's rows (n, h) as one
/// product with v.
template <typename T>
void stackedForward(const Dims& d, Heads<const T> q, Heads<const T> k, Heads<const T> v, T scale, bool causal, T* s,
                    T* out) {
  const int64_t N = d.N, M = d.M, H = d.H, HDv = H * d.Dv;
  const int64_t step = rowBlock(M, causal), blocks = (N + step - 1) / step;
  at::parallel_for(0, d.B * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> work(size_t(std::min(step, N) * H * M));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, i0 = (item % blocks) * step, rows = std::min(step, N - i0);
      const int64_t cols = causal ? std::min(i0 + rows, M) : M;
      T* w = work.data();  // [rows·H, cols]: row r·H + h is head h at position i0 + r
      gemm<T>(false, true, rows * H, cols, d.Dk, scale, q.at(b, 0) + i0 * q.sn, d.Dk, k.at(b, 0), k.sn, T(0), w, cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < H; ++h) {
          T* wr = w + (r * H + h) * cols;
          kernels::softmaxRowInPlace(wr, causal ? std::min(i0 + r + 1, M) : M, cols);
          T* pr = s + ((b * H + h) * N + i0 + r) * M;
          std::copy(wr, wr + cols, pr);
          std::fill(pr + cols, pr + M, T(0));
        }
      gemm<T>(false, false, rows * H, d.Dv, cols, T(1), w, cols, v.at(b, 0), v.sn, T(0), out + b * N * HDv + i0 * HDv,
              d.Dv);
    }
  });
}

template <typename T>
FusedAttentionOutput forwardCore(const Dims& d, Heads<const T> q, Heads<const T> k, Heads<const T> v, double scaleD,
                                 bool causal, const torch::TensorOptions& options) {
  const int64_t N = d.N, M = d.M, H = d.H, per = d.perGroup(), HDv = d.H * d.Dv;
  const T scale = static_cast<T>(scaleD);
  auto P = torch::empty({d.B, H, N, M}, options);
  T* s = P.data_ptr<T>();
  if (stackedHeads(d, q.sh, q.sn) && N > 0 && M > 0) {
    auto o = torch::empty({d.B, N, H, d.Dv}, options);
    stackedForward<T>(d, q, k, v, scale, causal, s, o.data_ptr<T>());
    return {o, P};
  }
  at::parallel_for(0, d.B * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t b = p / H, h = p % H;
      const T* qp = q.at(b, h);
      const T* kp = k.at(b, h / per);
      T* sp = s + p * N * M;
      forEachRowBlock(N, M, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
        gemm<T>(false, true, rows, cols, d.Dk, scale, qp + i0 * q.sn, q.sn, kp, k.sn, T(0), sp + i0 * M, M);
        softmaxRows(sp, M, i0, rows, causal);
      });
    }
  });
  auto o = torch::empty({d.B, N, H, d.Dv}, options);
  const T* pr = P.data_ptr<T>();
  T* out = o.data_ptr<T>();
  at::parallel_for(0, d.B * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t b = p / H, h = p % H;
      const T* vp = v.at(b, h / per);
      T* op = out + b * N * HDv + h * d.Dv;
      forEachRowBlock(N, M, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
        gemm<T>(false, false, rows, d.Dv, cols, T(1), pr + p * N * M + i0 * M, M, vp, v.sn, T(0), op + i0 * HDv, HDv);
      });
    }
  });
  return {o, P};
}

/// The backward with stacked heads (stackedHeads, and dq laid out the same way): one work item a
/// batch entry, its row blocks from the bottom up; per block the P rows of every head gathered into
/// [rows·H, cols] and the four products of the per-head backward below each run once for all heads
/// (dv and dk sum over the heads inside their products).
template <typename T>
void stackedBackward(const Dims& d, Heads<const T> q, Heads<const T> k, Heads<const T> v, const T* pr, const T* out,
                     const T* dO, Heads<T> dq, Heads<T> dk, Heads<T> dv, T scale, bool causal) {
  const int64_t N = d.N, M = d.M, H = d.H, Dk = d.Dk, Dv = d.Dv, HDv = H * Dv;
  const int64_t reached = causal ? std::min(N, M) : M;
  at::parallel_for(0, d.B, 1, [&](int64_t begin, int64_t end) {
    const size_t block = size_t(std::min(N, rowBlock(M, causal)) * H * M);
    std::vector<T> gathered(block), work(block);
    for (int64_t b = begin; b < end; ++b) {
      const T* kp = k.at(b, 0);
      const T* vp = v.at(b, 0);
      T *dkp = dk.at(b, 0), *dvp = dv.at(b, 0);
      for (int64_t m = reached; m < M; ++m) {
        std::fill(dkp + m * dk.sn, dkp + m * dk.sn + Dk, T(0));
        std::fill(dvp + m * dv.sn, dvp + m * dv.sn + Dv, T(0));
      }
      T beta = 0;  // the first block visited covers every reached key and initialises dk, dv
      forEachRowBlock(N, M, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
        const int64_t R = rows * H;  // row r·H + h: head h at position i0 + r
        T* p = gathered.data();
        T* w = work.data();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t h = 0; h < H; ++h) {
            const T* src = pr + ((b * H + h) * N + i0 + r) * M;
            std::copy(src, src + cols, p + (r * H + h) * cols);
          }
        const T* g = dO + b * N * HDv + i0 * HDv;  // rows (n, h), Dv apart
        const T* o = out + b * N * HDv + i0 * HDv;
        gemm<T>(false, true, R, cols, Dv, T(1), g, Dv, vp, v.sn, T(0), w, cols);   // dP = dO·vᵀ
        gemm<T>(true, false, cols, Dv, R, T(1), p, cols, g, Dv, beta, dvp, dv.sn);  // dv += Pᵀ·dO
        softmaxGradientRows(w, p, cols, g, o, Dv, R, cols, Dv);
        gemm<T>(false, false, R, Dk, cols, scale, w, cols, kp, k.sn, T(0), dq.at(b, 0) + i0 * dq.sn, Dk);
        gemm<T>(true, false, cols, Dk, R, scale, w, cols, q.at(b, 0) + i0 * q.sn, Dk, beta, dkp, dk.sn);
        beta = 1;
      }, /*lastFirst=*/true);
    }
  });
}

/// The backward pass, written into dq, dk, dv (every entry is written). One work item is a
/// (batch, group, chunk of the group's heads): it owns dq of its heads and accumulates dk, dv over
/// them, so no two threads add into one row. When B·G items are fewer than the threads, a group's
/// heads are split into chunks; chunk 0 writes dk, dv, the others write slabs that are added
/// afterwards in chunk order (the sum does not depend on which thread finished first).
template <typename T>
void backwardCore(const Dims& d, Heads<const T> q, Heads<const T> k, Heads<const T> v, const torch::Tensor& P,
                  const torch::Tensor& o, const torch::Tensor& gradO, Heads<T> dq, Heads<T> dk, Heads<T> dv,
                  double scaleD, bool causal) {
  const int64_t N = d.N, M = d.M, H = d.H, G = d.G, per = d.perGroup(), Dk = d.Dk, Dv = d.Dv, HDv = H * Dv;
  if (d.B * G == 0) return;
  const T scale = static_cast<T>(scaleD);
  const T* pr = P.data_ptr<T>();
  const T* out = o.data_ptr<T>();
  const T* dO = gradO.data_ptr<T>();
  const int64_t threads = std::max(1, at::get_num_threads());
  if (stackedHeads(d, q.sh, q.sn) && dq.sh == Dk && dq.sn == H * Dk && d.B >= threads && N > 0) {
    stackedBackward<T>(d, q, k, v, pr, out, dO, dq, dk, dv, scale, causal);
    return;
  }
  const int64_t chunks = std::clamp<int64_t>((threads + d.B * G - 1) / (d.B * G), 1, per);
  const int64_t headsPerChunk = (per + chunks - 1) / chunks;
  const int64_t slabRow = Dk + Dv;  // a slab row: dk (Dk) then dv (Dv)
  std::vector<T> slabs(size_t((chunks - 1) * d.B * G * M * slabRow));
  // Keys no query row reaches (a causal layer with N < M, or N = 0) get a zero gradient.
  const int64_t reached = N == 0 ? 0 : (causal ? std::min(N, M) : M);
  // Per block of query rows, with one block of scores in a per-thread buffer:
  //   dP = dO·vᵀ,  dv += Pᵀ·dO,  dS = P ⊙ (dP − δ) with δ_n = Σ_m P_nm dP_nm = dO_n·o_n,
  //   dq = scale·dS·k,  dk += scale·dSᵀ·q.
  // Causal blocks stop at the diagonal block; there P is exactly 0 above the diagonal, so dS is too.
  at::parallel_for(0, d.B * G * chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> work(size_t(std::min(N, rowBlock(M, causal)) * M));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t chunk = item % chunks, bg = item / chunks, b = bg / G, g = bg % G;
      const T* kp = k.at(b, g);
      const T* vp = v.at(b, g);
      T *dkp = dk.at(b, g), *dvp = dv.at(b, g);
      int64_t lddk = dk.sn, lddv = dv.sn;
      if (chunk > 0) {
        dkp = slabs.data() + ((chunk - 1) * d.B * G + bg) * M * slabRow;
        dvp = dkp + Dk;
        lddk = lddv = slabRow;
      }
      for (int64_t m = reached; m < M; ++m) {
        std::fill(dkp + m * lddk, dkp + m * lddk + Dk, T(0));
        std::fill(dvp + m * lddv, dvp + m * lddv + Dv, T(0));
      }
      T beta = 0;  // the first block visited covers every reached key and initialises dk, dv
      const int64_t h0 = g * per + chunk * headsPerChunk, h1 = std::min(g * per + per, h0 + headsPerChunk);
      for (int64_t h = h0; h < h1; ++h) {
        const T* qp = q.at(b, h);
        T* dqp = dq.at(b, h);
        const T* gp = dO + b * N * HDv + h * Dv;
        const T* op = out + b * N * HDv + h * Dv;
        const T* pp = pr + (b * H + h) * N * M;
        forEachRowBlock(N, M, causal, [&](int64_t i0, int64_t rows, int64_t cols) {
          T* w = work.data();  // [rows, cols]
          gemm<T>(false, true, rows, cols, Dv, T(1), gp + i0 * HDv, HDv, vp, v.sn, T(0), w, cols);
          gemm<T>(true, false, cols, Dv, rows, T(1), pp + i0 * M, M, gp + i0 * HDv, HDv, beta, dvp, lddv);
          softmaxGradientRows(w, pp + i0 * M, M, gp + i0 * HDv, op + i0 * HDv, HDv, rows, cols, Dv);
          gemm<T>(false, false, rows, Dk, cols, scale, w, cols, kp, k.sn, T(0), dqp + i0 * dq.sn, dq.sn);
          gemm<T>(true, false, cols, Dk, rows, scale, w, cols, qp + i0 * q.sn, q.sn, beta, dkp, lddk);
          beta = 1;
        }, /*lastFirst=*/true);
      }
      if (h0 >= h1)  // an empty chunk (more chunks than heads would leave one): its slab adds zero
        for (int64_t m = 0; m < reached; ++m) {
          std::fill(dkp + m * lddk, dkp + m * lddk + Dk, T(0));
          std::fill(dvp + m * lddv, dvp + m * lddv + Dv, T(0));
        }
    }
  });
  for (int64_t c = 1; c < chunks; ++c)
    for (int64_t bg = 0; bg < d.B * G; ++bg) {
      const T* slab = slabs.data() + ((c - 1) * d.B * G + bg) * M * slabRow;
      T* dkp = dk.at(bg / G, bg % G);
      T* dvp = dv.at(bg / G, bg % G);
      for (int64_t m = 0; m < M; ++m) {
        const T* row = slab + m * slabRow;
        for (int64_t j = 0; j < Dk; ++j) dkp[m * dk.sn + j] += row[j];
        for (int64_t j = 0; j < Dv; ++j) dvp[m * dv.sn + j] += row[Dk + j];
      }
    }
}

/// The three views of a contiguous qkv [B, N, 3, H, D] (q, k, v on axis 2).
template <typename P>
std::array<Heads<P>, 3> qkvHeads(P* base, const Dims& d) {
  const int64_t sn = 3 * d.H * d.Dk, sb = d.N * sn;
  return {Heads<P>{base, sb, d.Dk, sn}, Heads<P>{base + d.H * d.Dk, sb, d.Dk, sn},
          Heads<P>{base + 2 * d.H * d.Dk, sb, d.Dk, sn}};
}

Dims qkvDims(const torch::Tensor& qkv) {
  return {qkv.size(0), qkv.size(1), qkv.size(1), qkv.size(3), qkv.size(3), qkv.size(4), qkv.size(4)};
}

template <typename T>
FusedAttentionOutput forwardQkv(const torch::Tensor& x, double scale, bool causal) {
  const Dims d = qkvDims(x);
  const auto h = qkvHeads<const T>(x.data_ptr<T>(), d);
  return forwardCore<T>(d, h[0], h[1], h[2], scale, causal, x.options());
}

template <typename T>
torch::Tensor backwardQkv(const torch::Tensor& x, const torch::Tensor& P, const torch::Tensor& o,
                          const torch::Tensor& g, double scale, bool causal) {
  const Dims d = qkvDims(x);
  auto dx = torch::empty_like(x);  // every entry is written
  const auto h = qkvHeads<const T>(x.data_ptr<T>(), d);
  const auto dh = qkvHeads<T>(dx.data_ptr<T>(), d);
  backwardCore<T>(d, h[0], h[1], h[2], P, o, g, dh[0], dh[1], dh[2], scale, causal);
  return dx;
}

struct FusedAttentionFunction : public torch::autograd::Function<FusedAttentionFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& qkv, double scale, bool causal) {
    const auto x = qkv.contiguous();
    const auto r = x.scalar_type() == torch::kDouble ? forwardQkv<double>(x, scale, causal)
                                                     : forwardQkv<float>(x, scale, causal);
    ctx->save_for_backward({x, r.P, r.o});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    ctx->mark_non_differentiable({r.P});
    ctx->set_materialize_grads(false);  // P has no gradient: do not allocate a [B,H,N,N] of zeros for it
    return {r.o, r.P};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    if (!grads[0].defined()) return {torch::zeros_like(x), torch::Tensor(), torch::Tensor()};
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    auto d = x.scalar_type() == torch::kDouble ? backwardQkv<double>(x, saved[1], saved[2], g, scale, causal)
                                               : backwardQkv<float>(x, saved[1], saved[2], g, scale, causal);
    return {d, torch::Tensor(), torch::Tensor()};
  }
};

Dims groupedDims(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  return {q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
}

struct GroupedAttentionFunction : public torch::autograd::Function<GroupedAttentionFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double scale, bool causal) {
    const Dims d = groupedDims(q, k, v);
    const auto r = q.scalar_type() == torch::kDouble
                       ? forwardCore<double>(d, headsOf<double>(q), headsOf<double>(k), headsOf<double>(v), scale,
                                             causal, q.options())
                       : forwardCore<float>(d, headsOf<float>(q), headsOf<float>(k), headsOf<float>(v), scale,
                                            causal, q.options());
    ctx->save_for_backward({q, k, v, r.P, r.o});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    ctx->mark_non_differentiable({r.P});
    ctx->set_materialize_grads(false);
    return {r.o, r.P};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const auto &q = s[0], &k = s[1], &v = s[2];
    const torch::Tensor none;
    if (!grads[0].defined()) return {torch::zeros_like(q), torch::zeros_like(k), torch::zeros_like(v), none, none};
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    const Dims d = groupedDims(q, k, v);
    auto dq = torch::empty({d.B, d.N, d.H, d.Dk}, q.options());  // every entry is written
    auto dk = torch::empty({d.B, d.M, d.G, d.Dk}, k.options());
    auto dv = torch::empty({d.B, d.M, d.G, d.Dv}, v.options());
    if (q.scalar_type() == torch::kDouble)
      backwardCore<double>(d, headsOf<double>(q), headsOf<double>(k), headsOf<double>(v), s[3], s[4], g,
                           gradHeadsOf<double>(dq), gradHeadsOf<double>(dk), gradHeadsOf<double>(dv), scale, causal);
    else
      backwardCore<float>(d, headsOf<float>(q), headsOf<float>(k), headsOf<float>(v), s[3], s[4], g,
                          gradHeadsOf<float>(dq), gradHeadsOf<float>(dk), gradHeadsOf<float>(dv), scale, causal);
    return {dq, dk, dv, none, none};
  }
};

torch::Tensor inPlace(const torch::Tensor& t) { return readableHeads(t, 1); }

void checkCpuFloat(const torch::Tensor& t, const char* what) {
  if (!t.device().is_cpu() || (t.scalar_type() != torch::kFloat && t.scalar_type() != torch::kDouble))
    throw std::invalid_argument(std::string(what) + ": CPU float32/float64 tensors only");
}

void checkBlas(const char* what) {
  if (!kernels::blas().available())
    throw std::runtime_error(std::string(what) + ": the fused kernels have no BLAS (" + kernels::blas().source + ")");
}

std::atomic<bool> g_fusedEnabled{true};

}  // namespace

void setFusedAttentionEnabled(bool enabled) { g_fusedEnabled.store(enabled); }
bool fusedAttentionEnabled() { return g_fusedEnabled.load(); }

bool fusedRowsSupport(const torch::Tensor& x) {
  return g_fusedEnabled.load() && x.device().is_cpu() &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
}

bool fusedAttentionSupports(const torch::Tensor& x) { return fusedRowsSupport(x) && kernels::blas().available(); }

FusedAttentionOutput fusedAttention(const torch::Tensor& qkv, double scale, bool causal) {
  if (qkv.dim() != 5 || qkv.size(2) != 3)
    throw std::invalid_argument("fusedAttention: qkv must be [B, N, 3, H, D]");
  checkCpuFloat(qkv, "fusedAttention");
  checkBlas("fusedAttention");
  const int64_t limit = std::numeric_limits<int>::max();
  if (qkv.size(1) * qkv.size(1) > limit || qkv.size(1) * qkv.size(3) * qkv.size(4) * 3 > limit)
    throw std::invalid_argument("fusedAttention: sizes exceed the BLAS integer range");
  auto out = FusedAttentionFunction::apply(qkv, scale, causal);
  return {out[0], out[1]};
}

FusedAttentionOutput fusedGroupedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                           double scale, bool causal) {
  const char* what = "fusedGroupedAttention";
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    throw std::invalid_argument("fusedGroupedAttention: q [B, N, H, Dk], k [B, M, G, Dk], v [B, M, G, Dv] must be 4-D");
  const auto shapes = [&] {
    std::ostringstream s;
    s << " (q " << q.sizes() << ", k " << k.sizes() << ", v " << v.sizes() << ")";
    return s.str();
  };
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || v.size(1) != k.size(1) || v.size(2) != k.size(2) ||
      k.size(3) != q.size(3))
    throw std::invalid_argument(std::string(what) + ": q [B, N, H, Dk], k [B, M, G, Dk], v [B, M, G, Dv] disagree" +
                                shapes());
  if (k.size(2) < 1 || q.size(2) % k.size(2) != 0)
    throw std::invalid_argument(std::string(what) + ": the key/value groups G must divide the heads H" + shapes());
  if (k.size(1) < 1) throw std::invalid_argument(std::string(what) + ": no keys (M = 0)" + shapes());
  for (const auto* t : {&q, &k, &v}) checkCpuFloat(*t, what);
  if (k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    throw std::invalid_argument(std::string(what) + ": q, k and v must have one dtype");
  checkBlas(what);
  const int64_t limit = std::numeric_limits<int>::max();
  if (q.size(1) * k.size(1) > limit || q.size(2) * std::max(q.size(3), v.size(3)) > limit)
    throw std::invalid_argument(std::string(what) + ": sizes exceed the BLAS integer range" + shapes());
  auto out = GroupedAttentionFunction::apply(inPlace(q), inPlace(k), inPlace(v), scale, causal);
  return {out[0], out[1]};
}

}  // namespace tensorscope::model_core
