// Reduction ltorch ops: sum, mean, amax, var_mean, var and std over several dims with keepdim, and
// cumsum (a scan, primitive as in Thunder: its decomposition would not fuse).
// The prims reduce and drop the dims (as in Thunder); keepdim is a following
// prims.broadcast_in_dim back to the shape with 1s. Empty dims mean "all dims" (printed None).
// The file holds, in order, each op's meta and decomposition, its gradient rule (and that of the
// prim of the same name), its execution rule.
#include <optional>
#include <algorithm>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

// The normalised dims of args[1]; None or () is every dim.
Dims reduced_dims(const T& a, Args args) {
  auto rank = static_cast<int64_t>(a->shape.size());
  Dims dims = meta::normalize_dims(ints_arg(args, 1, "dims"), rank);
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  return dims;
}

bool keepdim_arg(Args args, size_t i, Kw kwargs) {
  if (const Value* k = kwarg(kwargs, "keepdim")) return k->kind == Value::Kind::boolean && k->b;
  return i < args.size() && bool_arg(args, i, "keepdim");
}

// Puts the reduced dims back as 1s.
T keep_dims(TraceBuilder& b, const T& reduced, const Shape& input_shape, const Dims& dims) {
  Shape shape = meta::reduction_shape(input_shape, dims, true);
  Dims kept;
  for (int64_t i = 0; i < static_cast<int64_t>(input_shape.size()); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(i);
  return call1(b, "prims.broadcast_in_dim", {Value::of(reduced), Value::ints(shape), Value::ints(kept)});
}

// A `dtype=` keyword converts the input first.
T with_dtype(TraceBuilder& b, T a, Kw kwargs) {
  if (const Value* d = kwarg(kwargs, "dtype"); d && d->kind == Value::Kind::dtype && d->dtype != a->dtype)
    a = call1(b, "prims.convert_element_type", {Value::of(a), Value::of(d->dtype)});
  return a;
}

Value sum_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = with_dtype(b, tensor_arg(args, 0, "a"), kwargs);
  Dims dims = reduced_dims(a, args);
  if (!is_floating(a->dtype) && a->dtype != DType::i64)  // torch sums bools and ints in int64
    a = call1(b, "prims.convert_element_type", {Value::of(a), Value::of(DType::i64)});
  T r = call1(b, "prims.sum", {Value::of(a), Value::ints(dims)});
  return Value::of(keepdim_arg(args, 2, kwargs) ? keep_dims(b, r, a->shape, dims) : r);
}

Value mean_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = with_dtype(b, tensor_arg(args, 0, "a"), kwargs);
  require_floating(a, "mean");
  Dims dims = reduced_dims(a, args);
  int64_t count = 1;
  for (int64_t d : dims) count *= a->shape[d];
  T s = sum(b, a, dims, keepdim_arg(args, 2, kwargs));
  return Value::of(true_divide(b, Value::of(s), Value::integer(count)));
}

// amax and amin: prims.amax or prims.amin over the dims (every dim when none is given).
Value extremum_impl(TraceBuilder& b, Args args, Kw kwargs, const char* prim) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = reduced_dims(a, args);
  T r = call1(b, prim, {Value::of(a), Value::ints(dims)});
  return Value::of(keepdim_arg(args, 2, kwargs) ? keep_dims(b, r, a->shape, dims) : r);
}
Value amax_impl(TraceBuilder& b, Args args, Kw kwargs) { return extremum_impl(b, args, kwargs, "prims.amax"); }
Value amin_impl(TraceBuilder& b, Args args, Kw kwargs) { return extremum_impl(b, args, kwargs, "prims.amin"); }

// prims.var_mean of a over dims, with the call's correction= (1 when absent): (var, mean), dims dropped.
std::pair<T, T> var_mean_prim(TraceBuilder& b, const T& a, const Dims& dims, Kw kwargs) {
  const Value* c = kwarg(kwargs, "correction");
  Value correction = c && !c->is_none() ? *c : Value::integer(1);
  Value vm = b.call("prims.var_mean", {Value::of(a), Value::ints(dims)}, {{"correction", correction}});
  return {vm.items.at(0).proxy, vm.items.at(1).proxy};
}

