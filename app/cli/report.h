// Reports of a capture, written by `thunder-viz report`.
// html_report: one self-contained page (inline CSS and a little inline JS, nothing fetched): model,
// pipelines and verdicts, stages per trace kind with changed/unchanged badges and a hide-unchanged
// switch, side-by-side diffs of consecutive stages and of compared pipelines' final traces, replay
// checks, the slowest bound symbols, the rules matrix. text_report: the same facts without timings
// or paths, so reports of two runs diff cleanly.
#pragma once
#include <string>

#include "capture/capture.h"

namespace tv::cli {

std::string html_report(const Capture&, const std::string& name);
std::string text_report(const Capture&, const std::string& name);

}  // namespace tv::cli
