// Values: the arguments of a bound symbol and the structure of a return.
// Contract: a Value is a small Python-like tree (None, bool, int, float, str, dtype, device, proxy,
// an opaque name, tuple, list, dict). `python_text` prints it the way Thunder's printer does, so
// `(x,)` stays a one-element tuple and `2` and `2.0` stay distinct.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "ir/proxy.h"

namespace tv {

struct Value {
  enum class Kind : uint8_t { none, boolean, integer, floating, string, dtype, device, proxy, name, tuple, list, dict };
  // The members a walk over a trace's proxies reads (for_each_proxy: the kind, the proxy, the items
  // and entries) come first: passes walk every argument of every statement, and on a trace larger
  // than a core's cache each line a value spreads over is a miss. Only a tuple or list has items,
  // only a dict entries; the walk reads no further than the kind says.
  Kind kind = Kind::none;
  bool b = false;
  DType dtype = DType::f32;
  ProxyPtr proxy;
  std::vector<Value> items;                          // tuple, list
  std::vector<std::pair<Value, Value>> entries;      // dict
  Device device;
  int64_t i = 0;
  double f = 0;
  std::string s;  // string contents, opaque name text, a dtype's spelling when not torch's (`dtypes.float32`)

  Value();  // defined below, where Value is complete: clang with libstdc++ needs it for a pair of Values

  static Value none() { return {}; }
  static Value boolean(bool v) { Value x; x.kind = Kind::boolean; x.b = v; return x; }
  static Value integer(int64_t v) { Value x; x.kind = Kind::integer; x.i = v; return x; }
  static Value floating(double v) { Value x; x.kind = Kind::floating; x.f = v; return x; }
  static Value string(std::string v) { Value x; x.kind = Kind::string; x.s = std::move(v); return x; }
  static Value of(DType v) { Value x; x.kind = Kind::dtype; x.dtype = v; return x; }
  static Value of(Device v) { Value x; x.kind = Kind::device; x.device = v; return x; }
  static Value of(ProxyPtr p) { Value x; x.kind = Kind::proxy; x.proxy = std::move(p); return x; }
  static Value name(std::string v) { Value x; x.kind = Kind::name; x.s = std::move(v); return x; }
  static Value tuple(std::vector<Value> v) { Value x; x.kind = Kind::tuple; x.items = std::move(v); return x; }
  static Value list(std::vector<Value> v) { Value x; x.kind = Kind::list; x.items = std::move(v); return x; }
  static Value dict(std::vector<std::pair<Value, Value>> v) { Value x; x.kind = Kind::dict; x.entries = std::move(v); return x; }
  static Value ints(const std::vector<int64_t>& v);  // a tuple of ints

  bool is_none() const { return kind == Kind::none; }
  bool is_proxy() const { return kind == Kind::proxy; }
  bool is_number() const { return kind == Kind::boolean || kind == Kind::integer || kind == Kind::floating; }
  bool is_sequence() const { return kind == Kind::tuple || kind == Kind::list; }
  double as_double() const;                    // bool, int or float
  std::vector<int64_t> as_ints() const;        // an int or a sequence of ints
};

inline Value::Value() = default;

using Kwargs = std::vector<std::pair<std::string, Value>>;

std::string python_text(const Value&);
void append_python_text(std::string& out, const Value&);  // python_text appended to `out`
// Calls `fn` on every proxy inside `v`, depth first, left to right. Inline: passes call it for every
// argument of every statement, mostly on a lone proxy, whose walk then reads the kind and the
// proxy and nothing further into the value.
template <class Fn>
void for_each_proxy(const Value& v, Fn&& fn) {
  switch (v.kind) {
    case Value::Kind::proxy:
      if (v.proxy) fn(v.proxy);
      return;
    case Value::Kind::tuple:
    case Value::Kind::list:
      for (const auto& x : v.items) for_each_proxy(x, fn);
      return;
    case Value::Kind::dict:
      for (const auto& [k, x] : v.entries) {
        for_each_proxy(k, fn);
        for_each_proxy(x, fn);
      }
      return;
    default:
      return;
  }
}
// Rebuilds `v` with each proxy replaced by `fn(proxy)`.
Value map_proxies(const Value& v, const std::function<ProxyPtr(const ProxyPtr&)>& fn);

}  // namespace tv
