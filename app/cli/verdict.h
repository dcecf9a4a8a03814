// One verdict line per pipeline of a capture, shared by show, batch (summary, JUnit) and report:
// the words the session layer computed (session/assess.h), never recomputed here.
#pragma once
#include <string>
#include <vector>

#include "capture/capture.h"

namespace tv::cli {

struct PipelineVerdict {
  std::string outcome;               // "passed", "failed", "refused"
  std::string line;                  // pipeline_line: "passed; vs P0 [jit,ddp]: equivalent"
  bool ok = true;                    // pipeline_ok
  std::vector<std::string> reasons;  // why not ok
};

PipelineVerdict pipeline_verdict(const Capture&, int index);

}  // namespace tv::cli
