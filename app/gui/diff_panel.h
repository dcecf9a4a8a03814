// Diff panel: two stages side by side (two stages of one pipeline, or the same stage of two
// pipelines), rows from diff_traces with a text mark and a colour per kind — " " same, "="
// renamed, "~" changed, "+" added, "-" removed — or the unified text. By default it follows the
// stage browser: the selected stage against the one before it. Runs of unchanged statements fold
// to three rows of context around each change; "next change" / "previous change" (keys N and
// Shift+N) move to the next row that differs and scroll it into view. The rename map (which name
// became which) folds open above the rows.
// Contract: the diff is computed once per pair of traces and kept until the selection changes.
#pragma once
#include <vector>

#include <imgui.h>

#include "diff/diff.h"
#include "gui/pipelines_diff.h"
#include "gui/session.h"

namespace tv::gui {

const char* diff_mark(DiffKind);
ImVec4 kind_colour(DiffKind);      // the text colour of a row of that kind
ImU32 kind_background(DiffKind);   // its background, 0 for none
bool is_change(DiffKind);          // changed, added or removed
// The rows a diff shows: each row index, or -n for a fold of n rows, where `fold` folds every run of
// rows more than three rows away from one that `differs`.
std::vector<int> folded_rows(const std::vector<bool>& differs, bool fold);
// Combos shared by the panel's modes: a pipeline of the capture, a trace kind.
void pipeline_combo(const char* label, const Capture& c, int* index);
void kind_combo(const char* label, TraceKind* kind);

struct DiffPanel {
  void draw(Session& s);
  // The diff now shown (after a frame), or null when the selection has no two traces.
  const TraceDiff* current() const { return left_ ? &diff_ : nullptr; }
  // The row of diff_.statements last moved to by next/previous change (-1: none).
  int focused_row() const { return focus_; }
  int displayed_rows() const { return static_cast<int>(display_.size()); }  // folds count as one
  void next_change(int direction);  // +1 next, -1 previous; wraps around
  PipelinesDiff pipelines;          // the every-pipeline mode

 private:
  void draw_selectors(Session& s);
  void draw_side_by_side();
  void draw_renames();
  void draw_unified() const;
  // The rows shown: an index into diff_.statements, or -n for a fold of n unchanged rows.
  void build_display(bool fold);
  TracePtr left_, right_;
  TraceDiff diff_;
  bool subsymbols_ = false;  // rows show top-level statements only unless asked
  std::vector<int> display_;
  bool display_folded_ = false;
  int focus_ = -1;
  bool scroll_to_focus_ = false;
};

}  // namespace tv::gui
