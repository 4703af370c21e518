#pragma once
// The trainer's metrics logs (private to model_core's trainer). Torch-free.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "files/atomic_file.h"
#include "model_core/run_files.h"

namespace tensorscope::model_core {

/// metrics.jsonl and metrics.csv: append-only logs, written a record at a time and fsynced before
/// every checkpoint commits, whose manifest records both lengths. A resume cuts them back to those
/// lengths (the steps after the checkpoint run again and write their records again), so a record
/// of a step at or before the checkpoint is never lost and the two files always agree.
class MetricsLog {
  using int64_t = std::int64_t;
 public:
  explicit MetricsLog(std::string dir) : dir_(std::move(dir)) {}
  ~MetricsLog() {
    for (int fd : {jsonl_, csv_})
      if (fd >= 0) ::close(fd);
  }

  /// A new run: both logs empty (the CSV with its header).
  void start() {
    files::writeFileAtomically(path(kJsonl), "");
    files::writeFileAtomically(path(kCsv), kCsvHeader);
    open();
  }
  /// A resumed run: the logs as they were when `counters` were taken. Returns notes for the user.
  std::vector<std::string> resume(const std::map<std::string, int64_t>& counters, int64_t step) {
    std::vector<std::string> notes;
    const bool measured = counters.count(kJsonl) && counters.count(kCsv);
    if (measured) {
      for (const char* name : {kJsonl, kCsv}) {
        const int64_t want = counters.at(name);
        std::error_code ec;
        const auto have = std::filesystem::exists(path(name)) ? int64_t(std::filesystem::file_size(path(name), ec)) : int64_t(-1);
        if (have < want) {
          notes.push_back(path(name) + " is shorter than at its checkpoint (" + std::to_string(std::max<int64_t>(have, 0)) +
                          " of " + std::to_string(want) + " bytes): it was changed outside Tensorscope; rebuilt from what is left");
          rebuildFromJsonl(step, notes);
          open();
          return notes;
        }
        files::fileOperation("truncate");
        if (::truncate(path(name).c_str(), want) != 0)
          throw std::runtime_error("cannot cut " + path(name) + " back to its checkpoint: " + std::strerror(errno));
      }
    } else {
      rebuildFromJsonl(step, notes);  // a run written before the logs were append-only
    }
    open();
    return notes;
  }
  void add(const MetricsRecord& typed) {
    const nlohmann::json record = metricsRecordToJson(typed);
    auto num = [&](const char* k) { return record.contains(k) ? record[k].dump() : std::string(); };
    const std::string csv = record.value("kind", std::string()) + "," + num("step") + "," +
                            record.value("split", std::string()) + "," + num("loss") + "," + num("lr") + "," +
                            num("grad_norm") + "," + num("tokens_per_second") + "," + num("accuracy") + "," +
                            num("exact_match") + "\n";
    append(jsonl_, kJsonl, record.dump() + "\n");
    append(csv_, kCsv, csv);
  }
  /// The losses of the train records up to `step`, in log order (damaged lines skipped): what the
  /// divergence guard saw before the checkpoint a resume continues.
  std::vector<double> trainLosses(int64_t step) const {
    std::vector<double> out;
    forEachRecord([&](const MetricsRecord& r) {
      if (r.kind == MetricsRecord::Kind::Train && r.step <= step)
        if (const auto loss = r.finite("loss")) out.push_back(*loss);
    });
    return out;
  }
  /// The wall-clock seconds the run had trained when it reached `step` (its newest train record up
  /// to there; 0 without one): where a resumed run's clock goes on.
  double elapsedAt(int64_t step) const {
    double out = 0;
    forEachRecord([&](const MetricsRecord& r) {
      if (r.kind == MetricsRecord::Kind::Train && r.step <= step)
        if (const auto s = r.finite("elapsed_seconds")) out = std::max(out, *s);
    });
    return out;
  }
  /// fsyncs both logs and returns their lengths (the checkpoint's counters).
  std::map<std::string, int64_t> sync() const {
    std::map<std::string, int64_t> out;
    for (const auto& [fd, name] : {std::pair{jsonl_, kJsonl}, std::pair{csv_, kCsv}}) {
      files::fileOperation("fsync");
      if (::fsync(fd) != 0) throw std::runtime_error("cannot flush " + path(name) + ": " + std::strerror(errno));
      const off_t end = ::lseek(fd, 0, SEEK_END);
      if (end < 0) throw std::runtime_error("cannot measure " + path(name) + ": " + std::strerror(errno));
      out[name] = int64_t(end);
    }
    return out;
  }

 private:
  static constexpr const char* kJsonl = kMetricsLogName;
  static constexpr const char* kCsv = "metrics.csv";
  static constexpr const char* kCsvHeader = "kind,step,split,loss,lr,grad_norm,tokens_per_second,accuracy,exact_match\n";

  std::string path(const char* name) const { return dir_ + "/" + name; }
  /// Every readable record of metrics.jsonl, in log order (a damaged line: rebuildFromJsonl reports those).
  void forEachRecord(const std::function<void(const MetricsRecord&)>& f) const {
    readMetrics(dir_, [&](int64_t, const MetricsRecord& r) { f(r); }, [](int64_t, const std::string&) {});
  }
  void open() {
    jsonl_ = ::open(path(kJsonl).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    csv_ = ::open(path(kCsv).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (jsonl_ < 0 || csv_ < 0) throw std::runtime_error("cannot open the metrics logs in " + dir_ + ": " + std::strerror(errno));
  }
  void append(int fd, const char* name, const std::string& text) const {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      files::fileOperation("write");
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error("cannot append to " + path(name) + ": " + std::strerror(errno));
      p += n;
      left -= size_t(n);
    }
  }
  /// Keeps the parseable records up to `step` (a damaged line is skipped with a note) and
  /// rewrites both logs from them.
  void rebuildFromJsonl(int64_t step, std::vector<std::string>& notes) {
    int64_t skipped = 0;
    std::vector<MetricsRecord> kept;
    readMetrics(
        dir_,
        [&](int64_t, const MetricsRecord& r) {
          if (r.step <= step) kept.push_back(r);
        },
        [&](int64_t lineNo, const std::string& reason) {
          if (++skipped == 1)
            notes.push_back(path(kJsonl) + " line " + std::to_string(lineNo) + " is damaged (" + reason + "); skipped");
        });
    if (skipped > 1) notes.push_back(std::to_string(skipped) + " damaged lines of " + path(kJsonl) + " skipped in all");
    files::writeFileAtomically(path(kJsonl), "");
    files::writeFileAtomically(path(kCsv), kCsvHeader);
    open();
    for (const auto& j : kept) add(j);
    for (int fd : {jsonl_, csv_}) ::close(fd);
    jsonl_ = csv_ = -1;
  }

  std::string dir_;
  int jsonl_ = -1, csv_ = -1;
};

}  // namespace tensorscope::model_core
