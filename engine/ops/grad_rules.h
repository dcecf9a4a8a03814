// Gradient rules: one table keyed by Symbol, JAX-style; each op family registers its symbols' rules
// in the file that defines them (engine/ops/<family>.cpp).
// Contract: a rule records the vector-Jacobian product of one forward bound symbol into the
// backward builder, as ltorch ops, and returns one cotangent per positional argument of the
// forward symbol: None where the argument is not a differentiable tensor (numbers, indices,
// masks), a list of cotangents for a list argument (cat). Cotangents have the argument's shape
// and dtype (broadcast grads are sum-reduced). `cotangents` holds one entry per forward output,
// None for an output nobody differentiated (rules of multi-output ops fill in zeros). The forward
// values a rule reads (its arguments, its outputs) become saved_for_backward automatically.
// A symbol registered `through_decomposition` is differentiated by splicing its subsymbols into
// the forward and differentiating those (what Thunder does for gelu); so is one whose rule has an
// `applies` test that the forward symbol fails (sdpa with a float mask, whose grad the rule omits).
// Residues: a forward kernel may compute, besides its output, what its backward would compute again
// (layer norm's mean and rstd). Such a symbol's rule has `with_residues`, which gives the statement
// the augmented forward runs instead: the same outputs first, then the residues, as another symbol
// (`(t5, t6, t7) = ltorch.native_layer_norm(...)` for `t5 = ltorch.layer_norm(...)`), whose own rule
// reads them. So residues are saved_for_backward values like any other, shown in the traces;
// `with_residues` gives nullopt where the kernel has none to give (a dtype it does not keep them in).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"

namespace tv {

using GradFn = std::function<std::vector<Value>(TraceBuilder& bwd, const BoundSymbol& fwd,
                                                const std::vector<Value>& cotangents)>;

using GradApplies = std::function<bool(const BoundSymbol& fwd)>;

// The statement with residues for `fwd`, its new proxies named by `names` (a builder that knows
// every name of the trace); nullopt to keep `fwd`.
using WithResidues = std::function<std::optional<BoundSymbol>(TraceBuilder& names, const BoundSymbol& fwd)>;

struct GradRule {
  GradFn fn;                           // empty: differentiate the subsymbols instead
  bool through_decomposition = false;
  GradApplies applies;                 // empty: always; else where false, differentiate the subsymbols
  WithResidues with_residues;          // empty: the forward keeps the statement as it is
};

void register_grad_rule(const Symbol& symbol, GradFn fn, GradApplies applies = {});
void register_grad_through_decomposition(const Symbol& symbol);
// Adds `with_residues` to the rule `symbol` already has.
void register_residues(const Symbol& symbol, WithResidues with_residues);
// A rule that gives None for every argument (comparisons, creation, integer ops).
void register_not_differentiable(const Symbol& symbol);
// The rule of a symbol, nullptr when it has none. Registers the op families first (ltorch::register_ops).
const GradRule* find_grad_rule(const Symbol& symbol);

// ---- helpers for writing rules ----
namespace grad {

using T = ProxyPtr;
using Shape = std::vector<int64_t>;

// The tensor proxy of argument i, null when it is not a tensor (None, a number).
T tensor_at(const BoundSymbol& fwd, size_t i);
// The cotangent of output i as a proxy; a zeros tensor of that output's metadata when it is None.
T cotangent_or_zeros(TraceBuilder& bwd, const BoundSymbol& fwd, const std::vector<Value>& cts, size_t i);
// `g` summed over broadcast dims down to `shape`, then converted to `dtype` when it differs.
T sum_to(TraceBuilder& bwd, T g, const Shape& shape, DType dtype);
// sum_to the metadata of `like`; None when `like` is null (a number argument).
Value reduce_like(TraceBuilder& bwd, const T& g, const T& like);
// The reduction dims of args[i] (None or () means every dim), normalised.
std::vector<int64_t> reduction_dims(const BoundSymbol& fwd, size_t i, int64_t rank);
// A bool argument or keyword, `fallback` when absent.
bool flag(const BoundSymbol& fwd, size_t i, std::string_view keyword, bool fallback);
// g of a reduced shape broadcast back to `shape` (dims reduced without keepdim when !keepdim).
T unreduce(TraceBuilder& bwd, const T& g, const Shape& shape, const std::vector<int64_t>& dims, bool keepdim);

}  // namespace grad

}  // namespace tv
