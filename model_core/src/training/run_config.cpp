// RunConfig <-> JSON ("tensorscope.run_config", version 1) and validation.
#include <nlohmann/json.hpp>

#include <set>
#include <stdexcept>

#include "attention/rotary_rule.h"
#include "files/read_file.h"
#include "model_core/run_config.h"
#include "spec/json_reader.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
constexpr const char* kFormat = "tensorscope.run_config";
constexpr int kVersion = 1;

/// The run config's problems, read with the shared field reader (one wording for every reader).
class Problems : public spec::FieldReader {
 public:
  void add(const std::string& field, const std::string& msg) { fail(field, msg); }
  [[noreturn]] void raise() const { throw std::invalid_argument(listProblems("invalid run config", lines())); }
};

}  // namespace

std::string displayText(const std::string& text) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
             static_cast<unsigned char>(text[i + 1]) <= 0x9f) {  // C1 controls (U+0080..U+009F), e.g. CSI
      const auto d = static_cast<unsigned char>(text[++i]);
      out += std::string("\\u00") + kHex[d >> 4] + kHex[d & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string listProblems(const std::string& head, const std::vector<std::string>& lines) {
  std::string m = head + ":";
  for (std::size_t i = 0; i < lines.size() && i < kMaxListedProblems; ++i) {
    // A nested message keeps its lines (indented under this one); other control characters are shown.
    m += "\n  ";
    std::size_t from = 0;
    for (std::size_t nl; (nl = lines[i].find('\n', from)) != std::string::npos; from = nl + 1) {
      m += displayText(lines[i].substr(from, nl - from));
      m += "\n  ";
    }
    m += displayText(lines[i].substr(from));
  }
  if (lines.size() > kMaxListedProblems)
    m += "\n  … and " + std::to_string(lines.size() - kMaxListedProblems) + " more problems (" +
         std::to_string(lines.size()) + " in all)";
  return m;
}

spec::AttentionSpec layerSpec(const ModelConfig& m, int layer) {
  if (m.attention.empty()) throw std::invalid_argument("model has no attention spec");
  return m.attention.size() == 1 ? m.attention.front() : m.attention.at(static_cast<size_t>(layer));
}

std::string runConfigToJson(const RunConfig& c) {
  json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  const auto& m = c.model;
  json attention = json::array();
  for (const auto& s : m.attention) attention.push_back(json::parse(spec::toJson(s, -1)));
  j["model"] = {{"kind", m.kind},
                {"layers", m.layers},
                {"d_model", m.d_model},
                {"ffn_multiplier", m.ffn_multiplier},
                {"positions", m.positions},
                {"tied_embeddings", m.tied_embeddings},
                {"tp_role_embedding", m.tp_role_embedding},
                {"residual_dropout", m.residual_dropout},
                {"attention", attention}};
  j["task"] = json::parse(taskConfigToJson(c.task));
  const auto& t = c.train;
  j["train"] = {{"steps", t.steps},         {"batch", t.batch},
                {"lr", t.lr},               {"weight_decay", t.weight_decay},
                {"beta1", t.beta1},         {"beta2", t.beta2},
                {"eps", t.eps},             {"warmup", t.warmup},
                {"min_lr_ratio", t.min_lr_ratio}, {"grad_clip", t.grad_clip},
                {"eval_interval", t.eval_interval}, {"eval_examples", t.eval_examples},
                {"checkpoint_interval", t.checkpoint_interval}, {"inspect_interval", t.inspect_interval},
                {"seed", t.seed},           {"device", t.device},
                {"threads", t.threads},     {"divergence_factor", t.divergence_factor},
                {"divergence_steps", t.divergence_steps}};
  return j.dump(2);
}

RunConfig runConfigFromJson(const std::string& text) {
  Problems p;
  json j;
  try {
    j = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(std::string("invalid run config: malformed JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("invalid run config: the document must be a JSON object");
  if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kFormat)
    p.add("format", std::string("must be \"") + kFormat + "\"" + (j.contains("format") ? "; got " + spec::jsonPreview(j["format"]) : ""));
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<std::int64_t>() != kVersion)
    p.add("version", "must be " + std::to_string(kVersion) + (j.contains("version") ? "; got " + spec::jsonPreview(j["version"]) : ""));
  if (!p.empty()) p.raise();
  // "versions" records what wrote a run's config.json; informational, not read back.
  p.rejectUnknown(j, "", {"format", "version", "model", "task", "train", "versions"});
  RunConfig c;
  if (j.contains("model")) {
    const json& m = j["model"];
    if (!m.is_object()) {
      p.add("model", "must be an object");
    } else {
      p.rejectUnknown(m, "model.", {"kind", "layers", "d_model", "ffn_multiplier", "positions", "tied_embeddings",
                                     "tp_role_embedding", "residual_dropout", "attention"});
      p.read(m, "kind", "model.", c.model.kind);
      p.read(m, "layers", "model.", c.model.layers);
      p.read(m, "d_model", "model.", c.model.d_model);
      p.read(m, "ffn_multiplier", "model.", c.model.ffn_multiplier);
      p.read(m, "positions", "model.", c.model.positions);
      p.read(m, "tied_embeddings", "model.", c.model.tied_embeddings);
      p.read(m, "tp_role_embedding", "model.", c.model.tp_role_embedding);
      p.read(m, "residual_dropout", "model.", c.model.residual_dropout);
      if (m.contains("attention")) {
        const json& a = m["attention"];
        const json list = a.is_array() ? a : json::array({a});
        for (size_t i = 0; i < list.size(); ++i) {
          try {
            c.model.attention.push_back(spec::fromJson(list[i].dump()));
          } catch (const spec::SpecError& e) {
            for (const auto& issue : e.issues())
              p.add("model.attention[" + std::to_string(i) + "]." + issue.field, issue.message);
          }
        }
      }
    }
  }
  if (j.contains("task")) {
    try {
      c.task = taskConfigFromJson(j["task"].dump());
    } catch (const std::invalid_argument& e) {
      p.add("task", e.what());
    }
  }
  if (j.contains("train")) {
    const json& t = j["train"];
    if (!t.is_object()) {
      p.add("train", "must be an object");
    } else {
      p.rejectUnknown(t, "train.", {"steps", "batch", "lr", "weight_decay", "beta1", "beta2", "eps", "warmup",
                                     "min_lr_ratio", "grad_clip", "eval_interval", "eval_examples",
                                     "checkpoint_interval", "inspect_interval", "seed", "device", "threads",
                                     "divergence_factor", "divergence_steps"});
      auto& x = c.train;
      p.read(t, "steps", "train.", x.steps);
      p.read(t, "batch", "train.", x.batch);
      p.read(t, "lr", "train.", x.lr);
      p.read(t, "weight_decay", "train.", x.weight_decay);
      p.read(t, "beta1", "train.", x.beta1);
      p.read(t, "beta2", "train.", x.beta2);
      p.read(t, "eps", "train.", x.eps);
      p.read(t, "warmup", "train.", x.warmup);
      p.read(t, "min_lr_ratio", "train.", x.min_lr_ratio);
      p.read(t, "grad_clip", "train.", x.grad_clip);
      p.read(t, "eval_interval", "train.", x.eval_interval);
      p.read(t, "eval_examples", "train.", x.eval_examples);
      p.read(t, "checkpoint_interval", "train.", x.checkpoint_interval);
      p.read(t, "inspect_interval", "train.", x.inspect_interval);
      p.read(t, "seed", "train.", x.seed);
      p.read(t, "device", "train.", x.device);
      p.read(t, "threads", "train.", x.threads);
      p.read(t, "divergence_factor", "train.", x.divergence_factor);
      p.read(t, "divergence_steps", "train.", x.divergence_steps);
    }
  }
  for (const auto& v : validateRunConfig(c)) {
    const auto colon = v.find(": ");
    p.add(v.substr(0, colon), v.substr(colon + 2));
  }
  if (!p.empty()) p.raise();
  return c;
}

RunConfig readRunConfig(const std::string& path) {
  std::string text;
  try {
    text = files::readBoundedFile(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  try {
    return runConfigFromJson(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

std::int64_t modelSequenceLength(const RunConfig& c) {
  const int p = c.task.patch;
  if (c.task.name == "fashion_mnist" && p > 0 && 28 % p == 0) return int64_t(28 / p) * (28 / p);
  return c.task.seq_len;
}

std::vector<std::string> evaluationSplitNames(const RunConfig& c) {
  if (c.task.name == "arithmetic") return {"interpolation", "extrapolation"};
  return {"validation"};
}

std::vector<std::string> validateRunConfig(const RunConfig& c) {
  std::vector<std::string> out;
  auto add = [&](const std::string& f, const std::string& m) { out.push_back(f + ": " + m); };
  const auto& m = c.model;
  if (m.kind != "decoder" && m.kind != "encoder_classifier")
    add("model.kind", "must be \"decoder\" or \"encoder_classifier\"; got \"" + m.kind + "\"");
  if (m.layers < 1 || m.layers > 64) add("model.layers", "must be in [1, 64]; got " + std::to_string(m.layers));
  if (m.d_model < 1 || m.d_model > 8192) add("model.d_model", "must be in [1, 8192]; got " + std::to_string(m.d_model));
  if (m.ffn_multiplier < 1 || m.ffn_multiplier > 16) add("model.ffn_multiplier", "must be in [1, 16]");
  const bool rotary = m.positions == "rotary" || m.positions == "rotary_interleaved";
  if (m.positions != "learned" && m.positions != "sinusoidal" && !rotary)
    add("model.positions", "must be \"learned\", \"sinusoidal\", \"rotary\" or \"rotary_interleaved\"; got \"" +
                               m.positions + "\"");
  if (rotary && m.tp_role_embedding)
    add("model.tp_role_embedding", "binds each symbol's role to its position vector, and rotary positions have none; "
                                   "use learned or sinusoidal positions with it");
  if (!(m.residual_dropout >= 0 && m.residual_dropout < 1)) add("model.residual_dropout", "must be in [0, 1)");
  if (m.attention.empty()) add("model.attention", "give one attention spec for all layers, or one per layer");
  else if (m.attention.size() != 1 && static_cast<int>(m.attention.size()) != m.layers)
    add("model.attention", "has " + std::to_string(m.attention.size()) + " specs for " + std::to_string(m.layers) +
                               " layers; give one spec, or one per layer");
  for (size_t i = 0; i < m.attention.size(); ++i) {
    const auto& s = m.attention[i];
    const std::string f = "model.attention[" + std::to_string(i) + "]";
    for (const auto& issue : spec::validate(s)) add(f + "." + issue.field, issue.message);
    if (s.sizes.F != m.d_model)
      add(f + ".sizes.F", "must equal model.d_model = " + std::to_string(m.d_model) + "; got " + std::to_string(s.sizes.F));
    if (s.variant == spec::Variant::Multilinear && s.sizes.seq_len != modelSequenceLength(c)) {
      if (c.task.name == "fashion_mnist")
        add(f + ".sizes.seq_len", "multilinear fixes N when built: must equal the number of patch tokens (28/" +
                                      std::to_string(c.task.patch) + ")² = " + std::to_string(modelSequenceLength(c)) +
                                      "; got " + std::to_string(s.sizes.seq_len));
      else
        add(f + ".sizes.seq_len", "multilinear fixes N when built: must equal task.seq_len = " +
                                      std::to_string(c.task.seq_len) + "; got " + std::to_string(s.sizes.seq_len));
    }
    if (rotary) {
      if (const std::string why = rotaryProblem(s); !why.empty()) add("model.positions", m.positions + " at " + f + ": " + why);
    }
    if (m.kind == "decoder" && !s.causal)
      add(f + ".causal", "a decoder needs causal attention (position i may only see positions <= i); set \"causal\": true");
  }
  const bool image = c.task.name == "fashion_mnist";
  if (image && m.kind != "encoder_classifier")
    add("model.kind", "task fashion_mnist is image classification: use \"encoder_classifier\"");
  if (!image && m.kind == "encoder_classifier")
    add("model.kind", "task " + c.task.name + " is a token task: use \"decoder\"");
  if (m.tp_role_embedding && m.kind != "decoder") add("model.tp_role_embedding", "applies to token embeddings (decoder) only");
  const auto& t = c.train;
  if (t.steps < 1) add("train.steps", "must be at least 1");
  if (t.batch < 1 || t.batch > 65536) add("train.batch", "must be in [1, 65536]");
  if (!(t.lr > 0 && t.lr < 10)) add("train.lr", "must be in (0, 10)");
  if (!(t.weight_decay >= 0)) add("train.weight_decay", "must be >= 0");
  if (!(t.beta1 >= 0 && t.beta1 < 1) || !(t.beta2 >= 0 && t.beta2 < 1)) add("train.beta1/beta2", "must be in [0, 1)");
  if (!(t.eps > 0)) add("train.eps", "must be > 0");
  if (t.warmup < 0) add("train.warmup", "must be >= 0");
  if (!(t.min_lr_ratio >= 0 && t.min_lr_ratio <= 1)) add("train.min_lr_ratio", "must be in [0, 1]");
  if (!(t.grad_clip >= 0)) add("train.grad_clip", "must be >= 0 (0 disables clipping)");
  if (t.eval_interval < 1) add("train.eval_interval", "must be at least 1");
  // Bounded like the batch: 4,000,000 once built an evaluation set for hours.
  if (t.eval_examples < 1 || t.eval_examples > kMaxEvalExamples)
    add("train.eval_examples", "must be in [1, " + std::to_string(kMaxEvalExamples) + "]; got " + std::to_string(t.eval_examples));
  if (t.checkpoint_interval < 1) add("train.checkpoint_interval", "must be at least 1");
  if (t.inspect_interval < 1) add("train.inspect_interval", "must be at least 1");
  if (t.device != "cpu" && t.device != "cuda") add("train.device", "must be \"cpu\" or \"cuda\"; got \"" + t.device + "\"");
  if (t.threads < 0 || t.threads > 4096) add("train.threads", "must be in [0, 4096] (0: all cores)");
  if (!(t.divergence_factor == 0 || (t.divergence_factor > 1 && t.divergence_factor <= 1e12)))
    add("train.divergence_factor", "must be 0 (no finite-divergence guard) or in (1, 1e12]");
  if (t.divergence_steps < 1 || t.divergence_steps > 1000000)
    add("train.divergence_steps", "must be in [1, 1000000]");
  return out;
}

}  // namespace tensorscope::model_core
