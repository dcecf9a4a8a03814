// ltorch.interpolate(a, size, scale_factor, mode, align_corners): torch.nn.functional.interpolate
// for modes 'nearest', 'linear', 'bilinear' and 'trilinear' on an [N, C, ...] input, decomposed (as
// Thunder decomposes it) one spatial dim at a time into gathers along that dim (prims.take) at
// indices computed from an arange, blended by elementwise weights for the linear modes. `size` is
// the output's spatial shape; `scale_factor` (None or one number per spatial dim), when given, sets
// the ratio torch maps output positions to input ones with, instead of in/out.
// It runs as LibTorch's upsampling kernel (one launch where the decomposition takes several per
// dim), and is differentiated through its decomposition (the gathers' gradients scatter).
#include <optional>
#include <string>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ops {

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;
using namespace tv::ltorch;

struct Resize {
  int64_t dim, in, out;
  std::optional<double> scale_factor;
};

// torch's ratio from output to input positions (area_pixel_compute_scale).
double input_per_output(const Resize& r, bool align_corners) {
  if (align_corners) return r.out > 1 ? static_cast<double>(r.in - 1) / static_cast<double>(r.out - 1) : 0.0;
  if (r.scale_factor && *r.scale_factor > 0) return 1.0 / *r.scale_factor;
  return static_cast<double>(r.in) / static_cast<double>(r.out);
}

// The output positions 0 .. out-1 as floating numbers of `dtype`.
T positions(TraceBuilder& b, const Resize& r, DType dtype, const Device& device) {
  return convert_element_type(b, arange(b, r.out, device), dtype);
}

// `w` [out] shaped to broadcast along `dim` of a tensor of rank `rank`.
T along(TraceBuilder& b, const T& w, int64_t dim, int64_t rank) {
  Dims shape(static_cast<size_t>(rank - dim), 1);
  shape[0] = w->shape[0];
  return reshape(b, w, shape);
}

T take(TraceBuilder& b, const T& a, const T& index, int64_t dim) {
  return call1(b, "prims.take", {V(a), V(index), Value::integer(dim)});
}

// Nearest: input index min(floor(i * scale), in - 1), in float32 whatever a's dtype (as torch).
T nearest_along(TraceBuilder& b, const T& a, const Resize& r, DType compute) {
  T scaled = mul(b, V(positions(b, r, compute, a->device)), number_like(input_per_output(r, false), compute));
  T index = call1(b, "ltorch.minimum", {V(convert_element_type(b, scaled, DType::i64)), Value::integer(r.in - 1)});
  return take(b, a, index, r.dim);
}

// Linear: the two neighbours of the source coordinate, weighted by the distance to each.
T linear_along(TraceBuilder& b, const T& a, const Resize& r, bool align_corners, DType compute) {
  Value scale = number_like(input_per_output(r, align_corners), compute);
  T at = positions(b, r, compute, a->device);
  T source = align_corners ? mul(b, V(at), scale)
                           : maximum(b, V(sub(b, V(mul(b, V(add(b, V(at), number_like(0.5, compute))), scale)),
                                               number_like(0.5, compute))),
                                     number_like(0.0, compute));
  T low = convert_element_type(b, source, DType::i64);
  T high = call1(b, "ltorch.minimum", {V(add(b, V(low), Value::integer(1))), Value::integer(r.in - 1)});
  T high_weight = sub(b, V(source), V(convert_element_type(b, low, compute)));
  T low_weight = sub(b, number_like(1.0, compute), V(high_weight));
  int64_t rank = static_cast<int64_t>(a->shape.size());
  T from_low = mul(b, V(take(b, a, low, r.dim)), V(along(b, low_weight, r.dim, rank)));
  T from_high = mul(b, V(take(b, a, high, r.dim)), V(along(b, high_weight, r.dim, rank)));
  return add(b, V(from_low), V(from_high));
}

// The linear mode torch names for an input of `spatial` dims ("" past three).
std::string linear_mode(int64_t spatial) {
  return spatial == 1 ? "linear" : spatial == 2 ? "bilinear" : spatial == 3 ? "trilinear" : "";
}

