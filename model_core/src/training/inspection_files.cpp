// What a run directory keeps of the trainer's inspections (model_core/inspection_files.h).
#include "model_core/inspection_files.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/run_files.h"
#include "model_core/safetensors.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {

namespace {
using json = nlohmann::json;
constexpr const char* kFormat = "tensorscope.inspection";
constexpr int kMaxLayers = 4096;
constexpr size_t kMaxCaptionBytes = 4096;  // a probe caption (typed text stays far below)

std::string layerName(const char* what, int layer) { return std::string(what) + "." + std::to_string(layer); }

json stringArray(const std::vector<std::string>& texts) {
  json a = json::array();
  for (const auto& t : texts) a.push_back(t);
  return a;
}

[[noreturn]] void fail(const std::string& source, const std::string& reason) {
  throw std::invalid_argument(source + ": " + reason);
}

std::vector<float> floatsOf(const TensorData& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.bytes.data(), out.size() * sizeof(float));  // little-endian, as the file
  return out;
}

std::vector<double> doublesOf(const TensorData& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.bytes.data(), out.size() * sizeof(double));
  return out;
}
}  // namespace

std::string inspectionRecord(const InspectionSnapshot& snap) {
  json ranks = json::array();
  for (double r : snap.stable_ranks) ranks.push_back(std::isfinite(r) ? json(r) : json(nullptr));
  return json{{"kind", "inspection"}, {"step", snap.step}, {"layers", snap.core_layers}, {"stable_ranks", ranks}}.dump();
}

InspectionHistory readInspectionHistory(const std::string& runDir) {
  InspectionHistory h;
  std::vector<std::vector<std::pair<int, double>>> rows;  // per kept step: (layer, stable rank)
  const auto damaged = [&](std::int64_t line, const std::string& reason) {
    if (h.damaged++ == 0) h.first_damage = "line " + std::to_string(line) + ": " + reason;
  };
  const std::string path = runDir + "/" + kInspectionLogName;
  if (!std::filesystem::exists(path)) return h;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  readMetricsLog(
      in,
      [&](std::int64_t line, const json& j) {
        const json* layers = j.contains("layers") ? &j["layers"] : nullptr;
        const json* ranks = j.contains("stable_ranks") ? &j["stable_ranks"] : nullptr;
        if (j.value("kind", std::string()) != "inspection" || !layers || !ranks || !layers->is_array() ||
            !ranks->is_array() || layers->size() != ranks->size())
          return damaged(line, "not an inspection record (kind, step, layers and stable_ranks of one length)");
        std::vector<std::pair<int, double>> row;
        for (size_t i = 0; i < layers->size(); ++i) {
          const json& l = (*layers)[i];
          const json& r = (*ranks)[i];
          if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() >= kMaxLayers ||
              !(r.is_number() || r.is_null()))
            return damaged(line, "a layer that is not an integer in [0, 4096) or a stable rank that is not a number");
          row.emplace_back(l.get<int>(), r.is_number() ? r.get<double>() : std::nan(""));
        }
        const std::int64_t step = j["step"].get<std::int64_t>();
        // A resumed run writes again from its checkpoint's step: what it overtook goes.
        while (!h.steps.empty() && h.steps.back() >= step) {
          h.steps.pop_back();
          rows.pop_back();
        }
        h.steps.push_back(step);
        rows.push_back(std::move(row));
      },
      damaged);
  if (!rows.empty())
    for (const auto& [layer, rank] : rows.back()) h.layers.push_back(layer);
  for (const auto& row : rows) {
    std::vector<double> ranks(h.layers.size(), std::nan(""));
    for (const auto& [layer, rank] : row) {
      const auto it = std::find(h.layers.begin(), h.layers.end(), layer);
      if (it != h.layers.end()) ranks[size_t(it - h.layers.begin())] = rank;
    }
    h.stable_ranks.push_back(std::move(ranks));
  }
  return h;
}

