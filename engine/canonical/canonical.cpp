#include "canonical/canonical.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "format/printer.h"

namespace tv {
namespace {

class Renamer {
 public:
  ProxyPtr define(const ProxyPtr& p) {
    auto it = names_.find(p->name);
    if (it != names_.end()) return it->second;
    return names_[p->name] = renamed(*p, "p" + std::to_string(names_.size()));
  }
  ProxyPtr use(const ProxyPtr& p) {
    auto it = names_.find(p->name);
    return it == names_.end() ? define(p) : it->second;
  }
  Value use(const Value& v) {
    return map_proxies(v, [this](const ProxyPtr& p) { return use(p); });
  }

  BoundSymbol rename(const BoundSymbol& b) {
    BoundSymbol out;
    out.symbol = b.symbol;
    out.tags = b.tags;
    for (const auto& a : b.args) out.args.push_back(use(a));
    for (const auto& [k, v] : b.kwargs) out.kwargs.emplace_back(k, use(v));
    for (const auto& o : b.outputs) out.outputs.push_back(define(o));
    out.output_target = b.output_target;  // its proxies stand for the outputs by position
    for (const auto& s : b.subsymbols) out.subsymbols.push_back(rename(s));
    return out;
  }

 private:
  std::unordered_map<std::string, ProxyPtr> names_;
};

}  // namespace

TracePtr canonical(const Trace& t) {
  Renamer r;
  auto out = std::make_shared<Trace>();
  out->function_name = t.function_name;
  out->tags = t.tags;
  for (const auto& p : t.params) out->params.push_back({r.define(p.proxy), p.kind});
  for (const auto& b : t.body) out->body.push_back(r.rename(b));
  return out;
}

std::string canonical_text(const Trace& t) { return print_trace(*canonical(t)); }

bool canonically_equal(const Trace& a, const Trace& b) {
  if (!same_shape(a, b)) return false;
  if (same_objects(a, b)) return true;
  switch (match_up_to_names(a, b)) {
    case NameMatch::renamed: return true;
    case NameMatch::different: return false;
    case NameMatch::unknown: break;
  }
  return canonical_text(a) == canonical_text(b);
}

uint64_t canonical_hash(const Trace& t) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : canonical_text(t)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

// How two values are compared: as the same objects (the same proxies, equal literals), or by shape
// (what prints alike whatever the names and is cheap to see: kinds, sizes, integers, booleans,
// strings; a proxy is its kind alone, and so are a float, a dtype and a device, whose spellings may
// coincide). Different shapes print differently.
enum class Match { objects, shape };

bool same_value(const Value& a, const Value& b, Match match) {
  if (a.kind != b.kind) return false;
  const bool objects = match == Match::objects;
  auto same = [match](const Value& x, const Value& y) { return same_value(x, y, match); };
  switch (a.kind) {
    case Value::Kind::none: return true;
    case Value::Kind::boolean: return a.b == b.b;
    case Value::Kind::integer: return a.i == b.i;
    case Value::Kind::floating: return !objects || a.f == b.f || (a.f != a.f && b.f != b.f);  // NaN prints as NaN
    case Value::Kind::string:
    case Value::Kind::name: return a.s == b.s;
    case Value::Kind::dtype: return !objects || (a.dtype == b.dtype && a.s == b.s);
    case Value::Kind::device: return !objects || a.device == b.device;
    case Value::Kind::proxy: return !objects || a.proxy == b.proxy;
    case Value::Kind::tuple:
    case Value::Kind::list:
      return a.items.size() == b.items.size() && std::equal(a.items.begin(), a.items.end(), b.items.begin(), same);
    case Value::Kind::dict:
      return a.entries.size() == b.entries.size() &&
             std::equal(a.entries.begin(), a.entries.end(), b.entries.begin(), [&](const auto& x, const auto& y) {
               return same(x.first, y.first) && same(x.second, y.second);
             });
  }
  return false;
}

bool same_arguments(const BoundSymbol& x, const BoundSymbol& y, Match match) {
  auto same = [match](const Value& u, const Value& v) { return same_value(u, v, match); };
  if (x.args.size() != y.args.size() || x.kwargs.size() != y.kwargs.size() ||
      !std::equal(x.args.begin(), x.args.end(), y.args.begin(), same))
    return false;
  for (size_t k = 0; k < x.kwargs.size(); ++k)
    if (x.kwargs[k].first != y.kwargs[k].first || !same(x.kwargs[k].second, y.kwargs[k].second)) return false;
  return true;
}

// Whether the statement's printing shows every argument and keyword argument, and its output count.
bool prints_all_arguments(PrintForm form) {
  return form == PrintForm::call || form == PrintForm::annotated_call || form == PrintForm::method;
}

// Whether two statements of one symbol agree in the shape of what their printing shows in full:
// every argument and the output count of a call, the arguments of a `return` or a `del`.
bool same_printed_arguments(const BoundSymbol& x, const BoundSymbol& y) {
  const PrintForm form = x.symbol->form;
  if (prints_all_arguments(form)) return x.outputs.size() == y.outputs.size() && same_arguments(x, y, Match::shape);
  if (form != PrintForm::ret && form != PrintForm::del) return true;
  auto same = [](const Value& u, const Value& v) { return same_value(u, v, Match::shape); };
  return x.args.size() == y.args.size() && std::equal(x.args.begin(), x.args.end(), y.args.begin(), same);
}

bool same_statement_shapes(const std::vector<BoundSymbol>& a, const std::vector<BoundSymbol>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const BoundSymbol &x = a[i], &y = b[i];
    if (x.symbol != y.symbol || (x.symbol && !same_printed_arguments(x, y))) return false;
    if (!x.subsymbols.shares_with(y.subsymbols) && !same_statement_shapes(x.subsymbols, y.subsymbols)) return false;
  }
  return true;
}

