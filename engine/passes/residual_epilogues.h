// Residual Epilogues: an op that can add a residual in the kernel computing its first output (it
// has a residual rule, runtime/rules.h: a linear, whose product's epilogue adds it; layer norm's
// backward) becomes, with the add that alone reads that output, one fusion region, so that on CUDA
// the executor runs the pair as that one kernel: a transformer block's residual connection,
// x + proj(h), and in the backward the skip connection's gradient, g + layer_norm_backward(...)[0],
// then launch no add of their own.
// Contract: residual_epilogues(t) pairs each top-level statement P with a residual rule (for a
// spelling, its op's; call form, a tensor first output y) with the statement right after it when
// that is `z = add(y, r)` or `z = add(r, y)` (ltorch, prims or torch spellings; alpha 1 or absent;
// r another proxy) and nothing after the add reads y (the return included, a `del` not): the pair
// becomes a region `(outs) = fusionK(...)` whose members are the two statements. When the statement
// after P is a fusion region whose first member is such an add and no other member reads y, P
// joins that region as its first member instead (a region `fusionK` with a new K). Regions are
// named, numbered and given outputs as fusion_grouping's (passes/fusion.h). Everything else is
// unchanged and in order; dels are regenerated. Provenance "Residual Epilogues".
// feeds_add(producer, add, &residual_arg) tells whether two statements have that form, and which
// of the add's two arguments (0 or 1) is the residual r; residual_rule_for(producer) is the rule
// that runs such a pair (null for a statement without one).
#pragma once
#include <cstddef>
#include <memory>

#include "ir/trace.h"
#include "runtime/rules.h"

namespace tv::passes {

TracePtr residual_epilogues(const Trace&);
bool feeds_add(const BoundSymbol& producer, const BoundSymbol& add, size_t* residual_arg);
std::shared_ptr<const exec::ResidualRule> residual_rule_for(const BoundSymbol& producer);

}  // namespace tv::passes
