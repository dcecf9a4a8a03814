// The engine's entry points as the CLI and the GUI call them: the user's mistakes (an illegal
// order, an unknown model, a capture that does not load, a file that cannot be written) come out
// as BadInput naming the file or flag.
#pragma once
#include <string>
#include <vector>

#include "capture/capture.h"
#include "common/errors.h"
#include "session/run.h"

namespace tv::app {

// "jit, ddp" -> {"jit", "ddp"}; BadInput on an empty list or a name that is no transform. The
// order may still break a composition rule (the GUI shows such an order refused).
std::vector<std::string> split_order(const std::string& order);
// split_order, then validated (transforms/order.h): BadInput on an illegal order too, with the
// rule and the fix.
std::vector<std::string> parse_order(const std::string& order);

// Reads a whole file (up to the capture size limit); BadInput naming the path and the reason.
std::string read_text_file(const std::string& path);
// Writes a file atomically (the old one stays whole on failure); BadInput naming the path and the reason.
void write_output_file(const std::string& path, const std::string& contents);
// The checks write_output_file makes before writing (its folder exists and is writable, an existing
// file is a regular one the user may replace), as the same BadInput: called before long work, so
// that an output that cannot be written is refused before the work and not after it.
void check_output_file(const std::string& path);
// A write's CaptureError as the text of its BadInput: "cannot write FILE: why", the words said once.
std::string unwritable(const CaptureError& e);
// save_capture / load_capture with CaptureError turned into BadInput (its text: file, JSON path, what).
void save_capture_checked(const Capture& capture, const std::string& path);
Capture load_capture_checked(const std::string& path);
// run_pipelines with model errors (unknown model or parameter) turned into BadInput.
Capture run_pipelines_checked(const RunRequest& request, const ProgressFn& progress = {});

}  // namespace tv::app
