// Diff of two traces: statements aligned on a rename-blind key, text lines as a fallback.
// Contract: `diff_traces` aligns top-level bound symbols with an LCS (libdtl) on keys in which
// proxy names are blanked, so a rename is not a change; an aligned pair whose canonical statements
// differ in anything but names is "changed". Within a run of removed and added statements, only a
// removed and an added statement of the same symbol (aligned in order) make a "changed" row; the
// rest are "removed" and "added". `same_program` is canonical equality of the whole
// traces; `renames` is the rename map behind it. `lines` is a plain line diff of the printed texts for what statements cannot show.
#pragma once
#include <string>
#include <vector>

#include "format/printer.h"
#include "ir/trace.h"

namespace tv {

enum class DiffKind { same, renamed, changed, added, removed };

struct DiffRow {
  DiffKind kind = DiffKind::same;
  int left = -1;   // index into the left trace's body or lines (-1: none)
  int right = -1;
  std::string left_text;
  std::string right_text;
};

struct TraceDiff {
  bool same_program = false;  // canonically equal
  bool same_text = false;     // printed identically
  std::vector<DiffRow> statements;
  std::vector<DiffRow> lines;
  // Which name became which: parameters by position, then the outputs of aligned statements that
  // are the same up to names; only the names that differ, in order of definition.
  std::vector<std::pair<std::string, std::string>> renames;
  int count(DiffKind) const;
};

TraceDiff diff_traces(const Trace& left, const Trace& right, const PrintOptions& options = {});
// A unified rendering of the statement diff: " ", "~", "+", "-" prefixes.
std::string unified_text(const TraceDiff&);
std::string_view diff_kind_name(DiffKind);

}  // namespace tv
