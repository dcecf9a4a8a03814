#include "exec/exec_rules.h"

#include <mutex>

#include "ops/aten_fallback.h"
#include "ops/ltorch.h"

namespace tv::exec {

void install_builtin_rules() {
  static std::once_flag once;
  std::call_once(once, [] {
    ltorch::register_ops();
    detail::register_prologue_rules();
    detail::register_collective_rules();
  });
}

std::shared_ptr<const ExecRule> find_exec_rule(const Symbol& symbol) {
  install_builtin_rules();
  if (auto rule = exec_rule_of(symbol)) return rule;
  if (symbol.name != ops::kFallbackVjp && !ops::is_fallback_name(symbol.name)) return nullptr;
  try {
    ops::fallback_symbol(symbol.name);  // defines it, rule included (upgrading a parsed opaque one)
  } catch (const OpError&) {
    return nullptr;  // not an operator of this LibTorch: the executor names the unknown symbol
  }
  return exec_rule_of(symbol);
}

void register_exec_rule(std::string_view name, ExecRule rule) {
  install_builtin_rules();  // first, so that a built-in never replaces the user's rule
  set_exec_rule(SymbolRegistry::global().find_or_opaque(name, PrintForm::call), std::move(rule));
}

void register_exec_rule(std::string_view name, SimpleExecRule rule) {
  install_builtin_rules();
  set_exec_rule(SymbolRegistry::global().find_or_opaque(name, PrintForm::call), std::move(rule));
}

}  // namespace tv::exec
