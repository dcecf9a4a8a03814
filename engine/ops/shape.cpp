// Shape ltorch ops: reshape/view, transpose/permute, unsqueeze/expand/broadcast_in_dim, split, cat,
// stack (unsqueeze each, cat), unbind (a slice and a reshape per piece), flip and flatten (a reshape),
// roll (two slices and a cat per rolled dim) and repeat (a broadcast and a reshape).
// Each resolves torch conveniences (-1 sizes, negative dims) and records a concrete prim:
// `ltorch.reshape(t5, (-1, 10))` -> `prims.reshape(t5, (2, 10))`,
// `ltorch.permute(t, (1, 0))` -> `prims.transpose(t, (1, 0))`, unsqueeze/expand -> broadcast_in_dim.
// The file holds, in order, each op's meta and decomposition, its gradient rule (and those of the
// shape prims), its execution rule.
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include <algorithm>
#include <functional>
#include "ops/grad_rules.h"
#include "runtime/rule_util.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

Value reshape_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Shape shape = ints_arg(args, 1, "shape");
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw OpError("only one dimension can be -1 in " + shape_text(shape));
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw OpError("invalid size " + std::to_string(shape[i]) + " in " + shape_text(shape));
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || a->numel() % known != 0)
      throw OpError("cannot reshape a tensor of shape " + shape_text(a->shape) + " to " + shape_text(shape));
    shape[inferred] = a->numel() / known;
  }
  return Value::of(call1(b, "prims.reshape", {Value::of(a), Value::ints(shape)}));
}

Value view_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(reshape(b, tensor_arg(args, 0, "a"), ints_arg(args, 1, "shape")));
}

Value transpose_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  int64_t d0 = meta::normalize_dim(int_arg(args, 1, "dim0"), rank(a));
  int64_t d1 = meta::normalize_dim(int_arg(args, 2, "dim1"), rank(a));
  std::vector<int64_t> perm(a->shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  if (!perm.empty()) std::swap(perm[d0], perm[d1]);
  return Value::of(call1(b, "prims.transpose", {Value::of(a), Value::ints(perm)}));
}

Value permute_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = ints_arg(args, 1, "dims");
  if (static_cast<int64_t>(dims.size()) != rank(a))
    throw OpError("permute dims " + shape_text(dims) + " do not match a tensor of shape " + shape_text(a->shape));
  return Value::of(call1(b, "prims.transpose", {Value::of(a), Value::ints(meta::normalize_dims(dims, rank(a)))}));
}

Value unsqueeze_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a) + 1);
  Shape shape = a->shape;
  shape.insert(shape.begin() + dim, 1);
  Dims kept;
  for (int64_t i = 0; i < rank(a) + 1; ++i)
    if (i != dim) kept.push_back(i);
  return Value::of(call1(b, "prims.broadcast_in_dim", {Value::of(a), Value::ints(shape), Value::ints(kept)}));
}

Value flip_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  return Value::of(call1(b, "prims.flip", {Value::of(a), Value::ints(meta::normalize_dims(ints_arg(args, 1, "dims"), rank(a)))}));
}

// flatten(a, start_dim=0, end_dim=-1): the dims from start to end merged into one, by reshape.
Value flatten_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  const Value* start = args.size() > 1 ? &args[1] : kwarg(kwargs, "start_dim");
  const Value* end = args.size() > 2 ? &args[2] : kwarg(kwargs, "end_dim");
  int64_t r = std::max<int64_t>(rank(a), 1);
  int64_t s = meta::normalize_dim(start && !start->is_none() ? start->i : 0, r);
  int64_t e = meta::normalize_dim(end && !end->is_none() ? end->i : -1, r);
  if (s > e) throw OpError("flatten: start_dim " + std::to_string(s) + " is after end_dim " + std::to_string(e));
  if (rank(a) == 0) return Value::of(ltorch::reshape(b, a, {1}));
  Shape shape(a->shape.begin(), a->shape.begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= a->shape[d];
  shape.push_back(merged);
  shape.insert(shape.end(), a->shape.begin() + e + 1, a->shape.end());
  return Value::of(ltorch::reshape(b, a, shape));
}

