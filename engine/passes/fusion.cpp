#include "passes/fusion.h"

#include <algorithm>
#include <iterator>
#include <mutex>

#include "passes/delete_last_used.h"
#include "passes/pass_util.h"

namespace tv::passes {
namespace {

constexpr const char* kPrefix = "fusion";

bool fusible(const BoundSymbol& b) {
  if (b.symbol->form != PrintForm::call || b.outputs.empty() || is_fusion_region(b)) return false;
  if (has_trait(b, Trait::random) || has_trait(b, Trait::collective) || has_trait(b, Trait::check)) return false;
  return has_trait(b, Trait::elementwise) || has_trait(b, Trait::shape);
}

// The index K of a region named fusionK, or -1.
int region_index(const BoundSymbol& b) {
  if (!is_fusion_region(b)) return -1;
  try {
    return std::stoi(b.symbol->name.substr(std::string(kPrefix).size()));
  } catch (...) {
    return -1;
  }
}

}  // namespace

BoundSymbol make_fusion_region(std::vector<BoundSymbol> members,
                               const NameMap<size_t>& read_last, size_t end, int index) {
  BoundSymbol r;
  r.symbol = &fusion_symbol(index);
  NameSet defined, taken;
  for (const auto& m : members) {
    for (const auto& p : m.inputs())
      if (!defined.contains(p->name) && taken.insert(p->name)) r.args.push_back(Value::of(p));
    for (const auto& o : m.outputs) defined.insert(o->name);
  }
  for (const auto& m : members)
    for (const auto& o : m.outputs)
      if (const size_t* last = read_last.find(o->name); last && *last >= end) r.outputs.push_back(o);
  if (r.outputs.empty()) r.outputs = members.back().outputs;  // a dead run still defines something
  r.header = members.front().header;
  r.source = members.front().source;  // each member keeps its own
  r.subsymbols = std::move(members);
  return r;
}

// One pass over the body, not a set of names per position (quadratic in the body).
NameMap<size_t> last_reads(const std::vector<BoundSymbol>& body) {
  NameMap<size_t> read_last;
  for (size_t i = 0; i < body.size(); ++i)
    for (const auto& p : body[i].inputs()) read_last[p->name] = i;
  return read_last;
}

int next_fusion_index(const std::vector<BoundSymbol>& body) {
  int next = 0;
  for (const auto& b : body) next = std::max(next, region_index(b) + 1);
  return next;
}

bool is_fusion_region(const BoundSymbol& b) { return b.symbol->has(Trait::fusion); }

const Symbol& fusion_symbol(int index) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::string name = kPrefix + std::to_string(index);
  auto& registry = SymbolRegistry::global();
  if (const Symbol* s = registry.find(name)) {
    if (s->opaque) {
      // The parser met the name first: make the placeholder a region (as ops::define does).
      auto* m = const_cast<Symbol*>(s);
      m->opaque = false;
      m->traits = {"fusion"};
      m->trait_mask = trait_bits(m->traits);
    }
    return *s;
  }
  Symbol s;
  s.name = name;
  s.traits = {"fusion"};
  return registry.add(std::move(s));
}

TracePtr fusion_grouping(const Trace& t) {
  PassTimer timer;
  auto result = derive_regrouped(t, "Fusion", [](std::vector<BoundSymbol> body) {
    int next = next_fusion_index(body);
    auto read_last = last_reads(body);
    std::vector<BoundSymbol> out;
    out.reserve(body.size());
    for (size_t i = 0; i < body.size();) {
      size_t j = i;
      while (j < body.size() && fusible(body[j])) ++j;
      if (j - i >= 2) {
        std::vector<BoundSymbol> members(std::make_move_iterator(body.begin() + i),
                                         std::make_move_iterator(body.begin() + j));
        out.push_back(make_fusion_region(std::move(members), read_last, j, next++));
        i = j;
      } else {
        out.push_back(std::move(body[i]));
        ++i;
      }
    }
    return out;
  });
  return timer.finish(result, "Fusion");
}

TracePtr unfuse(const Trace& t) {
  auto out = derive_without_body(t, t.provenance ? t.provenance->pass : "");
  out->provenance = t.provenance;
  for (const auto& b : t.body) {
    if (!is_fusion_region(b)) {
      out->body.push_back(b);
      continue;
    }
    for (const auto& m : b.subsymbols) out->body.push_back(m);
  }
  return out;
}

}  // namespace tv::passes
