#include "ir/value.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "ir/python_literal.h"

namespace tv {

Value Value::ints(const std::vector<int64_t>& v) {
  std::vector<Value> items;
  for (auto x : v) items.push_back(Value::integer(x));
  return Value::tuple(std::move(items));
}

double Value::as_double() const {
  switch (kind) {
    case Kind::boolean: return b ? 1 : 0;
    case Kind::integer: return static_cast<double>(i);
    case Kind::floating: return f;
    default: throw std::invalid_argument("expected a number, got " + python_text(*this));
  }
}

std::vector<int64_t> Value::as_ints() const {
  if (kind == Kind::integer) return {i};
  if (!is_sequence()) throw std::invalid_argument("expected ints, got " + python_text(*this));
  std::vector<int64_t> out;
  for (const auto& x : items) {
    if (x.kind != Kind::integer) throw std::invalid_argument("expected ints, got " + python_text(*this));
    out.push_back(x.i);
  }
  return out;
}

std::string python_text(const Value& v) {
  std::string out;
  append_python_text(out, v);
  return out;
}

void append_python_text(std::string& out, const Value& v) {
  using K = Value::Kind;
  switch (v.kind) {
    case K::none: out += "None"; return;
    case K::boolean: out += v.b ? "True" : "False"; return;
    case K::integer: {
      char digits[24];
      auto end = std::to_chars(digits, digits + sizeof digits, v.i).ptr;
      out.append(digits, end);
      return;
    }
    case K::floating:  // as Thunder prints floats: repr, except for the non-finite ones
      if (std::isnan(v.f)) out += "float('NaN')";
      else if (std::isinf(v.f)) out += v.f > 0 ? "float('inf')" : "-float('inf')";
      else out += python_float_repr(v.f);
      return;
    case K::string: out += python_string_repr(v.s); return;
    case K::dtype:
      if (v.s.empty()) out += torch_name(v.dtype);
      else out += v.s;
      return;
    case K::device: out += "torch.device(\""; out += v.device.str(); out += "\")"; return;
    case K::proxy: out += v.proxy ? std::string_view(v.proxy->name) : std::string_view("None"); return;
    case K::name: out += v.s; return;
    case K::tuple:
    case K::list: {
      out += v.kind == K::tuple ? '(' : '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        append_python_text(out, v.items[i]);
      }
      if (v.kind == K::tuple && v.items.size() == 1) out += ',';
      out += v.kind == K::tuple ? ')' : ']';
      return;
    }
    case K::dict: {
      out += '{';
      for (size_t i = 0; i < v.entries.size(); ++i) {
        if (i) out += ", ";
        append_python_text(out, v.entries[i].first);
        out += ": ";
        append_python_text(out, v.entries[i].second);
      }
      out += '}';
      return;
    }
  }
  out += "None";
}

Value map_proxies(const Value& v, const std::function<ProxyPtr(const ProxyPtr&)>& fn) {
  Value out = v;
  if (out.kind == Value::Kind::proxy && out.proxy) out.proxy = fn(out.proxy);
  for (auto& x : out.items) x = map_proxies(x, fn);
  for (auto& [k, x] : out.entries) {
    k = map_proxies(k, fn);
    x = map_proxies(x, fn);
  }
  return out;
}

}  // namespace tv
