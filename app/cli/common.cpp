// Helpers shared by the commands.
#include "capture/chrome_trace.h"
#include "cli/command.h"

namespace tv::cli {

void add_no_generated_kernels_flag(CLI::App& cmd, bool& off) {
  cmd.add_flag("--no-generated-kernels", off,
               "run every member of a fusion region on its own on CUDA instead of one generated kernel per run of "
               "pointwise ops (to tell a kernel's numbers from the members')");
}

namespace {

// An empty file name would silently write nothing: a parse error (exit 2) instead.
const CLI::Validator kFileName(
    [](const std::string& name) {
      return name.empty() ? std::string("the file name is empty; give a file such as run.tvz.json") : std::string();
    },
    "");

}  // namespace

void CaptureOutputs::add_to(CLI::App& cmd) {
  cmd.add_option("--chrome-trace", chrome_trace,
                 "also write the replay's per-bound-symbol times as a Chrome trace (FILE.json; open in ui.perfetto.dev)")
      ->check(kFileName);
  cmd.add_option("--out", capture, "also save the capture (pipelines, stages, replay, comparisons) to FILE.tvz.json")
      ->check(kFileName);
}

void CaptureOutputs::write(const Capture& c) const {
  if (!capture.empty()) save_capture_checked(c, capture);
  if (chrome_trace.empty()) return;
  try {
    save_chrome_trace(c, chrome_trace);
  } catch (const CaptureError& e) {
    throw BadInput(std::string("cannot write ") + e.what());
  }
}

}  // namespace tv::cli
