// Common Subexpression Elimination: a call equal to an earlier one reuses the earlier outputs, as
// Thunder's `cse`.
// Contract: two top-level calls are equal when they bind the same symbol to the same arguments and
// keyword arguments, after the outputs of eliminated calls have been replaced by their
// representatives (so chains of duplicates collapse). Only calls with outputs are merged; never
// those with the traits "random" (two samples differ), "collective" or "check", nor structural
// statements. Later reads (arguments, subsymbols, the return) use the representative. When the
// trace has `del`s they are regenerated (Delete Last Used), since lifetimes change. Provenance
// "Common Subexpression Elimination".
#pragma once
#include "ir/trace.h"

namespace tv::passes {

TracePtr common_subexpression_elimination(const Trace&);

}  // namespace tv::passes
