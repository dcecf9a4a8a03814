// Delete Last Used: frees every value right after its last use, as Thunder's `del_last_used`.
// Contract: walks the body backwards; a value (output or argument of a statement) not met yet is
// last used by that statement, so a `del` of those values goes right after it, outputs first, then
// arguments left to right (`del t105, t_fc2_weight`). Returned values are never deleted; inputs
// (`# x: "T"`) are not statements that delete; existing `del`s are dropped and regenerated. With
// clear_mutable_collections (Thunder's backward) a deleted Collection is also emptied:
// `clear_mutable_collection(x)` lines before the `del`, in Thunder's order (existing ones are
// regenerated too). The one-argument form clears collections in a `backward_fn`, as Thunder does.
// Provenance "Delete Last Used".
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tv::passes {

TracePtr delete_last_used(const Trace&);
TracePtr delete_last_used(const Trace&, bool clear_mutable_collections);

// The statements of `body` with dels (and, with clear_mutable_collections, collection clears)
// regenerated; `returned` is the function's return value (not read from `body`, which is moved
// from). Used by passes that move uses around.
std::vector<BoundSymbol> insert_deletions(std::vector<BoundSymbol> body, const Value& returned,
                                          bool clear_mutable_collections);
// Drops `del` statements (and collection clears when `clears`), for passes that regenerate them.
std::vector<BoundSymbol> strip_deletions(const std::vector<BoundSymbol>& body, bool clears);
bool has_deletions(const Trace&);
bool has_collection_clears(const Trace&);

// The trace of a pass that regroups statements: `regroup` gets `t`'s body without its dels (and
// collection clears) and returns the new body; the result derives from `t` as `pass_name`, with
// dels (and clears) regenerated where `t` had them.
std::shared_ptr<Trace> derive_regrouped(const Trace& t, std::string pass_name,
                                        const std::function<std::vector<BoundSymbol>(std::vector<BoundSymbol>)>& regroup);

}  // namespace tv::passes
