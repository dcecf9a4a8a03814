// What `thunder-viz batch` reports: one entry per case (model x world size x device), one verdict
// per pipeline, rendered as summary.txt (deterministic: no times, no paths) and JUnit XML.
#pragma once
#include <string>
#include <vector>

#include "cli/verdict.h"

namespace tv::cli {

struct BatchCase {
  std::string id;                       // "linear_w2_cpu": the capture is <id>.tvz.json
  std::vector<std::string> orders;      // pipeline labels, in config order
  std::vector<PipelineVerdict> verdicts;
  double seconds = 0;
  bool ok() const;
};

std::string summary_text(const std::vector<BatchCase>&);
// One <testsuite> per case, one <testcase> per pipeline with a <failure> when it is not ok.
std::string junit_xml(const std::vector<BatchCase>&, const std::string& suite_name);

}  // namespace tv::cli
