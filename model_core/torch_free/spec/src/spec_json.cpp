#include "spec/spec_json.h"

#include "spec/json_pretty.h"
#include "spec/json_reader.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "files/read_file.h"
#include "spec/validation.h"

namespace tensorscope::spec {
namespace {

using nlohmann::json;

/// Reads fields of one JSON object, recording every problem instead of stopping at the first. The
/// plain fields go through the shared FieldReader (spec/json_reader.h): one wording for every reader.
class Reader {
 public:
  explicit Reader(std::vector<Issue>& issues) : issues_(issues) {}

  void fail(const std::string& field, const std::string& msg) { issues_.push_back({field, msg}); }

  /// Reports keys of `obj` that are not in `known`.
  void rejectUnknown(const json& obj, const std::string& prefix, const std::set<std::string>& known) {
    fields_.rejectUnknown(obj, prefix, std::vector<std::string>(known.begin(), known.end()));
    take("");
  }

  void readBool(const json& obj, const char* key, const std::string& field, bool& out) { readField(obj, key, field, out); }
  void readNumber(const json& obj, const char* key, const std::string& field, double& out) {
    readField(obj, key, field, out);
  }
  void readInt(const json& obj, const char* key, const std::string& field, int& out) { readField(obj, key, field, out); }
  bool readString(const json& obj, const char* key, const std::string& field, std::string& out) {
    return readField(obj, key, field, out);
  }

  /// A vector of numbers, or a matrix (array of equal-length rows) flattened row-major.
  bool readNumbers(const json& v, const std::string& field, std::vector<double>& out) {
    out.clear();
    if (!v.is_array()) {
      fail(field, "must be an array of numbers or of rows; got " + kindName(v));
      return false;
    }
    size_t rowLen = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      if (e.is_number()) {
        out.push_back(e.get<double>());
      } else if (e.is_array()) {
        if (i == 0) rowLen = e.size();
        if (e.size() != rowLen) {
          fail(field, "row " + std::to_string(i) + " has " + std::to_string(e.size()) +
                          " entries; row 0 has " + std::to_string(rowLen));
          return false;
        }
        for (const json& x : e) {
          if (!x.is_number()) {
            fail(field, "row " + std::to_string(i) + " holds " + kindName(x) + "; numbers only");
            return false;
          }
          out.push_back(x.get<double>());
        }
      } else {
        fail(field, "entry " + std::to_string(i) + " is " + kindName(e) + "; numbers only");
        return false;
      }
    }
    return true;
  }

 private:
  template <typename T>
  bool readField(const json& obj, const char* key, const std::string& field, T& out) {
    const bool ok = fields_.read(obj, key, "", out);
    take(field);
    return ok;
  }
  /// Moves the field reader's new problems into the issues (under `field` when given).
  void take(const std::string& field) {
    const auto& problems = fields_.problems();
    for (; taken_ < problems.size(); ++taken_)
      issues_.push_back({field.empty() ? problems[taken_].field : field, problems[taken_].message});
  }

