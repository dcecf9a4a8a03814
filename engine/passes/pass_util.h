// Helpers shared by the optimization passes (internal to engine/passes).
// Contract: passes see a bound symbol through its *effective* traits: the symbol's own traits, or
// for an opaque symbol from a Thunder printout those of the op it stands for (`torch.erf` ->
// `ltorch.erf`, `torch.nn.functional.linear` -> `ltorch.linear`, `torch_div_prim_impl` ->
// `prims.div`), or else what its subsymbols say (all elementwise -> elementwise; any random,
// collective or check -> so is the parent). Values are identified by proxy name (traces are SSA
// by name, as in Thunder). PassTimer measures a pass and names it in the provenance.
#pragma once
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "ir/name_table.h"
#include "ir/trace.h"

namespace tv::passes {

bool has_trait(const BoundSymbol& b, Trait trait);
bool is_del(const BoundSymbol& b);
// `clear_mutable_collection(x)`: Thunder's backward empties its saved collections with it.
bool is_clear_collection(const BoundSymbol& b);
const Symbol& clear_collection_symbol();

// Every proxy inside a value, depth first.
std::vector<ProxyPtr> proxies_of(const Value& v);
// Names of the proxies the trace returns: views of the proxies' own names, valid while `t` lives.
NameSet returned_names(const Trace& t);

// Bytes of a tensor proxy (numel x element size); 0 for anything else.
int64_t tensor_bytes(const Proxy& p);

class PassTimer {
 public:
  PassTimer() : start_(std::chrono::steady_clock::now()) {}
  long long elapsed_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_).count();
  }
  // Sets t's provenance to `pass (took N milliseconds)` and seals it.
  TracePtr finish(std::shared_ptr<Trace> t, const std::string& pass) const {
    t->provenance = Provenance{pass, elapsed_ms()};
    return t;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tv::passes
