// Reduction ltorch ops: sum, mean, amax, var_mean over several dims with keepdim.
// The prims reduce and drop the dims (as in Thunder); keepdim is a following
// prims.broadcast_in_dim back to the shape with 1s. Empty dims mean "all dims" (printed None).
#include <algorithm>

#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

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
  if (!is_floating(a->dtype)) throw OpError("mean needs a floating tensor, got " + std::string(short_name(a->dtype)));
  Dims dims = reduced_dims(a, args);
  int64_t count = 1;
  for (int64_t d : dims) count *= a->shape[d];
  T s = sum(b, a, dims, keepdim_arg(args, 2, kwargs));
  return Value::of(true_divide(b, Value::of(s), Value::integer(count)));
}

Value amax_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = reduced_dims(a, args);
  T r = call1(b, "prims.amax", {Value::of(a), Value::ints(dims)});
  return Value::of(keepdim_arg(args, 2, kwargs) ? keep_dims(b, r, a->shape, dims) : r);
}

Value var_mean_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = reduced_dims(a, args);
  const Value* c = kwarg(kwargs, "correction");
  Value correction = c && !c->is_none() ? *c : Value::integer(1);
  Value vm = b.call("prims.var_mean", {Value::of(a), Value::ints(dims)}, {{"correction", correction}});
  T var = vm.items.at(0).proxy, m = vm.items.at(1).proxy;
  if (keepdim_arg(args, 2, kwargs)) {
    var = keep_dims(b, var, a->shape, dims);
    m = keep_dims(b, m, a->shape, dims);
  }
  return Value::tuple({Value::of(var), Value::of(m)});
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

}  // namespace tv::ltorch

namespace tv::ops {

void register_reduction() {
  using namespace tv::ltorch;
  const std::vector<std::string> red = {"reduction"};
  define("ltorch.sum", false, red, sum_impl);
  define("ltorch.mean", false, red, mean_impl);
  define("ltorch.amax", false, red, amax_impl);
  define("ltorch.var_mean", false, red, var_mean_impl);
}

}  // namespace tv::ops
