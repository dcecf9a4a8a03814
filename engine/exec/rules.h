// Execution rules: a table keyed by symbol name ("prims.add", "ltorch.gelu", "torch.reshape",
// "torch_div_prim_impl", "prims.check_len", "get_parameter", ...) whose entries compute a bound
// symbol's outputs from its evaluated arguments.
// Contract: a rule receives the evaluated args/kwargs (proxies replaced by their runtime values,
// devices already mapped to the run's device) and returns the value of the outputs: one RValue
// for one output, a tuple with one item per output otherwise (nested structures are flattened in
// order). Rules must not modify their arguments. Registration is open and thread-safe:
// register_exec_rule replaces a rule of the same name. Built-in rules (every prim, direct at::
// calls for the ltorch ops, Thunder's torch executor spellings, prologue checks and unpacks) are
// installed on first use of the table; an ATen fallback's rule is added when it is first looked up.
#pragma once
#include <any>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/runtime.h"
#include "ir/trace.h"

namespace tv::exec {

struct ExecOptions;

// What a rule may look at besides its arguments.
struct ExecContext {
  const BoundSymbol& bsym;       // the statement being executed (proxy names for messages)
  const ExecOptions& options;    // device, module view, cache_info, user data
};

using ExecRule = std::function<RValue(const ExecContext&, const std::vector<RValue>& args, const RKwargs& kwargs)>;
using SimpleExecRule = std::function<RValue(const std::vector<RValue>& args, const RKwargs& kwargs)>;

void register_exec_rule(std::string name, ExecRule rule);
void register_exec_rule(std::string name, SimpleExecRule rule);
// The rule for `name`, or null.
std::shared_ptr<const ExecRule> find_exec_rule(std::string_view name);
bool has_exec_rule(std::string_view name);
std::vector<std::string> exec_rule_names();

// Argument readers for rules; they throw ExecError naming the argument.
const RValue& rarg(const std::vector<RValue>& args, size_t i, const char* name);
const RValue* rkwarg(const RKwargs& kwargs, std::string_view name);

namespace detail {
// Built-in rule families (rules_*.cpp), installed once by the table.
void register_prim_rules();
void register_torch_rules();
void register_attention_rules();
void register_prologue_rules();
void register_collective_rules();
// The rule of an ATen fallback (`torch.ops.aten.*`, `ltorch.fallback_vjp`), made on first use; null
// for other names and for operators this LibTorch lacks.
std::shared_ptr<const ExecRule> fallback_rule(std::string_view symbol_name);
// Registration used by those families (does not trigger the table's initialisation).
void add_builtin(std::string name, ExecRule rule);
std::shared_ptr<const ExecRule> find_builtin(std::string_view name);
}  // namespace detail

}  // namespace tv::exec
