// Fusion: groups maximal runs of consecutive elementwise and shape calls into regions, as
// Thunder's fusion executors make `nvFusion0` / `TorchCompile0` bound symbols.
// Contract: a run is a maximal sequence of consecutive top-level calls with the effective trait
// "elementwise" or "shape" (and none of "random", "collective", "check"); a run of two or more
// becomes one region bound symbol `(outs) = fusionK(ins)`, K counting regions in the trace (after
// any regions it already has). `ins` are the proxies the members read and do not define, in order
// of first read; `outs` are the members' outputs read after the region or returned, in definition
// order; the members are its subsymbols, printed one level down. Region symbols are registered on
// demand (call form, trait "fusion", no impl): the executor runs a region by running its
// subsymbols. Existing `del`s are regenerated. `unfuse` puts the members back in place of their
// regions, so unfuse(fusion_grouping(t)) is canonically t (without dels). Provenance "Fusion".
#pragma once
#include <string>
#include <vector>

#include "ir/name_table.h"
#include "ir/trace.h"

namespace tv::passes {

TracePtr fusion_grouping(const Trace&);
// A region of `members` (consecutive body statements ending before position `end`) numbered
// `index`: its inputs are the proxies the members read and do not define, in order of first read;
// its outputs the members' outputs that `read_last` (the last position reading each name, the
// return included) shows read at or after `end`, else the last member's. For passes that make
// regions of their own.
BoundSymbol make_fusion_region(std::vector<BoundSymbol> members,
                               const NameMap<size_t>& read_last, size_t end, int index);
// The last position in `body` reading each name (the return statement included): a region's
// outputs are its members' outputs read after it. The names are views of the proxies' own, valid
// while the statements (wherever they are moved) keep their proxies.
NameMap<size_t> last_reads(const std::vector<BoundSymbol>& body);
// The K of the next region in a body: one more than any fusionK already in it (0 if none).
int next_fusion_index(const std::vector<BoundSymbol>& body);
// The trace with every region replaced by its members (provenance kept).
TracePtr unfuse(const Trace&);
bool is_fusion_region(const BoundSymbol&);
// The registered symbol `fusion<index>` (registered on first use).
const Symbol& fusion_symbol(int index);

}  // namespace tv::passes
