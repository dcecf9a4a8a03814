// Indexing ltorch ops and their prims: gather, scatter_add, scatter, index_select, index_add,
// index_put, topk, argmax/argmin and torch.max/min along a dim (values and indices).
// The ltorch ops take torch's argument order (a, dim, index, src); each maps to one prim of
// Thunder's order (a, index, src, dim), and runs as one ATen call. The gradients are the ops
// themselves: a gather's gradient scatters (scatter_add into zeros), a scatter's gathers; a
// selection of values (topk, max along a dim) scatters its gradient to the indices it selected.
// The file holds, in order, the prims' metas, the ltorch ops' decompositions, their gradient rules,
// the execution rules.
#include <algorithm>
#include <string>
#include <utility>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ops {

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

T like(TraceBuilder& b, Shape shape, DType dtype, const T& a, const std::vector<Value>& inputs) {
  return b.tensor(std::move(shape), dtype, a->device, output_requires_grad(inputs, dtype));
}

void check_index_dtype(const T& index, const char* op) {
  if (!is_integral(index->dtype) || index->dtype == DType::b8)
    throw OpError(std::string(op) + ": index must be an integer tensor, got " + std::string(short_name(index->dtype)));
}

void check_same_dtype(const T& a, const T& src, const char* op) {
  if (a->dtype != src->dtype)
    throw OpError(std::string(op) + ": src dtype " + std::string(short_name(src->dtype)) + " differs from the tensor's " +
                  std::string(short_name(a->dtype)));
}

// torch's rule for gather and scatter: index has a's rank and is no larger than `within` in every
// dim (no larger than a in every dim but `dim`, for a gather).
void check_index_fits(const T& a, const T& index, int64_t dim, const T& within, const char* op) {
  bool ok = rank(index) == rank(a) && (!within || rank(within) == rank(a));
  for (int64_t d = 0; ok && d < rank(a); ++d) {
    if (d != dim && index->shape[d] > a->shape[d]) ok = false;
    if (within && index->shape[d] > within->shape[d]) ok = false;
  }
  if (!ok)
    throw OpError(std::string(op) + ": index of shape " + shape_text(index->shape) + " does not fit a tensor of shape " +
                  shape_text(a->shape) + (within ? " and a src of shape " + shape_text(within->shape) : std::string()) +
                  " along dim " + std::to_string(dim));
}

// ---- prims (Thunder's argument order) ----

Value gather_meta(TraceBuilder& b, Args args, Kw) {  // prims.gather(a, index, dim)
  T a = tensor_arg(args, 0, "a"), index = tensor_arg(args, 1, "index");
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), rank(a));
  check_index_dtype(index, "gather");
  check_index_fits(a, index, dim, nullptr, "gather");
  return Value::of(like(b, index->shape, a->dtype, a, {Value::of(a)}));
}

// prims.scatter_add(a, index, value, dim) and prims.scatter(a, index, value, dim) (a number value).
Value scatter_meta(TraceBuilder& b, Args args, const char* op, bool number_allowed) {
  T a = tensor_arg(args, 0, "a"), index = tensor_arg(args, 1, "index");
  const Value& value = arg(args, 2, "value");
  int64_t dim = meta::normalize_dim(int_arg(args, 3, "dim"), rank(a));
  check_index_dtype(index, op);
  T src = value.is_proxy() ? tensor_arg(args, 2, "value") : nullptr;
  if (!src && !(number_allowed && value.is_number()))
    throw OpError(std::string(op) + ": value must be a tensor" + (number_allowed ? " or a number" : "") + ", got " +
                  python_text(value));
  if (src) check_same_dtype(a, src, op);
  check_index_fits(a, index, dim, src, op);
  return Value::of(like(b, a->shape, a->dtype, a, {Value::of(a), value}));
}

// index_add's rule: a 1-D (or 0-D) index, and a value shaped as a with dim's size the index's length.
Value index_add_meta(TraceBuilder& b, Args args, Kw) {  // prims.index_add(a, index, value, dim)
  T a = tensor_arg(args, 0, "a"), index = tensor_arg(args, 1, "index"), value = tensor_arg(args, 2, "value");
  int64_t dim = meta::normalize_dim(int_arg(args, 3, "dim"), rank(a));
  check_index_dtype(index, "index_add");
  check_same_dtype(a, value, "index_add");
  Shape want = a->shape;
  if (!want.empty()) want[dim] = index->numel();
  if (rank(index) > 1 || value->shape != want)
    throw OpError("index_add: an index [n] and a source of shape " + shape_text(want) + " expected, got " +
                  shape_text(index->shape) + " and " + shape_text(value->shape));
  return Value::of(like(b, a->shape, a->dtype, a, {Value::of(a), Value::of(value)}));
}

