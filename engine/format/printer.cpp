#include "format/printer.h"

#include <algorithm>

namespace tv {
namespace {

// Thunder writes type texts between double quotes as they are; a quote, a backslash or a control
// character in a type text of ours is escaped so that the text reads back.
void append_quoted_type(std::string& out, const Proxy& p) {
  out += '"';
  size_t start = out.size();
  append_type_text(out, p);
  auto needs_escape = [](char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; };
  if (std::any_of(out.begin() + start, out.end(), needs_escape)) {
    std::string raw = out.substr(start);
    out.resize(start);
    for (char c : raw) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
          } else {
            out += c;
          }
      }
    }
  }
  out += '"';
}

// A proxy the parser met without a type comment prints without one.
bool has_type(const Proxy& p) { return !(p.kind == ProxyKind::other && p.other_text.empty()); }

// Arguments from `first` on, then keyword arguments, separated by ", " (after a non-empty text).
void append_call_args(std::string& out, const std::vector<Value>& args, const Kwargs& kwargs, size_t first = 0) {
  size_t start = out.size();
  for (size_t i = first; i < args.size(); ++i) {
    if (out.size() != start) out += ", ";
    append_python_text(out, args[i]);
  }
  for (const auto& [k, v] : kwargs) {
    if (out.size() != start) out += ", ";
    out += k;
    out += '=';
    append_python_text(out, v);
  }
}

void append_arg(std::string& out, const BoundSymbol& b, size_t i) {
  if (i < b.args.size()) append_python_text(out, b.args[i]);
  else out += "None";
}

// `t0: "T" = ` before the right-hand side of an annotated assignment; nothing without an output.
void append_annotation(std::string& out, const BoundSymbol& b) {
  auto output = b.output();
  if (!output) return;
  out += output->name;
  out += ": ";
  append_quoted_type(out, *output);
  out += " = ";
}

size_t count_proxies(const Value& v) {
  size_t n = 0;
  for_each_proxy(v, [&](const ProxyPtr&) { ++n; });
  return n;
}

// The left-hand side of a call: `t0`, `(t0, t1)`, or the target the outputs were written as.
void append_assigned(std::string& out, const BoundSymbol& b) {
  if (b.output_target && count_proxies(*b.output_target) == b.outputs.size()) {
    size_t next = 0;
    append_python_text(out, map_proxies(*b.output_target, [&](const ProxyPtr&) { return b.outputs[next++]; }));
    return;
  }
  if (b.outputs.size() == 1) {
    out += b.outputs[0]->name;
    return;
  }
  out += '(';
  for (size_t i = 0; i < b.outputs.size(); ++i) {
    if (i) out += ", ";
    out += b.outputs[i]->name;
  }
  out += ')';
}

// `  # t0: "T", t1: "T"` for the outputs that have a type; nothing when none has.
void append_type_comment(std::string& out, const std::vector<ProxyPtr>& outputs) {
  bool first = true;
  for (const auto& o : outputs) {
    if (!has_type(*o)) continue;
    out += first ? "  # " : ", ";
    out += o->name;
    out += ": ";
    append_quoted_type(out, *o);
    first = false;
  }
}

std::string arg_text(const BoundSymbol& b, size_t i) {
  std::string out;
  append_arg(out, b, i);
  return out;
}

// `a, b, = c` as Thunder wraps it: parts `a, `, `b, `, `= c`, a backslash ending a line whenever
// the next part would pass 80 characters (indentation not counted).
std::vector<std::string> unpack_lines(const BoundSymbol& b) {
  std::vector<std::string> parts;
  for (const auto& o : b.outputs) parts.push_back(o->name + ", ");
  parts.push_back("= " + arg_text(b, 0));
  std::vector<std::string> lines(1);
  for (const auto& part : parts) {
    if (!lines.back().empty() && lines.back().size() + part.size() > 80) {
      lines.back() += "\\";
      lines.emplace_back();
    }
    lines.back() += part;
  }
  return lines;
}

// Starts a line at top level, or as a comment `depth` levels down.
void begin_line(std::string& out, int depth) {
  out += "\n  ";
  if (depth > 0) out.append(2 * depth, ' ').append("# ");
}