Value interpolate_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "input");
  Dims size = ints_arg(args, 1, "size");
  const Value& factors = arg(args, 2, "scale_factor");
  const Value& mode_value = arg(args, 3, "mode");
  std::string mode = mode_value.kind == Value::Kind::string ? mode_value.s : "";
  bool align_corners = args.size() > 4 && !args[4].is_none() && bool_arg(args, 4, "align_corners");
  auto spatial = static_cast<int64_t>(a->shape.size()) - 2;
  if (spatial < 1 || static_cast<int64_t>(size.size()) != spatial)
    throw OpError("interpolate takes an [N, C, ...] input and one output size per spatial dim, got " +
                  shape_text(a->shape) + " and " + shape_text(size));
  bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  if (mode != "nearest" && !linear) throw OpError("interpolate: mode '" + mode + "' is not supported (nearest, linear, bilinear, trilinear)");
  if (linear && mode != linear_mode(spatial))
    throw OpError("interpolate: mode '" + mode + "' does not fit an input of shape " + shape_text(a->shape));
  if (align_corners && !linear) throw OpError("interpolate: align_corners is only for the linear modes");
  require_floating(a, "interpolate");
  if (!factors.is_none() && (!factors.is_sequence() || static_cast<int64_t>(factors.items.size()) != spatial))
    throw OpError("interpolate: scale_factor must be None or one number per spatial dim, got " + python_text(factors));
  DType compute = a->dtype == DType::f64 ? DType::f64 : DType::f32;
  T out = a;
  for (int64_t k = 0; k < spatial; ++k) {
    Resize r{k + 2, a->shape[static_cast<size_t>(k + 2)], size[static_cast<size_t>(k)], std::nullopt};
    if (r.out <= 0) throw OpError("interpolate: output sizes must be positive, got " + shape_text(size));
    if (!factors.is_none()) r.scale_factor = factors.items[static_cast<size_t>(k)].as_double();
    out = linear ? linear_along(b, out, r, align_corners, compute) : nearest_along(b, out, r, DType::f32);
  }
  if (out->dtype != a->dtype) out = convert_element_type(b, out, a->dtype);
  return Value::of(out);
}

}  // namespace

}  // namespace tv::ops

namespace tv::exec {

namespace {

using namespace rules;

// ltorch.interpolate(input, size, scale_factor, mode, align_corners) as LibTorch's upsample kernels.
RValue upsample(Args a, Kw) {
  const at::Tensor& x = tensor_at(a, 0, "input");
  std::vector<int64_t> size = ints_at(a, 1, "size");
  const RValue& factors = rarg(a, 2, "scale_factor");
  const std::string& mode = rarg(a, 3, "mode").s;
  bool align = a.size() > 4 && !a[4].is_none() && a[4].number() != 0;
  auto scale = [&](size_t k) { return factors.is_none() ? c10::optional<double>() : c10::optional<double>(factors[k].number()); };
  bool nearest = mode == "nearest";
  switch (x.dim()) {
    case 3:
      return RValue::of(nearest ? at::upsample_nearest1d(x, size, scale(0)) : at::upsample_linear1d(x, size, align, scale(0)));
    case 4:
      return RValue::of(nearest ? at::upsample_nearest2d(x, size, scale(0), scale(1))
                                : at::upsample_bilinear2d(x, size, align, scale(0), scale(1)));
    case 5:
      return RValue::of(nearest ? at::upsample_nearest3d(x, size, scale(0), scale(1), scale(2))
                                : at::upsample_trilinear3d(x, size, align, scale(0), scale(1), scale(2)));
    default:
      throw ExecError("ltorch.interpolate takes an input of 3 to 5 dims, got " + std::to_string(x.dim()), "ltorch.interpolate");
  }
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_interpolate() {
  define("ltorch.interpolate", false, {}, interpolate_impl);
  register_grad_through_decomposition(op("ltorch.interpolate"));
  exec_rule("ltorch.interpolate", exec::upsample);
}

}  // namespace tv::ops
