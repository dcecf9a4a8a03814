#include "gui/trace_text.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <stdexcept>
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

}  // namespace

std::string expand_tabs(std::string text) {
  if (text.find('\t') == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t begin = 0;;) {
    const size_t tab = text.find('\t', begin);
    out.append(text, begin, tab == std::string::npos ? std::string::npos : tab - begin);
    if (tab == std::string::npos) return out;
    const size_t line_begin = out.rfind('\n') + 1;  // npos + 1 == 0 on the first line
    out.append(4 - (out.size() - line_begin) % 4, ' ');
    begin = tab + 1;
  }
}

std::vector<Span> highlight_line(std::string_view line, const std::unordered_map<std::string_view, int>& proxy_index) {
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
      std::string_view body = line.substr(i + 1);
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
      } else if (auto it = proxy_index.find(word); it != proxy_index.end()) {
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

std::string_view TraceText::line(size_t l) const {
  size_t begin = line_start[l];
  size_t end = l + 1 < line_start.size() ? line_start[l + 1] - 1 : text.size();
  return std::string_view(text).substr(begin, end - begin);
}

void TraceText::meet(const ProxyPtr& p) const {
  if (p && proxy_index_.try_emplace(p->name, static_cast<int>(proxies.size())).second) proxies.push_back(p);
}

void TraceText::meet_proxies_of(const Value& v) const {
  switch (v.kind) {
    case Value::Kind::proxy: meet(v.proxy); break;
    case Value::Kind::tuple:
    case Value::Kind::list:
      for (const auto& item : v.items) meet_proxies_of(item);
      break;
    case Value::Kind::dict:
      for (const auto& [key, value] : v.entries) {
        meet_proxies_of(key);
        meet_proxies_of(value);
      }
      break;
    default: break;
  }
}

void TraceText::meet_proxies_of(const BoundSymbol& b) const {
  for (const auto& o : b.outputs) meet(o);
  for (const auto& a : b.args) meet_proxies_of(a);
  for (const auto& [k, v] : b.kwargs) meet_proxies_of(v);
}

int TraceText::proxy_named(std::string_view name) const {
  if (!every_proxy_met_ && !proxy_index_.count(name)) {
    every_proxy_met_ = true;
    if (trace_) walk(trace_->body, [&](const BoundSymbol& b, int level) {
        if (level <= depth) meet_proxies_of(b);
      });
  }
  auto it = proxy_index_.find(name);
  return it == proxy_index_.end() ? -1 : it->second;
}

// A statement's line names its own proxies (outputs, arguments); a line of no statement (the
// signature, imports, source comments) only parameters.
const std::vector<Span>& TraceText::spans(size_t l) const {
  if (spans_.size() != line_start.size()) spans_.resize(line_start.size());
  if (spans_[l].empty()) {
    if (const BoundSymbol* owner = l < line_owner.size() ? line_owner[l] : nullptr) {
      meet_proxies_of(*owner);
      spans_[l] = highlight_line(line(l), proxy_index_);
    } else {
      spans_[l] = highlight_line(line(l), parameter_index_);
    }
  }
  return spans_[l];
}

// Finds the name's occurrences in the whole text, then lexes only the lines holding one: a line
// counts when one of its tokens is the proxy (not a longer name, an attribute or a plain comment).
const std::vector<int>& TraceText::use_lines(int proxy) const {
  auto [it, fresh] = use_lines_.try_emplace(proxy);
  std::vector<int>& lines = it->second;
  if (!fresh) return lines;
  const std::string& name = proxies[proxy]->name;
  size_t at = 0;
  while (!name.empty() && (at = text.find(name, at)) != std::string::npos) {
    const size_t end = at + name.size();
    const bool bounded = (at == 0 || !(is_ident_char(text[at - 1]) || text[at - 1] == '.')) &&
                         (end == text.size() || !is_ident_char(text[end]));
    if (!bounded) {
      at = end;
      continue;
    }
    const size_t l = std::upper_bound(line_start.begin(), line_start.end(), static_cast<uint32_t>(at)) - line_start.begin() - 1;
    const auto& line_spans = spans(l);
    if (std::any_of(line_spans.begin(), line_spans.end(), [&](const Span& s) { return s.proxy == proxy; }))
      lines.push_back(static_cast<int>(l));
    at = l + 1 < line_start.size() ? line_start[l + 1] : text.size();
  }
  return lines;
}

int TraceText::definition_line(int proxy) const {
  const auto& lines = use_lines(proxy);
  return lines.empty() ? -1 : lines.front();
}

TraceText build_trace_text(const Trace& trace, int depth) {
  TraceText out;
  out.depth = depth;
  out.trace_ = &trace;
  for (const auto& param : trace.params) out.meet(param.proxy);
  out.parameter_index_ = out.proxy_index_;
  PrintOptions options;
  options.depth = depth;
  options.line_owners = &out.line_owner;
  std::string printed = print_trace(trace, options);

  // Lines indexed, tabs expanded (printed traces have them only in source comments).
  if (printed.size() > UINT32_MAX / 4) throw std::length_error("a printed trace of over 1 GiB cannot be shown");
  out.text = expand_tabs(std::move(printed));
  for (size_t begin = 0; begin <= out.text.size();) {
    size_t end = std::min(out.text.find('\n', begin), out.text.size());
    out.line_start.push_back(static_cast<uint32_t>(begin));
    out.max_columns = std::max(out.max_columns, end - begin);
    begin = end + 1;
  }

  // A top-level statement's first line; the body is one vector, so its members' addresses are ordered.
  out.line_owner.resize(out.line_count(), nullptr);
  out.statement_line.assign(trace.body.size(), -1);
  if (!trace.body.empty()) {
    const BoundSymbol* first = trace.body.data();
    const BoundSymbol* last = first + trace.body.size();
    std::less<const BoundSymbol*> before;
    for (size_t l = 0; l < out.line_count(); ++l) {
      const BoundSymbol* owner = out.line_owner[l];
      if (owner && !before(owner, first) && before(owner, last) && out.statement_line[owner - first] < 0)
        out.statement_line[owner - first] = static_cast<int>(l);
    }
  }
  return out;
}

}  // namespace tv::gui
