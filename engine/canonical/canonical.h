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
// Whether two traces agree in what the printer writes the same way whatever the names: the
// function's name, the number of parameters and, at every level, each statement's symbol, its
// subsymbols and, where the statement prints them all, its arguments' kinds, sizes, integers and
// strings. Cheap, and quick to say no: traces of different shapes are never canonically equal;
// the same shape proves nothing (compare canonical_text).
bool same_shape(const Trace&, const Trace&);
// What two traces' canonical texts are, told without printing them where a walk side by side
// can: `renamed`, `b` is `a` with its proxies renamed one to one (the same symbols, tags, literals
// and layout at every level, proxies that print alike but for their names): equal texts;
// `different`, the first difference is a name the printer writes that pairs otherwise: different
// texts; `unknown`, the texts decide.
enum class NameMatch { renamed, different, unknown };
NameMatch match_up_to_names(const Trace& a, const Trace& b);
// Whether two traces are made of the same objects: the same symbols, the same proxies (by
// pointer), equal literals and statement layout. What a pass that changed nothing returns; such
// traces print alike, so they are canonically equal. False proves nothing.
bool same_objects(const Trace&, const Trace&);

}  // namespace tv
