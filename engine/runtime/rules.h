// Execution rules: one table keyed by Symbol, JAX-style (a primitive's impl rule beside it). An op
// family registers each of its symbols' rule in the file that defines the symbol (engine/ops/*.cpp);
// the executor (engine/exec) finds a statement's rule by its bound symbol, never by name.
// Contract: a rule receives the evaluated args/kwargs (proxies replaced by their runtime values,
// devices already mapped to the run's device) and returns the value of the outputs: one RValue
// for one output, a tuple with one item per output otherwise (nested structures are flattened in
// order). Rules must not modify their arguments. The table is thread-safe; set_exec_rule replaces
// the rule a symbol had. A symbol with a rule executes even when it is opaque (a name the engine
// has no meta for, e.g. a prologue check of Thunder's printouts).
// Residual rules, a second table: an op whose first output can take an addition in the kernel that
// computes it (a linear's product epilogue, layer norm's backward) has a rule that receives the
// op's evaluated arguments and a `residual` tensor and returns the op's outputs with the residual
// added to the first, rounded once; or a none RValue when it cannot (another device, dtype or
// shape), and the caller runs the op and the add apart. passes/residual_epilogues.h pairs such an
// op with the add that alone reads its output; the executor runs the pair through this rule.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "ir/trace.h"
#include "runtime/value.h"

namespace tv::exec {

struct ExecOptions;  // engine/exec/executor.h: what the run is (device, module, user data)

// What a rule may look at besides its arguments.
struct ExecContext {
  const BoundSymbol& bsym;       // the statement being executed (proxy names for messages)
  const ExecOptions& options;    // device, module view, cache_info, user data
};

using ExecRule = std::function<RValue(const ExecContext&, const std::vector<RValue>& args, const RKwargs& kwargs)>;
using SimpleExecRule = std::function<RValue(const std::vector<RValue>& args, const RKwargs& kwargs)>;

void set_exec_rule(const Symbol& symbol, ExecRule rule);
void set_exec_rule(const Symbol& symbol, SimpleExecRule rule);
// `alias` runs with the rule `of` has (std::logic_error when it has none: a registration bug).
void share_exec_rule(const Symbol& alias, const Symbol& of);
// The rule of `symbol`, or null.
std::shared_ptr<const ExecRule> exec_rule_of(const Symbol& symbol);
// A number that changes whenever a rule is set or shared: a rule looked up while it had one value
// is still the symbol's rule while it has that value.
uint64_t exec_rules_generation();
// Every symbol that has a rule.
std::vector<const Symbol*> symbols_with_exec_rules();

using ResidualRule =
    std::function<RValue(const std::vector<RValue>& args, const RKwargs& kwargs, const at::Tensor& residual)>;
void set_residual_rule(const Symbol& symbol, ResidualRule rule);
// The residual rule of `symbol`, or null.
std::shared_ptr<const ResidualRule> residual_rule_of(const Symbol& symbol);

// Argument readers for rules; they throw ExecError naming the argument.
const RValue& rarg(const std::vector<RValue>& args, size_t i, const char* name);
const RValue* rkwarg(const RKwargs& kwargs, std::string_view name);

}  // namespace tv::exec
