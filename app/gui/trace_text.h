// Trace text: a printed trace split into lines and highlighted tokens, computed once per (trace, depth).
// Contract: pure data, no ImGui. Each line keeps its text (tabs expanded) and the spans of its
// tokens with a class for colouring; proxy tokens carry the index of the proxy they name, so the
// view can show metadata on hover and highlight a proxy's definition and uses without re-lexing.
// `statement_line[i]` is the line of top-level bound symbol i (what replay timings point at), and
// `line_owner[l]` the bound symbol line l states (what a click on a statement acts on).
#pragma once
#include <cstdint>
#include <string>
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

struct TextLine {
  std::string text;
  std::vector<Span> spans;
};

struct TraceText {
  std::vector<TextLine> lines;
  std::vector<ProxyPtr> proxies;                     // every proxy named in the trace
  std::unordered_map<std::string, int> proxy_index;  // name -> index in proxies
  std::vector<int> definition_line;                  // per proxy: first line naming it
  std::vector<std::vector<int>> use_lines;           // per proxy: every line naming it, ascending
  std::vector<int> statement_line;                   // per top-level bound symbol, -1 if not found
  // Per line: the bound symbol (at any level) it states, null for other lines; points into the
  // trace the text was built from, which the caller keeps alive.
  std::vector<const BoundSymbol*> line_owner;
  size_t max_columns = 0;
  int depth = 0;
};

TraceText build_trace_text(const Trace& trace, int depth);
// Splits one line into highlighted spans; `proxy_index` tells identifiers that name proxies.
std::vector<Span> highlight_line(const std::string& line, const std::unordered_map<std::string, int>& proxy_index);
// Deepest subsymbol level of a trace (0 when no statement has subsymbols).
int max_subsymbol_depth(const Trace& trace);
std::string expand_tabs(const std::string& line);

}  // namespace tv::gui
