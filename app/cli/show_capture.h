// `thunder-viz show FILE`: the traces of a capture, stage by stage. Shared by the two executables:
// the front door runs it without LibTorch (reader/main.cpp), the engine with --memory and --model
// besides (show_command.cpp).
// Contract: reads only the capture; prints the stage list and the final trace of each kind, or the
// stage asked for; a stored trace is parsed when printed (a damaged one throws its CaptureError).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "capture/capture.h"
#include "format/printer.h"

namespace tv::cli {

struct ShowCaptureOptions {
  std::string file;
  std::string trace = "all";
  std::string pipeline;  // empty: every pipeline
  std::string stage;     // index or pass name; empty: the list of stages and the final trace
  int depth = PrintOptions::kAllLevels;
  bool check = false;    // parse every stored trace before printing anything
  // Set (by the engine's --memory): printed for each pipeline instead of its stages.
  std::function<void(const PipelineRecord&)> instead_of_stages;
};

// The FILE argument and the options above (not `instead_of_stages`) on a `show` subcommand.
void add_show_capture_options(CLI::App& show, ShowCaptureOptions& options);
// Prints the capture; throws BadInput (exit 2) for a --pipeline or --stage it does not hold.
int show_capture(const ShowCaptureOptions& options);
// Whether `trace` (the --trace value) selects traces of that kind.
bool shows_kind(const std::string& trace, TraceKind kind);

}  // namespace tv::cli
