#pragma once
/// Training tasks (data sets and generators), UI-agnostic and torch-free.
///
/// Sequence tasks (arithmetic, char_lm, copy, reverse, sort) produce TokenBatch rows for a
/// decoder-only model; fashion_mnist produces ImageBatch rows of patch tokens. Everything is
/// deterministic: batches depend only on the caller's rng state, evaluation sets only on the config.
///
/// Sequence format of question/answer tasks (fixed by the trainer):
///   tokens = [BOS] question-chars [SEP] answer-chars [EOS], right-padded with PAD to seq_len+1;
///   inputs = tokens[0..seq_len-1], targets = tokens[1..seq_len]; loss_mask is 1 exactly where the
///   target is an answer character or the EOS. Greedy decoding from [BOS] question [SEP] must
///   reproduce the answer followed by EOS (exact match). char_lm rows are plain windows of the
///   text (loss_mask all 1, prompt_length 0).
///
/// Vocabularies are character-level: one token per Unicode code point (UTF-8 text of the code
/// point), after the four special ids PAD=0, BOS=1, SEP=2, EOS=3; characters are sorted by code
/// point. Tasks are immutable after makeTask, so every const method is safe to call from any
/// thread.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::model_core {

/// Data split. Arithmetic and algorithmic tasks have Train, Interpolation (held out, same
/// distribution; Validation is an alias) and Extrapolation (harder). char_lm and fashion_mnist
/// have Train and Validation only.
enum class Split { Train, Interpolation, Extrapolation, Validation };
/// "train", "interpolation", "extrapolation", "validation".
std::string_view splitName(Split split);

/// Structural label of a token. Arithmetic labels come from the generator: digits of a fraction
/// literal or fraction answer are numerator/denominator digits, digits of an integer are integer
/// digits, signs and + - * / are operators, template words are letters/spaces/punctuation.
/// Other sequence tasks classify characters: ASCII letters Letter, digits IntegerDigit,
/// whitespace Space, brackets Parenthesis, other ASCII punctuation Punctuation, the rest Other.
/// PAD/BOS/SEP/EOS are Special.
enum class TokenRole : std::uint8_t {
  Special, IntegerDigit, NumeratorDigit, DenominatorDigit, Operator, Parenthesis, Letter, Space,
  Punctuation, Other
};
/// Number of TokenRole values (for tables indexed by role).
inline constexpr int kTokenRoleCount = 10;
/// "special", "integer digit", "numerator digit", "denominator digit", "operator",
/// "parenthesis", "letter", "space", "punctuation", "other".
std::string_view tokenRoleName(TokenRole role);

/// Character-level vocabulary: id -> UTF-8 text of the token. Ids 0..3 are "<pad>", "<bos>",
/// "<sep>", "<eos>".
struct Vocabulary {
  std::vector<std::string> tokens;
  static constexpr int64_t kPad = 0, kBos = 1, kSep = 2, kEos = 3;
  static constexpr int64_t kFirstCharacter = 4;

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  /// One id per code point of `text`. Throws std::invalid_argument naming the first unknown
  /// character (and its code point) or the offset of invalid UTF-8.
  std::vector<int64_t> encode(std::string_view text) const;
  /// Concatenated token texts; special ids appear as "<bos>" etc. Throws std::invalid_argument
  /// for an id outside [0, size()).
  std::string decode(const std::vector<int64_t>& ids) const;
  /// The specials followed by the distinct code points of `text`, sorted. Throws
  /// std::invalid_argument on invalid UTF-8.
  static Vocabulary fromText(std::string_view text);
};

/// Row-major [batch, seq_len] token data.
struct TokenBatch {
  int64_t batch = 0, seq_len = 0;
  std::vector<int64_t> inputs, targets;
  std::vector<float> loss_mask;
  std::vector<TokenRole> roles;          ///< role of each INPUT token
  std::vector<int64_t> prompt_length;    ///< per row: tokens of [BOS] question [SEP] (0 for LM)
  std::vector<std::string> questions, answers;  ///< per row (QA tasks), for display and exact match
};