  std::vector<Issue>& issues_;
  FieldReader fields_;
  size_t taken_ = 0;
};

// Rows of `cols` when `v` holds rows*cols values; otherwise `v` as it is (an invalid spec, e.g. in
// the explorer while its sizes are being edited, is written as held, never padded to rows x cols:
// R = 16384 with a 64 x 64 core once built a 268 M-entry matrix for the spec view).
json matrix(const std::vector<double>& v, int rows, int cols) {
  if (rows < 0 || cols < 0 || v.size() != static_cast<size_t>(rows) * static_cast<size_t>(cols)) return json(v);
  json m = json::array();
  for (int i = 0; i < rows; ++i) {
    json row = json::array();
    for (int j = 0; j < cols; ++j) {
      row.push_back(v[static_cast<size_t>(i) * cols + j]);
    }
    m.push_back(std::move(row));
  }
  return m;
}

/// A 0/1 mask as matrix() writes values, its entries as integers.
json maskMatrix(const std::vector<unsigned char>& mask, int rows, int cols) {
  json m = matrix(std::vector<double>(mask.begin(), mask.end()), rows, cols);
  const auto toInt = [](json& x) { x = static_cast<int>(x.get<double>()); };
  for (auto& row : m) {
    if (row.is_array()) {
      for (auto& x : row) toInt(x);
    } else {
      toInt(row);
    }
  }
  return m;
}

json factorToJson(const CoreFactor& f, int dim) {
  json j;
  j["kind"] = std::string(toString(f.kind));
  if (f.kind == FactorKind::Fixed || f.kind == FactorKind::Trainable) {
    j["values"] = matrix(f.values, dim, dim);
  } else if (f.kind == FactorKind::Rank1) {
    // values holds c2 then c3, equally long as read (validation checks that length against D): split
    // in the middle, so a spec written while invalid reads back as the same spec (found by fuzz_spec).
    (void)dim;
    const auto half = f.values.begin() + static_cast<std::ptrdiff_t>(f.values.size() / 2);
    j["c2"] = std::vector<double>(f.values.begin(), half);
    j["c3"] = std::vector<double>(half, f.values.end());
    j["trainable"] = f.trainable_rank1;
  }
  return j;
}

void factorFromJson(Reader& r, const json& j, const std::string& field, CoreFactor& f) {
  if (!j.is_object()) return r.fail(field, "must be an object like {\"kind\": \"identity\"}; got " + kindName(j));
  r.rejectUnknown(j, field + ".", {"kind", "values", "c2", "c3", "trainable"});
  std::string kind;
  if (!r.readString(j, "kind", field + ".kind", kind)) {  // a wrong kind is said by the reader: one problem a field
    if (!j.contains("kind")) r.fail(field + ".kind", "missing; one of identity, ones, fixed, trainable, rank1");
    return;
  }
  if (!parseFactorKind(kind, f.kind))
    return r.fail(field + ".kind", "unknown factor kind '" + kind + "'; one of identity, ones, fixed, trainable, rank1");
  f.values.clear();
  if (f.kind == FactorKind::Rank1) {
    std::vector<double> c2, c3;
    if (!j.contains("c2") || !j.contains("c3"))
      return r.fail(field, "factor kind rank1 needs vectors \"c2\" and \"c3\"");
    if (r.readNumbers(j["c2"], field + ".c2", c2) && r.readNumbers(j["c3"], field + ".c3", c3)) {
      if (c2.size() != c3.size())
        return r.fail(field, "c2 has " + std::to_string(c2.size()) + " entries but c3 has " + std::to_string(c3.size()));
      f.values = c2;
      f.values.insert(f.values.end(), c3.begin(), c3.end());
    }
    r.readBool(j, "trainable", field + ".trainable", f.trainable_rank1);
  } else if (j.contains("values")) {
    r.readNumbers(j["values"], field + ".values", f.values);
  } else if (f.kind == FactorKind::Fixed || f.kind == FactorKind::Trainable) {
    r.fail(field + ".values", "factor kind " + kind + " needs \"values\" (a square matrix)");
  }
}

/// A 0/1 mask: a matrix of 0 and 1, or one boolean for every entry of `count`.
void maskFromJson(Reader& r, const json& t, const std::string& field, std::size_t count,
                  std::vector<unsigned char>& out) {
  out.clear();
  if (t.is_boolean()) {
    out.assign(count, t.get<bool>() ? 1 : 0);
    return;
  }
  std::vector<double> m;
  if (!r.readNumbers(t, field, m)) return;
  for (double x : m) {
    if (x != 0.0 && x != 1.0) {
      out.clear();
      return r.fail(field, "mask entries must be 0 (frozen) or 1 (trainable)");
    }
    out.push_back(x != 0.0 ? 1 : 0);
  }
}

void coreFromJson(Reader& r, const json& j, const Sizes& sizes, std::optional<CoreSpec>& out) {
  if (!j.is_object()) return r.fail("core", "must be an object; got " + kindName(j));
  r.rejectUnknown(j, "core.", {"preset", "structure", "scale", "A", "B", "values", "trainable", "rank", "U", "V"});
  CoreSpec c;
  std::string preset = "custom";
  r.readString(j, "preset", "core.preset", preset);
  const bool explicitForm = j.contains("structure") || j.contains("A") || j.contains("B") || j.contains("values") ||
                            j.contains("trainable") || j.contains("scale") || j.contains("rank") || j.contains("U") ||
                            j.contains("V");
  if (!explicitForm) {
    // Preset only: expand it for the spec's sizes.
    if (!isCorePreset(preset))
      return r.fail("core.preset", "unknown core preset '" + preset + "' and no explicit structure given");
    // Sizes first: the expansion allocates H x H, R x R or R x H values.
    const auto problems = corePresetIssues(preset, sizes);
    for (const auto& p : problems) r.fail(p.field, p.message);
    if (problems.empty()) out = makeCorePreset(preset, sizes.H, sizes.D);
    return;
  }
  c.preset = preset;
  std::string structure;
  if (!r.readString(j, "structure", "core.structure", structure)) {
    if (!j.contains("structure")) r.fail("core.structure", "missing; dense, kronecker or low_rank");
    return;
  }
  if (!parseCoreStructure(structure, c.structure))
    return r.fail("core.structure", "unknown structure '" + structure + "'; dense, kronecker or low_rank");
  if (c.structure != CoreStructure::LowRank && (j.contains("rank") || j.contains("U") || j.contains("V")))
    r.fail("core", "\"rank\", \"U\" and \"V\" belong to structure low_rank");
  if (c.structure == CoreStructure::LowRank) {
    if (j.contains("A") || j.contains("B") || j.contains("scale") || j.contains("values"))
      r.fail("core", "structure low_rank takes \"rank\", \"U\", \"V\" and \"trainable\", not A, B, scale or values");
    r.readInt(j, "rank", "core.rank", c.rank);
    if (!j.contains("rank")) r.fail("core.rank", "structure low_rank needs \"rank\" (the number of columns of U and V)");
    for (const char* key : {"U", "V"}) {
      if (!j.contains(key)) {
        r.fail(std::string("core.") + key, std::string("structure low_rank needs \"") + key + "\" (R x rank)");
        continue;
      }
      r.readNumbers(j[key], std::string("core.") + key, *key == 'U' ? c.u_values : c.v_values);
    }
    r.readBool(j, "trainable", "core.trainable", c.factors_trainable);
  } else if (c.structure == CoreStructure::Kronecker) {
    r.readNumber(j, "scale", "core.scale", c.scale);
    if (!j.contains("A") || !j.contains("B"))
      r.fail("core", "structure kronecker needs factors \"A\" (H x H) and \"B\" (D x D)");
    if (j.contains("A")) factorFromJson(r, j["A"], "core.A", c.a);
    if (j.contains("B")) factorFromJson(r, j["B"], "core.B", c.b);
    if (j.contains("values") || j.contains("trainable"))
      r.fail("core.values", "a kronecker core takes its values from A and B; remove 'values'/'trainable'");
  } else {
    if (j.contains("A") || j.contains("B") || j.contains("scale"))
      r.fail("core", "structure dense takes \"values\" and \"trainable\", not A, B or scale");
    if (!j.contains("values")) r.fail("core.values", "structure dense needs \"values\" (R x R)");
    else r.readNumbers(j["values"], "core.values", c.dense_values);
    if (j.contains("trainable")) {
      maskFromJson(r, j["trainable"], "core.trainable", c.dense_values.size(), c.trainable_mask);
    } else {
      c.trainable_mask.assign(c.dense_values.size(), 1);
    }
  }
  out = std::move(c);
}

/// slots.pre_mixing / post_mixing: {"values": H x H, "trainable": H x H of 0/1 or a boolean}.
void mixingFromJson(Reader& r, const json& j, const std::string& field, HeadMixing& out) {
  if (!j.is_object())
    return r.fail(field, "must be an object like {\"values\": [[1, 0], [0, 1]], \"trainable\": true}; got " +
                             kindName(j));
  r.rejectUnknown(j, field + ".", {"values", "trainable"});
  if (!j.contains("values")) return r.fail(field + ".values", "missing: the H x H starting values of the mixing");
  r.readNumbers(j["values"], field + ".values", out.values);
  if (j.contains("trainable"))
    maskFromJson(r, j["trainable"], field + ".trainable", out.values.size(), out.trainable_mask);
  else
    out.trainable_mask.assign(out.values.size(), 1);
}

/// An MTA kernel: H kernels, each c_q rows of c_k values ([head][query offset][key offset]).
void kernelFromJson(Reader& r, const json& j, const std::string& field, std::vector<double>& out) {
  out.clear();
  if (!j.is_array()) return r.fail(field, "must be an array of one c_q x c_k matrix per head; got " + kindName(j));
  std::size_t perHead = 0;
  for (std::size_t h = 0; h < j.size(); ++h) {
    std::vector<double> one;
    if (!r.readNumbers(j[h], field + "[" + std::to_string(h) + "]", one)) return out.clear();
    if (h == 0) perHead = one.size();
    if (one.size() != perHead) {
      out.clear();
      return r.fail(field, "head " + std::to_string(h) + " has " + std::to_string(one.size()) + " values; head 0 has " +
                               std::to_string(perHead));
    }
    out.insert(out.end(), one.begin(), one.end());
  }
}

void slotsFromJson(Reader& r, const json& j, Slots& out) {
  if (!j.is_object()) return r.fail("slots", "must be an object like {\"kv_groups\": 2}; got " + kindName(j));
  r.rejectUnknown(j, "slots.", {"kv_groups", "pre_mix", "post_mix", "gate", "differential", "latent", "tpa", "mta",
                               "collaborative", "pre_mixing", "post_mixing"});
  r.readInt(j, "kv_groups", "slots.kv_groups", out.kv_groups);
  r.readBool(j, "pre_mix", "slots.pre_mix", out.pre_mix);
  r.readBool(j, "post_mix", "slots.post_mix", out.post_mix);
  if (j.contains("pre_mixing")) mixingFromJson(r, j["pre_mixing"], "slots.pre_mixing", out.pre_mixing);
  if (j.contains("post_mixing")) mixingFromJson(r, j["post_mixing"], "slots.post_mixing", out.post_mixing);
  std::string gate = "none";
  if (r.readString(j, "gate", "slots.gate", gate) && !parseGate(gate, out.gate))
    r.fail("slots.gate", "unknown gate '" + gate + "'; one of none, headwise, elementwise");
  r.readBool(j, "differential", "slots.differential", out.differential);
  if (j.contains("latent")) {
    const json& l = j["latent"];
    if (!l.is_object())
      return r.fail("slots.latent", "must be an object like {\"kv_rank\": 32, \"rope_dim\": 8}; got " + kindName(l));
    r.rejectUnknown(l, "slots.latent.", {"kv_rank", "q_rank", "rope_dim", "order"});
    r.readInt(l, "kv_rank", "slots.latent.kv_rank", out.latent.kv_rank);
    r.readInt(l, "q_rank", "slots.latent.q_rank", out.latent.q_rank);
    r.readInt(l, "rope_dim", "slots.latent.rope_dim", out.latent.rope_dim);
    std::string order = "naive";
    if (r.readString(l, "order", "slots.latent.order", order) && !parseLatentOrder(order, out.latent.order))
      r.fail("slots.latent.order", "unknown order '" + order + "'; one of naive, absorbed");
  }
  if (j.contains("tpa")) {
    const json& t = j["tpa"];
    if (!t.is_object())
      return r.fail("slots.tpa", "must be an object like {\"q_rank\": 6, \"k_rank\": 2, \"v_rank\": 2}; got " + kindName(t));
    r.rejectUnknown(t, "slots.tpa.", {"q_rank", "k_rank", "v_rank", "contextual_a", "contextual_b", "rope", "rope_base",
                                         "group_norm"});
    if (!t.contains("k_rank") || !t.contains("v_rank"))
      r.fail("slots.tpa", "needs k_rank and v_rank (R_K, R_V from 1); q_rank 0 or absent gives queries as MHSA");
    r.readInt(t, "q_rank", "slots.tpa.q_rank", out.tpa.q_rank);
    r.readInt(t, "k_rank", "slots.tpa.k_rank", out.tpa.k_rank);
    r.readInt(t, "v_rank", "slots.tpa.v_rank", out.tpa.v_rank);
    r.readBool(t, "contextual_a", "slots.tpa.contextual_a", out.tpa.contextual_a);
    r.readBool(t, "contextual_b", "slots.tpa.contextual_b", out.tpa.contextual_b);
    r.readBool(t, "group_norm", "slots.tpa.group_norm", out.tpa.group_norm);
    r.readBool(t, "rope", "slots.tpa.rope", out.tpa.rope);
    r.readNumber(t, "rope_base", "slots.tpa.rope_base", out.tpa.rope_base);
  }
  if (j.contains("mta")) {
    const json& m = j["mta"];
    if (!m.is_object())
      return r.fail("slots.mta", "must be an object like {\"q_kernel\": 6, \"k_kernel\": 11}; got " + kindName(m));
    r.rejectUnknown(m, "slots.mta.", {"q_kernel", "k_kernel", "post_q_kernel", "post_k_kernel", "pad", "head_group",
                                      "group_norm", "norm_rescale", "out_gate", "kernel", "post_kernel"});
    if (m.contains("kernel")) kernelFromJson(r, m["kernel"], "slots.mta.kernel", out.mta.kernel_values);
    if (m.contains("post_kernel")) kernelFromJson(r, m["post_kernel"], "slots.mta.post_kernel", out.mta.post_kernel_values);
    r.readInt(m, "q_kernel", "slots.mta.q_kernel", out.mta.q_kernel);
    r.readInt(m, "k_kernel", "slots.mta.k_kernel", out.mta.k_kernel);
    r.readInt(m, "post_q_kernel", "slots.mta.post_q_kernel", out.mta.post_q_kernel);
    r.readInt(m, "post_k_kernel", "slots.mta.post_k_kernel", out.mta.post_k_kernel);
    std::string pad = "both";
    if (r.readString(m, "pad", "slots.mta.pad", pad) && !parseMtaPad(pad, out.mta.pad))
      r.fail("slots.mta.pad", "unknown pad '" + pad + "'; one of both, left, right");
    r.readInt(m, "head_group", "slots.mta.head_group", out.mta.head_group);
    r.readBool(m, "group_norm", "slots.mta.group_norm", out.mta.group_norm);
    r.readBool(m, "norm_rescale", "slots.mta.norm_rescale", out.mta.norm_rescale);
    std::string gate = "none";
    if (r.readString(m, "out_gate", "slots.mta.out_gate", gate) && !parseGate(gate, out.mta.out_gate))
      r.fail("slots.mta.out_gate", "unknown gate '" + gate + "'; one of none, headwise, elementwise");
  }
  if (j.contains("collaborative")) {
    const json& c = j["collaborative"];
    if (!c.is_object())
      return r.fail("slots.collaborative", "must be an object like {\"key_dim\": 32}; got " + kindName(c));
    r.rejectUnknown(c, "slots.collaborative.", {"key_dim", "content_bias", "mixing_init"});
    if (!c.contains("key_dim"))
      r.fail("slots.collaborative", "needs key_dim (the width of the shared query/key space, from 1)");
    r.readInt(c, "key_dim", "slots.collaborative.key_dim", out.collaborative.key_dim);
    r.readBool(c, "content_bias", "slots.collaborative.content_bias", out.collaborative.content_bias);
    std::string init = "normal";
    if (r.readString(c, "mixing_init", "slots.collaborative.mixing_init", init) &&
        !parseMixingInit(init, out.collaborative.init))
      r.fail("slots.collaborative.mixing_init", "unknown mixing_init '" + init + "'; one of normal, concatenate");
  }
}

}  // namespace

