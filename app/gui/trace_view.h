// Trace view: the selected stage's printed trace, highlighted, with line numbers, a subsymbol
// depth slider, Ctrl+F search, proxy hover metadata (and replay statistics when the capture has
// them) and click-to-highlight a proxy's definition and uses.
// Contract: lines and token spans are computed once per (trace, depth) by build_trace_text;
// drawing goes through ImGuiListClipper, so only visible lines cost anything per frame.
#pragma once
#include <string>
#include <vector>

#include "gui/session.h"
#include "gui/trace_text.h"

namespace tv::gui {

struct TraceView {
  int depth = 1 << 20;       // slider value, clamped to the trace's deepest level
  bool search_open = false;
  bool focus_search = false;
  std::string query;
  std::vector<int> matches;  // lines containing the query
  int match = -1;            // index into matches
  int selected_proxy = -1;   // clicked proxy (index into text.proxies)
  int marked_line = -1;      // line to show marked (a jump target or the current match)
  int scroll_to = -1;        // scroll this line into view next frame
  int first_visible = 0;

  void draw(Session& s);
  // The text now shown (after at least one frame), or null.
  const TraceText* text() const { return trace_ ? &text_ : nullptr; }
  // Runs the search for `query` and moves to the next (+1) or previous (-1) match.
  void find(int direction);

 private:
  void refresh(const TracePtr& trace, int effective_depth);
  void draw_toolbar(Session& s, int max_depth);
  void draw_lines(Session& s);
  void draw_proxy_tooltip(const Session& s, int proxy) const;
  void update_matches();
  TracePtr trace_;
  int text_depth_ = -1;
  TraceText text_;
  std::string matched_query_;
};

}  // namespace tv::gui
