// Chrome trace export: a capture's replay timings as a Trace Event Format document, for
// chrome://tracing and Perfetto (ui.perfetto.dev: "Open trace file").
// Contract: one process per pipeline (named by its order and timer), one thread per rank, one
// complete ("X") event per timed bound symbol: name = symbol, category = trace kind, ts/dur in
// microseconds, args = {output, index, line-up key "trace:index"}. Within a rank the traces are laid
// end to end in the order they ran (forward, then backward): each starts where the previous one's
// last symbol ended, and a symbol starts at its recorded start_microseconds (or, for captures made
// before start times were recorded, right after the previous symbol). Pipelines without a replay
// contribute nothing; an empty document (no events) is still valid.
#pragma once
#include <string>

#include "capture/capture.h"

namespace tv {

std::string chrome_trace_json(const Capture& capture);

// Writes chrome_trace_json atomically; throws CaptureError naming the path on failure.
void save_chrome_trace(const Capture& capture, const std::string& path);

}  // namespace tv
