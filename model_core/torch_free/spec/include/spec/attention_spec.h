#pragma once
/// AttentionSpec: the single source of truth for one attention layer. The same spec builds the
/// LibTorch module and the tensor diagram. Plain C++ (no Qt, no torch).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/core_spec.h"

// Qt's keyword macros turn the member `slots` below into nothing, so two translation units would
// disagree on AttentionSpec's layout: every Tensorscope target builds with QT_NO_KEYWORDS.
#if defined(slots)
#error "Qt's 'slots' keyword macro is defined: build with QT_NO_KEYWORDS (spec::AttentionSpec has a member named slots)"
#endif

namespace tensorscope::spec {

enum class Variant { Mhsa, FixedHead, Thsa, ThsaLinear, Tp, Multilinear, Dimwise };

/// Sizes of a layer. Which ones a variant uses is documented in docs/spec-format.md:
/// mhsa/fixed_head/tp use F, H, D; thsa/thsa_linear use F, R and (Kronecker cores) H, D;
/// multilinear uses F, R, P, seq_len; dimwise uses F, R (its projection width d) and c.
struct Sizes {
  int F = 64;        ///< model width
  int H = 4;         ///< heads
  int D = 16;        ///< head (latent) size
  int R = 64;        ///< rank / channels (THSA), projection width (multilinear, dimwise)
  int P = 2;         ///< block terms (multilinear)
  int c = 2;         ///< filters (dimwise)
  int seq_len = 32;  ///< tokens N; fixed at build time for multilinear, the default elsewhere

  bool operator==(const Sizes&) const = default;
};

/// The output gate of a headed layer (slot d): none, one sigmoid per head, or one per element.
enum class Gate { None, Headwise, Elementwise };

/// How multi-head latent attention orders its contractions (both give the same layer): `naive`
/// forms every head's key and value from the latent, `absorbed` folds the key half of W^UKV into the
/// query and its value half after the softmax, so the latent itself is the one shared key/value
/// head (DeepSeek-V3 inference/model.py, attn_impl "naive" and "absorb").
enum class LatentOrder { Naive, Absorbed };

/// Multi-head latent attention (MLA; DeepSeek-V2/V3), slots.latent. Heads have a content part of
/// size D (qk_nope_head_dim = v_head_dim = D, to keep the sizes simple) and a rotary part of size
/// rope_dim shared by the keys of all heads; keys and values come from one latent of size kv_rank.
/// kv_rank = 0: no latent (MHSA's keys and values).
struct Latent {
  int kv_rank = 0;   ///< latent size (kv_lora_rank); 0: MLA off
  int q_rank = 0;    ///< query latent size (q_lora_rank); 0: a full W^Q
  int rope_dim = 0;  ///< rotary part of each query and of the shared key (qk_rope_head_dim); even
  LatentOrder order = LatentOrder::Naive;

  bool operator==(const Latent&) const = default;
  bool enabled() const { return kv_rank != 0 || q_rank != 0 || rope_dim != 0 || order != LatentOrder::Naive; }
};

std::string_view toString(LatentOrder o);
bool parseLatentOrder(std::string_view text, LatentOrder& out);

/// Tensor Product Attention (TPA, T6; Zhang et al. 2025, tensorgi/TPA model/T6.py CPLinear),
/// slots.tpa (docs/attention-variants.md §8.7). Each token's query, key and value heads are a sum
/// of R outer products of a head factor a_r ∈ R^H and a feature factor b_r ∈ R^D, divided by R:
/// q[n,h,d] = (1/R_Q)·Σ_r A_q[n,h,r]·B_q[n,r,d], likewise k (R_K) and v (R_V). The feature factors of
/// q and k carry the rotary turn (T6's half-split pairing, base rope_base). k_rank = 0: TPA off.
struct Tpa {
  int q_rank = 0;             ///< R_Q (T6 q_rank); 0: queries as MHSA, x·Wqᵀ with the rotary (T6_kvonly)
  int k_rank = 0;             ///< R_K (T6 rank); 0: TPA off
  int v_rank = 0;             ///< R_V (T6 uses R_V = R_K = rank)
  /// Head factors A functions of the token (T6: A = x·W_Aᵀ); false: learned constants a[h, r] per
  /// rank and head (non-contextual TPA, paper §4: MHA is R = H, a_r = H·e_r; MQA R_K = R_V = 1, a = 1).
  bool contextual_a = true;
  /// Feature factors B functions of the token (T6: B = x·W_Bᵀ); false: learned constants b[r, d] per
  /// rank (the paper's "TPA (Non-contextual B)", Table 1; the rotary still turns them by position).
  /// contextual_a and contextual_b are not both false: the layer would not read its input.
  bool contextual_b = true;
  bool rope = true;           ///< rotary on the feature factors B of q and k (on q itself when q_rank = 0)
  double rope_base = 10000.0; ///< rotary base (T6 Rotary(dim, base=10000))
  /// T6's using_groupnorm (model/T6.py L157–161, L179–181): RMSNorm over each head's D outputs
  /// (ε 1e-5, one weight subln.weight [D] shared by the heads) before the output projection.
  bool group_norm = false;

