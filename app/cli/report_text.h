// Plain-text rendering of pipelines and replay verdicts for the terminal.
#pragma once
#include <ostream>

#include "capture/capture.h"
#include "format/printer.h"

namespace tv::cli {

// The stages of one pipeline: every stage with `all_stages`, else the final trace of each kind.
void print_stages(std::ostream&, const PipelineRecord&, bool all_stages, const PrintOptions& options);
// One line per output and gradient per rank: max abs, max rel, tolerance, PASS/FAIL; then the
// step replayed as a CUDA graph when the capture has it. Returns true when every check passed.
// "changed", "unchanged", or "FAILED at bound symbol N (<symbol>)" for the stage where a pass stopped.
std::string stage_state(const Stage&);

bool print_verdicts(std::ostream&, const PipelineRecord&);

}  // namespace tv::cli
