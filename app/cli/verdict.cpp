#include "cli/verdict.h"

#include "session/assess.h"

namespace tv::cli {

PipelineVerdict pipeline_verdict(const Capture& c, int index) {
  PipelineVerdict v;
  v.outcome = std::string(outcome_name(c.pipelines.at(index).outcome.kind));
  v.line = pipeline_line(c, index);
  v.ok = pipeline_ok(c, index, &v.reasons);
  return v;
}

}  // namespace tv::cli
