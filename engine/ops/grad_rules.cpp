#include "ops/grad_rules.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "ops/ltorch.h"
#include "ops/meta.h"

namespace tv {

namespace {

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

// Node-based: a rule's address stays valid while others are added (ATen fallbacks, on first use).
std::unordered_map<const Symbol*, GradRule>& table() {
  static std::unordered_map<const Symbol*, GradRule> t;
  return t;
}

}  // namespace

void register_grad_rule(const Symbol& symbol, GradFn fn, GradApplies applies) {
  std::lock_guard lock(table_mutex());
  table()[&symbol] = GradRule{std::move(fn), false, std::move(applies), {}};
}

void register_grad_through_decomposition(const Symbol& symbol) {
  std::lock_guard lock(table_mutex());
  table()[&symbol] = GradRule{{}, true, {}, {}};
}

void register_residues(const Symbol& symbol, WithResidues with_residues) {
  std::lock_guard lock(table_mutex());
  auto it = table().find(&symbol);
  if (it == table().end()) throw std::logic_error("residues of " + symbol.name + ", which has no gradient rule");
  it->second.with_residues = std::move(with_residues);
}

void register_not_differentiable(const Symbol& symbol) {
  register_grad_rule(symbol, [](TraceBuilder&, const BoundSymbol& fwd, const std::vector<Value>&) {
    return std::vector<Value>(fwd.args.size());
  });
}

const GradRule* find_grad_rule(const Symbol& symbol) {
  ltorch::register_ops();
  std::lock_guard lock(table_mutex());
  auto it = table().find(&symbol);
  return it == table().end() ? nullptr : &it->second;
}

namespace grad {

T tensor_at(const BoundSymbol& fwd, size_t i) {
  if (i >= fwd.args.size() || !fwd.args[i].is_proxy() || !fwd.args[i].proxy->is_tensor()) return nullptr;
  return fwd.args[i].proxy;
}

T cotangent_or_zeros(TraceBuilder& bwd, const BoundSymbol& fwd, const std::vector<Value>& cts, size_t i) {
  if (i < cts.size() && cts[i].is_proxy()) return cts[i].proxy;
  const T& out = fwd.outputs.at(i);
  return ltorch::zeros(bwd, out->shape, out->dtype, out->device);
}

T sum_to(TraceBuilder& bwd, T g, const Shape& shape, DType dtype) {
  auto lead = static_cast<int64_t>(g->shape.size()) - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(g->shape.size()); ++d)
    if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) dims.push_back(d);
  if (!dims.empty()) g = ltorch::sum(bwd, g, dims, false);
  if (g->shape != shape) g = ltorch::reshape(bwd, g, shape);
  if (g->dtype != dtype) g = ltorch::convert_element_type(bwd, g, dtype);
  return g;
}

Value reduce_like(TraceBuilder& bwd, const T& g, const T& like) {
  if (!like || !g) return Value::none();
  return Value::of(sum_to(bwd, g, like->shape, like->dtype));
}

std::vector<int64_t> reduction_dims(const BoundSymbol& fwd, size_t i, int64_t rank) {
  std::vector<int64_t> dims;
  if (i < fwd.args.size() && !fwd.args[i].is_none()) dims = meta::normalize_dims(fwd.args[i].as_ints(), rank);
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::sort(dims.begin(), dims.end());
  return dims;
}

bool flag(const BoundSymbol& fwd, size_t i, std::string_view keyword, bool fallback) {
  for (const auto& [k, v] : fwd.kwargs)
    if (k == keyword && v.kind == Value::Kind::boolean) return v.b;
  if (i < fwd.args.size() && fwd.args[i].kind == Value::Kind::boolean) return fwd.args[i].b;
  return fallback;
}

T unreduce(TraceBuilder& bwd, const T& g, const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (keepdim || std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
  return ltorch::broadcast_in_dim(bwd, g, shape, kept);
}

}  // namespace grad

}  // namespace tv
