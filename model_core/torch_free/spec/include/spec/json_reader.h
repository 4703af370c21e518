#pragma once
/// Reading untrusted JSON, bounded (issue 19): one place that refuses nesting deeper than
/// kMaxJsonDepth and duplicate object keys while parsing (before anything recurses over the value)
/// and turns library exceptions into sentences. Every reader of the product (specs, run and task
/// configs, sessions, trainer state, checkpoint manifests and pointers, metrics lines) parses
/// through it; the files themselves are read by files::readBoundedFile (files/read_file.h).

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::spec {

/// Deeper nesting is refused; no Tensorscope format nests beyond 6.
inline constexpr int kMaxJsonDepth = 64;

/// Malformed or refused JSON: the message says what and where ("line 3, column 7: …").
class JsonError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// An object repeats a key ({"causal": true, "causal": false}, where the last would silently win).
class DuplicateKeyError : public JsonError {
 public:
  DuplicateKeyError(const std::string& key, int depth);
  const std::string& key() const { return key_; }
  int depth() const { return depth_; }  ///< 1: a key of the top-level object

 private:
  std::string key_;
  int depth_;
};

/// Parses `text` in time and memory linear in its size. Throws JsonError: a syntax error (its line
/// and column), a NUL byte, a number out of range, nesting deeper than `maxDepth`, an object of more
/// than `maxMembers` members (refused when the next one is read, so a reader that expects few keys
/// never builds a huge value first), or (as DuplicateKeyError) an object that repeats a key.
nlohmann::json parseUntrustedJson(std::string_view text, int maxDepth = kMaxJsonDepth,
                                  std::size_t maxMembers = SIZE_MAX);

/// Whether `j` is an object whose "format" is the string `format` and whose "version" is the
/// integer `version` (wrong types count as a mismatch, never as a library exception).
bool hasEnvelope(const nlohmann::json& j, std::string_view format, std::int64_t version);

/// The JSON text of `value`, cut to at most `max` characters ("…" appended when cut): for
/// echoing a bad value in a message without echoing megabytes.
std::string jsonPreview(const nlohmann::json& value, std::size_t max = 48);

/// The message of a library exception without nlohmann's "[json.exception.type_error.302] " prefix.
std::string plainMessage(const std::exception& e);

/// What a JSON value is, for messages: "a string", "an array", "the number 64.5", …
std::string kindName(const nlohmann::json& value);

/// Reads the fields of untrusted JSON objects for every reader of the product (specs, run and task
/// configs, sessions, trainer state), with one wording: it collects every problem as (field,
/// message) instead of stopping at the first, rejects unknown keys naming the known ones, checks
/// each value's kind and the target type's range before converting (never a library exception),
/// and echoes bad values as short previews. Each reader turns problems() into its own error type
/// (file and field in the message).
class FieldReader {
 public:
  struct Problem {
    std::string field;    ///< "train.lr", "sizes.R", "seed"
    std::string message;  ///< "must be a number; got a string"

    bool operator==(const Problem&) const = default;
  };

  void fail(std::string field, std::string message);
  /// Reports every key of `obj` not in `known` ("unknown field 'k' (known here: a, b)").
  void rejectUnknown(const nlohmann::json& obj, const std::string& prefix, const std::vector<std::string>& known);
  /// Reads obj[key] into `out` when present; a wrong kind or an out-of-range number is a problem
  /// at prefix + key and leaves `out` unchanged. Returns whether `out` was set.
  bool read(const nlohmann::json& obj, const char* key, const std::string& prefix, bool& out);
  bool read(const nlohmann::json& obj, const char* key, const std::string& prefix, int& out);
  bool read(const nlohmann::json& obj, const char* key, const std::string& prefix, std::int64_t& out);
  bool read(const nlohmann::json& obj, const char* key, const std::string& prefix, std::uint64_t& out);
  bool read(const nlohmann::json& obj, const char* key, const std::string& prefix, double& out);
  bool read(const nlohmann::json& obj, const char* key, const std::string& prefix, std::string& out);

  const std::vector<Problem>& problems() const { return problems_; }
  bool empty() const { return problems_.empty(); }
  /// The problems as "field: message" lines.
  std::vector<std::string> lines() const;

 private:
  bool readWhole(const nlohmann::json& v, const std::string& field, long double lo, long double hi, long double& out);
  std::vector<Problem> problems_;
};

}  // namespace tensorscope::spec