  bool operator==(const Tpa&) const = default;
  bool enabled() const { return *this != Tpa{}; }
};

/// How multi-token attention pads the key axis of its convolutions (RAM projects/mta/mta_transformer.py
/// `pad_key`, L479–492): `both` (c_k odd, (c_k−1)/2 keys each side; the configs and the identity
/// init use it), `left` (c_k − 1 earlier keys), `right` (c_k − 1 later keys). The query axis is
/// always padded by c_q − 1 earlier queries, so a query reads only itself and earlier queries.
enum class MtaPad { Both, Left, Right };

std::string_view toString(MtaPad p);
bool parseMtaPad(std::string_view text, MtaPad& out);

/// Multi-token attention (MTA; Golovneva et al. 2025, facebookresearch/RAM projects/mta), slots.mta
/// (docs/attention-variants.md §8.8). Each head's scaled logits are convolved over (query, key)
/// offsets by a c_q × c_k kernel (future logits zeroed first, the mask re-applied after), then
/// optionally mixed across heads (slots.pre_mix, the official `wpsm`), softmaxed, optionally
/// convolved again (post_q_kernel × post_k_kernel, masked entries zeroed after), mixed across
/// heads in groups of `head_group` (the official head convolution `head_kernel`) or by the full
/// slots.post_mix (`wposm`), and each head's output optionally RMS-normalised over its D features
/// (`subln`, ε 1e-5), rescaled by 1 − λ_init and gated by σ(W·o_h + b). All off: MHSA.
struct Mta {
  int q_kernel = 0;        ///< c_q (query_kernel_size); 0: no convolution before the softmax
  int k_kernel = 0;        ///< c_k (key_kernel_size); 0 exactly when q_kernel is 0
  int post_q_kernel = 0;   ///< after_sm_query_kernel_size; 0: no convolution after the softmax
  int post_k_kernel = 0;   ///< after_sm_key_kernel_size; 0 exactly when post_q_kernel is 0
  MtaPad pad = MtaPad::Both;  ///< pad_key of both convolutions
  int head_group = 0;      ///< head_kernel_size: heads mixed after the softmax in groups of this size; 0: none
  bool group_norm = false; ///< group_norm: RMSNorm of each head's output over its D features (weight [D], ε 1e-5)
  bool norm_rescale = false;  ///< layer_norm_rescale: that norm times 1 − λ_init(layer) (needs group_norm)
  /// add_gating after the norm: Headwise = gate_1d (Linear(D, 1) with bias, one sigmoid per head),
  /// Elementwise = Linear(D, D); read from each head's own (normalised) output, not from x.
  Gate out_gate = Gate::None;
  /// Starting values of the pre-softmax kernel, H x c_q x c_k row-major (head, query offset, key
  /// offset), as drawn in the explorer; empty: the official identity init (a 1 where the kernel reads
  /// the query itself and key offset 0). They train like the identity does.
  std::vector<double> kernel_values;
  /// Likewise for the post-softmax kernel, H x post_q_kernel x post_k_kernel; empty: the identity.
  std::vector<double> post_kernel_values;

