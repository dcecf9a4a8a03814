// Trace view: the selected stage's printed trace, highlighted, with line numbers, a subsymbol
// depth slider, Ctrl+F search, proxy hover metadata (and replay statistics when the capture has
// them) and click-to-highlight a proxy's definition and uses. A failed stage (a pass that stopped)
// shows its failing line marked, its None argument boxed, and the pipeline's error beside it.
// Contract: the text is built once per (trace, depth) by build_trace_text, and a line's tokens when
// it is first drawn; drawing goes through ImGuiListClipper, so only visible lines cost anything per
// frame. What the
// tooltip shows is computed as data first (describe_proxy) and kept as `hovered` for the state dump.
// Forward <-> backward: a click on a statement's symbol calls Session::click_statement; the lines of
// the followed gradient (Session::gradient) and its saved values are marked, computed once per
// (trace, depth, followed statement).
// Source provenance: the statements from the followed source line (Session::source_focus) are
// marked, and the source pane beside the trace shows that line in its file; a click on a source
// comment (`# file:line: ...`) follows that line.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/session.h"
#include "gui/source_pane.h"
#include "gui/trace_text.h"

struct ImVec2;

namespace tv::gui {

// What the hover tooltip says about a proxy.
struct ProxyRankInfo {
  int rank = 0;
  std::optional<TensorStats> stats;    // the value the replay saw
  std::optional<SymbolTiming> timing;  // the bound symbol that produced it, and how long it took
};

struct ProxyInfo {
  std::string name;
  std::string type;                    // as printed: "cpu f32[2, 10]"
  bool is_tensor = false;
  std::optional<bool> requires_grad;   // unknown for a loaded capture or printout: neither keeps it
  std::string distribution;            // "" when none
  int definition_line = -1;            // 0-based
  size_t lines_naming = 0;
  bool replayed = false;               // the pipeline has replay results
  bool final_stage = false;            // the shown stage is the one the replay ran (last of its kind)
  std::vector<ProxyRankInfo> ranks;    // the ranks whose replay saw this proxy
};

// Metadata of `text.proxies[proxy]` from the trace, statistics and timing per rank from the replay
// of the selected pipeline (keys "<kind>:<name>", or "<name>" in older captures).
ProxyInfo describe_proxy(const Session& s, const TraceText& text, int proxy);

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
  int visible_rows = 0;                 // lines that fit in the view
  std::optional<ProxyInfo> hovered;     // the proxy under the mouse in the last frame
  int failed_line = -1;                 // a failed stage's failing line (0-based), -1 otherwise
  std::vector<int> gradient_lines;      // lines of the followed gradient's statements, ascending
  std::vector<int> saved_proxies;       // indexes into text().proxies of the saved values they read
  std::vector<int> source_lines;        // lines of the statements from the followed source line, ascending
  SourcePane source_pane;

  void draw(Session& s);
  // The text now shown (after at least one frame), or null.
  const TraceText* text() const { return trace_ ? &text_ : nullptr; }
  // Runs the search for `query` and moves to the next (+1) or previous (-1) match.
  void find(int direction);

 private:
  void refresh(const TracePtr& trace, int effective_depth);
  void draw_toolbar(Session& s, int max_depth);
  void draw_failure(Session& s, const Stage& stage);
  void draw_lines(Session& s, const Stage& stage, float width);
  void draw_failed_line(Session& s, std::string_view line, ImVec2 text_pos, float char_w, float line_h) const;
  void draw_proxy_tooltip(const ProxyInfo& info) const;
  void update_matches();
  void update_gradient_lines(const Session& s);
  void update_source_lines(const Session& s);
  // The lines stating `statements`; one hidden by the depth slider counts as its top-level line.
  std::vector<int> lines_stating(const std::vector<const BoundSymbol*>& statements) const;
  void draw_gradient_bar(Session& s);
  void draw_statement_tooltip(const Session& s, const BoundSymbol& statement) const;
  std::string gradient_key_;   // what gradient_lines were computed for: the followed key and text
  long gradient_text_ = -1;
  std::string source_key_;     // what source_lines were computed for: the followed line and text
  long source_text_ = -1;
  long text_version_ = 0;      // counts the texts built
  TracePtr trace_;
  TracePtr depth_of_;  // the trace max_depth_ was computed for
  int max_depth_ = 0;
  int text_depth_ = -1;
  TraceText text_;
  std::string matched_query_;
};

}  // namespace tv::gui
