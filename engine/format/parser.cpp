#include "format/parser.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "format/lexer.h"
#include "format/printer.h"
#include "ir/python_literal.h"

namespace tv {

std::string ParseError::describe(std::string_view file) const {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

namespace {

// Messages quote the input; its control bytes (ESC sequences, ...) are written as \xNN so that no
// terminal, Python traceback or GUI panel that shows the message interprets them.
std::string printable(const std::string& message) {
  std::string out;
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

using lexer::Kind;
using lexer::Token;

// Thrown inside the parser only; parse_trace turns it into a ParseError.
struct Failure {
  int column;
  std::string message;
  int line = 0;  // 0: the line being read
};

bool untyped(const Proxy& p) { return p.kind == ProxyKind::other && p.other_text.empty(); }

ProxyPtr untyped_proxy(std::string name) {
  auto p = std::make_shared<Proxy>();
  p->name = std::move(name);
  p->kind = ProxyKind::other;
  return p;
}

// Names in scope: every proxy defined so far (inputs, outputs, subsymbol outputs).
class Scope {
 public:
  int line = 1;  // the line being read, for names used before their definition

  ProxyPtr find(const std::string& name) const {
    auto it = proxies_.find(name);
    return it == proxies_.end() ? nullptr : it->second;
  }
  // A name read that no statement has defined yet: a context object of Thunder's
  // (`_DistributedReduceOps_SUM_0`) unless a later statement defines it.
  void note_undefined_use(const std::string& name, int column) { undefined_uses_.try_emplace(name, line, column); }
  // A name an import line binds (`import torch`, `from thunder.torch import softmax as sm`).
  void note_global(const std::string& name) { globals_.insert(name); }
  // At the end of the function: a name read that nothing defined (a deleted line, a typo).
  void refuse_never_defined() const {
    const std::pair<int, int>* first = nullptr;
    std::string first_name;
    for (const auto& [name, where] : undefined_uses_) {
      if (proxies_.count(name) || globals_.count(name) || is_context_object(name)) continue;
      if (!first || where < *first) {
        first = &where;
        first_name = name;
      }
    }
    if (first) {
      const auto& name = first_name;
      const auto& where = *first;
      throw Failure{where.second,
                    "'" + name + "' is read but never defined: no argument, unpacking or statement of the function "
                    "defines it; restore the line that defines it (was it deleted or edited?) or import the printout "
                    "as Thunder wrote it",
                    where.first};
    }
  }

  // Defines `name` with `type_text`; reuses the existing proxy when it has the same type, so a
  // subsymbol that redefines its parent's output shares the proxy.
  ProxyPtr define(const std::string& name, const std::string* type, int column) {
    auto existing = find(name);
    if (!existing) refuse_if_used_before(name);
    if (!type) {
      if (existing) return existing;
      return proxies_[name] = untyped_proxy(name);
    }
    if (existing && !untyped(*existing) && type_text(*existing) == *type) return existing;
    std::string error;
    auto parsed = parse_type_text(*type, name, &error);
    if (!parsed) throw Failure{column, "bad type of '" + name + "': " + error};
    if (existing) {  // keep what the type text cannot say
      parsed->requires_grad = existing->requires_grad;
      parsed->distribution = existing->distribution;
    }
    return proxies_[name] = std::make_shared<Proxy>(std::move(*parsed));
  }
  // A new value of that name without a type yet (the target of an unpacking, typed by the
  // comment lines after it, if any).
  ProxyPtr define_untyped(const std::string& name) {
    if (!find(name)) refuse_if_used_before(name);
    return proxies_[name] = untyped_proxy(name);
  }

 private:
  void refuse_if_used_before(const std::string& name) const {
    auto it = undefined_uses_.find(name);
    if (it == undefined_uses_.end()) return;
    auto [use_line, use_column] = it->second;
    throw Failure{use_column,
                  "'" + name + "' is used before it is defined (on line " + std::to_string(line) + ")", use_line};
  }

  // Thunder prints some objects a trace reads but never defines by a name of their own, with a
  // leading underscore (`_DistributedReduceOps_SUM_0`, `_torch_fx_graph_module_0`): those are no
  // user's typo.
  static bool is_context_object(const std::string& name) { return !name.empty() && name[0] == '_'; }

  std::map<std::string, ProxyPtr> proxies_;
  std::map<std::string, std::pair<int, int>> undefined_uses_;  // name -> line, column of its first use
  std::set<std::string> globals_;
};

// Recursive-descent parser over the tokens of one statement.
class StatementParser {
 public:
  StatementParser(const lexer::Tokens& tokens, std::string_view line, int first_column, Scope& scope)
      : toks_(tokens.tokens), line_(line), first_column_(first_column), scope_(scope) {
    for (const auto& t : toks_)
      if (t.kind == Kind::error) throw Failure{t.column, t.text};
  }

  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == Kind::op && peek(ahead).text == op;
  }
  bool at_end() const { return peek().kind == Kind::end; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  void expect(std::string_view op, const char* what) {
    if (!at_op(op)) fail(std::string("expected '") + std::string(op) + "' " + what);
    next();
  }
  [[noreturn]] void fail(const std::string& message) const {
    const auto& t = peek();
    throw Failure{t.column, message + (t.kind == Kind::end ? ", found end of line" : ", found '" + describe(t) + "'")};
  }
  static std::string describe(const Token& t) { return t.kind == Kind::string ? "'" + t.text + "'" : t.text; }
  void expect_end(const char* after) {
    if (!at_end()) fail(std::string("unexpected text after ") + after);
  }
  size_t position() const { return pos_; }
  void rewind(size_t pos) { pos_ = pos; }

  std::string dotted_name() {
    if (peek().kind != Kind::name) fail("expected a name");
    std::string name = next().text;
    while (at_op(".") && peek(1).kind == Kind::name) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  // Arguments of a call, after '(' up to and including ')'.
  void call_args(std::vector<Value>& args, Kwargs& kwargs) {
    while (!at_op(")")) {
      if (peek().kind == Kind::name && at_op("=", 1)) {
        std::string key = next().text;
        next();
        kwargs.emplace_back(key, expr());
      } else {
        if (!kwargs.empty()) fail("positional argument after a keyword argument");
        args.push_back(expr());
      }
      if (!at_op(",")) break;
      next();
    }
    expect(")", "to close the call");
  }

  Value expr() {
    if (++depth_ > 64) fail("expression nested too deeply");
    Value v = expr_inner();
    --depth_;
    return v;
  }

  // True when the statement assigns: an '=' outside brackets.
  bool assigns() const {
    int depth = 0;
    for (const auto& t : toks_) {
      if (t.kind != Kind::op) continue;
      if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
      else if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
      else if (t.text == "=" && depth == 0) return true;
    }
    return false;
  }

  // One assignment target: a name, `_`, or a tuple or list of targets. The names are kept as
  // Value::name leaves and listed in `names` with their columns, in order.
  Value target(std::vector<std::pair<std::string, int>>& names) {
    if (++depth_ > 64) fail("assignment target nested too deeply");
    Value v;
    if (at_op("(") || at_op("[")) {
      bool is_list = next().text == "[";
      const char* close = is_list ? "]" : ")";
      std::vector<Value> items;
      bool trailing_comma = false;
      while (!at_op(close)) {
        items.push_back(target(names));
        trailing_comma = false;
        if (!at_op(",")) break;
        next();
        trailing_comma = true;
      }
      expect(close, "to close the assigned names");
      if (!is_list && items.size() == 1 && !trailing_comma) v = items[0];
      else v = is_list ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    } else {
      if (peek().kind != Kind::name) fail("expected a name to assign to");
      if (peek().text != "_") names.emplace_back(peek().text, peek().column);
      v = Value::name(next().text);
    }
    --depth_;
    return v;
  }

 private:
  Value expr_inner() {
    const Token& t = peek();
    if (t.kind == Kind::number) return number(next().text, false, t.column);
    if (t.kind == Kind::string) return Value::string(next().text);
    if (at_op("-") && peek(1).kind == Kind::number) {
      next();
      int column = peek().column;
      return number(next().text, true, column);
    }
    if (at_op("-") && peek(1).kind == Kind::name) {  // -float('inf')
      next();
      Value v = expr();
      if (v.kind == Value::Kind::floating) return Value::floating(-v.f);
      fail("expected a number after '-'");
    }
    if (at_op("...")) {
      next();
      return Value::name("...");
    }
    if (at_op("(") || at_op("[")) return sequence();
    if (at_op("{")) return dict();
    if (t.kind == Kind::name) return named();
    fail("expected a value");
  }

  Value number(const std::string& text, bool negative, int column) {
    bool is_float = text.find_first_of(".eE") != std::string::npos;
    auto v = parse_python_number(text);
    if (!v) throw Failure{column, "bad number '" + text + "'"};
    if (is_float) return Value::floating(negative ? -*v : *v);
    try {
      return Value::integer(std::stoll(negative ? "-" + text : text));
    } catch (const std::exception&) {
      throw Failure{column, "integer out of range '" + text + "'"};
    }
  }

  Value sequence() {
    bool is_list = next().text == "[";
    const char* close = is_list ? "]" : ")";
    std::vector<Value> items;
    bool trailing_comma = false;
    while (!at_op(close)) {
      items.push_back(expr());
      trailing_comma = false;
      if (!at_op(",")) break;
      next();
      trailing_comma = true;
    }
    expect(close, is_list ? "to close the list" : "to close the tuple");
    if (is_list) return Value::list(std::move(items));
    if (items.size() == 1 && !trailing_comma) return items[0];  // parenthesised value
    return Value::tuple(std::move(items));
  }

  Value dict() {
    next();
    std::vector<std::pair<Value, Value>> entries;
    while (!at_op("}")) {
      Value key = expr();
      expect(":", "between a dict key and its value");
      entries.emplace_back(std::move(key), expr());
      if (!at_op(",")) break;
      next();
    }
    expect("}", "to close the dict");
    return Value::dict(std::move(entries));
  }

  // A name, a dotted name, or a call or subscript kept as opaque text.
  Value named() {
    int start_column = peek().column;
    std::string name = dotted_name();
    if (at_op("(")) {
      next();
      std::vector<Value> args;
      Kwargs kwargs;
      call_args(args, kwargs);
      if (name == "torch.device" && args.size() == 1 && args[0].kind == Value::Kind::string)
        if (auto d = Device::parse(args[0].s)) return Value::of(*d);
      if (name == "float" && args.size() == 1 && args[0].kind == Value::Kind::string)
        if (auto v = parse_python_number(args[0].s)) return Value::floating(*v);
      return Value::name(source_text(start_column));
    }
    if (at_op("[")) {
      next();
      expr();
      expect("]", "to close the subscript");
      return Value::name(source_text(start_column));
    }
    if (name == "None") return Value::none();
    if (name == "True") return Value::boolean(true);
    if (name == "False") return Value::boolean(false);
    if (name.rfind("torch.", 0) == 0)
      if (auto d = dtype_from_torch(name)) return Value::of(*d);
    if (auto d = thunder_dtype(name)) {
      Value v = Value::of(*d);
      v.s = name;
      return v;
    }
    if (auto p = scope_.find(name)) return Value::of(p);
    if (name.find('.') == std::string::npos) scope_.note_undefined_use(name, start_column);
    return Value::name(name);
  }

  // `dtypes.float32`, `dtypes.bool8`: how Thunder prints its own dtypes.
  static std::optional<DType> thunder_dtype(std::string_view name) {
    if (name.rfind("dtypes.", 0) != 0) return std::nullopt;
    name.remove_prefix(7);
    if (name == "bool8") return DType::b8;
    return dtype_from_torch(name);
  }

  // The raw text from `start_column` to the end of the previous token.
  std::string source_text(int start_column) const {
    int end = toks_[pos_ - 1].end_column;
    return std::string(line_.substr(start_column - 1, end - start_column));
  }

  const std::vector<Token>& toks_;
  std::string_view line_;
  int first_column_;
  Scope& scope_;
  size_t pos_ = 0;
  int depth_ = 0;
};

struct TypeAnnotation {
  std::string name;
  std::string type;
};

// `t0: "cpu f32[2]", t1: "cpu f32[2]"` from a trailing comment; nullopt when it is something else.
std::optional<std::vector<TypeAnnotation>> type_comment(const std::string& comment, int column) {
  auto toks = lexer::tokenize(comment, column + 1);
  std::vector<TypeAnnotation> out;
  const auto& t = toks.tokens;
  size_t i = 0;
  while (i + 2 < t.size() && t[i].kind == Kind::name && t[i + 1].kind == Kind::op && t[i + 1].text == ":" &&
         t[i + 2].kind == Kind::string) {
    out.push_back({t[i].text, t[i + 2].text});
    i += 3;
    if (t[i].kind == Kind::op && t[i].text == ",") ++i;
    else break;
  }
  if (t[i].kind != Kind::end || toks.comment_column != 0) return std::nullopt;
  return out;
}

// Replaces each name leaf of a target but `_` by the next of `outputs`.
Value bind_target(const Value& target, const std::vector<ProxyPtr>& outputs, size_t& next) {
  if (target.kind == Value::Kind::name) return target.s == "_" ? target : Value::of(outputs.at(next++));
  Value out = target;
  for (auto& item : out.items) item = bind_target(item, outputs, next);
  return out;
}

// True when `target` is written as the printer writes outputs by default: one name, or a tuple
// of two or more names.
bool default_target(const Value& target) {
  if (target.kind == Value::Kind::name) return target.s != "_";
  if (target.kind != Value::Kind::tuple || target.items.size() < 2) return false;
  for (const auto& item : target.items)
    if (item.kind != Value::Kind::name || item.s == "_") return false;
  return true;
}

class TraceParser {
 public:
  explicit TraceParser(std::string_view text) : text_(text) {}

  ParseResult run() {
    ParseResult result;
    try {
      split_lines();
      auto trace = std::make_shared<Trace>();
      size_t i = preamble(*trace);
      body(*trace, i);
      require_return(*trace);
      scope_.refuse_never_defined();
      set_sources(*trace, implied_sources(*trace));  // what the headers say (ir/source_location.h)
      result.trace = std::move(trace);
    } catch (const Failure& f) {
      result.error = ParseError{f.line ? f.line : line_number_, f.column, printable(f.message)};
    } catch (const std::exception& e) {
      result.error = ParseError{line_number_, 1, std::string("internal parser error: ") + e.what()};
    }
    return result;
  }

 private:
  void split_lines() {
    size_t start = 0;
    while (start <= text_.size()) {
      auto end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      auto line = text_.substr(start, end - start);
      while (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF, and CRs a comment ends in
      lines_.push_back(line);
      start = end + 1;
    }
  }

  void at_line(size_t i) {
    line_number_ = static_cast<int>(i) + 1;
    scope_.line = line_number_;
  }

  size_t preamble(Trace& t) {
    size_t i = 0;
    for (; i < lines_.size(); ++i) {
      at_line(i);
      auto line = lines_[i];
      if (i == 0 && line.rfind("# Constructed by ", 0) == 0) {
        t.provenance = provenance(line.substr(17));
      } else if (line.empty()) {
        continue;
      } else if (line.rfind("import ", 0) == 0 || line.rfind("from ", 0) == 0) {
        t.imports.emplace_back(line);
        for (const auto& name : imported_names(line)) scope_.note_global(name);
      } else if (line[0] == '@') {
        t.decorators.emplace_back(line);
      } else if (line.rfind("def ", 0) == 0) {
        signature(t, line);
        return i + 1;
      } else {
        throw Failure{1, "expected an import, a decorator or 'def', found '" + std::string(line.substr(0, 40)) + "'"};
      }
    }
    throw Failure{1, "no 'def' line: a trace is a function definition"};
  }

  // The names an import line binds: `import a.b` binds a, `import a.b as c` c, `from m import x,
  // y as z` x and z.
  static std::vector<std::string> imported_names(std::string_view line) {
    std::string text(line);
    for (char& c : text)
      if (c == ',' || c == '(' || c == ')') c = ' ';
    std::vector<std::string> words;
    for (size_t at = 0; at < text.size();) {
      auto start = text.find_first_not_of(' ', at);
      if (start == std::string::npos) break;
      auto end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      words.push_back(text.substr(start, end - start));
      at = end;
    }
    std::vector<std::string> names;
    size_t first = 1;
    if (!words.empty() && words[0] == "from") {
      auto import = std::find(words.begin(), words.end(), "import");
      if (import == words.end()) return names;
      first = static_cast<size_t>(import - words.begin()) + 1;
    }
    for (size_t i = first; i < words.size(); ++i) {
      if (i + 2 < words.size() + 1 && i + 1 < words.size() && words[i + 1] == "as") {
        if (i + 2 < words.size()) names.push_back(words[i + 2]);
        i += 2;
        continue;
      }
      names.push_back(words[i].substr(0, words[i].find('.')));
    }
    return names;
  }

  static Provenance provenance(std::string_view rest) {
    Provenance p;
    auto took = rest.rfind(" (took ");
    const std::string_view suffix = " milliseconds)";
    if (took != std::string_view::npos && rest.size() > suffix.size() &&
        rest.substr(rest.size() - suffix.size()) == suffix) {
      auto number = rest.substr(took + 7, rest.size() - suffix.size() - took - 7);
      try {
        size_t used = 0;
        long long ms = std::stoll(std::string(number), &used);
        if (used == number.size()) {
          p.milliseconds = ms;
          rest = rest.substr(0, took);
        }
      } catch (const std::exception&) {
      }
    }
    p.pass = std::string(rest);
    return p;
  }

  void signature(Trace& t, std::string_view line) {
    logical_line_ = std::string(line);
    auto toks = lexer::tokenize(line, 1);
    StatementParser p(toks, line, 1, scope_);
    p.next();  // def
    if (p.peek().kind != Kind::name) p.fail("expected the function's name after 'def'");
    t.function_name = p.next().text;
    p.expect("(", "after the function's name");
    while (!p.at_op(")")) {
      ParamKind kind = ParamKind::positional;
      if (p.at_op("*")) {
        p.next();
        kind = ParamKind::varargs;
        if (p.at_op("*")) {
          p.next();
          kind = ParamKind::varkw;
        }
      }
      if (p.peek().kind != Kind::name) p.fail("expected a parameter name");
      int column = p.peek().column;
      std::string name = p.next().text;
      param_index_.try_emplace(name, t.params.size());
      t.params.push_back({scope_.define(name, nullptr, column), kind});
      if (!p.at_op(",")) break;
      p.next();
    }
    p.expect(")", "to close the parameter list");
    p.expect(":", "at the end of the 'def' line");
    p.expect_end("the 'def' line");
  }

  // The statement stack: stack_[k] is the last bound symbol seen at level k.
  void body(Trace& t, size_t i) {
    std::string header;
    for (; i < lines_.size(); ++i) {
      at_line(i);
      auto line = lines_[i];
      if (line.find_first_not_of(' ') == std::string_view::npos) {
        continue;
      }
      size_t indent = line.find_first_not_of(' ');
      if (line[indent] == '\t') throw Failure{static_cast<int>(indent) + 1, "tabs are not allowed for indentation"};
      if (indent < 2) throw Failure{1, "statement outside the function body (indent the body by two spaces)"};
      auto content = line.substr(indent);
      int column = static_cast<int>(indent) + 1;
      if (indent == 2 && content[0] == '#') {
        top_level_comment(t, content, column, header);
        continue;
      }
      if (indent == 2) {
        size_t first = i;
        content = logical_line(i, indent).substr(indent);
        BoundSymbol b = continued_statement(first, content, column);
        b.header = make_source(header);
        header.clear();
        add_top_level(t, std::move(b));
      } else {
        if (indent % 2 != 0) throw Failure{column, "subsymbol comments are indented by an even number of spaces"};
        size_t level = (indent - 2) / 2;
        if (content.rfind("# ", 0) != 0)
          throw Failure{column, "a line indented deeper than the body must be a subsymbol comment ('# ...')"};
        if (level > stack_.size())
          throw Failure{column, "subsymbol comment is " + std::to_string(level) +
                                    " levels deep but the statement above it is only " +
                                    std::to_string(stack_.size() - (stack_.empty() ? 0 : 1)) + " deep"};
        size_t first = i;
        content = logical_line(i, indent + 2).substr(indent + 2);
        BoundSymbol b = continued_statement(first, content, column + 2);
        stack_.resize(level);
        auto& siblings = stack_.back()->subsymbols;
        siblings.push_back(std::move(b));
        stack_.push_back(&siblings.back());
      }
    }
  }

  // Line `i` joined with the lines its trailing backslashes continue onto (Thunder wraps long
  // unpackings so); each continuation line starts with the same `prefix_length` characters of
  // indentation (and "# " in a subsymbol comment), which are dropped. `i` moves to the last line.
  std::string_view logical_line(size_t& i, size_t prefix_length) {
    logical_line_ = std::string(lines_[i]);
    continuations_.clear();
    auto prefix = lines_[i].substr(0, prefix_length);
    while (!logical_line_.empty() && logical_line_.back() == '\\') {
      logical_line_.pop_back();
      if (i + 1 >= lines_.size() || lines_[i + 1].substr(0, prefix_length) != prefix)
        throw Failure{static_cast<int>(logical_line_.size()) + 1,
                      "a line ending in '\\' must be continued on the next line, indented like this one"};
      at_line(++i);
      continuations_.push_back({logical_line_.size(), i, prefix_length});
      logical_line_ += lines_[i].substr(prefix_length);
    }
    at_line(continuations_.empty() ? i : i - continuations_.size());
    return logical_line_;
  }

  // The statement of the logical line that starts on line `first`; a failure's column in the
  // joined text becomes a line and column of the file.
  BoundSymbol continued_statement(size_t first, std::string_view content, int column) {
    size_t last = first + continuations_.size();
    try {
      auto result = statement(content, column);
      at_line(last);
      return result;
    } catch (Failure& f) {
      if (f.line == 0 && !continuations_.empty()) {
        size_t offset = static_cast<size_t>(std::max(f.column - 1, 0));
        f.line = static_cast<int>(first) + 1;
        for (const auto& c : continuations_) {
          if (offset < c.joined_at) break;
          f.line = static_cast<int>(c.line) + 1;
          f.column = static_cast<int>(offset - c.joined_at + c.physical_at) + 1;
        }
      }
      throw;
    }
  }

  void require_return(const Trace& t) {
    if (!t.body.empty() && t.body.back().symbol == &structural::ret()) return;
    size_t last = lines_.size() - 1;
    while (last > 0 && lines_[last].find_first_not_of(' ') == std::string_view::npos) --last;
    line_number_ = static_cast<int>(last) + 1;
    throw Failure{static_cast<int>(lines_[last].size()) + 1,
                  "expected a 'return' statement at the end of the function (is the printout cut off?)"};
  }

  void add_top_level(Trace& t, BoundSymbol b) {
    t.body.push_back(std::move(b));
    stack_.assign(1, &t.body.back());
    pending_types_ = t.body.back().symbol->form == PrintForm::unpack_sequence ? t.body.size() : 0;
    pending_index_ = 0;
  }

  // A top-level comment is an input (`# x: "T"`), the type of an unpacked value, or a header.
  void top_level_comment(Trace& t, std::string_view content, int column, std::string& header) {
    auto annotations = type_comment(std::string(content.substr(1)), column);
    if (!annotations || annotations->size() != 1) {
      header = std::string(content.size() > 1 ? content.substr(content[1] == ' ' ? 2 : 1) : "");
      return;
    }
    const auto& a = annotations->front();
    if (pending_types_ && pending_index_ < t.body[pending_types_ - 1].outputs.size()) {
      auto& outputs = t.body[pending_types_ - 1].outputs;
      // Type lines follow an unpacking in order; an output without one is skipped.
      size_t k = pending_index_;
      while (k < outputs.size() && outputs[k]->name != a.name) ++k;
      if (k < outputs.size() && untyped(*outputs[k])) {
        outputs[k] = scope_.define(a.name, &a.type, column);
        pending_index_ = k + 1;
        return;
      }
    }
    BoundSymbol b;
    b.symbol = &structural::unpack_trivial();
    b.outputs = {scope_.define(a.name, &a.type, column)};
    if (auto param = param_index_.find(a.name); param != param_index_.end())
      t.params[param->second].proxy = b.outputs[0];
    b.header = make_source(header);
    header.clear();
    add_top_level(t, std::move(b));
  }

  BoundSymbol statement(std::string_view content, int column) {
    auto toks = lexer::tokenize(content, column);
    StatementParser p(toks, line_text(), column, scope_);
    BoundSymbol b;
    const Token& first = p.peek();
    if (first.kind == Kind::name && first.text == "del" && p.peek(1).kind == Kind::name) {
      p.next();
      b.symbol = &structural::del();
      while (true) {
        b.args.push_back(p.expr());
        if (!p.at_op(",")) break;
        p.next();
      }
      p.expect_end("'del'");
      return b;
    }
    if (first.kind == Kind::name && first.text == "return") {
      p.next();
      b.symbol = &structural::ret();
      b.args.push_back(p.at_end() ? Value::none() : return_value(p, b));
      p.expect_end("the returned value");
      return b;
    }
    if (first.kind == Kind::name && p.at_op(":", 1) && p.peek(2).kind == Kind::string) {
      return annotated(p);
    }
    if (!p.assigns()) {
      call(p, b);
      if (toks.comment_column) throw Failure{toks.comment_column, "a call without outputs takes no comment"};
      return b;
    }
    // `a, b, = c` unpacks; anything else assigned is the output of a call.
    std::vector<std::pair<std::string, int>> names;
    Value target = p.target(names);
    bool bare_tuple = p.at_op(",");
    if (bare_tuple) {
      std::vector<Value> items{target};
      while (p.at_op(",")) {
        p.next();
        if (p.at_op("=")) break;
        items.push_back(p.target(names));
      }
      target = Value::tuple(std::move(items));
    }
    p.expect("=", "after the assigned names");
    if (bare_tuple && p.peek().kind == Kind::name && p.peek(1).kind == Kind::end) {
      for (const auto& item : target.items)
        if (item.kind != Value::Kind::name || item.s == "_")
          throw Failure{column, "an unpacking assigns to names only"};
      b.symbol = &structural::unpack_sequence();
      b.args.push_back(p.expr());
      p.expect_end("the unpacked value");
      for (const auto& [name, c] : names) b.outputs.push_back(scope_.define_untyped(name));
      return b;
    }
    call(p, b);
    std::vector<TypeAnnotation> types;
    if (toks.comment_column) {
      auto parsed = type_comment(toks.comment, toks.comment_column);
      if (!parsed)
        throw Failure{toks.comment_column, "expected type comments after the call, such as '# t0: \"cpu f32[2]\"'"};
      types = std::move(*parsed);
    }
    for (const auto& a : types)
      if (std::none_of(names.begin(), names.end(), [&](const auto& n) { return n.first == a.name; }))
        throw Failure{toks.comment_column, "the type comment names '" + a.name + "', which the call does not assign"};
    for (const auto& [name, c] : names) {
      const std::string* type = nullptr;
      for (const auto& a : types)
        if (a.name == name) type = &a.type;
      b.outputs.push_back(scope_.define(name, type, c));
    }
    if (!default_target(target)) {
      size_t next = 0;
      b.output_target = Shared<Value>::make(bind_target(target, b.outputs, next));
    }
    return b;
  }

  // `name(args)` to the end of the statement.
  void call(StatementParser& p, BoundSymbol& b) {
    std::string callee = p.dotted_name();
    p.expect("(", "after the called symbol's name");
    b.symbol = &SymbolRegistry::global().find_or_opaque(callee, PrintForm::call);
    p.call_args(b.args.mutable_vec(), b.kwargs.mutable_vec());
    p.expect_end("the call");
  }
  // `name: "type" = right-hand side` (prologue unpacks and checks).
  BoundSymbol annotated(StatementParser& p) {
    BoundSymbol b;
    std::string name = p.next().text;
    int name_column = p.peek().column;
    p.next();  // ':'
    std::string type = p.next().text;
    p.expect("=", "after the type annotation");
    int rhs_column = p.peek().column;
    if (p.peek().kind != Kind::name) p.fail("expected a name, an attribute, a subscript or a call");
    std::string callee = p.dotted_name();
    auto dot = callee.find('.');
    ProxyPtr object = dot == std::string::npos ? scope_.find(callee) : scope_.find(callee.substr(0, dot));
    bool object_member = object && dot != std::string::npos && callee.find('.', dot + 1) == std::string::npos;
    if (callee == "globals" && p.at_op("(")) {
      p.next();
      p.expect(")", "after 'globals('");
      p.expect("[", "after 'globals()'");
      b.symbol = &structural::unpack_function_obj();
      b.args.push_back(p.expr());
      p.expect("]", "to close the subscript");
    } else if (object_member && p.at_op("(")) {
      p.next();
      b.symbol = &SymbolRegistry::global().find_or_opaque(callee.substr(dot + 1), PrintForm::method);
      b.args.push_back(Value::of(object));
      p.call_args(b.args.mutable_vec(), b.kwargs.mutable_vec());
    } else if (object_member) {
      b.symbol = &structural::unpack_attr();
      b.args = {Value::of(object), Value::string(callee.substr(dot + 1))};
    } else if (object && dot == std::string::npos && p.at_op("[")) {
      p.next();
      b.symbol = &structural::unpack_key();
      b.args = {Value::of(object), p.expr()};
      p.expect("]", "to close the subscript");
    } else if (p.at_op("(")) {
      p.next();
      b.symbol = &SymbolRegistry::global().find_or_opaque(callee, PrintForm::annotated_call);
      p.call_args(b.args.mutable_vec(), b.kwargs.mutable_vec());
    } else {
      throw Failure{rhs_column, "unsupported right-hand side '" + callee +
                                    "' (expected name[key], name.attr, name.method(...), f(...) or globals()[...])"};
    }
    p.expect_end("the right-hand side");
    b.outputs.push_back(scope_.define(name, &type, name_column));
    return b;
  }

  // `return a, b` is a tuple in Python; keep it as one value.
  Value return_value(StatementParser& p, BoundSymbol& ret) {
    Value first = p.expr();
    if (!p.at_op(",")) return first;
    ret.tags.push_back(kBareTupleTag);
    std::vector<Value> items{first};
    while (p.at_op(",")) {
      p.next();
      if (p.at_end()) break;
      items.push_back(p.expr());
    }
    return Value::tuple(std::move(items));
  }

  std::string_view line_text() const { return logical_line_; }

  // Where a continuation line was appended to the logical line.
  struct Continuation {
    size_t joined_at;    // offset in logical_line_
    size_t line;         // 0-based line index
    size_t physical_at;  // offset in that line
  };

  std::string_view text_;
  std::vector<std::string_view> lines_;
  int line_number_ = 1;
  std::string logical_line_;  // the statement being read, continuation lines joined
  std::vector<Continuation> continuations_;
  Scope scope_;
  std::map<std::string, size_t> param_index_;  // parameter name -> index, for input comments
  std::vector<BoundSymbol*> stack_;
  size_t pending_types_ = 0;  // 1 + index of an unpack_sequence awaiting its type comments
  size_t pending_index_ = 0;
};

}  // namespace

ParseResult parse_trace(std::string_view text) { return TraceParser(text).run(); }

}  // namespace tv