  bool operator==(const Mta&) const = default;
  bool enabled() const { return *this != Mta{}; }
};

/// How collaborative attention's mixing matrix starts (epfml/collaborative-attention,
/// collaborative_attention.py MixingMatrixInit): `normal` is N(0, 0.2²) per entry (the official
/// default, named UNIFORM there); `concatenate` gives head h ones on the h-th block of ⌈D̃/H⌉ shared
/// key dimensions and zeros elsewhere (with D̃ = H·D and no content bias: MHSA exactly).
enum class MixingInit { Normal, Concatenate };

std::string_view toString(MixingInit m);
bool parseMixingInit(std::string_view text, MixingInit& out);

/// Collaborative attention (Cordonnier, Loukas, Jaggi 2020; epfml/collaborative-attention,
/// class CollaborativeAttention), slots.collaborative (docs/attention-variants.md §8.9). Queries
/// and keys share one key space of D̃ dimensions for all heads; head h reads it through its own
/// mixing vector m_h: logits[h,n,m] = ((q̃_n ⊙ m_h)·k̃_m + x_m·w^c_h) / √(D̃/H), with the key-only
/// content bias w^c_h optional. Values and the output are MHSA's (H heads of size D). In Tuformer's
/// terms it is THSA whose core is rectangular (R x D̃) with the rows of a head tied to m_h.
/// key_dim = 0: off.
struct Collaborative {
  int key_dim = 0;            ///< D̃ (dim_key_query_all); 0: collaborative attention off
  bool content_bias = true;   ///< the content bias x_m·w^c_h (content_bias, Linear(F, H) without bias)
  MixingInit init = MixingInit::Normal;

  bool operator==(const Collaborative&) const = default;
  bool enabled() const { return *this != Collaborative{}; }
};

/// The starting values of an H x H head mixing (talking heads' mix_pre, or mix_post: C′) and which
/// of its entries train, as C's dense values and mask. Both empty: the identity, every entry
/// trained (a new talking-heads layer is MHSA until it learns to mix). Otherwise both hold H·H
/// entries, row-major [to-head, from-head]; a frozen entry (mask 0) keeps its value while training.
struct HeadMixing {
  std::vector<double> values;
  std::vector<unsigned char> trainable_mask;  ///< 1 = trained, 0 = frozen at its value

  bool operator==(const HeadMixing&) const = default;
  bool isDefault() const { return values.empty() && trainable_mask.empty(); }
};

/// The slots of the one attention network that a headed layer (mhsa, fixed_head) opens beyond
/// MHSA (docs/attention-variants.md §8). The defaults are MHSA; a spec file without "slots" is one.
struct Slots {
  /// (a) K and V shared by groups of heads: G groups of H/G query heads each (G divides H; 1 is
  /// MQA); 0: a key and a value head per query head (MHSA).
  int kv_groups = 0;
  /// (b) talking heads, pre-softmax: the scaled logits mixed across heads by a trainable H x H
  /// matrix (`mix_pre`, initialised to the identity) before the mask and the softmax.
  bool pre_mix = false;
  /// (c) talking heads, post-softmax: the attention weights mixed across heads by a trainable
  /// H x H matrix (`mix_post`, identity at first) before they meet V.
  bool post_mix = false;
  /// What mix_pre and mix_post start as and which entries train (only with pre_mix / post_mix).
  HeadMixing pre_mixing, post_mixing;
  /// (d) gated attention: each head's output multiplied by σ(x·W^Gᵀ) before W^O.
  Gate gate = Gate::None;
  /// (c) differential attention (Ye et al. 2024, V1): each of the H heads forms two maps from
  /// query/key halves of size D, meets a value head of size 2D with A₁ − λ·A₂, and is normalised
  /// (RMSNorm over its 2D features) and scaled by 1 − λ_init, where λ = e^{λq1·λk1} − e^{λq2·λk2} +
  /// λ_init and λ_init = 0.8 − 0.6·e^{−0.3·l} for the block's index l (from 0).
  bool differential = false;
  /// Multi-head latent attention (docs/attention-variants.md §8.6): queries, keys and values
  /// through a shared low-rank latent, with a decoupled rotary part. Off by default.
  Latent latent;
  /// Tensor Product Attention (docs/attention-variants.md §8.7): contextual factorised queries,
  /// keys and values (slot d). Off by default.
  Tpa tpa;
  /// Multi-token attention (docs/attention-variants.md §8.8): key-query and head convolutions of
  /// the attention logits and weights, and a gated head norm. Off by default.
  Mta mta;
  /// Collaborative attention (docs/attention-variants.md §8.9): one shared query/key space read by
  /// every head through its mixing vector. Off by default.
  Collaborative collaborative;

