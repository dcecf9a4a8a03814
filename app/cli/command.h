// The batch-mode commands of thunder-viz.
// Contract: each command registers itself on the CLI11 app and runs with the exit-code rule of
// the whole tool: 0 success or equivalent, 1 a difference or failed check, 2 bad input. Errors go
// to stderr as "what, where, how to fix"; nothing already saved is touched.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeline/run.h"

namespace tv::cli {

enum ExitCode { kOk = 0, kDifference = 1, kBadInput = 2 };

// Bad input from the user (a file, a flag value, a model name): exit code 2.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Each command adds its subcommand and sets `run` to the code to execute when chosen.
using Runner = std::function<int()>;
void add_import_command(CLI::App& app, Runner& run);
void add_models_command(CLI::App& app, Runner& run);
void add_show_command(CLI::App& app, Runner& run);
void add_run_command(CLI::App& app, Runner& run);
void add_compare_command(CLI::App& app, Runner& run);
void add_rules_command(CLI::App& app, Runner& run);
void add_batch_command(CLI::App& app, Runner& run);
void add_report_command(CLI::App& app, Runner& run);

// "jit,ddp" -> {"jit", "ddp"}; throws BadInput on an empty name.
std::vector<std::string> split_order(const std::string& order);

// Reads a whole file; throws BadInput naming the path and the reason.
std::string read_text_file(const std::string& path);

// Writes a file atomically (the old one stays whole on failure); BadInput naming the path and the reason.
void write_output_file(const std::string& path, const std::string& contents);
// save_capture / load_capture with CaptureError turned into BadInput (its text: file, JSON path, what).
void save_capture_checked(const Capture& capture, const std::string& path);
Capture load_capture_checked(const std::string& path);
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

// run_pipelines with model errors (unknown model or parameter) turned into BadInput.
Capture run_pipelines_checked(const RunRequest& request, const ProgressFn& progress = {});

}  // namespace tv::cli
