// Gradient rules of the shape ops: a reshape's grad is reshaped back, a permutation's grad is
// permuted by the inverse, a broadcast's grad is summed over the broadcast dims, split and cat
// swap roles (cat's grad is cut with ltorch.split when the pieces are equal, prims.slice otherwise),
// a slice's grad is put back in place between zeros (cat), a strided one interleaved with zeros first.
#include <algorithm>
#include <functional>

#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/grad_rules.h"

namespace tv {

namespace {

using namespace tv::ltorch;
using grad::tensor_at;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

T call1_slice(TraceBuilder& b, const T& a, const Dims& begin, const Dims& end) {
  return b.call("prims.slice", {Value::of(a), Value::ints(begin), Value::ints(end), Value::none()}).proxy;
}

// Only the first argument is differentiable; `fn` maps g to its grad.
GradFn first_only(std::function<T(TraceBuilder&, const BoundSymbol&, const T& a, const T& g)> fn) {
  return [fn](TraceBuilder& b, const BoundSymbol& f, Cts cts) -> Out {
    Out out(f.args.size());
    T a = tensor_at(f, 0);
    out[0] = Value::of(grad::sum_to(b, fn(b, f, a, cts[0].proxy), a->shape, a->dtype));
    return out;
  };
}

T reshape_back(TraceBuilder& b, const BoundSymbol&, const T& a, const T& g) { return reshape(b, g, a->shape); }

T permute_back(TraceBuilder& b, const Dims& perm, const T& g) {
  Dims inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return permute(b, g, inverse);
}

T broadcast_back(TraceBuilder& b, const BoundSymbol& f, const T& a, const T& g) {
  Dims bdims = f.args.at(2).as_ints(), summed;
  for (int64_t d = 0; d < rank(g); ++d) {
    auto it = std::find(bdims.begin(), bdims.end(), d);
    if (it == bdims.end() || (a->shape[it - bdims.begin()] == 1 && g->shape[d] != 1)) summed.push_back(d);
  }
  T r = summed.empty() ? g : sum(b, g, summed, false);
  return r->shape == a->shape ? r : reshape(b, r, a->shape);
}

Out split_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0);
  std::vector<T> pieces;
  for (size_t i = 0; i < f.outputs.size(); ++i) pieces.push_back(grad::cotangent_or_zeros(b, f, cts, i));
  int64_t dim = meta::normalize_dim(f.args.at(2).i, rank(a));
  return {Value::of(pieces.size() == 1 ? pieces[0] : cat(b, pieces, dim)), Value::none(), Value::none()};
}

// `g` along `dim` spread to every `stride`-th place of a span of `length` (zeros between).
T interleave_zeros(TraceBuilder& b, const T& g, int64_t dim, int64_t stride, int64_t length) {
  Dims gap_shape = g->shape;
  gap_shape.insert(gap_shape.begin() + dim + 1, stride - 1);
  T spread = cat(b, {unsqueeze(b, g, dim + 1), zeros(b, gap_shape, g->dtype, g->device)}, dim + 1);
  Dims merged = g->shape;
  merged[dim] *= stride;
  spread = reshape(b, spread, merged);
  if (merged[dim] == length) return spread;
  Dims begin(merged.size(), 0), end = merged;
  end[dim] = length;
  return call1_slice(b, spread, begin, end);
}

// prims.slice(a, start, end, strides): g goes back to the places it was read from, zeros elsewhere.
Out slice_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), g = cts[0].proxy;
  Dims start = f.args.at(1).as_ints(), end = f.args.at(2).as_ints();
  Dims strides = f.args.size() > 3 && !f.args[3].is_none() ? f.args[3].as_ints() : Dims(start.size(), 1);
  T full = g;
  for (int64_t d = 0; d < rank(a); ++d) {
    int64_t size = a->shape[d];
    int64_t span = std::min(end[d], size) - start[d];  // the places [start, start + span) the slice covers
    if (strides[d] > 1 && full->shape[d] > 0) full = interleave_zeros(b, full, d, strides[d], span);
    std::vector<T> parts;
    auto zeros_of = [&](int64_t n) {
      Dims shape = full->shape;
      shape[d] = n;
      return zeros(b, shape, g->dtype, g->device);
    };
    int64_t covered = strides[d] > 1 ? span : full->shape[d];
    if (start[d] > 0) parts.push_back(zeros_of(start[d]));
    parts.push_back(full);
    if (start[d] + covered < size) parts.push_back(zeros_of(size - start[d] - covered));
    if (parts.size() > 1) full = cat(b, parts, d);
  }
  Out out(f.args.size());
  out[0] = grad::reduce_like(b, full, a);
  return out;
}

