// How the model of a capture runs again, for any new transform order: the zoo's model by its name
// and parameters, or, for a model the engine does not have (saved from Python), the module rebuilt
// from the capture's acquired program (jit/captured.h). Rebuilt on the tensors file the capture
// names (ModelRecord::tensors, found in `folder`, replay/tensor_file.h) it replays against the
// eager numbers stored there; without one, on random weights, traces only (no replay).
// Contract: `rerun_of` never throws: a capture that cannot run again (imported printouts, acquired
// traces that do not rebuild a module, an unreadable tensors file) gives `why_not` instead of a
// request. `note` says what a re-run gives, for the GUI and the CLI to print.
#pragma once
#include <optional>
#include <string>

#include "record/record.h"
#include "session/run.h"

namespace tv {

struct CaptureRerun {
  std::optional<RunRequest> request;  // model, params or factory, reference, replay; no pipelines
  std::string note;                   // what a re-run gives ("" for a built-in model)
  std::string why_not;                // when there is no request
};

CaptureRerun rerun_of(const Capture& capture, const std::string& folder);

// What a re-run of a model rebuilt from its capture gives; `stored` says what the capture's tensors
// file gave: "" (none named), "stored" (weights, inputs and eager numbers), "stored, no eager
// numbers", or "missing: ...".
std::string rerun_note(const std::string& model, const std::string& stored);

}  // namespace tv