// roll(a, shifts, dims): along each dim, the last `shift` elements moved to the front, as a cat of
// two slices. No dims rolls the flattened tensor, reshaped back.
Value roll_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Dims shifts = ints_arg(args, 1, "shifts");
  Dims dims = args.size() > 2 && !args[2].is_none() ? ints_arg(args, 2, "dims") : Dims{};
  if (dims.empty()) {
    if (shifts.size() != 1) throw OpError("roll without dims takes one shift, got " + shape_text(shifts));
    T flat = ltorch::reshape(b, a, {a->numel()});
    return Value::of(ltorch::reshape(b, call1(b, "ltorch.roll", {V(flat), Value::ints(shifts), Value::ints({0})}), a->shape));
  }
  if (shifts.size() != dims.size())
    throw OpError("roll takes one shift per dim, got shifts " + shape_text(shifts) + " and dims " + shape_text(dims));
  T out = a;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t dim = meta::normalize_dim(dims[i], rank(a));
    int64_t length = a->shape[dim];
    int64_t shift = length == 0 ? 0 : ((shifts[i] % length) + length) % length;
    if (shift == 0) continue;
    auto piece = [&](int64_t from, int64_t to) {
      Dims begin(a->shape.size(), 0), end = a->shape;
      begin[dim] = from;
      end[dim] = to;
      return call1(b, "prims.slice", {V(out), Value::ints(begin), Value::ints(end), Value::none()});
    };
    out = ltorch::cat(b, {piece(length - shift, length), piece(0, length - shift)}, dim);
  }
  return Value::of(out);
}

// repeat(a, sizes): a broadcast to [sizes of the new leading dims, (size_d, a_d) pairs], then merged
// to [size_d * a_d]; sizes may have more dims than a.
Value repeat_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Dims sizes = ints_arg(args, 1, "sizes");
  if (static_cast<int64_t>(sizes.size()) < rank(a))
    throw OpError("repeat needs at least as many sizes as the tensor has dims: " + shape_text(sizes) + " for " +
                  shape_text(a->shape));
  size_t leading = sizes.size() - a->shape.size();
  Dims wide(sizes.begin(), sizes.begin() + static_cast<int64_t>(leading)), kept, shape = wide;
  for (size_t d = 0; d < a->shape.size(); ++d) {
    if (sizes[leading + d] < 0) throw OpError("repeat sizes must not be negative: " + shape_text(sizes));
    wide.push_back(sizes[leading + d]);
    wide.push_back(a->shape[d]);
    kept.push_back(static_cast<int64_t>(wide.size()) - 1);
    shape.push_back(sizes[leading + d] * a->shape[d]);
  }
  T spread = call1(b, "prims.broadcast_in_dim", {V(a), Value::ints(wide), Value::ints(kept)});
  return Value::of(call1(b, "prims.reshape", {V(spread), Value::ints(shape)}));
}

Value expand_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Shape shape = ints_arg(args, 1, "shape");
  int64_t offset = static_cast<int64_t>(shape.size()) - rank(a);
  if (offset < 0) throw OpError("cannot expand shape " + shape_text(a->shape) + " to fewer dims " + shape_text(shape));
  Dims dims;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (i < offset) throw OpError("-1 is not allowed for a new leading dim in " + shape_text(shape));
      shape[i] = a->shape[i - offset];
    }
    if (i >= offset) dims.push_back(i);
  }
  return Value::of(call1(b, "prims.broadcast_in_dim", {Value::of(a), Value::ints(shape), Value::ints(dims)}));
}

Value broadcast_in_dim_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(call1(b, "prims.broadcast_in_dim",
                         {Value::of(tensor_arg(args, 0, "a")), Value::ints(ints_arg(args, 1, "shape")),
                          Value::ints(ints_arg(args, 2, "broadcast_dimensions"))}));
}

