// Outcomes and verdicts, computed once (record/verdict.h): what each pipeline of a capture did on
// its own, and what each comparison of two pipelines concluded. Every door prints these words.
// Contract:
//  - assess_pipeline: refused when a composition rule stopped the order before anything was built;
//    failed on any other error (a semantics mode's state-read failure too, with its rule), a rank's
//    error, a replayed number off from eager (each failing check one reason), or ranks that part on
//    a value every rank must hold alike (record/rank_table.h: one reason, the first such value);
//    passed otherwise.
//  - compare_pipelines: not comparable when either side has no program to compare (refused, or an
//    error while building or on a rank), the why naming that side; otherwise equivalent when the
//    final traces of every kind are canonically equal and every replayed number of both sides
//    matches eager, different (the why says what differs) when not.
//  - assess: both, for every pipeline and every comparison of the capture.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "record/record.h"

namespace tv {

PipelineOutcome assess_pipeline(const PipelineRecord&);
// The verdict from what a comparison found, and its why: not comparable when `not_comparable_because`
// is not empty (it is the why), else different when `differs` names anything ("final backward
// trace", "numbers"), else equivalent. Every comparison, the engine's and Python's, ends here.
std::pair<Verdict, std::string> conclude(const std::vector<std::string>& differs,
                                         const std::string& not_comparable_because = "");
Comparison compare_pipelines(const Capture&, int left, int right);
void assess(Capture&);

// "P1 [ddp,jit]": how a pipeline is named in verdicts.
std::string pipeline_name(const Capture&, int index);
// "P1 [ddp,jit thunder-2024-03] vs P0 [jit,ddp thunder-2024-03]: not comparable: P0 [...] failed: ValueError: ..."
std::string comparison_line(const Capture&, const Comparison&);
// The comparison whose right side is pipeline `index`, or null.
const Comparison* comparison_of(const Capture&, int index);
// Pipeline `index` in one line: its own outcome, then, when it is the right side of a comparison,
// that comparison's verdict: "passed; vs P0 [jit,ddp]: equivalent", "failed: rank 1: timeout".
std::string pipeline_line(const Capture&, int index);
// What batch mode and reports count as ok: the pipeline passed and, when it is the right side of a
// comparison, the verdict is equivalent. `reasons` (optional) gets why not, one line each.
bool pipeline_ok(const Capture&, int index, std::vector<std::string>* reasons = nullptr);

}  // namespace tv