// Where the index tensors of an index_put sit: positions [first, first + count) of a's dims, their
// broadcast shape. Leading and trailing Nones take whole dims; a None between tensors (torch then
// moves the indexed dims to the front) and bool masks are refused.
struct IndexBlock {
  int64_t first = 0, count = 0;
  Shape shape;
};

IndexBlock index_block(const T& a, const Value& indices, const char* op) {
  if (!indices.is_sequence()) throw OpError(std::string(op) + ": indices must be a tuple of tensors, got " + python_text(indices));
  IndexBlock block;
  bool ended = false;
  for (size_t k = 0; k < indices.items.size(); ++k) {
    const Value& v = indices.items[k];
    if (v.is_none()) {
      if (block.count > 0) ended = true;
      if (block.count == 0) block.first = static_cast<int64_t>(k) + 1;
      continue;
    }
    if (!v.is_proxy() || !v.proxy->is_tensor()) throw OpError(std::string(op) + ": an index must be a tensor or None, got " + python_text(v));
    if (ended) throw OpError(std::string(op) + ": index tensors separated by None are not supported");
    if (v.proxy->dtype == DType::b8 || v.proxy->dtype == DType::ui8)
      throw OpError(std::string(op) + ": a mask index is not supported (data-dependent shape)");
    check_index_dtype(v.proxy, op);
    block.shape = meta::broadcast_shapes(block.shape, v.proxy->shape);
    ++block.count;
  }
  if (block.count == 0 || block.first + block.count > rank(a))
    throw OpError(std::string(op) + ": " + std::to_string(indices.items.size()) + " indices for a tensor of shape " +
                  shape_text(a->shape));
  return block;
}

// The shape a[indices] has: a's dims before the block, the indices' shape, a's dims after it.
Shape indexed_shape(const T& a, const IndexBlock& block) {
  Shape shape(a->shape.begin(), a->shape.begin() + block.first);
  shape.insert(shape.end(), block.shape.begin(), block.shape.end());
  shape.insert(shape.end(), a->shape.begin() + block.first + block.count, a->shape.end());
  return shape;
}

Value index_put_meta(TraceBuilder& b, Args args, Kw) {  // prims.index_put(a, indices, values, accumulate)
  T a = tensor_arg(args, 0, "a"), values = tensor_arg(args, 2, "values");
  bool_arg(args, 3, "accumulate");
  check_same_dtype(a, values, "index_put");
  IndexBlock block = index_block(a, arg(args, 1, "indices"), "index_put");
  Shape target = indexed_shape(a, block);
  if (meta::broadcast_shapes(values->shape, target) != target)
    throw OpError("index_put: values of shape " + shape_text(values->shape) + " do not broadcast to " + shape_text(target));
  return Value::of(like(b, a->shape, a->dtype, a, {Value::of(a), Value::of(values)}));
}

Value topk_meta(TraceBuilder& b, Args args, Kw) {  // prims.topk(a, k, dim, largest, sorted) -> (values, indices)
  T a = tensor_arg(args, 0, "a");
  int64_t k = int_arg(args, 1, "k");
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), std::max<int64_t>(rank(a), 1));
  bool_arg(args, 3, "largest");
  bool_arg(args, 4, "sorted");
  int64_t size = rank(a) == 0 ? 1 : a->shape[dim];
  if (k < 0 || k > size) throw OpError("topk: k=" + std::to_string(k) + " is out of range for a dim of size " + std::to_string(size));
  Shape shape = a->shape;
  if (!shape.empty()) shape[dim] = k;
  return Value::tuple({Value::of(like(b, shape, a->dtype, a, {Value::of(a)})), Value::of(like(b, shape, DType::i64, a, {}))});
}

Value arg_reduction_meta(TraceBuilder& b, Args args, Kw) {  // prims.argmax(a, dim), prims.argmin(a, dim)
  T a = tensor_arg(args, 0, "a");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), std::max<int64_t>(rank(a), 1));
  if (rank(a) > 0 && a->shape[dim] == 0) throw OpError("argmax/argmin of an empty dim");
  Shape shape = a->shape;
  if (!shape.empty()) shape.erase(shape.begin() + dim);
  return Value::of(like(b, shape, DType::i64, a, {}));
}

