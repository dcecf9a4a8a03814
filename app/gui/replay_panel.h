// Replay panel: per pipeline and rank, outputs and gradients against the eager reference (max abs
// and rel error, tolerance, pass/FAIL), per-bound-symbol times as a bar chart drawn with
// ImDrawList, and the slowest bound symbols; clicking one jumps to its line in the trace view.
// Side by side: every rank's statistics of every value of the final forward and backward in one
// table (Session::rank_table), eager's beside outputs and gradients, the values every rank must
// share marked, and the first statement where the ranks, or a rank and eager, part; a click on a
// row shows its statement in the trace view.
// Contract: `slowest` is the list the last frame showed, slowest first, and `cuda_graph_line` the
// line it showed for a step replayed as a CUDA graph ("" when none); both for the state dump.
#pragma once
#include <string>
#include <vector>

#include "gui/session.h"

namespace tv::gui {

struct ReplayPanel {
  int pipeline = 0;
  int rank = 0;
  int kind = 0;  // 0 forward, 1 backward (timings)
  bool side_by_side = false;   // every rank in one table instead of one rank's checks and times
  bool shared_only = false;    // side by side: only the values every rank must share
  std::vector<SymbolTiming> slowest;
  std::string cuda_graph_line;

  void draw(Session& s);
  // Shows the final stage of the timed trace kind and scrolls to bound symbol `index`.
  static void jump_to(Session& s, int pipeline, const SymbolTiming& timing);
  static void jump_to(Session& s, int pipeline, TraceKind kind, int statement);

 private:
  void draw_checks(const RankResult& r, const std::string& reference) const;
  void draw_timings(Session& s, const RankResult& r);
  void draw_side_by_side(Session& s, const RankTable& table);
};

}  // namespace tv::gui
