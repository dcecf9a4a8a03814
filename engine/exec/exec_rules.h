// The rules the executor runs with. Every op family registers its own (engine/ops, in the file
// that defines the op: ltorch::register_ops); the executor adds those that need what only a run
// has: the prologue's (the module, cache_info) and the collectives' (the communicators).
// Contract: find_exec_rule installs the built-in rules once (thread-safe), then gives the rule of
// a symbol: the one registered for it, or for an ATen fallback's spelling (`torch.ops.aten.*`,
// also when an opaque symbol of a parsed trace has it) the operator's, made on first use; null
// when there is none. register_exec_rule is the user's door: a rule for the symbol `name` (call
// form) that replaces the built-in one, if any.
#pragma once
#include <memory>
#include <string_view>

#include "runtime/rules.h"

namespace tv::exec {

void install_builtin_rules();
std::shared_ptr<const ExecRule> find_exec_rule(const Symbol& symbol);
void register_exec_rule(std::string_view name, ExecRule rule);
void register_exec_rule(std::string_view name, SimpleExecRule rule);

namespace detail {
// The executor's own families (rules_prologue.cpp, rules_collectives.cpp), installed once.
void register_prologue_rules();
void register_collective_rules();
}  // namespace detail

}  // namespace tv::exec
