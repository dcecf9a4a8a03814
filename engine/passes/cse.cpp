#include "passes/cse.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "passes/delete_last_used.h"
#include "passes/pass_util.h"

namespace tv::passes {
namespace {

// Name of a dropped statement's output -> its representative's. The names are views of the dropped
// statements' proxies, which the pass's copy of the body keeps alive.
using Replacements = std::unordered_map<std::string_view, ProxyPtr>;

ProxyPtr replace(const Replacements& r, const ProxyPtr& p) {
  auto it = r.find(p->name);
  return it == r.end() ? p : it->second;
}

// A decomposition reads only what its statement reads or defines below itself, so a statement
// whose own arguments read nothing replaced has no subsymbol that does: its subsymbols are not
// walked (a deep trace's are most of its data).
bool reads_any(const BoundSymbol& b, const Replacements& r) {
  bool found = false;
  auto check = [&](const ProxyPtr& p) { found = found || r.count(p->name) > 0; };
  for (const auto& a : b.args) for_each_proxy(a, check);
  for (const auto& [k, v] : b.kwargs) for_each_proxy(v, check);
  return found;
}

// Rewrites the reads of `b` and of its subsymbols (outputs stay). A statement that reads nothing
// replaced is left as it is, so its subsymbols stay shared with the trace it was copied from.
void substitute(BoundSymbol& b, const Replacements& r) {
  if (r.empty() || !reads_any(b, r)) return;
  auto fn = [&](const ProxyPtr& p) { return replace(r, p); };
  for (auto& a : b.args) a = map_proxies(a, fn);
  for (auto& [k, v] : b.kwargs) v = map_proxies(v, fn);
  for (auto& s : b.subsymbols) substitute(s, r);
}

bool mergeable(const BoundSymbol& b) {
  if (b.outputs.empty() || b.symbol->form != PrintForm::call) return false;
  return !has_trait(b, Trait::random) && !has_trait(b, Trait::collective) && !has_trait(b, Trait::check) &&
         !has_trait(b, Trait::effect) && !has_trait(b, Trait::structural);
}

// Two statements compute the same when they call the same symbol on arguments that print alike,
// with as many outputs. The comparison is on the values themselves (no text is built for it): a
// float by its bits (repr tells any two apart but the NaNs, which all print `float('NaN')`), a
// proxy by its name, and the hash below agrees with it.
bool same_value(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::none: return true;
    case K::boolean: return a.b == b.b;
    case K::integer: return a.i == b.i;
    case K::floating:
      return (std::isnan(a.f) && std::isnan(b.f)) || std::bit_cast<uint64_t>(a.f) == std::bit_cast<uint64_t>(b.f);
    case K::string:
    case K::name: return a.s == b.s;
    case K::dtype: return a.dtype == b.dtype && a.s == b.s;
    case K::device: return a.device == b.device;
    case K::proxy: return a.proxy && b.proxy ? a.proxy->name == b.proxy->name : a.proxy == b.proxy;
    case K::tuple:
    case K::list:
      return std::equal(a.items.begin(), a.items.end(), b.items.begin(), b.items.end(), same_value);
    case K::dict:
      return std::equal(a.entries.begin(), a.entries.end(), b.entries.begin(), b.entries.end(),
                        [](const auto& x, const auto& y) {
                          return same_value(x.first, y.first) && same_value(x.second, y.second);
                        });
  }
  return false;
}

size_t combine(size_t seed, size_t h) { return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }

size_t hash_value(const Value& v) {
  using K = Value::Kind;
  size_t h = static_cast<size_t>(v.kind);
  switch (v.kind) {
    case K::none: return h;
    case K::boolean: return combine(h, v.b);
    case K::integer: return combine(h, std::hash<int64_t>()(v.i));
    case K::floating: return combine(h, std::isnan(v.f) ? 0 : std::hash<uint64_t>()(std::bit_cast<uint64_t>(v.f)));
    case K::string:
    case K::name: return combine(h, std::hash<std::string_view>()(v.s));
    case K::dtype: return combine(combine(h, static_cast<size_t>(v.dtype)), std::hash<std::string_view>()(v.s));
    case K::device: return combine(combine(h, static_cast<size_t>(v.device.kind)), static_cast<size_t>(v.device.index));
    case K::proxy: return v.proxy ? combine(h, std::hash<std::string_view>()(v.proxy->name)) : h;
    case K::tuple:
    case K::list:
      for (const auto& x : v.items) h = combine(h, hash_value(x));
      return h;
    case K::dict:
      for (const auto& [k, x] : v.entries) h = combine(combine(h, hash_value(k)), hash_value(x));
      return h;
  }
  return h;
}

size_t hash_call(const BoundSymbol& b) {
  size_t h = combine(std::hash<const void*>()(b.symbol), b.outputs.size());
  for (const auto& a : b.args) h = combine(h, hash_value(a));
  for (const auto& [k, v] : b.kwargs) h = combine(combine(h, std::hash<std::string_view>()(k)), hash_value(v));
  return h;
}

bool same_call(const BoundSymbol& a, const BoundSymbol& b) {
  if (a.symbol != b.symbol || a.outputs.size() != b.outputs.size()) return false;
  const std::vector<Value>&x = a.args, &y = b.args;
  const Kwargs &kx = a.kwargs, &ky = b.kwargs;
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), same_value) &&
         std::equal(kx.begin(), kx.end(), ky.begin(), ky.end(),
                    [](const auto& p, const auto& q) { return p.first == q.first && same_value(p.second, q.second); });
}

}  // namespace

TracePtr common_subexpression_elimination(const Trace& t) {
  PassTimer timer;
  auto out = derive_regrouped(t, "Common Subexpression Elimination", [](std::vector<BoundSymbol> original) {
    Replacements redundant;
    // hash_call -> index in `body` of the first statement with that hash (the representative)
    std::unordered_multimap<size_t, size_t> seen;
    std::vector<BoundSymbol> body;
    body.reserve(original.size());
    for (auto& b : original) {
      substitute(b, redundant);
      if (mergeable(b)) {
        const size_t h = hash_call(b);
        auto [first, last] = seen.equal_range(h);
        auto same = std::find_if(first, last, [&](const auto& entry) { return same_call(body[entry.second], b); });
        if (same != last) {
          const auto& rep_outputs = body[same->second].outputs;
          for (size_t i = 0; i < b.outputs.size(); ++i)
            if (b.outputs[i]->name != rep_outputs[i]->name) redundant[b.outputs[i]->name] = rep_outputs[i];
          continue;
        }
        seen.emplace(h, body.size());
      }
      body.push_back(std::move(b));
    }
    return body;
  });
  return timer.finish(out, "Common Subexpression Elimination");
}

}  // namespace tv::passes
