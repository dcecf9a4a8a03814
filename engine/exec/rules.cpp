#include "exec/rules.h"

#include <map>
#include <mutex>

namespace tv::exec {

namespace {

struct Table {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const ExecRule>, std::less<>> rules;
};

Table& raw_table() {
  static Table t;
  return t;
}

void put(std::string name, ExecRule rule) {
  auto& t = raw_table();
  std::lock_guard lock(t.mutex);
  t.rules[std::move(name)] = std::make_shared<const ExecRule>(std::move(rule));
}

// The table with the built-in rules installed (once, before any user rule can be replaced).
Table& table() {
  static std::once_flag once;
  std::call_once(once, [] {
    detail::register_prim_rules();
    detail::register_torch_rules();
    detail::register_attention_rules();
    detail::register_prologue_rules();
    detail::register_collective_rules();
  });
  return raw_table();
}

}  // namespace

void register_exec_rule(std::string name, ExecRule rule) {
  table();  // built-ins first, so a user rule is never overwritten by them
  put(std::move(name), std::move(rule));
}

void register_exec_rule(std::string name, SimpleExecRule rule) {
  register_exec_rule(std::move(name), ExecRule([rule = std::move(rule)](const ExecContext&, const std::vector<RValue>& a,
                                                                        const RKwargs& k) { return rule(a, k); }));
}

std::shared_ptr<const ExecRule> find_exec_rule(std::string_view name) {
  auto& t = table();
  {
    std::lock_guard lock(t.mutex);
    auto it = t.rules.find(name);
    if (it != t.rules.end()) return it->second;
  }
  auto rule = detail::fallback_rule(name);
  if (rule) {
    std::lock_guard lock(t.mutex);
    t.rules.emplace(std::string(name), rule);
  }
  return rule;
}

bool has_exec_rule(std::string_view name) { return find_exec_rule(name) != nullptr; }

std::vector<std::string> exec_rule_names() {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  std::vector<std::string> out;
  for (const auto& [k, v] : t.rules) out.push_back(k);
  return out;
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

void detail::add_builtin(std::string name, ExecRule rule) { put(std::move(name), std::move(rule)); }

std::shared_ptr<const ExecRule> detail::find_builtin(std::string_view name) {
  auto& t = raw_table();
  std::lock_guard lock(t.mutex);
  auto it = t.rules.find(name);
  return it == t.rules.end() ? nullptr : it->second;
}

}  // namespace tv::exec
