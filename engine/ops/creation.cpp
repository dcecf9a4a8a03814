// Creation ltorch ops: full, ones, zeros, arange. The fill value is converted to the dtype's kind
// (`ltorch.full((2, 3), 1, torch.float32, ...)` -> `prims.full((2, 3), 1.0, ..., torch.float32)`).
// The file holds each op's decomposition, then its execution rule; creation ops (and the creation
// prims) are not differentiable.
#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

Value full_impl(TraceBuilder& b, Args args, Kw) {
  DType dtype = dtype_arg(args, 2, "dtype");
  Value fill = Value::floating(number_arg(args, 1, "fill_value"));
  fill = number_like(fill.f, dtype);
  return Value::of(call1(
      b, "prims.full",
      {Value::ints(ints_arg(args, 0, "shape")), fill, Value::of(device_arg(args, 3, "device")), Value::of(dtype)}));
}

SymbolImpl constant_impl(double value) {
  return [value](TraceBuilder& b, Args args, Kw) {
    DType dtype = dtype_arg(args, 1, "dtype");
    return Value::of(
        full(b, ints_arg(args, 0, "shape"), number_like(value, dtype), dtype, device_arg(args, 2, "device")));
  };
}

Value arange_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(call1(b, "prims.iota",
                         {Value::integer(int_arg(args, 0, "end")), Value::integer(0), Value::integer(1),
                          Value::of(device_arg(args, 1, "device")), Value::of(DType::i64)}));
}

}  // namespace

T full(TraceBuilder& b, const Dims& shape, const Value& fill, DType dtype, Device device) {
  return call1(b, "ltorch.full", {Value::ints(shape), fill, Value::of(dtype), Value::of(device)});
}
T ones(TraceBuilder& b, const Dims& shape, DType dtype, Device device) {
  return call1(b, "ltorch.ones", {Value::ints(shape), Value::of(dtype), Value::of(device)});
}
T zeros(TraceBuilder& b, const Dims& shape, DType dtype, Device device) {
  return call1(b, "ltorch.zeros", {Value::ints(shape), Value::of(dtype), Value::of(device)});
}
T arange(TraceBuilder& b, int64_t end, Device device) {
  return call1(b, "ltorch.arange", {Value::integer(end), Value::of(device)});
}

}  // namespace tv::ltorch

// ---- Execution rules: direct at:: calls (faster and closer to eager than the decompositions) ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;

// A dtype or device among the arguments, by kind (creation ops' argument order varies).
const RValue* find_kind(Args a, size_t from, RValue::Kind kind) {
  for (size_t i = from; i < a.size(); ++i)
    if (a[i].kind == kind) return &a[i];
  return nullptr;
}

at::TensorOptions creation_options(Args a, size_t from, Kw k) {
  const RValue* d = find_kind(a, from, RValue::Kind::dtype);
  const RValue* dev = find_kind(a, from, RValue::Kind::device);
  if (const RValue* kd = rkwarg(k, "dtype"); kd && kd->kind == RValue::Kind::dtype) d = kd;
  if (const RValue* kd = rkwarg(k, "device"); kd && kd->kind == RValue::Kind::device) dev = kd;
  return options_of(d ? d->dtype : DType::f32, dev ? dev->device : Device{});
}

void register_creation_execution() {
  // arange(end) as the engine records it; arange(start, end, step) and the keywords as Thunder's
  // printouts write it (`torch.arange(start=0, step=1, end=16, device=..., dtype=None)`).
  exec_rule("ltorch.arange", [](Args a, Kw k) {
    size_t numbers = 0;
    while (numbers < a.size() && numbers < 3 && a[numbers].is_number()) ++numbers;
    const RValue* start = numbers >= 2 ? &a[0] : rkwarg(k, "start");
    const RValue* end = numbers >= 2 ? &a[1] : numbers == 1 ? &a[0] : rkwarg(k, "end");
    const RValue* step = numbers == 3 ? &a[2] : rkwarg(k, "step");
    if (!end) throw ExecError("ltorch.arange: no end given (positionally or as end=)", "ltorch.arange");
    const RValue* dtype = rkwarg(k, "dtype");
    at::TensorOptions o = creation_options(a, numbers, k);
    auto integral = [](const RValue* v) { return !v || v->is_none() || v->kind == RValue::Kind::integer; };
    if (!(dtype && dtype->kind == RValue::Kind::dtype) && !find_kind(a, numbers, RValue::Kind::dtype) &&
        integral(start) && integral(end) && integral(step))
      o = o.dtype(at::kLong);  // integers give int64, as torch.arange does
    return RValue::of(at::arange(start && !start->is_none() ? scalar_of(*start) : at::Scalar(0), scalar_of(*end),
                                 step && !step->is_none() ? scalar_of(*step) : at::Scalar(1), o));
  });
  exec_rule("ltorch.full", [](Args a, Kw k) {
    return RValue::of(at::full(ints_at(a, 0, "shape"), scalar_of(rarg(a, 1, "fill")), creation_options(a, 2, k)));
  });
  exec_rule("ltorch.ones", [](Args a, Kw k) { return RValue::of(at::ones(ints_at(a, 0, "shape"), creation_options(a, 1, k))); });
  exec_rule("ltorch.zeros", [](Args a, Kw k) {
    return RValue::of(at::zeros(ints_at(a, 0, "shape"), creation_options(a, 1, k)));
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_creation() {
  using namespace tv::ltorch;
  define("ltorch.full", false, {"creation"}, full_impl);
  define("ltorch.ones", false, {"creation"}, constant_impl(1));
  define("ltorch.zeros", false, {"creation"}, constant_impl(0));
  define("ltorch.arange", false, {"creation"}, arange_impl);
  for (const char* n : {"ltorch.arange", "ltorch.full", "ltorch.ones", "ltorch.zeros", "prims.full", "prims.iota",
                        "prims.uniform_philox"})
    register_not_differentiable(op(n));
  exec::register_creation_execution();
}

}  // namespace tv::ops