SpecError::SpecError(std::vector<Issue> issues)
    : std::runtime_error(formatIssues(issues)), issues_(std::move(issues)) {}

std::string toJson(const AttentionSpec& s, int indent) {
  json j;
  j["format"] = kSpecFormat;
  j["version"] = kSpecVersion;
  j["variant"] = std::string(toString(s.variant));
  j["sizes"] = {{"F", s.sizes.F}, {"H", s.sizes.H}, {"D", s.sizes.D}, {"R", s.sizes.R},
                {"P", s.sizes.P}, {"c", s.sizes.c}, {"seq_len", s.sizes.seq_len}};
  j["causal"] = s.causal;
  j["bias"] = s.bias;
  j["dropout"] = s.dropout;
  j["core_softmax"] = s.core_softmax;
  if (s.core) {
    const CoreSpec& c = *s.core;
    json cj;
    cj["preset"] = c.preset;
    cj["structure"] = std::string(toString(c.structure));
    if (c.structure == CoreStructure::LowRank) {
      cj["rank"] = c.rank;
      cj["U"] = matrix(c.u_values, s.sizes.R, c.rank);
      cj["V"] = matrix(c.v_values, s.sizes.R, c.rank);
      cj["trainable"] = c.factors_trainable;
    } else if (c.structure == CoreStructure::Kronecker) {
      cj["scale"] = c.scale;
      cj["A"] = factorToJson(c.a, s.sizes.H);
      cj["B"] = factorToJson(c.b, s.sizes.D);
    } else {
      cj["values"] = matrix(c.dense_values, s.sizes.R, s.sizes.R);
      cj["trainable"] = maskMatrix(c.trainable_mask, s.sizes.R, s.sizes.R);
    }
    j["core"] = std::move(cj);
  }
  if (!s.slots.isMhsa()) {  // written only when set: a plain layer's file is as before the slots
    const Slots& z = s.slots;
    j["slots"] = {{"kv_groups", z.kv_groups}, {"pre_mix", z.pre_mix}, {"post_mix", z.post_mix},
                  {"gate", std::string(toString(z.gate))}};
    if (z.differential) j["slots"]["differential"] = true;  // only when set: earlier files stay as they were
    if (z.latent.enabled())
      j["slots"]["latent"] = {{"kv_rank", z.latent.kv_rank}, {"q_rank", z.latent.q_rank},
                              {"rope_dim", z.latent.rope_dim}, {"order", std::string(toString(z.latent.order))}};
    if (z.tpa.enabled()) {
      json& t = j["slots"]["tpa"];
      t = {{"q_rank", z.tpa.q_rank}, {"k_rank", z.tpa.k_rank}, {"v_rank", z.tpa.v_rank},
           {"contextual_a", z.tpa.contextual_a}, {"rope", z.tpa.rope}, {"rope_base", z.tpa.rope_base}};
      // Only when set, so that the files of earlier versions keep their bytes.
      if (!z.tpa.contextual_b) t["contextual_b"] = false;
      if (z.tpa.group_norm) t["group_norm"] = true;
    }
    if (z.mta.enabled())
      j["slots"]["mta"] = {{"q_kernel", z.mta.q_kernel}, {"k_kernel", z.mta.k_kernel},
                           {"post_q_kernel", z.mta.post_q_kernel}, {"post_k_kernel", z.mta.post_k_kernel},
                           {"pad", std::string(toString(z.mta.pad))}, {"head_group", z.mta.head_group},
                           {"group_norm", z.mta.group_norm}, {"norm_rescale", z.mta.norm_rescale},
                           {"out_gate", std::string(toString(z.mta.out_gate))}};
    // Drawn kernels, only when drawn: [head][query offset][key offset].
    auto kernel = [&](const std::vector<double>& v, int cq, int ck, const char* key) {
      if (v.empty()) return;
      const int H = s.sizes.H;
      if (H < 1 || cq < 1 || ck < 1 || v.size() != static_cast<size_t>(H) * cq * ck) {
        // Invalid, written as held (see matrix()): one "head" of every value, which reads back as it is.
        j["slots"]["mta"][key] = json::array({json(v)});
        return;
      }
      json heads = json::array();
      const std::size_t per = static_cast<std::size_t>(cq) * ck;
      for (int h = 0; h < H; ++h)
        heads.push_back(matrix(std::vector<double>(v.begin() + h * per, v.begin() + (h + 1) * per), cq, ck));
      j["slots"]["mta"][key] = std::move(heads);
    };
    kernel(z.mta.kernel_values, z.mta.q_kernel, z.mta.k_kernel, "kernel");
    kernel(z.mta.post_kernel_values, z.mta.post_q_kernel, z.mta.post_k_kernel, "post_kernel");
    // Drawn mixings, only when drawn (an identity that all trains is written as nothing).
    auto mixing = [&](const HeadMixing& m, const char* key) {
      if (m.isDefault()) return;
      j["slots"][key] = {{"values", matrix(m.values, s.sizes.H, s.sizes.H)},
                         {"trainable", maskMatrix(m.trainable_mask, s.sizes.H, s.sizes.H)}};
    };
    mixing(z.pre_mixing, "pre_mixing");
    mixing(z.post_mixing, "post_mixing");
    if (z.collaborative.enabled())
      j["slots"]["collaborative"] = {{"key_dim", z.collaborative.key_dim},
                                     {"content_bias", z.collaborative.content_bias},
                                     {"mixing_init", std::string(toString(z.collaborative.init))}};
  }
  if (indent < 0) return j.dump();
  std::string out;
  detail::prettyPrint(j, indent, 0, out);
  return out;
}

