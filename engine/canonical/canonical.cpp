#include "canonical/canonical.h"

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

bool canonically_equal(const Trace& a, const Trace& b) { return canonical_text(a) == canonical_text(b); }

uint64_t canonical_hash(const Trace& t) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : canonical_text(t)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace tv
