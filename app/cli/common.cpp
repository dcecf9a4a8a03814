// Helpers shared by the commands.
#include "capture/chrome_trace.h"
#include "cli/command.h"

#include <chrono>
#include <cstdlib>

#include "capture/gather.h"
#include "dist/launch.h"

namespace tv::cli {

void add_no_generated_kernels_flag(CLI::App& cmd, bool& off) {
  cmd.add_flag("--no-generated-kernels", off,
               "run every member of a fusion region on its own instead of by the region's plan (one generated "
               "kernel per run of pointwise ops; on CUDA, a linear and the add it feeds as one product), to tell "
               "the plan's numbers from the members'");
}

const CLI::Validator& file_name_check() {
  static const CLI::Validator check(
      [](const std::string& name) {
        return name.empty() ? std::string("the file name is empty (nothing would be written); give one, e.g. out.tvz.json")
                            : std::string();
      },
      "");
  return check;
}

void CaptureOutputs::add_to(CLI::App& cmd) {
  cmd.add_option("--chrome-trace", chrome_trace,
                 "also write the replay's per-bound-symbol times as a Chrome trace (FILE.json; open in ui.perfetto.dev)")
      ->check(file_name_check());
  cmd.add_option("--out", capture, "also save the capture (pipelines, stages, replay, comparisons) to FILE.tvz.json")
      ->check(file_name_check());
}

namespace {

// The path this process writes to, or "" when it writes nothing (see CaptureOutputs).
std::string path_for_rank(const std::string& path, const dist::Launch* launch) {
  if (path.empty() || !launch) return path;
  auto at = path.find("{rank}");
  if (at == std::string::npos) return launch->rank() == 0 ? path : std::string();
  return path.substr(0, at) + std::to_string(launch->rank()) + path.substr(at + 6);
}

}  // namespace

void CaptureOutputs::check(const dist::Launch* launch) const {
  for (const auto* path : {&capture, &chrome_trace})
    if (auto mine = path_for_rank(*path, launch); !mine.empty()) check_output_file(mine);
}

int CaptureOutputs::write(const Capture& c, const dist::Launch* launch, int exit_code) const {
  bool written = true;
  auto report_unwritten = [&](const std::string& what) {
    report_error(what + " (the results above are not saved there)", kBadInput);
    written = false;
  };
  if (auto path = path_for_rank(capture, launch); !path.empty()) {
    try {
      save_capture_checked(c, path);
    } catch (const BadInput& e) {
      report_unwritten(e.what());
    }
  }
  if (auto chrome = path_for_rank(chrome_trace, launch); !chrome.empty()) {
    try {
      save_chrome_trace(c, chrome);
    } catch (const CaptureError& e) {
      report_unwritten(unwritable(e));
    }
  }
  return written || exit_code != kOk ? exit_code : static_cast<int>(kBadInput);
}

}  // namespace tv::cli

namespace tv::cli {

void LaunchOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--launch", launch,
                 "env: this process is one rank of a launch of one rank per process (torchrun or SLURM: RANK, "
                 "WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, or SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID); "
                 "rank 0 gathers every rank's results and prints and writes them")
      ->check(CLI::IsMember({"env"}));
  cmd.add_option("--timeout", timeout_seconds,
                 "seconds a collective, the join of a launch or the gather of its results may take before the ranks "
                 "that did not come are reported")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
}

std::unique_ptr<dist::Launch> LaunchOptions::start() const {
  if (launch.empty()) return nullptr;
  // torchrun's agent already hosts the store on MASTER_PORT (static rendezvous): every rank is then
  // a client of it, under the restart's own prefix.
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  bool agent_store = agent && std::string(agent) == "True";
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  std::string prefix = std::string("thunder-viz/attempt_") + (attempt ? attempt : "0");
  try {
    return std::make_unique<dist::Launch>(dist::LaunchEnv::from_env(), std::chrono::seconds(timeout_seconds),
                                          !agent_store, prefix);
  } catch (const dist::DistError& e) {
    // Bad input: the environment, the port. A rank that is not there (rank 0's store unreachable,
    // a rank that never joined) is a failure of the run, named by rank.
    bool absent_rank = e.kind() == dist::DistError::Kind::timeout || !e.missing_ranks().empty();
    if (!absent_rank) throw BadInput(std::string("--launch env: ") + e.what());
    throw;
  }
}

void LaunchOptions::attach(RunRequest& request, dist::Launch& launch) {
  request.launch = &launch;
  request.gather_ranks = [&launch](Capture& c) { gather_ranks(c, launch); };
}

bool prints_report(const dist::Launch* launch) { return !launch || launch->rank() == 0; }

std::string reference_words(const RunRequest& request) {
  if (!request.replay) return "not replayed (traces only)";
  if (request.reference.compute) return "against the eager numbers stored with the capture";
  return "against LibTorch eager autograd";
}

}  // namespace tv::cli