Value var_mean_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = reduced_dims(a, args);
  auto [var, m] = var_mean_prim(b, a, dims, kwargs);
  if (keepdim_arg(args, 2, kwargs)) {
    var = keep_dims(b, var, a->shape, dims);
    m = keep_dims(b, m, a->shape, dims);
  }
  return Value::tuple({Value::of(var), Value::of(m)});
}

// var(a, dims, keepdim, correction=c): prims.var_mean's variance (its mean unused); std its sqrt.
Value var_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = reduced_dims(a, args);
  T var = var_mean_prim(b, a, dims, kwargs).first;
  return Value::of(keepdim_arg(args, 2, kwargs) ? keep_dims(b, var, a->shape, dims) : var);
}

Value std_impl(TraceBuilder& b, Args args, Kw kwargs) {
  return Value::of(sqrt(b, var_impl(b, args, kwargs).proxy));
}

// cumsum(a, dim, dtype=None): a's shape; integers and bools sum in int64 unless dtype says otherwise.
Value cumsum_meta(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  meta::normalize_dim(int_arg(args, 1, "dim"), std::max<int64_t>(static_cast<int64_t>(a->shape.size()), 1));
  DType dtype = is_floating(a->dtype) ? a->dtype : DType::i64;
  if (const Value* d = kwarg(kwargs, "dtype"); d && d->kind == Value::Kind::dtype) dtype = d->dtype;
  std::vector<Value> inputs = {Value::of(a)};
  return Value::of(b.tensor(a->shape, dtype, a->device, output_requires_grad(inputs, dtype)));
}

Value dims_value(const Dims& dims) { return dims.empty() ? Value::none() : Value::ints(dims); }

}  // namespace

T sum(TraceBuilder& b, const T& a, const Dims& dims, bool keepdim) {
  return call1(b, "ltorch.sum", {V(a), dims_value(dims), Value::boolean(keepdim)}, {{"dtype", Value::none()}});
}
T mean(TraceBuilder& b, const T& a, const Dims& dims, bool keepdim) {
  return call1(b, "ltorch.mean", {V(a), dims_value(dims), Value::boolean(keepdim)}, {{"dtype", Value::none()}});
}
T amax(TraceBuilder& b, const T& a, const Dims& dims, bool keepdim) {
  return call1(b, "ltorch.amax", {V(a), Value::ints(dims), Value::boolean(keepdim)});
}
std::pair<T, T> var_mean(TraceBuilder& b, const T& a, const Dims& dims, int64_t correction, bool keepdim) {
  Value out = b.call("ltorch.var_mean", {V(a), Value::ints(dims), Value::boolean(keepdim)},
                     {{"correction", Value::integer(correction)}});
  return {out.items.at(0).proxy, out.items.at(1).proxy};
}
T cumsum(TraceBuilder& b, const T& a, int64_t dim) {
  return call1(b, "ltorch.cumsum", {V(a), Value::integer(dim)}, {{"dtype", Value::none()}});
}

}  // namespace tv::ltorch

// ---- Gradient rules ----
// Gradient rules of the reductions: the grad is broadcast back over the reduced dims
// (ltorch.broadcast_in_dim), divided by the count for mean; amax splits the grad evenly among
// the maxima (as torch does); var_mean combines 2 (a - mean) / (N - correction) and 1 / N; std
// is var's rule for g / (2 std).

