// The batch-mode commands of thunder-viz.
// Contract: each command registers itself on the CLI11 app and runs with the exit-code rule of
// the whole tool (common/errors.h): 0 success or equivalent, 1 a difference or failed check, 2 bad
// input. Errors go to stderr as "what, where, how to fix"; nothing already saved is touched.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "common/checked.h"
#include "common/errors.h"
#include "session/run.h"

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

// Reads a whole file; throws BadInput naming the path and the reason.
std::string read_text_file(const std::string& path);
// The outputs of the commands that run pipelines (run, compare): --out FILE.tvz.json (the capture)
// and --chrome-trace FILE.json (its replay timings, capture/chrome_trace.h). write() saves what was
// asked for, atomically; a file that cannot be written is BadInput naming it.
struct CaptureOutputs {
  std::string capture;
  std::string chrome_trace;

  void add_to(CLI::App& cmd);
  void write(const Capture& c) const;
};

// --no-generated-kernels of the commands that replay (run, compare): RunRequest::generated_kernels off.
void add_no_generated_kernels_flag(CLI::App& cmd, bool& off);

}  // namespace tv::cli