// ---- ltorch ops (torch's argument order) ----

Value gather_impl(TraceBuilder& b, Args args, Kw) {  // ltorch.gather(a, dim, index)
  return Value::of(call1(b, "prims.gather", {V(tensor_arg(args, 0, "a")), V(tensor_arg(args, 2, "index")),
                                             Value::integer(int_arg(args, 1, "dim"))}));
}

Value scatter_add_impl(TraceBuilder& b, Args args, Kw) {  // ltorch.scatter_add(a, dim, index, src)
  return Value::of(call1(b, "prims.scatter_add", {V(tensor_arg(args, 0, "a")), V(tensor_arg(args, 2, "index")),
                                                  V(tensor_arg(args, 3, "src")), Value::integer(int_arg(args, 1, "dim"))}));
}

// scatter's source: a tensor at position 3, or a number there or as `value=`.
const Value& scatter_source(Args args, Kw kwargs) {
  if (const Value* v = kwarg(kwargs, "value"); v && !v->is_none()) return *v;
  return arg(args, 3, "src");
}

Value scatter_impl(TraceBuilder& b, Args args, Kw kwargs) {  // ltorch.scatter(a, dim, index, src | value)
  T a = tensor_arg(args, 0, "a");
  Value src = scatter_source(args, kwargs);
  if (src.is_number()) src = number_like(src.as_double(), a->dtype);
  return Value::of(call1(b, "prims.scatter", {V(a), V(tensor_arg(args, 2, "index")), src, Value::integer(int_arg(args, 1, "dim"))}));
}

Value index_select_impl(TraceBuilder& b, Args args, Kw) {  // ltorch.index_select(a, dim, index)
  T a = tensor_arg(args, 0, "a"), index = tensor_arg(args, 2, "index");
  if (rank(index) != 1) throw OpError("index_select: index must be 1-D, got " + shape_text(index->shape));
  return Value::of(call1(b, "prims.take", {V(a), V(index), Value::integer(int_arg(args, 1, "dim"))}));
}

// index_add's alpha (keyword, 1 when absent).
Value alpha_of(Kw kwargs) {
  const Value* alpha = kwarg(kwargs, "alpha");
  return alpha && !alpha->is_none() ? *alpha : Value::integer(1);
}

Value index_add_impl(TraceBuilder& b, Args args, Kw kwargs) {  // ltorch.index_add(a, dim, index, source, alpha=1)
  T a = tensor_arg(args, 0, "a"), source = tensor_arg(args, 3, "source");
  Value alpha = alpha_of(kwargs);
  if (!alpha.is_number()) throw OpError("index_add: alpha must be a number, got " + python_text(alpha));
  if (alpha.as_double() != 1.0) source = ltorch::mul(b, V(source), convert_number(alpha, source->dtype));
  return Value::of(call1(b, "prims.index_add", {V(a), V(tensor_arg(args, 2, "index")), V(source), Value::integer(int_arg(args, 1, "dim"))}));
}

Value index_put_impl(TraceBuilder& b, Args args, Kw) {  // ltorch.index_put(a, indices, values, accumulate)
  bool accumulate = args.size() > 3 && bool_arg(args, 3, "accumulate");
  return Value::of(call1(b, "prims.index_put", {V(tensor_arg(args, 0, "a")), arg(args, 1, "indices"),
                                                V(tensor_arg(args, 2, "values")), Value::boolean(accumulate)}));
}

Value topk_impl(TraceBuilder& b, Args args, Kw) {  // ltorch.topk(a, k, dim, largest, sorted)
  return b.call("prims.topk", {V(tensor_arg(args, 0, "a")), Value::integer(int_arg(args, 1, "k")),
                               Value::integer(int_arg(args, 2, "dim")), Value::boolean(bool_arg(args, 3, "largest")),
                               Value::boolean(bool_arg(args, 4, "sorted"))});
}