namespace tv {

namespace {

using ops::op;

using namespace tv::ltorch;
using grad::tensor_at;
using grad::unreduce;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;

struct Reduction {
  T a;
  Dims dims;
  bool keepdim;
  int64_t count = 1;
};

Reduction read(const BoundSymbol& f) {
  Reduction r;
  r.a = tensor_at(f, 0);
  r.dims = grad::reduction_dims(f, 1, static_cast<int64_t>(r.a->shape.size()));
  r.keepdim = grad::flag(f, 2, "keepdim", false);
  for (int64_t d : r.dims) r.count *= r.a->shape[d];
  return r;
}

Out finish(TraceBuilder& b, const BoundSymbol& f, const Reduction& r, const T& ga) {
  Out out(f.args.size());
  out[0] = is_floating(r.a->dtype) ? Value::of(grad::sum_to(b, ga, r.a->shape, r.a->dtype)) : Value::none();
  return out;
}

Out sum_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  return finish(b, f, r, unreduce(b, cts[0].proxy, r.a->shape, r.dims, r.keepdim));
}

Out mean_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T scaled = true_divide(b, cts[0], Value::integer(r.count));
  return finish(b, f, r, unreduce(b, scaled, r.a->shape, r.dims, r.keepdim));
}

// amax and amin: the cotangent split evenly among the elements equal to the result (as torch).
Out extremum_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T g = cts[0].proxy;
  T maxima = unreduce(b, f.output(), r.a->shape, r.dims, r.keepdim);
  T mask = convert_element_type(b, eq(b, Value::of(r.a), Value::of(maxima)), g->dtype);
  T count = sum(b, mask, r.dims, true);
  T spread = mul(b, Value::of(unreduce(b, g, r.a->shape, r.dims, r.keepdim)), Value::of(mask));
  return finish(b, f, r, true_divide(b, Value::of(spread), Value::of(count)));
}

double correction_of(const BoundSymbol& f) {
  for (const auto& [k, v] : f.kwargs)
    if (k == "correction" && v.is_number()) return v.as_double();
  return 1;
}

Out var_mean_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T ga = nullptr;
  if (cts[0].is_proxy()) {  // d var / d a = 2 (a - mean) / (N - correction)
    T centered = sub(b, Value::of(r.a), Value::of(unreduce(b, f.outputs[1], r.a->shape, r.dims, r.keepdim)));
    T gv = unreduce(b, cts[0].proxy, r.a->shape, r.dims, r.keepdim);
    double scale = 2.0 / (static_cast<double>(r.count) - correction_of(f));
    ga = mul(b, Value::of(gv), Value::of(mul(b, Value::of(centered), Value::floating(scale))));
  }
  if (cts.size() > 1 && cts[1].is_proxy()) {
    T gm = true_divide(b, Value::of(unreduce(b, cts[1].proxy, r.a->shape, r.dims, r.keepdim)),
                       Value::integer(r.count));
    ga = ga ? add(b, Value::of(ga), Value::of(gm)) : gm;
  }
  return finish(b, f, r, ga);
}

// out = std(a): torch's std_backward, var's rule for g / (2 std), which is 0 where std is 0 (a
// constant slice) rather than the inf times 0 of differentiating sqrt(var).
Out std_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T gv = true_divide(b, cts[0], Value::of(mul(b, Value::of(f.output()), Value::integer(2))));
  gv = where(b, eq(b, Value::of(f.output()), Value::integer(0)), Value::integer(0), Value::of(gv));
  T centered = sub(b, Value::of(r.a), Value::of(mean(b, r.a, r.dims, true)));
  T scaled = mul(b, Value::of(unreduce(b, gv, r.a->shape, r.dims, r.keepdim)),
                 Value::floating(2.0 / (static_cast<double>(r.count) - correction_of(f))));
  return finish(b, f, r, mul(b, Value::of(scaled), Value::of(centered)));
}

// out = cumsum(a, dim): grad_a[i] = sum over j >= i of g[j], a cumsum of the reversed cotangent.
Out cumsum_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0);
  Out out(f.args.size());
  if (!is_floating(a->dtype)) return out;
  int64_t dim = f.args.at(1).i;
  auto flip = [&](const T& t) { return ops::call1(b, "ltorch.flip", {V(t), Value::ints({dim})}); };
  out[0] = Value::of(grad::sum_to(b, flip(cumsum(b, flip(cts[0].proxy), dim)), a->shape, a->dtype));
  return out;
}