AttentionSpec fromJson(const std::string& text) {
  std::vector<Issue> issues;
  Reader r(issues);
  json j;
  try {
    j = parseUntrustedJson(text);
  } catch (const JsonError& e) {
    throw SpecError(std::vector<Issue>{{"(document)", std::string("malformed JSON: ") + e.what()}});
  }
  if (!j.is_object()) throw SpecError(std::vector<Issue>{{"(document)", "a spec must be a JSON object; got " + kindName(j)}});

  std::string format;
  if (!r.readString(j, "format", "format", format))
    r.fail("format", std::string("missing; expected \"") + kSpecFormat + "\"");
  else if (format != kSpecFormat)
    r.fail("format", "is '" + format + "'; expected \"" + kSpecFormat + "\"");
  int version = -1;
  if (!j.contains("version")) r.fail("version", "missing; this Tensorscope reads version " + std::to_string(kSpecVersion));
  r.readInt(j, "version", "version", version);
  if (j.contains("version") && version != -1 && version != kSpecVersion)
    r.fail("version", "unsupported version " + std::to_string(version) + "; this Tensorscope reads version " +
                          std::to_string(kSpecVersion));
  if (!issues.empty()) throw SpecError(std::move(issues));

  r.rejectUnknown(j, "", {"format", "version", "variant", "sizes", "causal", "bias", "dropout", "core_softmax", "core",
                          "slots"});
  std::string vname;
  Variant v = Variant::Mhsa;
  std::string list;
  for (const auto& n : variantNames()) list += (list.empty() ? "" : ", ") + n;
  if (!r.readString(j, "variant", "variant", vname)) {
    // A wrong kind is said by the reader; "missing" as well would be two answers for one field.
    if (!j.contains("variant")) r.fail("variant", "missing; one of " + list);
  } else if (!parseVariant(vname, v)) {
    r.fail("variant", "unknown variant '" + vname + "'; one of " + list);
  }
  // Fields left out take the defaults of the variant's preset.
  AttentionSpec s = makeSpecPreset(toString(v));
  s.core.reset();
  if (j.contains("sizes")) {
    const json& z = j["sizes"];
    if (!z.is_object()) {
      r.fail("sizes", "must be an object; got " + kindName(z));
    } else {
      r.rejectUnknown(z, "sizes.", {"F", "H", "D", "R", "P", "c", "seq_len"});
      r.readInt(z, "F", "sizes.F", s.sizes.F);
      r.readInt(z, "H", "sizes.H", s.sizes.H);
      r.readInt(z, "D", "sizes.D", s.sizes.D);
      r.readInt(z, "R", "sizes.R", s.sizes.R);
      r.readInt(z, "P", "sizes.P", s.sizes.P);
      r.readInt(z, "c", "sizes.c", s.sizes.c);
      r.readInt(z, "seq_len", "sizes.seq_len", s.sizes.seq_len);
    }
  }
  r.readBool(j, "causal", "causal", s.causal);
  r.readBool(j, "bias", "bias", s.bias);
  r.readNumber(j, "dropout", "dropout", s.dropout);
  r.readBool(j, "core_softmax", "core_softmax", s.core_softmax);
  if (j.contains("core")) coreFromJson(r, j["core"], s.sizes, s.core);
  if (j.contains("slots")) slotsFromJson(r, j["slots"], s.slots);
  if (!issues.empty()) throw SpecError(std::move(issues));
  return s;
}

AttentionSpec readSpecFile(const std::string& path) {
  std::string text;
  try {
    text = files::readBoundedFile(path);
  } catch (const std::runtime_error& e) {
    throw SpecError(std::vector<Issue>{{"(file)", e.what()}});
  }
  return fromJson(text);
}

}  // namespace tensorscope::spec
