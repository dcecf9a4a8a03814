// N traces side by side: every trace aligned with one base trace, on the base's statements.
// Contract: `align_traces(base, others)` diffs each other trace against the base (diff_traces) and
// merges the pairwise rows on the base's statement order: a row holds one base statement and, for
// each other trace, the statement aligned with it (same, renamed, changed) or none (removed there);
// statements another trace has and the base lacks (added) come in rows of their own, with no base
// statement, just before the base statement that follows them, one row per added statement of the
// trace that added the most there. `pairs[k]` is the pairwise diff behind column k. With no other
// trace there is nothing to align with: no rows.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.h"

namespace tv {

struct AlignedRow {
  int base = -1;                           // top-level statement of the base (-1: added elsewhere)
  std::string base_text;
  std::vector<std::optional<DiffRow>> cells;  // per other trace; empty: nothing of that trace on this row
};

struct AlignedTraces {
  std::vector<TraceDiff> pairs;  // base against each other trace
  std::vector<AlignedRow> rows;
};

AlignedTraces align_traces(const Trace& base, const std::vector<const Trace*>& others, const PrintOptions& options = {});

}  // namespace tv
