// One verdict per pipeline of a capture, shared by show, batch (summary, JUnit) and report.
// A pipeline that is the right side of a comparison is judged against its left side (equivalent
// or not); any other pipeline against LibTorch eager (its replay checks). A pipeline that failed
// or was refused is never ok.
#pragma once
#include <string>
#include <vector>

#include "capture/capture.h"

namespace tv::cli {

struct PipelineVerdict {
  std::string verdict;              // "pass", "FAIL", "equivalent", "different", "failed", "refused"
  std::string against;              // "eager" or the label of the pipeline it was compared with
  bool ok = true;
  std::vector<std::string> reasons;  // why not ok: the error, the failing checks, what differs
  std::string line() const;          // "equivalent (vs jit,ddp)", "FAIL (vs eager)", "refused"
};

PipelineVerdict pipeline_verdict(const Capture&, int index);
// The pipeline's error, with the rule's name when the error does not already name it.
std::string error_with_rule(const PipelineRecord&);
// The comparison whose right side is `index`, or null.
const Comparison* comparison_for(const Capture&, int index);

}  // namespace tv::cli