// argmax/argmin(a, dim, keepdim): dim None reduces the flattened tensor.
T arg_reduction(TraceBuilder& b, const char* prim, Args args) {
  T a = tensor_arg(args, 0, "a");
  bool keepdim = args.size() > 2 && bool_arg(args, 2, "keepdim");
  if (args.size() < 2 || args[1].is_none()) {
    if (keepdim) throw OpError(std::string(prim) + " with keepdim=True needs a dim");
    return call1(b, prim, {V(ltorch::reshape(b, a, {a->numel()})), Value::integer(0)});
  }
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), std::max<int64_t>(rank(a), 1));
  T r = call1(b, prim, {V(a), Value::integer(dim)});
  return keepdim && rank(a) > 0 ? ltorch::unsqueeze(b, r, dim) : r;
}

Value argmax_impl(TraceBuilder& b, Args args, Kw) { return Value::of(arg_reduction(b, "prims.argmax", args)); }
Value argmin_impl(TraceBuilder& b, Args args, Kw) { return Value::of(arg_reduction(b, "prims.argmin", args)); }

// torch.max/min(a, dim, keepdim) -> (values, indices): the index of the extreme, and the value
// gathered there (exact for every dtype; its gradient goes to that one position, as torch's does).
Value extreme_along(TraceBuilder& b, Args args, const char* arg_symbol) {
  T a = tensor_arg(args, 0, "a");
  if (rank(a) == 0) throw OpError(std::string(arg_symbol) + " along a dim needs a tensor of rank 1 or more");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a));
  bool keepdim = args.size() > 2 && bool_arg(args, 2, "keepdim");
  T kept = call1(b, arg_symbol, {V(a), Value::integer(dim), Value::boolean(true)});
  T values = ltorch::gather(b, a, dim, kept);
  if (!keepdim) {
    Shape reduced = a->shape;
    reduced.erase(reduced.begin() + dim);
    values = ltorch::reshape(b, values, reduced);
    kept = ltorch::reshape(b, kept, reduced);
  }
  return Value::tuple({V(values), V(kept)});
}

// Without a dim (Thunder's `ltorch.torch_max(t, None, False)`), the maximum or minimum of every element.
Value torch_max_impl(TraceBuilder& b, Args args, Kw) {
  if (args.size() < 2 || args[1].is_none()) return Value::of(ltorch::amax(b, tensor_arg(args, 0, "a"), {}, false));
  return extreme_along(b, args, "ltorch.argmax");
}
Value torch_min_impl(TraceBuilder& b, Args args, Kw) {
  if (args.size() < 2 || args[1].is_none())
    return Value::of(call1(b, "ltorch.amin", {V(tensor_arg(args, 0, "a")), Value::ints({}), Value::boolean(false)}));
  return extreme_along(b, args, "ltorch.argmin");
}

}  // namespace

}  // namespace tv::ops

namespace tv::ltorch {

T gather(TraceBuilder& b, const T& a, int64_t dim, const T& index) {
  return ops::call1(b, "ltorch.gather", {ops::V(a), Value::integer(dim), ops::V(index)});
}
T scatter_add(TraceBuilder& b, const T& a, int64_t dim, const T& index, const T& src) {
  return ops::call1(b, "ltorch.scatter_add", {ops::V(a), Value::integer(dim), ops::V(index), ops::V(src)});
}
T index_select(TraceBuilder& b, const T& a, int64_t dim, const T& index) {
  return ops::call1(b, "ltorch.index_select", {ops::V(a), Value::integer(dim), ops::V(index)});
}
T index_add(TraceBuilder& b, const T& a, int64_t dim, const T& index, const T& source) {
  return ops::call1(b, "ltorch.index_add", {ops::V(a), Value::integer(dim), ops::V(index), ops::V(source)});
}

}  // namespace tv::ltorch

// ---- Gradient rules ----

