#include "exec/exec_rules.h"

#include <mutex>
#include <string>
#include <string_view>

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

namespace {

// Thunder's torch executor calls an ATen operator by name, without an overload:
// `torch.torch.ops.aten._log_softmax_backward_data(...)`, the default overload's fallback.
constexpr std::string_view kThunderAtenCall = "torch.torch.ops.aten.";

std::shared_ptr<const ExecRule> thunder_aten_call_rule(const Symbol& symbol) {
  std::string name = "torch.ops.aten." + symbol.name.substr(kThunderAtenCall.size()) + ".default";
  try {
    share_exec_rule(symbol, ops::fallback_symbol(name));
  } catch (const OpError&) {
    return nullptr;  // not an operator of this LibTorch: the executor names the unknown symbol
  }
  return exec_rule_of(symbol);
}

}  // namespace

std::shared_ptr<const ExecRule> find_exec_rule(const Symbol& symbol) {
  install_builtin_rules();
  if (auto rule = exec_rule_of(symbol)) return rule;
  if (symbol.name.rfind(kThunderAtenCall, 0) == 0) return thunder_aten_call_rule(symbol);
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