void register_reduction_gradients() {
  // The prims take (a, dims) and never keep dims; the same rules read them.
  for (const char* n : {"ltorch.sum", "prims.sum"}) register_grad_rule(op(n), sum_rule);
  register_grad_rule(op("ltorch.mean"), mean_rule);
  for (const char* n : {"ltorch.amax", "prims.amax", "ltorch.amin", "prims.amin"}) register_grad_rule(op(n), extremum_rule);
  for (const char* n : {"ltorch.var_mean", "prims.var_mean"}) register_grad_rule(op(n), var_mean_rule);
  register_grad_through_decomposition(op("ltorch.var"));
  register_grad_rule(op("ltorch.std"), std_rule);
  register_grad_rule(op("ltorch.cumsum"), cumsum_rule);
}

}  // namespace

}  // namespace tv

// ---- Execution rules: direct at:: calls (faster and closer to eager than the decompositions) ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;

std::optional<DType> dtype_kw(Kw k) {
  const RValue* d = rkwarg(k, "dtype");
  if (!d || d->is_none()) return std::nullopt;
  if (d->kind != RValue::Kind::dtype) throw ExecError("dtype= expects a dtype, got " + describe(*d));
  return d->dtype;
}

bool keepdim_at(Args a, size_t i, Kw k) { return flag_at(a, i, k, "keepdim"); }

void register_reduction_execution() {
  exec_rule("ltorch.sum", [](Args a, Kw k) {
    at::Tensor t = tensor_at(a, 0, "a");
    if (auto d = dtype_kw(k)) t = t.to(to_scalar_type(*d));
    return RValue::of(at::sum(t, reduction_dims(a.size() > 1 ? a[1] : RValue::none(), t.dim()), keepdim_at(a, 2, k)));
  });
  exec_rule("ltorch.mean", [](Args a, Kw k) {
    at::Tensor t = tensor_at(a, 0, "a");
    if (auto d = dtype_kw(k)) t = t.to(to_scalar_type(*d));
    return RValue::of(at::mean(t, reduction_dims(a.size() > 1 ? a[1] : RValue::none(), t.dim()), keepdim_at(a, 2, k)));
  });
  exec_rule("ltorch.amax", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    return RValue::of(at::amax(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), keepdim_at(a, 2, k)));
  });
  exec_rule("ltorch.amin", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    return RValue::of(at::amin(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), keepdim_at(a, 2, k)));
  });
  exec_rule("ltorch.var_mean", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue* c = rkwarg(k, "correction");
    auto [var, mean] = rules::var_mean(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), c ? c->integer_value() : 1,
                                       keepdim_at(a, 2, k));
    return RValue::tuple({RValue::of(var), RValue::of(mean)});
  });
  for (bool root : {false, true})
    exec_rule(root ? "ltorch.std" : "ltorch.var", [root](Args a, Kw k) {
      const at::Tensor& t = tensor_at(a, 0, "a");
      const RValue* c = rkwarg(k, "correction");
      at::Tensor var = rules::var_mean(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), c ? c->integer_value() : 1,
                                       keepdim_at(a, 2, k)).first;
      return RValue::of(root ? var.sqrt() : var);
    });
  exec_rule("ltorch.cumsum", [](Args a, Kw k) {
    std::optional<DType> dtype = dtype_kw(k);
    return RValue::of(at::cumsum(tensor_at(a, 0, "a"), int_at(a, 1, "dim"),
                                 dtype ? c10::optional<at::ScalarType>(to_scalar_type(*dtype)) : c10::nullopt));
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_reduction() {
  using namespace tv::ltorch;
  const std::vector<std::string> red = {"reduction"};
  define("ltorch.sum", false, red, sum_impl);
  define("ltorch.mean", false, red, mean_impl);
  define("ltorch.amax", false, red, amax_impl);
  define("ltorch.amin", false, red, amin_impl);
  define("ltorch.var_mean", false, red, var_mean_impl);
  define("ltorch.var", false, red, var_impl);
  define("ltorch.std", false, red, std_impl);
  define("ltorch.cumsum", true, {}, cumsum_meta);
  register_reduction_gradients();
  exec::register_reduction_execution();
}

}  // namespace tv::ops
