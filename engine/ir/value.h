// Values: the arguments of a bound symbol and the structure of a return.
// Contract: a Value is a small Python-like tree (None, bool, int, float, str, dtype, device, proxy,
// an opaque name, tuple, list, dict). `python_text` prints it the way Thunder's printer does, so
// `(x,)` stays a one-element tuple and `2` and `2.0` stay distinct.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/cow_vector.h"
#include "ir/dtype.h"
#include "ir/proxy.h"
#include "ir/shared.h"

namespace tv {

// Text: an immutable string that copies share (null for ""), read as a std::string. One pointer,
// where a std::string takes 32 bytes, and copying it copies no characters.
class Text {
 public:
  Text() = default;
  Text(std::string s) : text_(s.empty() ? nullptr : Shared<std::string>::make(std::move(s))) {}  // NOLINT
  Text(const char* s) : Text(std::string(s)) {}                                                 // NOLINT

  const std::string& str() const { return text_ ? *text_ : no_text(); }
  operator const std::string&() const { return str(); }  // NOLINT: read as a string
  operator std::string_view() const { return str(); }     // NOLINT
  bool empty() const { return !text_; }
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  std::string::const_iterator begin() const { return str().begin(); }
  std::string::const_iterator end() const { return str().end(); }

  friend bool operator==(const Text& a, const Text& b) { return a.text_ == b.text_ || a.str() == b.str(); }
  friend bool operator==(const Text& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const Text& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const Text& a, const char* b) { return a.str() == b; }
  friend bool operator!=(const Text& a, const Text& b) { return !(a == b); }
  friend bool operator!=(const Text& a, std::string_view b) { return !(a == b); }
  friend bool operator!=(const Text& a, const std::string& b) { return !(a == b); }
  friend bool operator!=(const Text& a, const char* b) { return !(a == b); }
  friend std::string operator+(const std::string& a, const Text& b) { return a + b.str(); }
  friend std::string operator+(const char* a, const Text& b) { return a + b.str(); }
  friend std::string operator+(const Text& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const Text& a, const char* b) { return a.str() + b; }

 private:
  static const std::string& no_text() {
    static const std::string none;
    return none;
  }
  Shared<std::string> text_;
};

struct Value {
  enum class Kind : uint8_t { none, boolean, integer, floating, string, dtype, device, proxy, name, tuple, list, dict };
  // One cache line (64 bytes). Passes walk every argument of every statement, and on a trace larger
  // than a core's cache each line a value spreads over is a miss; the builder writes every new
  // statement's values afresh. So the lists are shared buffers (copy on write, one pointer each),
  // the string is shared text, and an int and a float, which no value holds both of, share their
  // eight bytes: read `i` only of an integer, `f` only of a float.
  Kind kind = Kind::none;
  bool b = false;
  DType dtype = DType::f32;
  ProxyPtr proxy;
  CowVector<Value> items;                        // tuple, list
  CowVector<std::pair<Value, Value>> entries;    // dict
  union {
    int64_t i = 0;  // integer
    double f;       // floating
  };
  Device device;
  Text s;  // string contents, opaque name text, a dtype's spelling when not torch's (`dtypes.float32`)

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
static_assert(sizeof(Value) == 64, "a value is one cache line");

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