// stack and unbind swap roles: stack's grad is its cotangent unbound, unbind's its cotangents stacked.
Out stack_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T g = cts[0].proxy;
  int64_t dim = meta::normalize_dim(f.args.at(1).i, rank(g));
  std::vector<Value> grads;
  for (const T& p : unbind(b, g, dim)) grads.push_back(Value::of(p));
  return {Value::list(grads), Value::none()};
}

Out unbind_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0);
  std::vector<T> pieces;
  for (size_t i = 0; i < f.outputs.size(); ++i) pieces.push_back(grad::cotangent_or_zeros(b, f, cts, i));
  return {Value::of(stack(b, pieces, meta::normalize_dim(f.args.at(1).i, rank(a)))), Value::none()};
}

Out cat_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T g = cts[0].proxy;
  const auto& items = f.args.at(0).items;
  int64_t dim = meta::normalize_dim(f.args.at(1).i, rank(g));
  bool equal = true;
  for (const auto& v : items) equal = equal && v.proxy->shape[dim] == items[0].proxy->shape[dim];
  std::vector<Value> grads;
  if (equal && !items.empty() && items[0].proxy->shape[dim] > 0) {
    for (const T& p : split(b, g, items[0].proxy->shape[dim], dim)) grads.push_back(Value::of(p));
  } else {
    int64_t start = 0;
    for (const auto& v : items) {
      Dims begin(g->shape.size(), 0), end = g->shape;
      begin[dim] = start;
      end[dim] = start += v.proxy->shape[dim];
      grads.push_back(b.call("prims.slice", {Value::of(g), Value::ints(begin), Value::ints(end), Value::none()}));
    }
  }
  for (size_t i = 0; i < items.size(); ++i)
    grads[i] = grad::reduce_like(b, grads[i].proxy, items[i].proxy);
  return {Value::list(grads), Value::none()};
}

}  // namespace

void register_shape_grads() {
  for (const char* n : {"ltorch.reshape", "ltorch.view", "ltorch.unsqueeze", "prims.reshape"})
    register_grad_rule(n, first_only(reshape_back));
  register_grad_rule("ltorch.transpose", first_only([](TraceBuilder& b, const BoundSymbol& f, const T&, const T& g) {
                       return transpose(b, g, f.args.at(1).i, f.args.at(2).i);
                     }));
  auto permute_rule = first_only([](TraceBuilder& b, const BoundSymbol& f, const T& a, const T& g) {
    return permute_back(b, meta::normalize_dims(f.args.at(1).as_ints(), rank(a)), g);
  });
  register_grad_rule("ltorch.permute", permute_rule);
  register_grad_rule("prims.transpose", permute_rule);
  // sum_to (inside first_only) reduces an expanded grad back to the input's shape.
  register_grad_rule("ltorch.expand", first_only([](TraceBuilder&, const BoundSymbol&, const T&, const T& g) { return g; }));
  register_grad_rule("ltorch.broadcast_in_dim", first_only(broadcast_back));
  register_grad_rule("prims.broadcast_in_dim", first_only(broadcast_back));
  register_grad_rule("ltorch.split", split_rule);
  register_grad_rule("ltorch.cat", cat_rule);
  register_grad_rule("ltorch.stack", stack_rule);
  register_grad_rule("ltorch.unbind", unbind_rule);
  register_grad_rule("prims.cat", cat_rule);
  register_grad_rule("prims.slice", slice_rule);
}

}  // namespace tv
