#include "sweeps/slurm_client.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "sweeps/process_pool.h"

namespace tensorscope::sweeps {

std::map<std::int64_t, std::string> slurmStates(const std::vector<model_core::SlurmJob>& jobs, std::string& note) {
  std::map<std::int64_t, std::string> states;
  if (jobs.empty()) return states;
  std::string ids;
  for (const auto& j : jobs) ids += (ids.empty() ? "" : ",") + j.id;
  std::string text;
  int rc = 127;
  try {
    rc = runAndCapture({"squeue", "--noheader", "--array", "--jobs=" + ids, "--format=%i|%T"}, text);
  } catch (const std::exception& e) {
    text = e.what();
  }
  if (rc != 0) {
    // squeue refuses ids it no longer knows (all ended and forgotten): that is not an error.
    if (text.find("Invalid job id") == std::string::npos)
      note = rc == 127 ? "squeue is not available here" : "squeue failed: " + text.substr(0, 200);
    return states;
  }
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto bar = line.find('|'), under = line.find('_');
    if (bar == std::string::npos || under == std::string::npos || under > bar) continue;
    try {
      states[std::stoll(line.substr(under + 1, bar - under - 1))] = line.substr(bar + 1) + " (job " + line.substr(0, bar) + ")";
    } catch (const std::exception&) {
    }
  }
  return states;
}

std::map<std::int64_t, std::string> slurmQueue(const std::string& sweepDir, std::string& note) {
  return slurmStates(model_core::readSlurmJobs(sweepDir), note);
}

std::string whereTrained() {
  const char* job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (job && task) return std::string("slurm job ") + job + "_" + task;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string("local (") + host + ")";
}

std::string arraySpec(const std::vector<std::int64_t>& indices) {
  std::string spec;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    spec += (spec.empty() ? "" : ",") + std::to_string(indices[i]) + (j > i ? "-" + std::to_string(indices[j]) : "");
    i = j + 1;
  }
  return spec;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string batchArray(const BatchRequest& request) {
  std::string array = arraySpec(request.indices);
  if (request.arrayLimit) array += "%" + std::to_string(*request.arrayLimit);
  return array;
}

std::string batchScript(const BatchRequest& request) {
  std::string name = "tensorscope-";
  for (unsigned char c : request.sweepName) name += std::isalnum(c) ? char(c) : '_';
  std::ostringstream sb;
  sb << "#!/bin/bash\n"
     << "# Written by tensorscope sweep submit: one trial of " << request.sweepDir << " per array index.\n"
     << "#SBATCH --job-name=" << name.substr(0, 64) << "\n"
     << "#SBATCH --array=" << batchArray(request) << "\n"
     << "#SBATCH --cpus-per-task=" << request.cpusPerTask << "\n"
     << "#SBATCH --output=" << request.sweepDir << "/slurm/%A_%a.out\n";
  if (request.partition) sb << "#SBATCH --partition=" << *request.partition << "\n";
  if (request.time) sb << "#SBATCH --time=" << *request.time << "\n";
  if (request.gpus > 0) sb << "#SBATCH --gres=gpu:" << request.gpus << "\n";
  sb << "# Slurm sends SIGTERM before a time limit or preemption: the trial checkpoints and a later\n"
     << "# 'tensorscope sweep submit' resubmits it from there.\n"
     << "exec " << shellQuote(request.executable) << " --threads \"${SLURM_CPUS_PER_TASK:-1}\" sweep run-trial "
     << shellQuote(request.sweepDir) << " \"$SLURM_ARRAY_TASK_ID\"" << (request.gpus > 0 ? " --device cuda" : "") << "\n";
  return sb.str();
}

std::string submitBatch(const std::string& scriptPath) {
  std::string reply;
  int rc = 127;
  try {
    rc = runAndCapture({"sbatch", "--parsable", scriptPath}, reply);
  } catch (const std::exception& e) {
    reply = e.what();
  }
  if (rc != 0)
    throw std::runtime_error(rc == 127 ? "sbatch is not available on this machine: submit from a Slurm login node"
                                       : "sbatch refused the job array (" + scriptPath + "): " + reply);
  std::string id = reply.substr(0, reply.find_first_of(";\n"));
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw std::runtime_error("sbatch answered '" + reply + "', not a job id");
  return id;
}

}  // namespace tensorscope::sweeps