void print_body(std::string& out, const std::vector<BoundSymbol>& body, int depth, int max_depth, bool headers,
                std::vector<const BoundSymbol*>* owners) {
  auto owned_by = [&](const BoundSymbol* b, size_t lines) {
    if (owners) owners->insert(owners->end(), lines, b);
  };
  for (const auto& b : body) {
    if (depth == 0 && headers && b.header && !b.header->empty()) {
      out += "\n";
      begin_line(out, 0);
      out += "# ";
      out += *b.header;
      owned_by(nullptr, 2);
    }
    if (b.symbol->form == PrintForm::unpack_sequence && !b.outputs.empty()) {
      for (const auto& line : unpack_lines(b)) {
        begin_line(out, depth);
        out += line;
        owned_by(&b, 1);
      }
      for (const auto& o : b.outputs)
        if (has_type(*o)) {
          begin_line(out, depth);
          out += "# ";
          out += o->name;
          out += ": ";
          append_quoted_type(out, *o);
          owned_by(&b, 1);
        }
    } else {
      begin_line(out, depth);
      append_statement(out, b);
      owned_by(&b, 1);
    }
    if (depth < max_depth) print_body(out, b.subsymbols, depth + 1, max_depth, headers, owners);
  }
}

}  // namespace

std::string print_statement(const BoundSymbol& b) {
  std::string out;
  append_statement(out, b);
  return out;
}

void append_statement(std::string& out, const BoundSymbol& b) {
  const auto& name = b.symbol->name;
  auto call = [&](size_t first_arg) {
    out += name;
    out += '(';
    append_call_args(out, b.args, b.kwargs, first_arg);
    out += ')';
  };
  switch (b.symbol->form) {
    case PrintForm::call: {
      bool assigns = !b.outputs.empty() || b.output_target;
      if (assigns) {
        append_assigned(out, b);
        out += " = ";
      }
      call(0);
      if (assigns) append_type_comment(out, b.outputs);
      return;
    }
    case PrintForm::annotated_call:
      append_annotation(out, b);
      call(0);
      return;
    case PrintForm::method:
      append_annotation(out, b);
      append_arg(out, b, 0);
      out += '.';
      call(1);
      return;
    case PrintForm::subscript:
      append_annotation(out, b);
      append_arg(out, b, 0);
      out += '[';
      append_arg(out, b, 1);
      out += ']';
      return;
    case PrintForm::attribute:
      append_annotation(out, b);
      append_arg(out, b, 0);
      out += '.';
      if (b.args.size() > 1) out += b.args[1].s;
      return;
    case PrintForm::globals_lookup:
      append_annotation(out, b);
      out += "globals()[";
      append_arg(out, b, 0);
      out += ']';
      return;
    case PrintForm::unpack_sequence: {  // `a, b, = c`: each name and ", ", the last space dropped
      size_t start = out.size();
      for (const auto& o : b.outputs) {
        out += o->name;
        out += ", ";
      }
      if (out.size() != start) out.pop_back();
      out += " = ";
      append_arg(out, b, 0);
      return;
    }
    case PrintForm::unpack_trivial: {
      auto o = b.output();
      if (!o) {
        out += "# <nothing>";
        return;
      }
      out += "# ";
      out += o->name;
      out += ": ";
      append_quoted_type(out, *o);
      return;
    }
    case PrintForm::del:
      out += "del ";
      for (size_t i = 0; i < b.args.size(); ++i) {
        if (i) out += ", ";
        append_python_text(out, b.args[i]);
      }
      return;
    case PrintForm::ret: {
      bool bare = std::find(b.tags.begin(), b.tags.end(), kBareTupleTag) != b.tags.end();
      out += "return ";
      if (bare && !b.args.empty() && b.args[0].kind == Value::Kind::tuple && b.args[0].items.size() > 1) {
        auto text = python_text(b.args[0]);
        out.append(text, 1, text.size() - 2);
        return;
      }
      append_arg(out, b, 0);
      return;
    }
  }
  out += name;
}

std::string print_bound_symbol(const BoundSymbol& b, int depth) {
  std::string out;
  print_body(out, {b}, 0, depth, true, nullptr);
  return out.substr(1);  // drop the leading newline
}

std::string print_trace(const Trace& t, const PrintOptions& options) {
  std::string out;
  out.reserve(128 * t.body.size());  // about a statement's lines each: few regrowths, however long
  if (options.provenance && t.provenance) {
    out += "# Constructed by " + t.provenance->pass;
    if (t.provenance->milliseconds) out += " (took " + std::to_string(*t.provenance->milliseconds) + " milliseconds)";
    out += "\n";
  }
  for (const auto& line : t.imports) out += line + "\n";
  out += "\n";
  for (const auto& d : t.decorators) out += d + "\n";
  out += "def " + t.function_name + "(";
  for (size_t i = 0; i < t.params.size(); ++i) {
    if (i) out += ", ";
    const auto& p = t.params[i];
    out += (p.kind == ParamKind::varargs ? "*" : p.kind == ParamKind::varkw ? "**" : "") + p.proxy->name;
  }
  out += "):";
  if (options.line_owners) options.line_owners->assign(std::count(out.begin(), out.end(), '\n') + 1, nullptr);
  print_body(out, t.body, 0, options.depth, options.headers, options.line_owners);
  return out;
}

}  // namespace tv
