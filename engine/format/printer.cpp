#include "format/printer.h"

#include <algorithm>

namespace tv {
namespace {

// Thunder writes type texts between double quotes as they are; a quote, a backslash or a control
// character in a type text of ours is escaped so that the text reads back.
std::string quoted_type(const Proxy& p) {
  std::string out = "\"";
  for (char c : type_text(p)) {
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
  return out + "\"";
}

// A proxy the parser met without a type comment prints without one.
bool has_type(const Proxy& p) { return !(p.kind == ProxyKind::other && p.other_text.empty()); }

std::string call_args(const std::vector<Value>& args, const Kwargs& kwargs, size_t first = 0) {
  std::string out;
  for (size_t i = first; i < args.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += python_text(args[i]);
  }
  for (const auto& [k, v] : kwargs) {
    if (!out.empty()) out += ", ";
    out += k + "=" + python_text(v);
  }
  return out;
}

std::string arg_text(const BoundSymbol& b, size_t i) {
  return i < b.args.size() ? python_text(b.args[i]) : "None";
}

std::string annotated(const BoundSymbol& b, const std::string& rhs) {
  auto out = b.output();
  if (!out) return rhs;
  return out->name + ": " + quoted_type(*out) + " = " + rhs;
}

std::string names_of(const std::vector<ProxyPtr>& ps) {
  std::string out;
  for (size_t i = 0; i < ps.size(); ++i) out += (i ? ", " : "") + ps[i]->name;
  return out;
}

size_t count_proxies(const Value& v) {
  size_t n = 0;
  for_each_proxy(v, [&](const ProxyPtr&) { ++n; });
  return n;
}

// The left-hand side of a call: `t0`, `(t0, t1)`, or the target the outputs were written as.
std::string assigned_text(const BoundSymbol& b) {
  if (b.output_target && count_proxies(*b.output_target) == b.outputs.size()) {
    size_t next = 0;
    return python_text(map_proxies(*b.output_target, [&](const ProxyPtr&) { return b.outputs[next++]; }));
  }
  if (b.outputs.size() == 1) return b.outputs[0]->name;
  return "(" + names_of(b.outputs) + ")";
}

// `  # t0: "T", t1: "T"` for the outputs that have a type; empty when none has.
std::string type_comment(const std::vector<ProxyPtr>& outputs) {
  std::string types;
  for (const auto& o : outputs)
    if (has_type(*o)) types += (types.empty() ? "" : ", ") + o->name + ": " + quoted_type(*o);
  return types.empty() ? types : "  # " + types;
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

// Emits `line` at top level, or as a comment `depth` levels down.
void emit(std::string& out, int depth, const std::string& line) {
  out += "\n  ";
  if (depth > 0) out.append(2 * depth, ' ').append("# ");
  out += line;
}

void print_body(std::string& out, const std::vector<BoundSymbol>& body, int depth, int max_depth, bool headers,
                std::vector<const BoundSymbol*>* owners) {
  auto owned_by = [&](const BoundSymbol* b, size_t lines) {
    if (owners) owners->insert(owners->end(), lines, b);
  };
  for (const auto& b : body) {
    if (depth == 0 && headers && !b.header.empty()) {
      out += "\n";
      emit(out, 0, "# " + b.header);
      owned_by(nullptr, 2);
    }
    if (b.symbol->form == PrintForm::unpack_sequence && !b.outputs.empty()) {
      for (const auto& line : unpack_lines(b)) {
        emit(out, depth, line);
        owned_by(&b, 1);
      }
      for (const auto& o : b.outputs)
        if (has_type(*o)) {
          emit(out, depth, "# " + o->name + ": " + quoted_type(*o));
          owned_by(&b, 1);
        }
    } else {
      emit(out, depth, print_statement(b));
      owned_by(&b, 1);
    }
    if (depth < max_depth) print_body(out, b.subsymbols, depth + 1, max_depth, headers, owners);
  }
}

}  // namespace

std::string print_statement(const BoundSymbol& b) {
  const auto& name = b.symbol->name;
  switch (b.symbol->form) {
    case PrintForm::call: {
      std::string call = name + "(" + call_args(b.args, b.kwargs) + ")";
      if (b.outputs.empty() && !b.output_target) return call;
      return assigned_text(b) + " = " + call + type_comment(b.outputs);
    }
    case PrintForm::annotated_call: return annotated(b, name + "(" + call_args(b.args, b.kwargs) + ")");
    case PrintForm::method:
      return annotated(b, arg_text(b, 0) + "." + name + "(" + call_args(b.args, b.kwargs, 1) + ")");
    case PrintForm::subscript: return annotated(b, arg_text(b, 0) + "[" + arg_text(b, 1) + "]");
    case PrintForm::attribute:
      return annotated(b, arg_text(b, 0) + "." + (b.args.size() > 1 ? b.args[1].s : std::string()));
    case PrintForm::globals_lookup: return annotated(b, "globals()[" + arg_text(b, 0) + "]");
    case PrintForm::unpack_sequence: {
      std::string lhs;
      for (const auto& o : b.outputs) lhs += o->name + ", ";
      if (!lhs.empty()) lhs.pop_back();
      return lhs + " = " + arg_text(b, 0);
    }
    case PrintForm::unpack_trivial: {
      auto o = b.output();
      return o ? "# " + o->name + ": " + quoted_type(*o) : "# <nothing>";
    }
    case PrintForm::del: {
      std::string out = "del ";
      for (size_t i = 0; i < b.args.size(); ++i) out += (i ? ", " : "") + python_text(b.args[i]);
      return out;
    }
    case PrintForm::ret: {
      bool bare = std::find(b.tags.begin(), b.tags.end(), kBareTupleTag) != b.tags.end();
      if (bare && !b.args.empty() && b.args[0].kind == Value::Kind::tuple && b.args[0].items.size() > 1) {
        auto text = python_text(b.args[0]);
        return "return " + text.substr(1, text.size() - 2);
      }
      return "return " + arg_text(b, 0);
    }
  }
  return name;
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
