// Creation ltorch ops: full, ones, zeros, arange. The fill value is converted to the dtype's kind
// (`ltorch.full((2, 3), 1, torch.float32, ...)` -> `prims.full((2, 3), 1.0, ..., torch.float32)`).
#include "ops/ltorch.h"
#include "ops/op_utils.h"

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

namespace tv::ops {

void register_creation() {
  using namespace tv::ltorch;
  define("ltorch.full", false, {"creation"}, full_impl);
  define("ltorch.ones", false, {"creation"}, constant_impl(1));
  define("ltorch.zeros", false, {"creation"}, constant_impl(0));
  define("ltorch.arange", false, {"creation"}, arange_impl);
}

}  // namespace tv::ops