bool same_statements(const std::vector<BoundSymbol>& a, const std::vector<BoundSymbol>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const BoundSymbol &x = a[i], &y = b[i];
    if (x.symbol != y.symbol || x.outputs != y.outputs || x.tags != y.tags ||
        bool(x.output_target) != bool(y.output_target) || !same_arguments(x, y, Match::objects))
      return false;
    if (x.output_target && !same_value(*x.output_target, *y.output_target, Match::objects)) return false;
    if (!x.subsymbols.shares_with(y.subsymbols) && !same_statements(x.subsymbols, y.subsymbols)) return false;
  }
  return true;
}

// Whether two proxies print alike whatever their names: every member but the name is equal. A
// member added to Proxy must be compared here, or a changed stage could be taken for unchanged.
bool alike_but_name(const Proxy& a, const Proxy& b) {
  return a.kind == b.kind && a.shape == b.shape && a.dtype == b.dtype && a.device == b.device &&
         a.requires_grad == b.requires_grad && a.distribution == b.distribution && a.number_type == b.number_type &&
         a.number_value == b.number_value && a.other_text == b.other_text;
}

// Walks two traces side by side in the order canonical() numbers their proxies (parameters, then
// each statement's arguments, keyword arguments and outputs, then its subsymbols), pairing them: a
// name met for the first time on both sides gets the next number on both, a name met again must
// have the same number on both sides. Every occurrence of a paired name must print alike, not the
// first alone: where a name stands for proxies that print differently, the canonical text shows
// one of them, and this walk need not know which.
//
// It stops at the first difference. Up to there both texts print the same; a name that pairs
// otherwise where the printer writes it (a call's arguments and outputs, a return's or a del's
// arguments) makes the texts differ there. Any other difference leaves the texts to decide.
class NamePairing {
 public:
  NameMatch traces(const Trace& a, const Trace& b) {
    if (a.function_name != b.function_name || a.tags != b.tags || a.params.size() != b.params.size())
      return NameMatch::unknown;
    for (size_t i = 0; i < a.params.size(); ++i) {
      if (a.params[i].kind != b.params[i].kind) return NameMatch::unknown;
      if (auto m = pair(a.params[i].proxy.get(), b.params[i].proxy.get(), true); m != NameMatch::renamed) return m;
    }
    return statements(a.body, b.body);
  }

 private:
  NameMatch statements(const std::vector<BoundSymbol>& a, const std::vector<BoundSymbol>& b) {
    if (a.size() != b.size()) return NameMatch::unknown;
    for (size_t i = 0; i < a.size(); ++i)
      if (auto m = statement(a[i], b[i]); m != NameMatch::renamed) return m;
    return NameMatch::renamed;
  }

  NameMatch statement(const BoundSymbol& x, const BoundSymbol& y) {
    if (x.symbol != y.symbol || !x.symbol || x.tags != y.tags || x.args.size() != y.args.size() ||
        x.kwargs.size() != y.kwargs.size() || x.outputs.size() != y.outputs.size() ||
        bool(x.output_target) != bool(y.output_target))
      return NameMatch::unknown;
    const PrintForm form = x.symbol->form;
    const bool call = prints_all_arguments(form);
    const bool printed_args = call || form == PrintForm::ret || form == PrintForm::del;
    for (size_t k = 0; k < x.args.size(); ++k)
      if (auto m = value(x.args[k], y.args[k], printed_args); m != NameMatch::renamed) return m;
    for (size_t k = 0; k < x.kwargs.size(); ++k) {
      if (x.kwargs[k].first != y.kwargs[k].first) return NameMatch::unknown;
      if (auto m = value(x.kwargs[k].second, y.kwargs[k].second, printed_args); m != NameMatch::renamed) return m;
    }
    // A call prints every output; an annotated call or a method its first (`t0: "T" = ...`).
    for (size_t k = 0; k < x.outputs.size(); ++k) {
      const bool printed = form == PrintForm::call || (call && k == 0);
      if (auto m = pair(x.outputs[k].get(), y.outputs[k].get(), printed); m != NameMatch::renamed) return m;
    }
    // The printer writes a target's proxies as the outputs, by position; canonical() keeps it as it is.
    if (x.output_target && !same_target(*x.output_target, *y.output_target)) return NameMatch::unknown;
    return statements(x.subsymbols, y.subsymbols);
  }

