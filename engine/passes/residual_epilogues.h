// Residual Epilogues: a linear whose output only the add right after it reads becomes, with that
// add, a two-member fusion region, so that on CUDA the executor can run the pair as one cuBLASLt
// product whose epilogue adds the add's other operand (runtime/small_gemm.h's small_linear, planned
// by codegen/elementwise.h): a transformer block's residual connection, x + proj(h), then launches
// no add of its own.
// Contract: residual_epilogues(t) replaces each top-level `y = linear(x, w[, b])` immediately
// followed by `z = add(y, r)` or `z = add(r, y)` (ltorch, prims or torch spellings; alpha 1 or
// absent; r another proxy), where nothing after the add reads y (the return included, a `del`
// not), by a region `(z) = fusionK(x, w[, b], r)` whose members are the two statements, named and
// numbered as fusion_grouping's (passes/fusion.h). Everything else is unchanged and in order; dels
// are regenerated. Provenance "Residual Epilogues".
// linear_feeds_add(linear, add, &residual_arg) tells whether two statements have that form, and
// which of the add's two arguments (0 or 1) is the residual r.
#pragma once
#include <cstddef>

#include "ir/trace.h"

namespace tv::passes {

TracePtr residual_epilogues(const Trace&);
bool linear_feeds_add(const BoundSymbol& linear, const BoundSymbol& add, size_t* residual_arg);

}  // namespace tv::passes