std::string serializeInspection(const InspectionSnapshot& snap) {
  SafetensorsFile f;
  for (size_t i = 0; i < snap.core_layers.size(); ++i) {
    const int layer = snap.core_layers[i];
    if (i < snap.cores.size()) f.tensors[layerName("core", layer)] = makeTensorData(snap.cores[i].values, snap.cores[i].shape);
    if (i < snap.spectra.size())
      f.tensors[layerName("spectrum", layer)] =
          makeTensorData(snap.spectra[i], {static_cast<int64_t>(snap.spectra[i].size())});
  }
  for (size_t l = 0; l < snap.maps.size(); ++l) {
    const auto& maps = snap.maps[l];
    if (maps.empty()) continue;
    std::vector<float> all;
    for (const auto& m : maps) all.insert(all.end(), m.values.begin(), m.values.end());
    f.tensors[layerName("maps", int(l))] =
        makeTensorData(all, {static_cast<int64_t>(maps.size()), maps[0].shape.at(0), maps[0].shape.at(1)});
  }
  // Role vectors: one [heads, rows, D] tensor per TP layer (heads in order, as inspect gives them).
  std::map<int, std::vector<const RoleVectors*>> roleLayers;
  for (const auto& r : snap.roles) roleLayers[r.layer].push_back(&r);
  for (const auto& [layer, heads] : roleLayers) {
    std::vector<float> all;
    for (const RoleVectors* h : heads) all.insert(all.end(), h->vectors.values.begin(), h->vectors.values.end());
    const auto& shape = heads.front()->vectors.shape;
    f.tensors[layerName("roles", layer)] = makeTensorData(all, {static_cast<int64_t>(heads.size()), shape.at(0), shape.at(1)});
  }
  json ranks = json::array();
  for (double r : snap.stable_ranks) ranks.push_back(std::isfinite(r) ? json(r) : json(nullptr));
  size_t layers = snap.maps.size();
  for (int l : snap.core_layers) layers = std::max(layers, size_t(l) + 1);
  for (const auto& r : snap.roles) layers = std::max(layers, size_t(r.layer) + 1);
  f.metadata = {{"format", kFormat},
                {"version", "2"},
                {"step", std::to_string(snap.step)},
                {"layers", std::to_string(layers)},
                {"core_layers", json(snap.core_layers).dump()},
                {"stable_ranks", ranks.dump()},
                {"probe_tokens", stringArray(snap.probe_tokens).dump()},
                {"probe", snap.probe},
                {"role_probe", snap.role_probe},
                {"role_tokens", stringArray(snap.role_tokens).dump()},
                {"role_labels", stringArray(snap.role_labels).dump()},
                {"role_contexts", stringArray(snap.role_contexts).dump()}};
  return serializeSafetensors(f);
}

void writeInspection(const std::string& runDir, const InspectionSnapshot& snap) {
  files::writeFileAtomically(runDir + "/" + kInspectionFileName, serializeInspection(snap));
}

