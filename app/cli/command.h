// The batch-mode commands of thunder-viz.
// Contract: each command registers itself on the CLI11 app and runs with the exit-code rule of
// the whole tool (common/errors.h): 0 success or equivalent, 1 a difference or failed check, 2 bad
// input. Errors go to stderr as "what, where, how to fix"; nothing already saved is touched.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/checked.h"
#include "common/errors.h"
#include "session/run.h"

namespace tv::dist {
class Launch;
}

namespace tv::cli {

using namespace tv::app;

// Each command adds its subcommand and sets `run` to the code to execute when chosen.
void add_import_command(CLI::App& app, Runner& run);
void add_models_command(CLI::App& app, Runner& run);
void add_show_command(CLI::App& app, Runner& run);
void add_run_command(CLI::App& app, Runner& run);
void add_compare_command(CLI::App& app, Runner& run);
void add_rules_command(CLI::App& app, Runner& run);
void add_batch_command(CLI::App& app, Runner& run);
void add_report_command(CLI::App& app, Runner& run);

// An output file option's check: an empty name would silently write nothing, so it is a parse error
// (exit 2) instead.
const CLI::Validator& file_name_check();
// The outputs of the commands that run pipelines (run, compare): --out FILE.tvz.json (the capture)
// and --chrome-trace FILE.json (its replay timings, capture/chrome_trace.h).
// check() refuses, before the run, a file that cannot be written (BadInput naming it), so that no
// work is lost to it. write() comes after the results are printed: it saves what was asked for,
// atomically, and a file that still cannot be written is an error on stderr naming it; it returns
// the exit code, `exit_code` or 2 (bad input) where that was 0: a difference (1) stays 1.
// Under a one-rank-per-process launch only rank 0 writes (the merged capture), unless a path holds
// "{rank}": then every rank writes its own file there (rank 0's is still the merged one).
struct CaptureOutputs {
  std::string capture;
  std::string chrome_trace;

  void add_to(CLI::App& cmd);
  void check(const dist::Launch* launch) const;
  int write(const Capture& c, const dist::Launch* launch, int exit_code) const;
};

// --launch env and --timeout of the commands that run pipelines (run, compare, rules): one rank per
// process under a torchrun- or SLURM-style environment (dist/launch.h), gloo on cpu and NCCL on
// cuda, every rank's results gathered into rank 0's capture. start() joins the launch (nullptr
// without --launch): a missing or bad variable, a port in use or a world size that differs between
// processes is BadInput naming it; a rank that never joins (rank 0 too) is an error naming it (exit 1).
// attach() points a request at the launch and gathers its results into rank 0's capture.
struct LaunchOptions {
  std::string launch;  // "" (ranks as threads of this process) or "env"
  int timeout_seconds = 60;

  void add_to(CLI::App& cmd);
  std::unique_ptr<dist::Launch> start() const;
  static void attach(RunRequest& request, dist::Launch& launch);
};
// Whether this process prints the report: no launch, or rank 0 of it.
bool prints_report(const dist::Launch* launch);
// What a request's numbers are checked against: "against LibTorch eager autograd", "against the eager
// numbers stored with the capture" (--from), or "not replayed (traces only)".
std::string reference_words(const RunRequest& request);

// --no-generated-kernels of the commands that replay (run, compare): RunRequest::generated_kernels off.
void add_no_generated_kernels_flag(CLI::App& cmd, bool& off);

}  // namespace tv::cli
