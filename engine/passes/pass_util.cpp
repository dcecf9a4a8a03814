#include "passes/pass_util.h"

#include <algorithm>

#include "ops/spellings.h"

namespace tv::passes {
namespace {

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Traits a name alone suggests, for opaque leaves (collectives and checks of Thunder printouts).
bool name_suggests(std::string_view name, Trait trait) {
  switch (trait) {
    case Trait::collective:
      return contains(name, "all_reduce") || contains(name, "all_gather") || contains(name, "reduce_scatter") ||
             contains(name, "_wait") || contains(name, "wait_prim") || contains(name, "synchronize");
    case Trait::check: return contains(name, "check_");
    case Trait::random: return contains(name, "uniform") || contains(name, "dropout") || contains(name, "philox");
    default: return false;
  }
}

bool sticky(Trait trait) {
  return trait == Trait::random || trait == Trait::collective || trait == Trait::check || trait == Trait::effect;
}

}  // namespace

bool has_trait(const BoundSymbol& b, Trait trait) {
  const Symbol& s = *b.symbol;
  if (s.has(trait)) return true;
  if (!s.traits.empty()) return false;
  if (const Symbol* op = ops::spelled_op(s.name)) return op->has(trait);
  if (b.subsymbols.empty()) return name_suggests(s.name, trait);
  if (sticky(trait))
    return std::any_of(b.subsymbols.begin(), b.subsymbols.end(), [&](const BoundSymbol& c) { return has_trait(c, trait); });
  return std::all_of(b.subsymbols.begin(), b.subsymbols.end(), [&](const BoundSymbol& c) { return has_trait(c, trait); });
}

bool is_del(const BoundSymbol& b) { return b.symbol->form == PrintForm::del; }

bool is_clear_collection(const BoundSymbol& b) {
  return b.symbol->form == PrintForm::call && b.symbol->name == "clear_mutable_collection" && b.outputs.empty();
}

const Symbol& clear_collection_symbol() {
  return SymbolRegistry::global().find_or_opaque("clear_mutable_collection", PrintForm::call);
}

std::vector<ProxyPtr> proxies_of(const Value& v) {
  std::vector<ProxyPtr> out;
  for_each_proxy(v, [&](const ProxyPtr& p) { out.push_back(p); });
  return out;
}

NameSet returned_names(const Trace& t) {
  NameSet out;
  for_each_proxy(t.returned(), [&](const ProxyPtr& p) { out.insert(p->name); });
  return out;
}

int64_t tensor_bytes(const Proxy& p) {
  if (!p.is_tensor()) return 0;
  return p.numel() * element_size(p.dtype);
}

}  // namespace tv::passes
