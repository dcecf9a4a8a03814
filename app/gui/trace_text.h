// Trace text: a printed trace split into lines and highlighted tokens, per (trace, depth).
// Contract: pure data, no ImGui. Each line has its text (tabs expanded) and the spans of its
// tokens with a class for colouring; proxy tokens carry the index of the proxy they name, so the
// view can show metadata on hover and highlight a proxy's definition and uses without re-lexing.
// `statement_line[i]` is the line of top-level bound symbol i (what replay timings point at), and
// `line_owner[l]` the bound symbol line l states (what a click on a statement acts on).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/trace.h"

namespace tv::gui {

enum class Token : uint8_t { plain, keyword, symbol, proxy, string, number, type, comment, punct };

struct Span {
  uint32_t begin = 0, length = 0;
  Token token = Token::plain;
  bool in_comment = false;  // inside a `#` comment (subsymbols are printed as comments)
  int proxy = -1;           // index into TraceText::proxies when token == proxy
};

// The text is built once (printed, tabs expanded); a line's spans are lexed when first asked for
// and a proxy's lines when first asked for, so a trace of any length costs one print before its
// first frame, and no walk over its statements. The accessors fill caches (mutable, not
// thread-safe): use one TraceText per thread.
struct TraceText {
  std::string text;                                  // every line, joined by '\n', tabs expanded
  std::vector<uint32_t> line_start;                  // per line: its offset in `text`
  // The proxies met so far, the parameters first: a line's statement adds those it defines and
  // reads when the line is first lexed (a walk over every statement would cost a long trace's
  // first frame a third of its time). Indices stay as given while this text lives.
  mutable std::vector<ProxyPtr> proxies;
  std::vector<int> statement_line;                   // per top-level bound symbol, -1 if not found
  // Per line: the bound symbol (at any level) it states, null for other lines; points into the
  // trace the text was built from, which the caller keeps alive.
  std::vector<const BoundSymbol*> line_owner;
  size_t max_columns = 0;
  int depth = 0;

  size_t line_count() const { return line_start.size(); }
  // The index of the proxy of that name printed in this text (params and every printed level),
  // -1 when none; the first call for a name not met yet walks the trace once.
  int proxy_named(std::string_view name) const;
  std::string_view line(size_t l) const;
  // The highlighted tokens of line l.
  const std::vector<Span>& spans(size_t l) const;
  // Every line naming proxy p as a token, ascending; the first is its definition (-1 when none).
  const std::vector<int>& use_lines(int proxy) const;
  int definition_line(int proxy) const;

 private:
  mutable std::vector<std::vector<Span>> spans_;  // per line; empty: not lexed yet (or no tokens)
  mutable std::unordered_map<int, std::vector<int>> use_lines_;
  // name -> index in proxies; the names are views of the proxies' own, which `proxies` keeps alive
  mutable std::unordered_map<std::string_view, int> proxy_index_;
  std::unordered_map<std::string_view, int> parameter_index_;  // what lines of no statement may name
  const Trace* trace_ = nullptr;  // the trace the text was built from (line_owner points into it)
  mutable bool every_proxy_met_ = false;

  friend TraceText build_trace_text(const Trace& trace, int depth);
  void meet(const ProxyPtr& p) const;
  void meet_proxies_of(const Value& v) const;
  void meet_proxies_of(const BoundSymbol& b) const;
};

TraceText build_trace_text(const Trace& trace, int depth);
// Splits one line into highlighted spans; `proxy_index` tells identifiers that name proxies.
std::vector<Span> highlight_line(std::string_view line, const std::unordered_map<std::string_view, int>& proxy_index);
// Deepest subsymbol level of a trace (0 when no statement has subsymbols).
int max_subsymbol_depth(const Trace& trace);
// Tabs to spaces, to the next multiple of 4 columns of each line (the text may hold several lines).
std::string expand_tabs(std::string text);

}  // namespace tv::gui
