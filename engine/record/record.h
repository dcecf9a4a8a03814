// The record of one use of the tool: the model, each pipeline's stage history, replay results and
// outcome, the comparisons and their verdicts, the rules matrix. Plain data; what computes each
// part fills it in (session, rules), capture/ writes and reads it (*.tvz.json).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "history/stages.h"
#include "record/results.h"
#include "record/rules_matrix.h"
#include "record/verdict.h"

namespace tv {

inline constexpr int kCaptureVersion = 5;
// The oldest version load_capture still reads (and upgrades in memory); see docs/capture-format.md.
inline constexpr int kOldestCaptureVersion = 0;
// The value of the document's "format" member.
inline constexpr const char* kCaptureFormat = "thunder-viz-capture";

struct ParameterRecord {
  std::string name;  // "fc1.weight"
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
};

struct ModelRecord {
  std::string name;                           // "gpt", or "imported" for Thunder printouts
  std::map<std::string, std::string> params;  // --param values
  std::vector<ParameterRecord> parameters;
  // A file beside the capture (its name, no folder) holding the model's weights and inputs and the
  // eager numbers computed on them (torch.save format; saved from Python on request), so that a
  // model rebuilt from the capture re-runs on them and is checked; "" when there is none.
  std::string tensors;
};

struct PipelineRecord {
  PipelineSpec spec;
  StageHistory stages;
  std::optional<Replay> replay;
  std::string error;  // why the pipeline failed or was refused
  std::string rule;   // the composition rule behind the refusal or the reproduced failure
  PipelineOutcome outcome;  // its own outcome (session/assess.h), whatever any comparison says
};

struct Capture {
  int version = kCaptureVersion;
  std::string tool_version;
  ModelRecord model;
  std::vector<PipelineRecord> pipelines;
  std::vector<Comparison> comparisons;
  std::optional<RulesMatrix> rules;
  // The version of the document this capture was loaded from (older ones are upgraded in memory,
  // so `version` is always kCaptureVersion after a load); kCaptureVersion for a new capture.
  int loaded_from_version = kCaptureVersion;
};

}  // namespace tv
