// Diff panel: two stages side by side (two stages of one pipeline, or the same stage of two
// pipelines), rows from diff_traces with a text mark and a colour per kind — " " same, "="
// renamed, "~" changed, "+" added, "-" removed — or the unified text.
// Contract: the diff is computed once per pair of traces and kept until the selection changes.
#pragma once
#include "diff/diff.h"
#include "gui/session.h"

namespace tv::gui {

const char* diff_mark(DiffKind);

struct DiffPanel {
  void draw(Session& s);
  // The diff now shown (after a frame), or null when the selection has no two traces.
  const TraceDiff* current() const { return left_ ? &diff_ : nullptr; }

 private:
  void draw_selectors(Session& s);
  void draw_side_by_side() const;
  void draw_unified() const;
  TracePtr left_, right_;
  TraceDiff diff_;
  bool subsymbols_ = false;  // rows show top-level statements only unless asked
};

}  // namespace tv::gui