Value split_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  int64_t size = int_arg(args, 1, "split_size");
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), rank(a));
  if (size <= 0) throw OpError("split_size must be positive, got " + std::to_string(size));
  std::vector<Value> pieces;
  int64_t length = a->shape.empty() ? 1 : a->shape[dim];
  for (int64_t start = 0; start < length || (length == 0 && pieces.empty()); start += size) {
    Dims begin(a->shape.size(), 0), end = a->shape;
    begin[dim] = start;
    end[dim] = std::min(start + size, length);
    pieces.push_back(
        Value::of(call1(b, "prims.slice", {Value::of(a), Value::ints(begin), Value::ints(end), Value::none()})));
  }
  return Value::tuple(std::move(pieces));
}

Value cat_impl(TraceBuilder& b, Args args, Kw) {
  const Value& list = arg(args, 0, "tensors");
  return Value::of(call1(b, "prims.cat", {Value::list(list.items), Value::integer(int_arg(args, 1, "dim"))}));
}

Value stack_impl(TraceBuilder& b, Args args, Kw) {
  const Value& list = arg(args, 0, "tensors");
  if (!list.is_sequence() || list.items.empty()) throw OpError("stack expects a non-empty list of tensors");
  std::vector<T> tensors;
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (!list.items[i].is_proxy() || !list.items[i].proxy->is_tensor())
      throw OpError("stack expects tensors; item " + std::to_string(i) + " is not one");
    tensors.push_back(list.items[i].proxy);
    if (tensors.back()->shape != tensors.front()->shape)
      throw OpError("stack expects tensors of one shape; item " + std::to_string(i) + " is " +
                    shape_text(tensors.back()->shape) + ", item 0 " + shape_text(tensors.front()->shape));
  }
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(tensors.front()) + 1);
  std::vector<Value> lifted;
  for (const auto& t : tensors) lifted.push_back(V(unsqueeze(b, t, dim)));
  return Value::of(call1(b, "prims.cat", {Value::list(std::move(lifted)), Value::integer(dim)}));
}

Value unbind_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  if (a->shape.empty()) throw OpError("unbind expects a tensor of at least one dimension, got a 0-d one");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a));
  Shape piece_shape = a->shape;
  piece_shape.erase(piece_shape.begin() + dim);
  std::vector<Value> pieces;
  for (int64_t k = 0; k < a->shape[dim]; ++k) {
    Dims begin(a->shape.size(), 0), end = a->shape;
    begin[dim] = k;
    end[dim] = k + 1;
    T slice = call1(b, "prims.slice", {Value::of(a), Value::ints(begin), Value::ints(end), Value::none()});
    pieces.push_back(Value::of(call1(b, "prims.reshape", {Value::of(slice), Value::ints(piece_shape)})));
  }
  return Value::tuple(std::move(pieces));
}

std::vector<Value> values_of(const std::vector<T>& ts) {
  std::vector<Value> out;
  for (const auto& t : ts) out.push_back(V(t));
  return out;
}

}  // namespace

T reshape(TraceBuilder& b, const T& a, const Dims& shape) {
  return call1(b, "ltorch.reshape", {V(a), Value::ints(shape)});
}
T view(TraceBuilder& b, const T& a, const Dims& shape) { return call1(b, "ltorch.view", {V(a), Value::ints(shape)}); }
T transpose(TraceBuilder& b, const T& a, int64_t dim0, int64_t dim1) {
  return call1(b, "ltorch.transpose", {V(a), Value::integer(dim0), Value::integer(dim1)});
}
T permute(TraceBuilder& b, const T& a, const Dims& dims) {
  return call1(b, "ltorch.permute", {V(a), Value::ints(dims)});
}
T unsqueeze(TraceBuilder& b, const T& a, int64_t dim) {
  return call1(b, "ltorch.unsqueeze", {V(a), Value::integer(dim)});
}
T expand(TraceBuilder& b, const T& a, const Dims& shape) {
  return call1(b, "ltorch.expand", {V(a), Value::ints(shape)});
}
T broadcast_in_dim(TraceBuilder& b, const T& a, const Dims& shape, const Dims& broadcast_dimensions) {
  return call1(b, "ltorch.broadcast_in_dim", {V(a), Value::ints(shape), Value::ints(broadcast_dimensions)});
}
std::vector<T> split(TraceBuilder& b, const T& a, int64_t split_size, int64_t dim) {
  Value out = b.call("ltorch.split", {V(a), Value::integer(split_size), Value::integer(dim)});
  std::vector<T> pieces;
  for_each_proxy(out, [&](const ProxyPtr& p) { pieces.push_back(p); });
  return pieces;
}
T cat(TraceBuilder& b, const std::vector<T>& tensors, int64_t dim) {
  return call1(b, "ltorch.cat", {Value::list(values_of(tensors)), Value::integer(dim)});
}
T stack(TraceBuilder& b, const std::vector<T>& tensors, int64_t dim) {
  return call1(b, "ltorch.stack", {Value::list(values_of(tensors)), Value::integer(dim)});
}
std::vector<T> unbind(TraceBuilder& b, const T& a, int64_t dim) {
  Value out = b.call("ltorch.unbind", {V(a), Value::integer(dim)});
  std::vector<T> pieces;
  for_each_proxy(out, [&](const ProxyPtr& p) { pieces.push_back(p); });
  return pieces;
}

}  // namespace tv::ltorch

