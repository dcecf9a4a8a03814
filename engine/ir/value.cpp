#include "ir/value.h"

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
  using K = Value::Kind;
  switch (v.kind) {
    case K::none: return "None";
    case K::boolean: return v.b ? "True" : "False";
    case K::integer: return std::to_string(v.i);
    case K::floating:  // as Thunder prints floats: repr, except for the non-finite ones
      if (std::isnan(v.f)) return "float('NaN')";
      if (std::isinf(v.f)) return v.f > 0 ? "float('inf')" : "-float('inf')";
      return python_float_repr(v.f);
    case K::string: return python_string_repr(v.s);
    case K::dtype: return v.s.empty() ? std::string(torch_name(v.dtype)) : v.s;
    case K::device: return "torch.device(\"" + v.device.str() + "\")";
    case K::proxy: return v.proxy ? v.proxy->name : "None";
    case K::name: return v.s;
    case K::tuple:
    case K::list: {
      std::string out = v.kind == K::tuple ? "(" : "[";
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        out += python_text(v.items[i]);
      }
      if (v.kind == K::tuple && v.items.size() == 1) out += ",";
      return out + (v.kind == K::tuple ? ")" : "]");
    }
    case K::dict: {
      std::string out = "{";
      for (size_t i = 0; i < v.entries.size(); ++i) {
        if (i) out += ", ";
        out += python_text(v.entries[i].first) + ": " + python_text(v.entries[i].second);
      }
      return out + "}";
    }
  }
  return "None";
}

void for_each_proxy(const Value& v, const std::function<void(const ProxyPtr&)>& fn) {
  if (v.kind == Value::Kind::proxy && v.proxy) fn(v.proxy);
  for (const auto& x : v.items) for_each_proxy(x, fn);
  for (const auto& [k, x] : v.entries) {
    for_each_proxy(k, fn);
    for_each_proxy(x, fn);
  }
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
