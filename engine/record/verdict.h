// Outcomes and verdicts: what one pipeline did, and what comparing two pipelines concluded.
// Contract: a pipeline's Outcome is its own (passed / failed / refused, with why) and never takes
// the verdict of a comparison it is part of; a comparison's Verdict is about two pipelines
// (equivalent / different, or not comparable when either side failed or was refused). Both are
// computed once, by the session layer (session/assess.h), stored in the capture, and printed in
// these words by every door: the CLI, the GUI, both reports and Python.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tv {

enum class Outcome {
  passed,   // built, and every replayed number matched eager within tolerance
  failed,   // an error while building or running, or a number off from eager
  refused,  // the order breaks a composition rule: nothing was built
};

enum class Verdict {
  equivalent,      // canonically equal traces at every stage and equal numbers on every rank
  different,       // both ran; their traces or numbers differ
  not_comparable,  // one side failed or was refused
};

std::string_view outcome_name(Outcome);  // "passed", "failed", "refused"
std::string_view verdict_name(Verdict);  // "equivalent", "different", "not comparable"
std::string_view verdict_meaning(Verdict);
// The inverses; false for an unknown word.
bool parse_outcome(std::string_view, Outcome*);
bool parse_verdict(std::string_view, Verdict*);

struct PipelineOutcome {
  Outcome kind = Outcome::passed;
  std::string rule;                  // the composition rule behind a refusal or a reproduced failure
  std::vector<std::string> reasons;  // why it failed or was refused, one line each
  bool ok() const { return kind == Outcome::passed; }
  // "passed", "failed: <first line of the first reason>", "refused: <the same>".
  std::string line() const;
};

}  // namespace tv