namespace tv {

namespace {

using ops::op;
using ops::V;
using grad::tensor_at;
using T = ProxyPtr;
using Shape = std::vector<int64_t>;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }
int64_t dim_at(const BoundSymbol& f, size_t i, const T& a) {
  return meta::normalize_dim(f.args.at(i).i, std::max<int64_t>(rank(a), 1));
}
T zeros_like(TraceBuilder& b, const T& a) { return ltorch::zeros(b, a->shape, a->dtype, a->device); }
T scattered(TraceBuilder& b, const T& a, int64_t dim, const T& index, const T& g) {
  return ltorch::scatter_add(b, zeros_like(b, a), dim, index, g);
}

// A scatter's src takes the cotangent gathered at the index; torch's rule, for an index of src's shape.
Value gathered_for(TraceBuilder& b, const T& src, const T& g, int64_t dim, const T& index, const char* op) {
  if (!src || !src->requires_grad) return Value::none();
  if (index->shape != src->shape)
    throw OpError(std::string("the gradient of ") + op + "'s src is implemented for an index of src's shape, got " +
                  shape_text(index->shape) + " and " + shape_text(src->shape));
  return V(ltorch::gather(b, g, dim, index));
}

// Where the ltorch ops (a, dim, index, src) and their prims (a, index, src, dim; gather's (a, index,
// dim)) hold each argument.
struct Layout {
  size_t dim, index, src;
};
constexpr Layout kTorch{1, 2, 3}, kPrim{3, 1, 2}, kPrimGather{2, 1, 3};

Out gather_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts, Layout at) {
  T a = tensor_at(f, 0);
  Out out(f.args.size());
  out[0] = V(scattered(b, a, dim_at(f, at.dim, a), tensor_at(f, at.index), cts[0].proxy));
  return out;
}

Out scatter_add_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts, Layout at) {
  T a = tensor_at(f, 0), index = tensor_at(f, at.index), g = cts[0].proxy;
  Out out(f.args.size());
  out[0] = V(g);
  out[at.src] = gathered_for(b, tensor_at(f, at.src), g, dim_at(f, at.dim, a), index, "scatter_add");
  return out;
}

// a's positions the scatter overwrote get nothing.
Out scatter_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts, Layout at) {
  T a = tensor_at(f, 0), index = tensor_at(f, at.index), g = cts[0].proxy;
  int64_t dim = dim_at(f, at.dim, a);
  T ga = ops::call1(b, "ltorch.scatter", {V(g), Value::integer(dim), V(index), ops::number_like(0, g->dtype)});
  Out out(f.args.size());
  out[0] = V(ga);
  if (out.size() > at.src) out[at.src] = gathered_for(b, tensor_at(f, at.src), g, dim, index, "scatter");
  return out;
}

Out index_select_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {  // ltorch.index_select(a, dim, index)
  T a = tensor_at(f, 0), index = tensor_at(f, 2), g = cts[0].proxy;
  return {V(ltorch::index_add(b, zeros_like(b, a), dim_at(f, 1, a), ltorch::reshape(b, index, {index->numel()}), g)),
          Value::none(), Value::none()};
}

// prims.take(a, indices, dim) along any dim: g's index dims flattened into one, added into zeros.
Out take_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), indices = tensor_at(f, 1), g = cts[0].proxy;
  int64_t dim = dim_at(f, 2, a), n = indices->numel();
  Shape rows(a->shape.begin(), a->shape.begin() + dim);
  rows.push_back(n);
  rows.insert(rows.end(), a->shape.begin() + dim + 1, a->shape.end());
  T g_rows = g->shape == rows ? g : ltorch::reshape(b, g, rows);
  T flat = rank(indices) == 1 ? indices : ltorch::reshape(b, indices, {n});
  return {V(ltorch::index_add(b, zeros_like(b, a), dim, flat, g_rows)), Value::none(), Value::none()};
}

// index_add(a, dim, index, source, alpha=): the source takes alpha times g's selected slices.
Out index_add_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts, Layout at) {
  T a = tensor_at(f, 0), index = tensor_at(f, at.index), source = tensor_at(f, at.src), g = cts[0].proxy;
  T gs = ltorch::index_select(b, g, dim_at(f, at.dim, a), ltorch::reshape(b, index, {index->numel()}));
  for (const auto& [name, alpha] : f.kwargs)
    if (name == "alpha" && alpha.is_number() && alpha.as_double() != 1.0) gs = ltorch::mul(b, V(gs), alpha);
  Out out(f.args.size());
  out[0] = V(g);
  out[at.src] = V(ltorch::reshape(b, gs, source->shape));
  return out;
}

// index i of a dim of `size` as torch reads it: a negative one counts from the end.
T wrapped(TraceBuilder& b, const T& index, int64_t size) {
  T negative = ltorch::lt(b, V(index), Value::integer(0));
  return ltorch::where(b, negative, V(ltorch::add(b, V(index), Value::integer(size))), V(index));
}

