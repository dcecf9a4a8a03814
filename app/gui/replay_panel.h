// Replay panel: per pipeline and rank, outputs and gradients against the eager reference (max abs
// and rel error, tolerance, pass/FAIL), per-bound-symbol times as a bar chart drawn with
// ImDrawList, and the slowest bound symbols; clicking one jumps to its line in the trace view.
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
  std::vector<SymbolTiming> slowest;
  std::string cuda_graph_line;

  void draw(Session& s);
  // Shows the final stage of the timed trace kind and scrolls to bound symbol `index`.
  static void jump_to(Session& s, int pipeline, const SymbolTiming& timing);

 private:
  void draw_checks(const RankResult& r, const std::string& reference) const;
  void draw_timings(Session& s, const RankResult& r);
};

}  // namespace tv::gui
