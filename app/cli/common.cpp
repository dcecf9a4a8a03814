// Helpers shared by the commands.
#include "capture/atomic_file.h"
#include "capture/chrome_trace.h"
#include "cli/command.h"
#include "pipeline/pipeline.h"

namespace tv::cli {

std::vector<std::string> split_order(const std::string& order) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= order.size()) {
    auto end = order.find(',', start);
    if (end == std::string::npos) end = order.size();
    auto name = order.substr(start, end - start);
    if (name.empty()) throw BadInput("--order '" + order + "': empty transform name; write e.g. --order jit,ddp");
    out.push_back(name);
    start = end + 1;
  }
  try {
    validate_order(out);  // unknown names and illegal orders are bad input, refused before any run
  } catch (const std::invalid_argument& e) {
    throw BadInput("--order " + order + ": " + e.what());
  }
  return out;
}

void write_output_file(const std::string& path, const std::string& contents) {
  try {
    capture_detail::write_file_atomically(path, contents);
  } catch (const CaptureError& e) {
    throw BadInput(std::string("cannot write ") + e.what());
  }
}

void save_capture_checked(const Capture& capture, const std::string& path) {
  try {
    save_capture(capture, path);
  } catch (const CaptureError& e) {
    throw BadInput(std::string("cannot write ") + e.what());
  }
}

void add_no_generated_kernels_flag(CLI::App& cmd, bool& off) {
  cmd.add_flag("--no-generated-kernels", off,
               "run every member of a fusion region on its own on CUDA instead of one generated kernel per run of "
               "pointwise ops (to tell a kernel's numbers from the members')");
}

void CaptureOutputs::add_to(CLI::App& cmd) {
  cmd.add_option("--chrome-trace", chrome_trace,
                 "also write the replay's per-bound-symbol times as a Chrome trace (FILE.json; open in ui.perfetto.dev)");
  cmd.add_option("--out", capture, "also save the capture (pipelines, stages, replay, comparisons) to FILE.tvz.json");
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

Capture load_capture_checked(const std::string& path) {
  try {
    return load_capture(path);
  } catch (const CaptureError& e) {
    throw BadInput(e.what());
  }
}

Capture run_pipelines_checked(const RunRequest& request, const ProgressFn& progress) {
  try {
    return run_pipelines(request, progress);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
}

}  // namespace tv::cli