// g[indices] for index tensors over dims [first, first + count) (leading and trailing Nones): the
// block of dims flattened into one and taken at the indices' row-major offsets.
T indexed(TraceBuilder& b, const T& g, const Value& indices) {
  int64_t first = 0, count = 0;
  std::vector<T> tensors;
  for (size_t k = 0; k < indices.items.size(); ++k) {
    if (indices.items[k].is_none()) {
      if (tensors.empty()) first = static_cast<int64_t>(k) + 1;
      continue;
    }
    tensors.push_back(indices.items[k].proxy);
  }
  count = static_cast<int64_t>(tensors.size());
  T offset;
  int64_t block = 1;
  for (int64_t j = count - 1; j >= 0; --j) {
    int64_t size = g->shape[first + j];
    T term = wrapped(b, tensors[j], size);
    if (block != 1) term = ltorch::mul(b, V(term), Value::integer(block));
    offset = offset ? ltorch::add(b, V(term), V(offset)) : term;
    block *= size;
  }
  Shape rows(g->shape.begin(), g->shape.begin() + first);
  rows.push_back(block);
  rows.insert(rows.end(), g->shape.begin() + first + count, g->shape.end());
  return ops::call1(b, "prims.take", {V(ltorch::reshape(b, g, rows)), V(offset), Value::integer(first)});
}

// values take g at the indices (summed over their broadcast); a takes g, without the overwritten
// positions unless accumulating.
Out index_put_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {  // ltorch.index_put(a, indices, values, accumulate)
  T values = tensor_at(f, 2), g = cts[0].proxy;
  const Value& indices = f.args.at(1);
  bool accumulate = f.args.size() > 3 && f.args[3].kind == Value::Kind::boolean && f.args[3].b;
  T ga = g;
  if (!accumulate)
    ga = ops::call1(b, "ltorch.index_put", {V(g), indices, V(ltorch::zeros(b, {}, g->dtype, g->device)), Value::boolean(false)});
  Out out(f.args.size());
  out[0] = V(ga);
  if (values->requires_grad) out[2] = V(grad::sum_to(b, indexed(b, g, indices), values->shape, values->dtype));
  return out;
}

// The values of a selection along a dim (topk, max/min along a dim) scattered back to their indices.
Out selection_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts, int64_t dim, bool keepdim) {
  T a = tensor_at(f, 0), indices = f.outputs.at(1), g = grad::cotangent_or_zeros(b, f, cts, 0);
  if (!keepdim && rank(a) > 0) {
    indices = ltorch::unsqueeze(b, indices, dim);
    g = ltorch::unsqueeze(b, g, dim);
  }
  Out out(f.args.size());
  out[0] = V(rank(a) == 0 ? ltorch::reshape(b, g, {}) : scattered(b, a, dim, indices, g));
  return out;
}

Out topk_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {  // ltorch.topk(a, k, dim, largest, sorted)
  return selection_rule(b, f, cts, dim_at(f, 2, tensor_at(f, 0)), true);
}

bool along_a_dim(const BoundSymbol& f) { return f.args.size() > 1 && f.args[1].kind == Value::Kind::integer; }

// Without a dim, torch's evenly_distribute_backward (not amax's rule): g / count to each element equal
// to the result, and to the NaN elements when the result is NaN (which equals nothing).
Out evenly_distributed_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), value = f.output(), g = cts[0].proxy;
  Out out(f.args.size());
  if (!is_floating(a->dtype)) return out;
  T is_nan = ltorch::ne(b, V(value), V(value));
  T mask = ltorch::where(b, is_nan, V(ltorch::ne(b, V(a), V(a))), V(ltorch::eq(b, V(a), V(value))));
  T count = ltorch::sum(b, ltorch::convert_element_type(b, mask, g->dtype));
  T share = ltorch::true_divide(b, V(g), V(count));
  out[0] = grad::reduce_like(b, ltorch::where(b, mask, V(share), Value::floating(0)), a);
  return out;
}

Out extreme_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {  // ltorch.torch_max/torch_min(a, dim, keepdim)
  if (!along_a_dim(f)) return evenly_distributed_rule(b, f, cts);
  bool keepdim = f.args.size() > 2 && f.args[2].kind == Value::Kind::boolean && f.args[2].b;
  return selection_rule(b, f, cts, dim_at(f, 1, tensor_at(f, 0)), keepdim);
}