/// Row-major [batch, tokens, patch_dim] patch tokens of images. A patch token t covers patch
/// row t / (28/patch), patch column t % (28/patch); its patch_dim = patch*patch values are that
/// block's pixels row-major, each (byte/255 - pixel_mean) / pixel_std.
struct ImageBatch {
  int64_t batch = 0, tokens = 0, patch_dim = 0;
  std::vector<float> patches;
  std::vector<int64_t> labels;
  int64_t patch = 0;                     ///< patch side in pixels
  int64_t image_height = 0, image_width = 0;
  float pixel_mean = 0.0f, pixel_std = 1.0f;  ///< training-set statistics of byte/255
};

/// What to build. Fields a task does not use are still validated.
struct TaskConfig {
  std::string name = "arithmetic";  ///< arithmetic | char_lm | fashion_mnist | copy | reverse | sort
  std::uint64_t seed = 1;           ///< seeds the fixed evaluation sets
  int seq_len = 64;                 ///< model context; fashion_mnist ignores it
  std::string arithmetic_module = "mixed";  ///< add_or_sub | mul_div | mixed
  std::string corpus;  ///< char_lm: path of a UTF-8 text file; empty = King James Bible
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int patch = 7;                    ///< fashion_mnist patch side: 1, 2, 4, 7, 14 or 28
  int algorithmic_length = 8;       ///< copy/reverse/sort: symbols per training sequence
  int algorithmic_alphabet = 10;    ///< symbols 0-9, then a-z, then A-Z (2..62)
};

/// A data source is missing; the message names the Debian package that provides it.
class MissingDataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  virtual bool isImage() const { return false; }
  virtual bool isQuestionAnswer() const { return false; }   ///< arithmetic, copy, reverse, sort
  /// Sequence tasks; image tasks return an empty vocabulary.
  virtual const Vocabulary& vocabulary() const = 0;
  virtual int numClasses() const { return 0; }               ///< image tasks
  /// A batch drawn with `rng_state` (advanced), deterministic for a given state.
  /// Throws std::logic_error for image tasks, std::invalid_argument for a split the task lacks
  /// or batch < 1.
  virtual TokenBatch tokenBatch(Split split, int64_t batch, std::uint64_t& rng_state) const;
  /// As tokenBatch for image tasks; throws std::logic_error for sequence tasks.
  virtual ImageBatch imageBatch(Split split, int64_t batch, std::uint64_t& rng_state) const;
  /// A fixed, deterministic evaluation set (same every call; a shorter set is a prefix of a
  /// longer one) of `count` examples. Images: the split's first `count` images (at most all).
  virtual TokenBatch tokenEvalSet(Split split, int64_t count) const;
  virtual ImageBatch imageEvalSet(Split split, int64_t count) const;
  /// Human-readable samples for `tensorscope task sample`.
  virtual std::string describeSamples(int count, std::uint64_t seed) const = 0;
};

/// Every problem of `config` as "field: message" (empty when valid). Does not touch files and
/// does not run generators (see makeTask for the checks that need them).
std::vector<std::string> validateTaskConfig(const TaskConfig& config);

/// Validates the config (std::invalid_argument with every problem) and builds the task;
/// data-backed tasks load their data here: MissingDataError naming the Debian package when a
/// source is absent, std::runtime_error for unreadable or corrupt data. Arithmetic also probes
/// its generator: std::invalid_argument (with the seq_len that would do) when too few train or
/// extrapolation problems fit in seq_len + 1 tokens. A char_lm corpus must hold 20 * (seq_len+1)
/// characters so that both splits fit a window.
std::unique_ptr<Task> makeTask(const TaskConfig& config);
/// "arithmetic", "char_lm", "fashion_mnist", "copy", "reverse", "sort".
std::vector<std::string> taskNames();
/// "add_or_sub", "mul_div", "mixed".
std::vector<std::string> arithmeticModules();

/// JSON object with every TaskConfig field (keys as the member names).
std::string taskConfigToJson(const TaskConfig& config, int indent = 2);
/// Parses a JSON object; missing keys keep their defaults. Throws std::invalid_argument listing
/// every problem: malformed JSON, unknown keys, wrong types, invalid values.
TaskConfig taskConfigFromJson(const std::string& text);

/// Cache directory: $XDG_CACHE_HOME/tensorscope, or ~/.cache/tensorscope.
std::string taskCacheDirectory();

}  // namespace tensorscope::model_core