// ---- Gradient rules ----
// Gradient rules of the shape ops: a reshape's grad is reshaped back, a permutation's grad is
// permuted by the inverse, a broadcast's grad is summed over the broadcast dims, split and cat
// swap roles (cat's grad is cut with ltorch.split when the pieces are equal, prims.slice otherwise),
// a slice's grad is put back in place between zeros (cat), a strided one interleaved with zeros first.

namespace tv {

namespace {

using ops::op;

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

void register_shape_gradients() {
  for (const char* n : {"ltorch.flip", "prims.flip"})
    register_grad_rule(op(n), first_only([](TraceBuilder& b, const BoundSymbol& f, const T&, const T& g) {
                         return ops::call1(b, "prims.flip", {Value::of(g), f.args.at(1)});
                       }));
  for (const char* n : {"ltorch.flatten", "ltorch.roll", "ltorch.repeat"}) register_grad_through_decomposition(op(n));
  for (const char* n : {"ltorch.reshape", "ltorch.view", "ltorch.unsqueeze", "prims.reshape"})
    register_grad_rule(op(n), first_only(reshape_back));
  register_grad_rule(op("ltorch.transpose"), first_only([](TraceBuilder& b, const BoundSymbol& f, const T&, const T& g) {
                       return transpose(b, g, f.args.at(1).i, f.args.at(2).i);
                     }));
  auto permute_rule = first_only([](TraceBuilder& b, const BoundSymbol& f, const T& a, const T& g) {
    return permute_back(b, meta::normalize_dims(f.args.at(1).as_ints(), rank(a)), g);
  });
  register_grad_rule(op("ltorch.permute"), permute_rule);
  register_grad_rule(op("prims.transpose"), permute_rule);
  // sum_to (inside first_only) reduces an expanded grad back to the input's shape.
  register_grad_rule(op("ltorch.expand"), first_only([](TraceBuilder&, const BoundSymbol&, const T&, const T& g) { return g; }));
  register_grad_rule(op("ltorch.broadcast_in_dim"), first_only(broadcast_back));
  register_grad_rule(op("prims.broadcast_in_dim"), first_only(broadcast_back));
  register_grad_rule(op("ltorch.split"), split_rule);
  register_grad_rule(op("ltorch.cat"), cat_rule);
  register_grad_rule(op("ltorch.stack"), stack_rule);
  register_grad_rule(op("ltorch.unbind"), unbind_rule);
  register_grad_rule(op("prims.cat"), cat_rule);
  register_grad_rule(op("prims.slice"), slice_rule);
}

}  // namespace

}  // namespace tv

// ---- Execution rules: direct at:: calls (faster and closer to eager than the decompositions) ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;
using ops::same_exec_rule;

