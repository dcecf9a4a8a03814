// Canonical form: two traces that differ only in proxy names are the same program.
// Contract: canonical(t) renames every proxy in order of first definition (parameters first, then
// outputs in body order, subsymbols after their parent) to p0, p1, ... and drops what is not the
// program: provenance, source-location headers, imports and decorators. Equality and hashing of
// traces work on that form; they are stable across runs and processes.
#pragma once
#include <cstddef>
#include <string>

#include "ir/trace.h"

namespace tv {

TracePtr canonical(const Trace&);
// The printed canonical form (all subsymbol levels); equal texts mean equal programs.
std::string canonical_text(const Trace&);
bool canonically_equal(const Trace&, const Trace&);
// FNV-1a of canonical_text: the same value in every process.
uint64_t canonical_hash(const Trace&);
// A cheap hash of what the printer writes the same way whatever the names: the function's name,
// the number of parameters and, at every level, each statement's symbol, its subsymbol count and,
// where the statement prints them all, its arguments' kinds, sizes, integers and strings. Traces
// whose shapes differ are never canonically equal; equal shapes prove nothing (compare
// canonical_text).
// Symbols hash by identity: the value holds within one process only.
uint64_t canonical_shape(const Trace&);
// Whether two traces are made of the same objects: the same symbols, the same proxies (by
// pointer), equal literals and statement layout. What a pass that changed nothing returns; such
// traces print alike, so they are canonically equal. False proves nothing.
bool same_objects(const Trace&, const Trace&);

}  // namespace tv
