#include "format/parser.h"

#include <map>
#include <stdexcept>

#include "format/lexer.h"
#include "format/printer.h"
#include "ir/python_literal.h"

namespace tv {

std::string ParseError::describe(std::string_view file) const {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

namespace {

using lexer::Kind;
using lexer::Token;

// Thrown inside the parser only; parse_trace turns it into a ParseError.
struct Failure {
  int column;
  std::string message;
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
  ProxyPtr find(const std::string& name) const {
    auto it = proxies_.find(name);
    return it == proxies_.end() ? nullptr : it->second;
  }
  // Defines `name` with `type_text`; reuses the existing proxy when it has the same type, so a
  // subsymbol that redefines its parent's output shares the proxy.
  ProxyPtr define(const std::string& name, const std::string* type, int column) {
    auto existing = find(name);
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

 private:
  std::map<std::string, ProxyPtr> proxies_;
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
      return Value::integer((negative ? -1 : 1) * std::stoll(text));
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
    if (auto p = scope_.find(name)) return Value::of(p);
    return Value::name(name);
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

// `t0: "cpu f32[2]", t1: "cpu f32[2]"` from a trailing comment; empty when it is something else.
std::vector<TypeAnnotation> type_comment(const std::string& comment, int column) {
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
  if (t[i].kind != Kind::end || !toks.comment.empty()) return {};
  return out;
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
      result.trace = std::move(trace);
    } catch (const Failure& f) {
      result.error = ParseError{line_number_, f.column, f.message};
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
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      start = end + 1;
    }
  }

  void at_line(size_t i) { line_number_ = static_cast<int>(i) + 1; }

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
      t.params.push_back({scope_.define(p.next().text, nullptr, column), kind});
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
        BoundSymbol b = statement(content, column);
        b.header = std::move(header);
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
        BoundSymbol b = statement(content.substr(2), column + 2);
        stack_.resize(level);
        auto& siblings = stack_.back()->subsymbols;
        siblings.push_back(std::move(b));
        stack_.push_back(&siblings.back());
      }
    }
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
    if (annotations.size() != 1) {
      header = std::string(content.size() > 1 ? content.substr(content[1] == ' ' ? 2 : 1) : "");
      return;
    }
    const auto& a = annotations[0];
    if (pending_types_ && pending_index_ < t.body[pending_types_ - 1].outputs.size() &&
        t.body[pending_types_ - 1].outputs[pending_index_]->name == a.name) {
      auto& outputs = t.body[pending_types_ - 1].outputs;
      outputs[pending_index_] = scope_.define(a.name, &a.type, column);
      ++pending_index_;
      return;
    }
    BoundSymbol b;
    b.symbol = &structural::unpack_trivial();
    b.outputs = {scope_.define(a.name, &a.type, column)};
    for (auto& p : t.params)
      if (p.proxy->name == a.name) p.proxy = b.outputs[0];
    b.header = std::move(header);
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
    // Targets of an assignment, if any.
    size_t start = p.position();
    std::vector<std::pair<std::string, int>> targets;
    bool parenthesised = false, trailing_comma = false;
    if (p.at_op("(")) {
      parenthesised = true;
      p.next();
    }
    while (p.peek().kind == Kind::name && (p.at_op(",", 1) || p.at_op("=", 1) || p.at_op(")", 1))) {
      targets.emplace_back(p.peek().text, p.peek().column);
      p.next();
      trailing_comma = false;
      if (p.at_op(",")) {
        p.next();
        trailing_comma = true;
      }
    }
    if (parenthesised && !targets.empty()) p.expect(")", "to close the assigned names");
    if (!targets.empty() && p.at_op("=")) {
      p.next();
    } else {
      targets.clear();
      p.rewind(start);  // not an assignment: start over
    }
    if (!targets.empty() && !parenthesised && (trailing_comma || targets.size() > 1) &&
        p.peek().kind == Kind::name && p.peek(1).kind == Kind::end) {
      b.symbol = &structural::unpack_sequence();
      b.args.push_back(p.expr());
      p.expect_end("the unpacked value");
      for (const auto& [name, c] : targets) b.outputs.push_back(scope_.define(name, nullptr, c));
      return b;
    }
    std::string callee = p.dotted_name();
    p.expect("(", "after the called symbol's name");
    b.symbol = &SymbolRegistry::global().find_or_opaque(callee, PrintForm::call);
    p.call_args(b.args, b.kwargs);
    p.expect_end("the call");
    if (!targets.empty()) {
      auto types = type_comment(toks.comment, toks.comment_column);
      for (size_t k = 0; k < targets.size(); ++k) {
        const std::string* type = nullptr;
        for (const auto& a : types)
          if (a.name == targets[k].first) type = &a.type;
        b.outputs.push_back(scope_.define(targets[k].first, type, targets[k].second));
      }
    }
    return b;
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
      p.call_args(b.args, b.kwargs);
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
      p.call_args(b.args, b.kwargs);
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

  std::string_view line_text() const { return lines_[line_number_ - 1]; }

  std::string_view text_;
  std::vector<std::string_view> lines_;
  int line_number_ = 1;
  Scope scope_;
  std::vector<BoundSymbol*> stack_;
  size_t pending_types_ = 0;  // 1 + index of an unpack_sequence awaiting its type comments
  size_t pending_index_ = 0;
};

}  // namespace

ParseResult parse_trace(std::string_view text) { return TraceParser(text).run(); }

}  // namespace tv