  // Literals compare as objects (equal objects print alike), proxies by pairing.
  NameMatch value(const Value& a, const Value& b, bool printed) {
    if (a.kind != b.kind) return NameMatch::unknown;
    switch (a.kind) {
      case Value::Kind::proxy: return pair(a.proxy.get(), b.proxy.get(), printed);
      case Value::Kind::tuple:
      case Value::Kind::list:
        if (a.items.size() != b.items.size()) return NameMatch::unknown;
        for (size_t i = 0; i < a.items.size(); ++i)
          if (auto m = value(a.items[i], b.items[i], printed); m != NameMatch::renamed) return m;
        return NameMatch::renamed;
      case Value::Kind::dict:
        if (a.entries.size() != b.entries.size()) return NameMatch::unknown;
        for (size_t i = 0; i < a.entries.size(); ++i) {
          if (auto m = value(a.entries[i].first, b.entries[i].first, printed); m != NameMatch::renamed) return m;
          if (auto m = value(a.entries[i].second, b.entries[i].second, printed); m != NameMatch::renamed) return m;
        }
        return NameMatch::renamed;
      default: return same_value(a, b, Match::objects) ? NameMatch::renamed : NameMatch::unknown;
    }
  }

  // Whether two output targets print alike: the same layout and literals, a proxy where the other
  // has one (the printer writes the outputs there).
  static bool same_target(const Value& a, const Value& b) {
    if (a.kind != b.kind) return false;
    if (a.kind == Value::Kind::proxy) return true;
    if (a.kind == Value::Kind::tuple || a.kind == Value::Kind::list) {
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!same_target(a.items[i], b.items[i])) return false;
      return true;
    }
    if (a.kind == Value::Kind::dict) {
      if (a.entries.size() != b.entries.size()) return false;
      for (size_t i = 0; i < a.entries.size(); ++i)
        if (!same_target(a.entries[i].first, b.entries[i].first) || !same_target(a.entries[i].second, b.entries[i].second))
          return false;
      return true;
    }
    return same_value(a, b, Match::objects);
  }

  // `printed`: the printer writes the name at this place.
  NameMatch pair(const Proxy* a, const Proxy* b, bool printed) {
    if (!a || !b) return a == b ? NameMatch::renamed : NameMatch::unknown;
    auto in_a = number_.try_emplace(Side{0, a->name}, next_);
    auto in_b = number_.try_emplace(Side{1, b->name}, next_);
    const bool new_a = in_a.second, new_b = in_b.second;
    if (new_a && new_b) ++next_;
    if (new_a != new_b || (!new_a && in_a.first->second != in_b.first->second))
      return printed ? NameMatch::different : NameMatch::unknown;
    return a == b || alike_but_name(*a, *b) ? NameMatch::renamed : NameMatch::unknown;
  }

  struct Side {
    int side;
    std::string_view name;  // the traces' own strings
    bool operator==(const Side& o) const { return side == o.side && name == o.name; }
  };
  struct SideHash {
    size_t operator()(const Side& s) const { return std::hash<std::string_view>()(s.name) * 2 + s.side; }
  };
  std::unordered_map<Side, uint32_t, SideHash> number_;
  uint32_t next_ = 0;
};

}  // namespace

NameMatch match_up_to_names(const Trace& a, const Trace& b) { return NamePairing().traces(a, b); }

bool same_objects(const Trace& a, const Trace& b) {
  if (a.function_name != b.function_name || a.params.size() != b.params.size()) return false;
  for (size_t i = 0; i < a.params.size(); ++i)
    if (a.params[i].proxy != b.params[i].proxy || a.params[i].kind != b.params[i].kind) return false;
  return same_statements(a.body, b.body);
}

bool same_shape(const Trace& a, const Trace& b) {
  return a.function_name == b.function_name && a.params.size() == b.params.size() &&
         same_statement_shapes(a.body, b.body);
}

}  // namespace tv
