// Source provenance: the source line each statement of a stage came from, and the statements of a
// stage that came from a given line.
// Contract: a statement's own source (ir/source_location.h: recorded, parsed from the headers or
// carried by the passes, its parent's when it has none) comes first. A backward statement without
// one that a gradient rule made has the source of the forward statement it came from
// (transforms/gradient_links.h), looked up in `forward`: a forward stage of the same pipeline that
// holds the links; pass null where there is none. Everything else has none. Lines are compared by
// file and line number (SourceLine::same_line), so a decomposition's pieces, a fusion region's
// members and the backward statements of one user line are found together.
#pragma once
#include <vector>

#include "ir/source_location.h"
#include "ir/trace.h"

namespace tv {

// Each statement's source, walk order (every level, subsymbols after their parent); null for none.
std::vector<SourceRef> statement_sources(const Trace& trace, const Trace* forward);

// The source of one statement of `trace` (at any level, found by address); null when it has none or
// is not in the trace.
SourceRef statement_source(const Trace& trace, const BoundSymbol& statement, const Trace* forward);

// The statements (walk order, any level) whose source is `line`.
std::vector<const BoundSymbol*> statements_from(const Trace& trace, const SourceLine& line, const Trace* forward);

}  // namespace tv
