// Dead Code Elimination: drops statements whose outputs nothing uses, as Thunder's `dce`.
// Contract: walks the body backwards from the returned values; a statement stays when one of its
// outputs is needed, or when it must never be collected: inputs and other structural statements
// without outputs (`del`, `return`), calls without outputs (side effects such as
// `clear_mutable_collection`), and ops with the traits "check" or "collective". Random ops are
// collected like any other op (an unused sample is not observable). `del` statements stay, less the
// names of removed values (an empty one goes). Subsymbols are left as they are. Provenance
// "Dead Code Elimination".
#pragma once
#include "ir/trace.h"

namespace tv::passes {

TracePtr dead_code_elimination(const Trace&);

}  // namespace tv::passes