InspectionSnapshot parseInspection(std::string_view bytes, const std::string& source) {
  SafetensorsFile f;
  try {
    f = parseSafetensors(bytes, source);
  } catch (const SafetensorsError& e) {
    throw std::invalid_argument(e.what());
  }
  const auto meta = [&](const char* key) -> const std::string& {
    const auto it = f.metadata.find(key);
    if (it == f.metadata.end()) fail(source, std::string("its metadata has no \"") + key + "\"");
    return it->second;
  };
  const auto metaJson = [&](const char* key) {
    try {
      return spec::parseUntrustedJson(meta(key));
    } catch (const spec::JsonError& e) {
      fail(source, std::string("metadata \"") + key + "\" is not JSON: " + e.what());
    }
  };
  const auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi) {
    const json j = metaJson(key);
    if (!j.is_number_integer() || j.get<std::int64_t>() < lo || j.get<std::int64_t>() > hi)
      fail(source, std::string("metadata \"") + key + "\" must be an integer in [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "]");
    return j.get<std::int64_t>();
  };
  const auto texts = [&](const char* key) {
    const json j = metaJson(key);
    std::vector<std::string> out;
    if (!j.is_array()) fail(source, std::string("metadata \"") + key + "\" must be an array of strings");
    for (const auto& t : j) {
      if (!t.is_string()) fail(source, std::string("metadata \"") + key + "\" must be an array of strings");
      out.push_back(t.get<std::string>());
    }
    return out;
  };
  // Version 1 (the first days of inspection files) kept head 0 of the last TP layer as "roles"
  // [rows, D] and no probe captions.
  const std::string& version = meta("version");
  if (meta("format") != kFormat || (version != "1" && version != "2"))
    fail(source, std::string("not a Tensorscope inspection (format \"") + kFormat + "\", version 1 or 2)");
  const bool v1 = version == "1";

  InspectionSnapshot s;
  s.step = integer("step", 0, kMaxRunStep);
  const auto layers = static_cast<int>(integer("layers", 0, kMaxLayers));
  const json coreLayers = metaJson("core_layers");
  const json ranks = metaJson("stable_ranks");
  if (!coreLayers.is_array() || !ranks.is_array() || coreLayers.size() != ranks.size())
    fail(source, "metadata \"core_layers\" and \"stable_ranks\" must be arrays of one length");
  std::map<std::string, const TensorData*> unused;
  for (const auto& [name, t] : f.tensors) unused[name] = &t;
  const auto take = [&](const std::string& name, DType dtype, size_t rank) -> const TensorData& {
    const auto it = unused.find(name);
    if (it == unused.end()) fail(source, "tensor \"" + name + "\" is missing");
    const TensorData& t = *it->second;
    unused.erase(it);
    if (t.dtype != dtype || t.shape.size() != rank)
      fail(source, "tensor \"" + name + "\" must be " + std::string(dtypeName(dtype)) + " of rank " + std::to_string(rank));
    for (auto d : t.shape)
      if (d < 1) fail(source, "tensor \"" + name + "\" has an empty dimension");
    return t;
  };
  for (size_t i = 0; i < coreLayers.size(); ++i) {
    const json& l = coreLayers[i];
    if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() >= layers ||
        (i > 0 && l.get<std::int64_t>() <= coreLayers[i - 1].get<std::int64_t>()))
      fail(source, "metadata \"core_layers\" must list layers in [0, layers) in ascending order");
    if (!(ranks[i].is_number() || ranks[i].is_null())) fail(source, "metadata \"stable_ranks\" must hold numbers");
    const int layer = l.get<int>();
    const TensorData& core = take(layerName("core", layer), DType::F32, 2);
    if (core.shape[0] != core.shape[1]) fail(source, "tensor \"" + layerName("core", layer) + "\" must be square");
    s.core_layers.push_back(layer);
    s.cores.push_back({core.shape, floatsOf(core)});
    s.spectra.push_back(doublesOf(take(layerName("spectrum", layer), DType::F64, 1)));
    s.stable_ranks.push_back(ranks[i].is_number() ? ranks[i].get<double>() : std::nan(""));
  }
  s.probe_tokens = texts("probe_tokens");
  for (int l = 0; l < layers; ++l) {
    std::vector<HostTensor> layerMaps;
    if (unused.count(layerName("maps", l))) {
      const TensorData& m = take(layerName("maps", l), DType::F32, 3);
      const auto all = floatsOf(m);
      const auto per = static_cast<size_t>(m.shape[1] * m.shape[2]);
      for (int64_t h = 0; h < m.shape[0]; ++h)
        layerMaps.push_back({{m.shape[1], m.shape[2]}, std::vector<float>(all.begin() + h * per, all.begin() + (h + 1) * per)});
    }
    s.maps.push_back(std::move(layerMaps));
  }
  s.role_tokens = texts("role_tokens");
  s.role_labels = texts("role_labels");
  s.role_contexts = texts("role_contexts");
  if (!v1) {
    const auto text = [&](const char* key) {
      const std::string& t = meta(key);
      if (t.size() > kMaxCaptionBytes) fail(source, std::string("metadata \"") + key + "\" is too long");
      return t;
    };
    s.probe = text("probe");
    s.role_probe = text("role_probe");
  }
  int64_t rows = -1, width = -1;
  const auto addRoles = [&](int layer, const TensorData& r, int64_t heads, int64_t n, int64_t d) {
    if ((rows >= 0 && n != rows) || (width >= 0 && d != width))
      fail(source, "the role tensors must all have the same rows and width");
    rows = n, width = d;
    const auto all = floatsOf(r);
    const auto per = static_cast<size_t>(n * d);
    for (int64_t h = 0; h < heads; ++h)
      s.roles.push_back({layer, static_cast<int>(h),
                         {{n, d}, std::vector<float>(all.begin() + h * per, all.begin() + (h + 1) * per)}});
  };
  if (v1 && unused.count("roles")) {
    const TensorData& r = take("roles", DType::F32, 2);
    addRoles(std::max(0, layers - 1), r, 1, r.shape[0], r.shape[1]);
  }
  for (int l = 0; l < layers && !v1; ++l)
    if (unused.count(layerName("roles", l))) {
      const TensorData& r = take(layerName("roles", l), DType::F32, 3);
      addRoles(l, r, r.shape[0], r.shape[1], r.shape[2]);
    }
  const auto roleRows = static_cast<size_t>(std::max<int64_t>(0, rows));
  if (s.role_tokens.size() != roleRows || s.role_labels.size() != roleRows || s.role_contexts.size() != roleRows)
    fail(source, "the role texts must have one entry per row of the role vectors (" + std::to_string(roleRows) + ")");
  if (!unused.empty()) fail(source, "unknown tensor \"" + unused.begin()->first + "\"");
  return s;
}

std::optional<InspectionSnapshot> readInspection(const std::string& runDir) {
  const std::string path = runDir + "/" + kInspectionFileName;
  if (!std::filesystem::exists(path)) return std::nullopt;
  return parseInspection(files::readBoundedFile(path, kMaxInspectionFileBytes), path);
}

}  // namespace tensorscope::model_core
