// Memory of a trace, read from its statements (nothing runs): what a run of it holds at most, and
// what a forward saves for the backward. The GUI plots it across the stages, `show --memory` lists
// it; so what rematerialization or the placement of `del` changed reads as numbers.
// Contract: `peak_live` counts tensor bytes (numel x element size): the parameters, then each
// top-level statement's tensor outputs when it runs, freed at their `del`; outputs of shape ops
// (trait "shape": views in LibTorch) and unpacks of values already alive add nothing; a value
// counts once however often it is named. A trace without `del` (before Delete Last Used) frees
// nothing, so its peak is everything it makes. `saved_for_backward` is passes::saved_bytes: the
// distinct tensors an augmented forward returns for the backward (0 for other traces).
#pragma once
#include <cstdint>

#include "ir/trace.h"

namespace tv::passes {

struct TraceMemory {
  int64_t peak_live = 0;
  int peak_at = -1;  // the top-level statement after which the peak was reached (-1: the parameters)
  int64_t saved_for_backward = 0;
};

TraceMemory trace_memory(const Trace&);

}  // namespace tv::passes
