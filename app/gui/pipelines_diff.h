// Every pipeline side by side (the Diff panel's third mode): one column per pipeline holding the
// same trace kind at the same pass (or each pipeline's final stage), every column aligned with a
// base pipeline's statements (diff/aligned.h). A cell's mark and colour say how that pipeline's
// statement compares with the base's: " " same, "=" renamed, "~" changed, "+" added, "-" removed
// there. Rows where every pipeline agrees fold to a few rows of context; a click on a cell shows
// that statement in the trace view.
// Contract: the alignment is computed once per set of traces and kept until the selection changes.
#pragma once
#include <string>
#include <vector>

#include "diff/aligned.h"
#include "gui/session.h"

namespace tv::gui {

struct PipelinesDiff {
  void draw(Session& s);
  const AlignedTraces* current() const { return traces_.empty() ? nullptr : &aligned_; }
  // The stage shown in each column (stage -1: the pipeline has no such stage).
  const std::vector<StageRef>& columns() const { return columns_; }
  int displayed_rows() const { return static_cast<int>(display_.size()); }
  // The index into current()->pairs of column `column`, -1 when that column shows no trace.
  int pair_of(int column) const;

 private:
  void draw_selectors(Session& s);
  void draw_summary(const Session& s) const;
  void draw_table(Session& s);
  void build_display(bool fold);
  std::vector<StageRef> columns_;
  std::vector<TracePtr> traces_;   // of the columns that have one, base first
  std::vector<int> column_of_;     // traces_[i] is column column_of_[i]
  AlignedTraces aligned_;
  std::vector<int> display_;       // row index, or -n for a fold of n rows where all agree
  bool display_folded_ = false;
};

}  // namespace tv::gui
