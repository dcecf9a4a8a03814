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

}  // namespace tv