void register_indexing_gradients() {
  using Rule = Out (*)(TraceBuilder&, const BoundSymbol&, Cts, Layout);
  auto both = [](const std::string& name, Rule rule, Layout prim) {
    for (auto [symbol, at] : {std::pair{"ltorch." + name, kTorch}, std::pair{"prims." + name, prim}})
      register_grad_rule(op(symbol), [rule, at = at](TraceBuilder& b, const BoundSymbol& f, Cts cts) { return rule(b, f, cts, at); });
  };
  both("gather", gather_rule, kPrimGather);
  both("scatter_add", scatter_add_rule, kPrim);
  both("scatter", scatter_rule, kPrim);
  both("index_add", index_add_rule, kPrim);
  register_grad_rule(op("ltorch.index_select"), index_select_rule);
  register_grad_rule(op("prims.take"), take_rule);
  for (const char* n : {"ltorch.index_put", "prims.index_put"}) register_grad_rule(op(n), index_put_rule);
  for (const char* n : {"ltorch.topk", "prims.topk"}) register_grad_rule(op(n), topk_rule);
  for (const char* n : {"ltorch.torch_max", "ltorch.torch_min"}) register_grad_rule(op(n), extreme_rule);
  for (const char* n : {"ltorch.argmax", "ltorch.argmin", "prims.argmax", "prims.argmin"}) register_not_differentiable(op(n));
}

}  // namespace

}  // namespace tv

// ---- Execution rules ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;
using ops::same_exec_rule;

int64_t dim_at(Args a, size_t i) { return int_at(a, i, "dim"); }

RValue scatter(const at::Tensor& t, int64_t dim, const at::Tensor& index, const RValue& src) {
  if (src.is_tensor()) return RValue::of(at::scatter(t, dim, index, src.tensor()));
  return RValue::of(at::scatter(t, dim, index, scalar_of(src)));
}

c10::List<c10::optional<at::Tensor>> index_list(const RValue& indices) {
  c10::List<c10::optional<at::Tensor>> list;
  for (const RValue& v : indices.items) list.push_back(v.is_tensor() ? c10::optional<at::Tensor>(v.tensor()) : c10::nullopt);
  return list;
}

RValue values_and_indices(std::tuple<at::Tensor, at::Tensor> r) {
  return RValue::tuple({RValue::of(std::get<0>(r)), RValue::of(std::get<1>(r))});
}

// argmax/argmin(a, dim, keepdim): dim None (or absent) reduces the flattened tensor.
template <typename F>
RValue arg_reduction(Args a, Kw k, F f) {
  const RValue *dim = argument(a, 1, k, "dim");
  bool keepdim = flag_at(a, 2, k, "keepdim");
  return RValue::of(f(tensor_at(a, 0, "a"), dim && !dim->is_none() ? c10::optional<int64_t>(dim->integer_value()) : c10::nullopt, keepdim));
}

