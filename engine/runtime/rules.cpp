#include "runtime/rules.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace tv::exec {

namespace {

struct Table {
  std::mutex mutex;
  std::unordered_map<const Symbol*, std::shared_ptr<const ExecRule>> rules;
  std::unordered_map<const Symbol*, std::shared_ptr<const ResidualRule>> residual_rules;
  std::atomic<uint64_t> generation{1};
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

void set_exec_rule(const Symbol& symbol, ExecRule rule) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  t.rules[&symbol] = std::make_shared<const ExecRule>(std::move(rule));
  ++t.generation;
}

void set_exec_rule(const Symbol& symbol, SimpleExecRule rule) {
  set_exec_rule(symbol, ExecRule([rule = std::move(rule)](const ExecContext&, const std::vector<RValue>& a,
                                                          const RKwargs& k) { return rule(a, k); }));
}

void share_exec_rule(const Symbol& alias, const Symbol& of) {
  auto rule = exec_rule_of(of);
  if (!rule) throw std::logic_error("exec rule of " + alias.name + ": " + of.name + " has no rule to share");
  auto& t = table();
  std::lock_guard lock(t.mutex);
  t.rules[&alias] = std::move(rule);
  ++t.generation;
}

std::shared_ptr<const ExecRule> exec_rule_of(const Symbol& symbol) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.rules.find(&symbol);
  return it == t.rules.end() ? nullptr : it->second;
}

uint64_t exec_rules_generation() { return table().generation.load(std::memory_order_acquire); }

std::vector<const Symbol*> symbols_with_exec_rules() {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  std::vector<const Symbol*> out;
  for (const auto& [symbol, rule] : t.rules) out.push_back(symbol);
  return out;
}

void set_residual_rule(const Symbol& symbol, ResidualRule rule) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  t.residual_rules[&symbol] = std::make_shared<const ResidualRule>(std::move(rule));
}

std::shared_ptr<const ResidualRule> residual_rule_of(const Symbol& symbol) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.residual_rules.find(&symbol);
  return it == t.residual_rules.end() ? nullptr : it->second;
}

const RValue& rarg(const std::vector<RValue>& args, size_t i, const char* name) {
  if (i >= args.size())
    throw ExecError("missing argument " + std::to_string(i) + " ('" + name + "'): got " + std::to_string(args.size()) +
                    " arguments");
  return args[i];
}

const RValue* rkwarg(const RKwargs& kwargs, std::string_view name) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace tv::exec