  bool operator==(const Slots&) const = default;
  bool isMhsa() const { return *this == Slots{}; }
};

std::string_view toString(Gate g);
bool parseGate(std::string_view text, Gate& out);

struct AttentionSpec {
  Variant variant = Variant::Mhsa;
  Sizes sizes;
  bool causal = false;
  bool bias = false;
  double dropout = 0.0;      ///< attention-probability dropout, in [0, 1)
  bool core_softmax = true;  ///< multilinear: softmax(g_p) (paper) or g_p (authors' code)
  std::optional<CoreSpec> core;  ///< present exactly for thsa and thsa_linear
  Slots slots;                   ///< mhsa and fixed_head only; MHSA's by default

  bool operator==(const AttentionSpec&) const = default;
};

/// Whether the variant has a core matrix C.
bool hasCore(Variant v);

const std::vector<std::string>& variantNames();
std::string_view toString(Variant v);
bool parseVariant(std::string_view text, Variant& out);

/// Whether the variant can open the slots of `Slots` (mhsa, fixed_head).
bool hasSlots(Variant v);

/// The presets of modern designs, each an mhsa layer with slots set: mqa, gqa (2 groups),
/// talking_heads, gated (elementwise), gated_headwise, diff (differential attention, 2 heads), mla
/// (multi-head latent attention: kv_rank 2D, rope_dim D/2, full W^Q), tpa (Tensor Product Attention:
/// R_Q = 6, R_K = R_V = 2 as T6's configs, contextual factors, rotary), tpa_kv_only (queries as MHSA
/// with the rotary, keys and values factorised with R_K = R_V = 2; T6_kvonly), mta (multi-token
/// attention as one MTA layer of RAM's 300M_mta.yaml: c_q = 6, c_k = 11 before and after the softmax,
/// pre-softmax head mixing, head convolution over all H heads, gated group norm; causal),
/// collaborative (collaborative attention with a shared key space of D̃ = H·D/2, the content bias and
/// the official N(0, 0.2²) mixing).
const std::vector<std::string>& designPresetNames();

/// Names accepted by `spec preset`: every variant name, then every THSA core preset that is not
/// also a variant name ("mhsa" names the variant; "thsa" names THSA with its dense core), then the
/// design presets.
std::vector<std::string> specPresetNames();

/// A complete default spec for a variant name or a THSA core preset name (core presets give a
/// `thsa` layer with that core). Throws std::invalid_argument listing the valid names.
AttentionSpec makeSpecPreset(std::string_view name);

/// λ_init of differential attention in the block with index `layer` (0 first): 0.8 − 0.6·e^{−0.3·layer}
/// (microsoft/unilm Diff-Transformer, lambda_init_fn).
double diffLambdaInit(int layer);

/// RMSNorm ε of multi-head latent attention's q_norm and kv_norm (DeepSeek-V3 RMSNorm default).
inline constexpr double kMlaNormEps = 1e-6;
/// Rotary base θ of multi-head latent attention (DeepSeek-V3 rope_theta; YaRN scaling not modelled).
inline constexpr double kMlaRopeTheta = 10000.0;

/// Effective C (R x R, row-major) of a THSA-family spec; empty for other variants.
std::vector<double> effectiveCore(const AttentionSpec& spec);

}  // namespace tensorscope::spec