void register_indexing_execution() {
  exec_rule("prims.gather", [](Args a, Kw) { return RValue::of(at::gather(tensor_at(a, 0, "a"), dim_at(a, 2), tensor_at(a, 1, "index"))); });
  exec_rule("ltorch.gather", [](Args a, Kw) { return RValue::of(at::gather(tensor_at(a, 0, "a"), dim_at(a, 1), tensor_at(a, 2, "index"))); });
  exec_rule("prims.scatter_add", [](Args a, Kw) {
    return RValue::of(at::scatter_add(tensor_at(a, 0, "a"), dim_at(a, 3), tensor_at(a, 1, "index"), tensor_at(a, 2, "value")));
  });
  exec_rule("ltorch.scatter_add", [](Args a, Kw) {
    return RValue::of(at::scatter_add(tensor_at(a, 0, "a"), dim_at(a, 1), tensor_at(a, 2, "index"), tensor_at(a, 3, "src")));
  });
  exec_rule("prims.scatter", [](Args a, Kw) { return scatter(tensor_at(a, 0, "a"), dim_at(a, 3), tensor_at(a, 1, "index"), rarg(a, 2, "value")); });
  exec_rule("ltorch.scatter", [](Args a, Kw k) {
    const RValue* value = rkwarg(k, "value");
    return scatter(tensor_at(a, 0, "a"), dim_at(a, 1), tensor_at(a, 2, "index"), value && !value->is_none() ? *value : rarg(a, 3, "src"));
  });
  exec_rule("ltorch.index_select", [](Args a, Kw) {
    return RValue::of(at::index_select(tensor_at(a, 0, "a"), dim_at(a, 1), tensor_at(a, 2, "index")));
  });
  exec_rule("prims.index_add", [](Args a, Kw) {
    return RValue::of(at::index_add(tensor_at(a, 0, "a"), dim_at(a, 3), tensor_at(a, 1, "index"), tensor_at(a, 2, "value")));
  });
  exec_rule("ltorch.index_add", [](Args a, Kw k) {
    const RValue* alpha = rkwarg(k, "alpha");
    return RValue::of(at::index_add(tensor_at(a, 0, "a"), dim_at(a, 1), tensor_at(a, 2, "index"), tensor_at(a, 3, "source"),
                                    alpha && !alpha->is_none() ? scalar_of(*alpha) : at::Scalar(int64_t{1})));
  });
  exec_rule("prims.index_put", [](Args a, Kw) {
    return RValue::of(at::index_put(tensor_at(a, 0, "a"), index_list(rarg(a, 1, "indices")), tensor_at(a, 2, "values"),
                                    flag_at(a, 3, {}, "accumulate")));
  });
  same_exec_rule("ltorch.index_put", "prims.index_put");
  exec_rule("prims.topk", [](Args a, Kw) {
    return values_and_indices(at::topk(tensor_at(a, 0, "a"), int_at(a, 1, "k"), dim_at(a, 2), flag_at(a, 3, {}, "largest", true),
                                       flag_at(a, 4, {}, "sorted", true)));
  });
  same_exec_rule("ltorch.topk", "prims.topk");
  exec_rule("prims.argmax", [](Args a, Kw) { return RValue::of(at::argmax(tensor_at(a, 0, "a"), dim_at(a, 1))); });
  exec_rule("prims.argmin", [](Args a, Kw) { return RValue::of(at::argmin(tensor_at(a, 0, "a"), dim_at(a, 1))); });
  exec_rule("ltorch.argmax", [](Args a, Kw k) {
    return arg_reduction(a, k, [](TT t, c10::optional<int64_t> d, bool keep) { return at::argmax(t, d, keep); });
  });
  exec_rule("ltorch.argmin", [](Args a, Kw k) {
    return arg_reduction(a, k, [](TT t, c10::optional<int64_t> d, bool keep) { return at::argmin(t, d, keep); });
  });
  exec_rule("ltorch.torch_max", [](Args a, Kw k) {
    const RValue* dim = argument(a, 1, k, "dim");
    if (!dim || dim->is_none()) return RValue::of(at::max(tensor_at(a, 0, "a")));
    return values_and_indices(at::max(tensor_at(a, 0, "a"), dim->integer_value(), flag_at(a, 2, k, "keepdim")));
  });
  exec_rule("ltorch.torch_min", [](Args a, Kw k) {
    const RValue* dim = argument(a, 1, k, "dim");
    if (!dim || dim->is_none()) return RValue::of(at::min(tensor_at(a, 0, "a")));
    return values_and_indices(at::min(tensor_at(a, 0, "a"), dim->integer_value(), flag_at(a, 2, k, "keepdim")));
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_indexing() {
  define("prims.gather", true, {}, gather_meta);
  define("prims.scatter_add", true, {}, [](TraceBuilder& b, Args args, Kw) { return scatter_meta(b, args, "scatter_add", false); });
  define("prims.scatter", true, {}, [](TraceBuilder& b, Args args, Kw) { return scatter_meta(b, args, "scatter", true); });
  define("prims.index_add", true, {}, index_add_meta);
  define("prims.index_put", true, {}, index_put_meta);
  define("prims.topk", true, {"reduction"}, topk_meta);
  define("prims.argmax", true, {"reduction"}, arg_reduction_meta);
  define("prims.argmin", true, {"reduction"}, arg_reduction_meta);
  define("ltorch.gather", false, {}, gather_impl);
  define("ltorch.scatter_add", false, {}, scatter_add_impl);
  define("ltorch.scatter", false, {}, scatter_impl);
  define("ltorch.index_select", false, {}, index_select_impl);
  define("ltorch.index_add", false, {}, index_add_impl);
  define("ltorch.index_put", false, {}, index_put_impl);
  define("ltorch.topk", false, {"reduction"}, topk_impl);
  define("ltorch.argmax", false, {"reduction"}, argmax_impl);
  define("ltorch.argmin", false, {"reduction"}, argmin_impl);
  define("ltorch.torch_max", false, {"reduction"}, torch_max_impl);
  define("ltorch.torch_min", false, {"reduction"}, torch_min_impl);
  register_indexing_gradients();
  exec::register_indexing_execution();
}

}  // namespace tv::ops
