// TaskConfig validation, JSON form, and makeTask.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "model_core/tasks.h"
#include "spec/json_reader.h"
#include "tasks/task_factory.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int kMaxSeqLen = 65536;
constexpr int kMinArithmeticSeqLen = 16;
constexpr int kMaxAlgorithmicLength = 1024;

bool isAlgorithmic(const std::string& name) { return name == "copy" || name == "reverse" || name == "sort"; }

std::string joinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string problemList(const std::vector<std::string>& problems) {
  std::string s = "invalid task config (" + std::to_string(problems.size()) +
                  (problems.size() == 1 ? " problem):" : " problems):");
  for (const auto& p : problems) s += "\n  " + p;
  return s;
}

const std::vector<std::string>& knownKeys() {
  static const std::vector<std::string> keys = {"name",   "seed",      "seq_len",
                                                "arithmetic_module", "corpus", "data_dir",
                                                "patch",  "algorithmic_length", "algorithmic_alphabet"};
  return keys;
}

}  // namespace

std::vector<std::string> taskNames() { return {"arithmetic", "char_lm", "fashion_mnist", "copy", "reverse", "sort"}; }

std::vector<std::string> arithmeticModules() { return {"add_or_sub", "mul_div", "mixed"}; }

std::vector<std::string> validateTaskConfig(const TaskConfig& c) {
  std::vector<std::string> problems;
  const auto names = taskNames();
  if (std::find(names.begin(), names.end(), c.name) == names.end())
    problems.push_back("name: unknown task '" + c.name + "' (known: " + joinNames(names) + ")");
  if (c.seq_len < 1 || c.seq_len > kMaxSeqLen)
    problems.push_back("seq_len: must be in [1, " + std::to_string(kMaxSeqLen) + "]; got " + std::to_string(c.seq_len));
  else if (c.name == "arithmetic" && c.seq_len < kMinArithmeticSeqLen)
    problems.push_back("seq_len: arithmetic needs seq_len >= " + std::to_string(kMinArithmeticSeqLen) +
                       " ([BOS] question [SEP] answer [EOS] never fits in fewer tokens); got " + std::to_string(c.seq_len));
  const auto modules = arithmeticModules();
  if (std::find(modules.begin(), modules.end(), c.arithmetic_module) == modules.end())
    problems.push_back("arithmetic_module: unknown module '" + c.arithmetic_module + "' (known: " + joinNames(modules) + ")");
  if (c.data_dir.empty()) problems.push_back("data_dir: must not be empty");
  if (c.patch < 1 || c.patch > 28 || 28 % c.patch != 0)
    problems.push_back("patch: must divide the 28-pixel image side (1, 2, 4, 7, 14 or 28); got " + std::to_string(c.patch));
  const bool length_ok = c.algorithmic_length >= 1 && c.algorithmic_length <= kMaxAlgorithmicLength;
  if (!length_ok)
    problems.push_back("algorithmic_length: must be in [1, " + std::to_string(kMaxAlgorithmicLength) + "]; got " +
                       std::to_string(c.algorithmic_length));
  if (c.algorithmic_alphabet < 2 || c.algorithmic_alphabet > static_cast<int>(tasks::kAlgorithmicSymbols.size()))
    problems.push_back("algorithmic_alphabet: must be in [2, " + std::to_string(tasks::kAlgorithmicSymbols.size()) +
                       "] (symbols 0-9, a-z, A-Z); got " + std::to_string(c.algorithmic_alphabet));
  if (isAlgorithmic(c.name) && length_ok && c.seq_len >= 1 && c.seq_len <= kMaxSeqLen) {  // seq_len + 1 cannot overflow
    const int train = 2 * c.algorithmic_length + 3;
    const int extrapolation = 2 * tasks::algorithmicExtrapolationLength(c.algorithmic_length) + 3;
    if (extrapolation > c.seq_len + 1)
      problems.push_back("seq_len: " + std::to_string(c.seq_len) + " is too small for " + c.name +
                         " with algorithmic_length " + std::to_string(c.algorithmic_length) +
                         ": examples need 2*length+3 = " + std::to_string(train) + " tokens, extrapolation examples (length " +
                         std::to_string(tasks::algorithmicExtrapolationLength(c.algorithmic_length)) + ") " +
                         std::to_string(extrapolation) + " tokens <= seq_len+1; use seq_len >= " +
                         std::to_string(extrapolation - 1));
  }
  return problems;
}

void tasks::requireValidTaskConfig(const TaskConfig& config) {
  const auto problems = validateTaskConfig(config);
  if (!problems.empty()) throw std::invalid_argument(problemList(problems));
}

std::string taskConfigToJson(const TaskConfig& c, int indent) {
  ordered_json j;
  j["name"] = c.name;
  j["seed"] = c.seed;
  j["seq_len"] = c.seq_len;
  j["arithmetic_module"] = c.arithmetic_module;
  j["corpus"] = c.corpus;
  j["data_dir"] = c.data_dir;
  j["patch"] = c.patch;
  j["algorithmic_length"] = c.algorithmic_length;
  j["algorithmic_alphabet"] = c.algorithmic_alphabet;
  return j.dump(indent);
}

TaskConfig taskConfigFromJson(const std::string& text) {
  json j;
  try {
    j = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(problemList({std::string("malformed JSON: ") + e.what()}));
  }
  if (!j.is_object()) throw std::invalid_argument(problemList({"a task config must be a JSON object; got " + spec::kindName(j)}));
  spec::FieldReader r;  // the shared field reader: one wording for every reader
  r.rejectUnknown(j, "", knownKeys());
  TaskConfig c;
  r.read(j, "name", "", c.name);
  r.read(j, "seed", "", c.seed);
  r.read(j, "seq_len", "", c.seq_len);
  r.read(j, "arithmetic_module", "", c.arithmetic_module);
  r.read(j, "corpus", "", c.corpus);
  r.read(j, "data_dir", "", c.data_dir);
  r.read(j, "patch", "", c.patch);
  r.read(j, "algorithmic_length", "", c.algorithmic_length);
  r.read(j, "algorithmic_alphabet", "", c.algorithmic_alphabet);
  std::vector<std::string> problems = r.lines();
  for (auto& p : validateTaskConfig(c)) problems.push_back(std::move(p));
  if (!problems.empty()) throw std::invalid_argument(problemList(problems));
  return c;
}

}  // namespace tensorscope::model_core
