// Symbols: the operations a trace can call, kept in one registry.
// Contract: a Symbol is registered once and lives for the whole process (pointers stay valid).
// Its `name` is what the printer writes ("ltorch.linear", "prims.add"); its `form` says how a call
// is laid out in the text. `impl` is the meta function of a prim or the decomposition of a
// composite, run by the TraceBuilder; rules of other kinds (execution, gradient) live in tables
// keyed by the symbol's name next to the op family that defines them. Unknown names met by the
// parser become opaque symbols: printable, never executable.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ir/value.h"

namespace tv {

class TraceBuilder;

enum class PrintForm {
  call,             // out = name(args)  # out: "T"     (or name(args) with no output)
  annotated_call,   // out: "T" = name(args)
  method,           // out: "T" = args[0].name(args[1:])
  subscript,        // out: "T" = args[0][args[1]]
  attribute,        // out: "T" = args[0].<args[1] as identifier>
  globals_lookup,   // out: "T" = globals()[args[0]]
  unpack_sequence,  // a, b, = args[0]   followed by one `# a: "T"` line per output
  unpack_trivial,   // # out: "T"        (an input of the function)
  del,              // del a, b
  ret,              // return args[0]
};

using SymbolImpl = std::function<Value(TraceBuilder&, const std::vector<Value>& args, const Kwargs& kwargs)>;

// The traits passes ask about (Symbol::traits names them; see there). Passes ask for every
// statement of every stage, so a symbol keeps them as bits as well.
enum class Trait : uint8_t {
  elementwise, shape, reduction, matmul, collective, check, random, creation, structural, fallback, effect, fusion
};
inline constexpr size_t kTraitCount = static_cast<size_t>(Trait::fusion) + 1;
// The name a symbol's `traits` spell the trait with ("elementwise").
std::string_view trait_name(Trait);
// The bits of the traits `names` that Trait names (others have no bit).
uint32_t trait_bits(const std::vector<std::string>& names);

struct Symbol {
  std::string name;
  PrintForm form = PrintForm::call;
  bool is_prim = false;   // has a meta function, no decomposition
  bool opaque = false;    // unknown to the engine: printable, not executable
  SymbolImpl impl;
  // Traits used by passes: "elementwise", "shape", "reduction", "matmul", "collective", "check",
  // "random", "creation", "structural", "fallback" (an ATen operator run as it is), "effect" (writes
  // into an argument: never dropped nor merged).
  std::vector<std::string> traits;
  // `traits` as bits (trait_bits), set by the registry as it adds the symbol.
  uint32_t trait_mask = 0;

  bool has(Trait trait) const { return (trait_mask >> static_cast<unsigned>(trait)) & 1u; }
  bool has(std::string_view trait) const;
};

class SymbolRegistry {
  // Orders keys by (name, form); a key asked for as a view is compared without being copied.
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const std::pair<A, PrintForm>& a, const std::pair<B, PrintForm>& b) const {
      return std::pair<std::string_view, PrintForm>(a.first, a.second) <
             std::pair<std::string_view, PrintForm>(b.first, b.second);
    }
  };

 public:
  static SymbolRegistry& global();

  const Symbol* find(std::string_view name, PrintForm form = PrintForm::call) const;
  // Registers a symbol; registering a name twice with the same form is a programming error,
  // except over an opaque symbol the parser made, which is upgraded in place.
  const Symbol& add(Symbol symbol);
  // The symbol of that name and form, made opaque on first request.
  const Symbol& find_or_opaque(std::string_view name, PrintForm form);
  std::vector<const Symbol*> all() const;

 private:
  SymbolRegistry();
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, PrintForm>, std::unique_ptr<Symbol>, KeyLess> symbols_;
};

// The structural symbols every trace uses, registered by the IR itself.
namespace structural {
const Symbol& unpack_trivial();
const Symbol& unpack_sequence();
const Symbol& unpack_key();        // subscript form
const Symbol& unpack_attr();       // attribute form
const Symbol& unpack_function_obj();
const Symbol& get_parameter();     // method form: module.get_parameter('name')
const Symbol& del();
const Symbol& ret();
}  // namespace structural

}  // namespace tv
