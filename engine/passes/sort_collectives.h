// Sort collectives: starts each collective as early as its inputs allow and waits for it as late as
// its result allows, so that communication overlaps the computation around it (as Thunder's
// `sort_waits` and DDP's bucket scheduling do). Without it a backward that all-reduces its
// gradient buckets after the last gradient runs communication and computation one after the other.
// Contract: the result holds the same statements in another order, still topological. A statement
// is *movable* when it is a collective other than `torch_wait_prim_impl`, or an elementwise or shape
// op whose outputs are read only by movable statements and not returned (a bucket's
// reshape/cat/divide that feeds an all-reduce). Every other statement keeps its relative order;
// after each of them come the movable statements its outputs made ready, in their original order.
// A wait moves down to just before the first statement that reads its result (or the return).
// `del` statements are dropped (Delete Last Used regenerates them). Provenance "Sort Collectives".
#pragma once
#include "ir/trace.h"

namespace tv::passes {

TracePtr sort_collectives(const Trace&);

}  // namespace tv::passes