void register_shape_execution() {
  exec_rule("ltorch.reshape", [](Args a, Kw) { return RValue::of(reshaped(tensor_at(a, 0, "a"), sizes_from(a, 1, "shape"))); });
  same_exec_rule("ltorch.view", "ltorch.reshape");
  exec_rule("ltorch.transpose", [](Args a, Kw) {
    return RValue::of(fast_transpose(tensor_at(a, 0, "a"), int_at(a, 1, "dim0"), int_at(a, 2, "dim1")));
  });
  exec_rule("ltorch.permute", [](Args a, Kw) { return RValue::of(fast_permute(tensor_at(a, 0, "a"), sizes_from(a, 1, "dims"))); });
  exec_rule("ltorch.unsqueeze", [](Args a, Kw) { return RValue::of(fast_unsqueeze(tensor_at(a, 0, "a"), int_at(a, 1, "dim"))); });
  exec_rule("ltorch.expand", [](Args a, Kw) { return RValue::of(fast_expand(tensor_at(a, 0, "a"), sizes_from(a, 1, "shape"))); });
  same_exec_rule("ltorch.broadcast_in_dim", "prims.broadcast_in_dim");
  same_exec_rule("ltorch.flip", "prims.flip");
  exec_rule("ltorch.roll", [](Args a, Kw) {
    const RValue& dims = rarg(a, 2, "dims");
    return RValue::of(at::roll(tensor_at(a, 0, "a"), ints_at(a, 1, "shifts"), dims.is_none() ? std::vector<int64_t>{} : dims.ints()));
  });
  exec_rule("ltorch.repeat", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").repeat(ints_at(a, 1, "sizes"))); });
  exec_rule("ltorch.flatten", [](Args a, Kw k) {
    const RValue *start = argument(a, 1, k, "start_dim"), *end = argument(a, 2, k, "end_dim");
    return RValue::of(tensor_at(a, 0, "a").flatten(start && !start->is_none() ? start->integer_value() : 0,
                                                    end && !end->is_none() ? end->integer_value() : -1));
  });
  exec_rule("ltorch.split", [](Args a, Kw) {
    std::vector<RValue> parts;
    for (const auto& t : fast_split(tensor_at(a, 0, "a"), int_at(a, 1, "split_size"), int_at(a, 2, "dim")))
      parts.push_back(RValue::of(t));
    return RValue::tuple(std::move(parts));
  });
  exec_rule("ltorch.cat", [](Args a, Kw) {
    std::vector<at::Tensor> ts;
    for (const auto& v : rarg(a, 0, "tensors").items) ts.push_back(v.tensor());
    return RValue::of(at::cat(ts, int_at(a, 1, "dim")));
  });
  exec_rule("ltorch.stack", [](Args a, Kw) {
    std::vector<at::Tensor> ts;
    for (const auto& v : rarg(a, 0, "tensors").items) ts.push_back(v.tensor());
    return RValue::of(at::stack(ts, int_at(a, 1, "dim")));
  });
  exec_rule("ltorch.unbind", [](Args a, Kw) {
    std::vector<RValue> parts;
    for (const auto& t : fast_unbind(tensor_at(a, 0, "a"), int_at(a, 1, "dim"))) parts.push_back(RValue::of(t));
    return RValue::tuple(std::move(parts));
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_shape() {
  using namespace tv::ltorch;
  const std::vector<std::string> shape = {"shape"};
  define("ltorch.reshape", false, shape, reshape_impl);
  define("ltorch.view", false, shape, view_impl);
  define("ltorch.transpose", false, shape, transpose_impl);
  define("ltorch.permute", false, shape, permute_impl);
  define("ltorch.unsqueeze", false, shape, unsqueeze_impl);
  define("ltorch.expand", false, shape, expand_impl);
  define("ltorch.broadcast_in_dim", false, shape, broadcast_in_dim_impl);
  define("ltorch.split", false, shape, split_impl);
  define("ltorch.cat", false, shape, cat_impl);
  define("ltorch.stack", false, shape, stack_impl);
  define("ltorch.unbind", false, shape, unbind_impl);
  define("ltorch.flip", false, shape, flip_impl);
  define("ltorch.flatten", false, shape, flatten_impl);
  define("ltorch.roll", false, shape, roll_impl);
  define("ltorch.repeat", false, shape, repeat_impl);
  register_shape_gradients();
  exec::register_shape_execution();
}

}  // namespace tv::ops
