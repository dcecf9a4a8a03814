#include "gui/trace_text.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "format/printer.h"

namespace tv::gui {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_keyword(std::string_view w) {
  static const std::string_view kKeywords[] = {"def", "return", "del", "import", "from", "as", "None", "True",
                                               "False", "for", "in", "if", "else", "not", "and", "or",
                                               "lambda", "with", "pass", "is", "class", "global"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), w) != std::end(kKeywords);
}

// A comment whose body is code (a subsymbol statement or a `name: "type"` annotation) is lexed
// as code; any other comment (provenance, source headers) is one comment span.
bool comment_is_code(std::string_view body) {
  size_t i = 0;
  while (i < body.size() && body[i] == ' ') ++i;
  if (i >= body.size() || !(is_ident_start(body[i]) || body[i] == '(')) return false;
  if (body.substr(i).starts_with("Constructed by")) return false;
  return true;
}

void add_proxies_of(const Value& v, TraceText& out) {
  for_each_proxy(v, [&](const ProxyPtr& p) {
    if (p && !out.proxy_index.count(p->name)) {
      out.proxy_index.emplace(p->name, static_cast<int>(out.proxies.size()));
      out.proxies.push_back(p);
    }
  });
}

void collect_proxies(const Trace& trace, TraceText& out) {
  for (const auto& param : trace.params) add_proxies_of(Value::of(param.proxy), out);
  walk(trace.body, [&](const BoundSymbol& b, int) {
    for (const auto& o : b.outputs) add_proxies_of(Value::of(o), out);
    for (const auto& a : b.args) add_proxies_of(a, out);
    for (const auto& [k, v] : b.kwargs) add_proxies_of(v, out);
  });
}

}  // namespace

std::string expand_tabs(const std::string& line) {
  if (line.find('\t') == std::string::npos) return line;
  std::string out;
  for (char c : line) {
    if (c == '\t') out.append(4 - out.size() % 4, ' ');
    else out += c;
  }
  return out;
}

std::vector<Span> highlight_line(const std::string& line, const std::unordered_map<std::string, int>& proxy_index) {
  std::vector<Span> spans;
  bool in_comment = false;
  size_t i = 0, n = line.size();
  auto push = [&](size_t b, size_t e, Token t, int proxy = -1) {
    spans.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e - b), t, in_comment, proxy});
  };
  while (i < n) {
    char c = line[i];
    if (c == ' ') { ++i; continue; }
    if (c == '#') {
      std::string_view body(line.data() + i + 1, n - i - 1);
      if (!comment_is_code(body)) { push(i, n, Token::comment); break; }
      in_comment = true;
      push(i, i + 1, Token::comment);
      ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t e = i + 1;
      while (e < n && line[e] != c) e += (line[e] == '\\' ? 2 : 1);
      e = std::min(n, e + 1);
      size_t p = i;
      while (p > 0 && line[p - 1] == ' ') --p;
      bool type_text = p > 0 && line[p - 1] == ':';
      push(i, e, type_text ? Token::type : Token::string);
      i = e;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t e = i;
      while (e < n && (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '.' ||
                       ((line[e] == '-' || line[e] == '+') && (line[e - 1] == 'e' || line[e - 1] == 'E'))))
        ++e;
      push(i, e, Token::number);
      i = e;
      continue;
    }
    if (is_ident_start(c)) {
      size_t e = i;
      while (e < n && (is_ident_char(line[e]) || (line[e] == '.' && e + 1 < n && is_ident_start(line[e + 1])))) ++e;
      std::string_view word(line.data() + i, e - i);
      size_t after = e;
      while (after < n && line[after] == ' ') ++after;
      bool call = after < n && line[after] == '(';
      if (is_keyword(word)) {
        push(i, e, Token::keyword);
      } else if (auto it = proxy_index.find(std::string(word)); it != proxy_index.end()) {
        push(i, e, Token::proxy, it->second);
      } else if (call) {
        push(i, e, Token::symbol);
      } else {
        push(i, e, Token::plain);
      }
      i = e;
      continue;
    }
    size_t e = i + 1;
    push(i, e, Token::punct);
    i = e;
  }
  return spans;
}

int max_subsymbol_depth(const Trace& trace) {
  int deepest = 0;
  walk(trace.body, [&](const BoundSymbol&, int depth) { deepest = std::max(deepest, depth); });
  return deepest;
}

TraceText build_trace_text(const Trace& trace, int depth) {
  TraceText out;
  out.depth = depth;
  collect_proxies(trace, out);
  PrintOptions options;
  options.depth = depth;
  options.line_owners = &out.line_owner;
  std::string text = print_trace(trace, options);

  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    TextLine line;
    line.text = expand_tabs(text.substr(start, end - start));
    line.spans = highlight_line(line.text, out.proxy_index);
    out.max_columns = std::max(out.max_columns, line.text.size());
    out.lines.push_back(std::move(line));
    start = end + 1;
  }

  out.definition_line.assign(out.proxies.size(), -1);
  out.use_lines.assign(out.proxies.size(), {});
  for (size_t l = 0; l < out.lines.size(); ++l) {
    for (const auto& s : out.lines[l].spans) {
      if (s.proxy < 0) continue;
      auto& uses = out.use_lines[s.proxy];
      if (uses.empty() || uses.back() != static_cast<int>(l)) uses.push_back(static_cast<int>(l));
      if (out.definition_line[s.proxy] < 0) out.definition_line[s.proxy] = static_cast<int>(l);
    }
  }

  out.line_owner.resize(out.lines.size(), nullptr);
  std::unordered_map<const BoundSymbol*, int> top_level;
  for (size_t b = 0; b < trace.body.size(); ++b) top_level.emplace(&trace.body[b], static_cast<int>(b));
  out.statement_line.assign(trace.body.size(), -1);
  for (size_t l = 0; l < out.lines.size(); ++l)
    if (auto it = top_level.find(out.line_owner[l]); it != top_level.end() && out.statement_line[it->second] < 0)
      out.statement_line[it->second] = static_cast<int>(l);
  return out;
}

}  // namespace tv::gui
