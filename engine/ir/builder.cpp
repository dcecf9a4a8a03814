#include "ir/builder.h"

#include <algorithm>

#include "ir/name_table.h"

namespace tv {

TraceBuilder::TraceBuilder(std::string function_name) : trace_(std::make_shared<Trace>()) {
  trace_->function_name = std::move(function_name);
  levels_.push_back(&trace_->body);
}

void ReservedNames::add(const std::string& name) {
  int64_t n = default_name_number(name);
  if (n < 0) {
    others.insert(name);
    return;
  }
  if (static_cast<size_t>(n) >= numbers.size()) numbers.resize(std::max<size_t>(n + 1, numbers.size() * 2));
  numbers[n] = true;
}

void ReservedNames::add(const ReservedNames& names) {
  if (names.numbers.size() > numbers.size()) numbers.resize(names.numbers.size());
  for (size_t n = 0; n < names.numbers.size(); ++n)
    if (names.numbers[n]) numbers[n] = true;
  others.insert(names.others.begin(), names.others.end());
}

bool ReservedNames::contains(const std::string& name) const {
  int64_t n = default_name_number(name);
  if (n < 0) return others.count(name) > 0;
  return static_cast<size_t>(n) < numbers.size() && numbers[n];
}

std::string TraceBuilder::fresh_name(const std::string& prefix) {
  while (true) {
    int n = counter_++;
    if (prefix == "t" && static_cast<size_t>(n) < taken_.numbers.size() && taken_.numbers[n]) continue;
    std::string name = prefix + std::to_string(n);
    if (!taken_.others.count(name)) return name;
  }
}

void TraceBuilder::reserve_name(const std::string& name) { taken_.add(name); }

void TraceBuilder::reserve_names(const ReservedNames& names) { taken_.add(names); }

ProxyPtr TraceBuilder::tensor(std::vector<int64_t> shape, DType dtype, Device device, bool requires_grad) {
  return make_tensor(fresh_name(), std::move(shape), dtype, device, requires_grad);
}

ProxyPtr TraceBuilder::input(ProxyPtr proxy, ParamKind kind) {
  reserve_name(proxy->name);
  trace_->params.push_back({proxy, kind});
  BoundSymbol b;
  b.symbol = &structural::unpack_trivial();
  b.outputs = {proxy};
  emit(std::move(b));
  return proxy;
}

Value TraceBuilder::call(std::string_view symbol_name, std::vector<Value> args, Kwargs kwargs) {
  const Symbol* s = SymbolRegistry::global().find(symbol_name);
  if (!s) throw OpError("unknown symbol '" + std::string(symbol_name) + "'");
  return call(*s, std::move(args), std::move(kwargs));
}

Value TraceBuilder::call(const Symbol& symbol, std::vector<Value> args, Kwargs kwargs) {
  if (!symbol.impl) throw OpError("symbol '" + symbol.name + "' is opaque: it can be printed but not traced");
  BoundSymbol b;
  b.symbol = &symbol;
  b.args = std::move(args);
  b.kwargs = std::move(kwargs);
  b.source = location_ref_;
  bool top = levels_.size() == 1;
  if (top) {
    b.header = std::move(pending_header_);
    pending_header_ = nullptr;
  }
  // A prim records nothing below it: its subsymbols get a buffer only when there are some.
  std::vector<BoundSymbol> subsymbols;
  levels_.push_back(&subsymbols);
  Value out;
  try {
    out = symbol.impl(*this, b.args, b.kwargs);
  } catch (const OpError& e) {
    levels_.pop_back();
    if (!top) throw;
    std::string where = location_.empty() ? "" : "\n  at " + location_;
    throw OpError(symbol.name + "(" + describe_args(b.args, b.kwargs) + "): " + e.what() + where);
  }
  levels_.pop_back();
  if (!subsymbols.empty()) b.subsymbols = std::move(subsymbols);
  std::vector<ProxyPtr> outputs;
  for_each_proxy(out, [&](const ProxyPtr& p) { outputs.push_back(p); });
  b.outputs = std::move(outputs);
  levels_.back()->push_back(std::move(b));
  return out;
}

void TraceBuilder::emit(BoundSymbol b) {
  if (!b.source && !is_structural(b)) b.source = location_ref_;
  if (levels_.size() == 1 && !b.header && b.symbol->form != PrintForm::unpack_trivial && pending_header_) {
    b.header = std::move(pending_header_);
    pending_header_ = nullptr;
  }
  levels_.back()->push_back(std::move(b));
}

void TraceBuilder::set_location(std::string location) {
  if (location == location_) return;
  location_ = std::move(location);
  location_ref_ = make_source(location_);
  pending_header_ = location_ref_;
}

TracePtr TraceBuilder::finish(Value returned, std::vector<std::string> return_tags) {
  BoundSymbol r;
  r.symbol = &structural::ret();
  r.args = {std::move(returned)};
  r.tags = std::move(return_tags);
  trace_->body.push_back(std::move(r));
  levels_.clear();
  return std::move(trace_);
}

bool any_requires_grad(const std::vector<Value>& values) {
  bool any = false;
  for (const auto& v : values)
    for_each_proxy(v, [&](const ProxyPtr& p) { any = any || (p->is_tensor() && p->requires_grad); });
  return any;
}

std::string describe_args(const std::vector<Value>& args, const Kwargs& kwargs) {
  auto one = [](const Value& v) {
    if (v.is_proxy() && v.proxy->is_tensor()) return v.proxy->name + ": " + type_text(*v.proxy);
    return python_text(v);
  };
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : ", ") + one(a);
  for (const auto& [k, v] : kwargs) out += (out.empty() ? "" : ", ") + k + "=" + one(v);
  return out;
}

}  // namespace tv
