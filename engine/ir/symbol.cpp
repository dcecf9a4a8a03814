#include "ir/symbol.h"

#include <algorithm>
#include <array>
#include <functional>
#include <stdexcept>

namespace tv {

std::string_view trait_name(Trait trait) {
  static constexpr std::array<std::string_view, kTraitCount> kNames = {
      "elementwise", "shape", "reduction", "matmul", "collective", "check",
      "random", "creation", "structural", "fallback", "effect", "fusion"};
  return kNames[static_cast<size_t>(trait)];
}

uint32_t trait_bits(const std::vector<std::string>& names) {
  uint32_t bits = 0;
  for (const auto& name : names)
    for (size_t k = 0; k < kTraitCount; ++k)
      if (name == trait_name(static_cast<Trait>(k))) bits |= 1u << k;
  return bits;
}

bool Symbol::has(std::string_view trait) const {
  return std::find(traits.begin(), traits.end(), trait) != traits.end();
}

SymbolRegistry& SymbolRegistry::global() {
  static SymbolRegistry registry;
  return registry;
}

SymbolRegistry::SymbolRegistry() {
  auto structural = [this](std::string name, PrintForm form) {
    Symbol s;
    s.name = std::move(name);
    s.form = form;
    s.is_prim = true;
    s.traits = {"structural"};
    s.trait_mask = trait_bits(s.traits);
    auto key = std::pair{s.name, form};
    symbols_[key] = std::make_unique<Symbol>(std::move(s));
  };
  structural("unpack_trivial", PrintForm::unpack_trivial);
  structural("unpack_sequence", PrintForm::unpack_sequence);
  structural("unpack_key", PrintForm::subscript);
  structural("unpack_attr", PrintForm::attribute);
  structural("unpack_function_obj", PrintForm::globals_lookup);
  structural("get_parameter", PrintForm::method);
  structural("python_del", PrintForm::del);
  structural("python_return", PrintForm::ret);
}

const Symbol* SymbolRegistry::find(std::string_view name, PrintForm form) const {
  // Ops look their symbols up by name for every call they record, tens of thousands of times in a
  // deep model's build, for a few hundred names. Each thread keeps the symbol it found last in a
  // slot per name's hash; a slot's symbol answers only for its own name and form, and a symbol
  // lives as long as the process (an opaque one is upgraded in place), so a hit is never stale.
  thread_local std::array<const Symbol*, 1024> recent{};
  const Symbol*& slot = recent[(std::hash<std::string_view>()(name) + static_cast<size_t>(form)) % recent.size()];
  if (slot && slot->form == form && slot->name == name) return slot;
  std::lock_guard lock(mutex_);
  auto it = symbols_.find(std::pair{name, form});
  if (it == symbols_.end()) return nullptr;
  slot = it->second.get();
  return slot;
}

const Symbol& SymbolRegistry::add(Symbol symbol) {
  std::lock_guard lock(mutex_);
  auto key = std::pair{symbol.name, symbol.form};
  auto& slot = symbols_[key];
  if (slot && !slot->opaque) throw std::logic_error("symbol registered twice: " + symbol.name);
  symbol.trait_mask = trait_bits(symbol.traits);
  // An opaque symbol made by the parser earlier becomes the real one in place: pointers held by
  // parsed traces stay valid and gain the rules.
  if (slot) *slot = std::move(symbol);
  else slot = std::make_unique<Symbol>(std::move(symbol));
  return *slot;
}

const Symbol& SymbolRegistry::find_or_opaque(std::string_view name, PrintForm form) {
  std::lock_guard lock(mutex_);
  auto it = symbols_.find(std::pair{name, form});
  if (it == symbols_.end()) {
    auto opaque = std::make_unique<Symbol>();
    opaque->name = std::string(name);
    opaque->form = form;
    opaque->opaque = true;
    it = symbols_.emplace(std::pair{opaque->name, form}, std::move(opaque)).first;
  }
  return *it->second;
}

std::vector<const Symbol*> SymbolRegistry::all() const {
  std::lock_guard lock(mutex_);
  std::vector<const Symbol*> out;
  for (const auto& [key, s] : symbols_) out.push_back(s.get());
  return out;
}

namespace structural {
namespace {
const Symbol& get(std::string_view name, PrintForm form) {
  return *SymbolRegistry::global().find(name, form);
}
}  // namespace
const Symbol& unpack_trivial() { return get("unpack_trivial", PrintForm::unpack_trivial); }
const Symbol& unpack_sequence() { return get("unpack_sequence", PrintForm::unpack_sequence); }
const Symbol& unpack_key() { return get("unpack_key", PrintForm::subscript); }
const Symbol& unpack_attr() { return get("unpack_attr", PrintForm::attribute); }
const Symbol& unpack_function_obj() { return get("unpack_function_obj", PrintForm::globals_lookup); }
const Symbol& get_parameter() { return get("get_parameter", PrintForm::method); }
const Symbol& del() { return get("python_del", PrintForm::del); }
const Symbol& ret() { return get("python_return", PrintForm::ret); }
}  // namespace structural

}  // namespace tv
