// Spatial ops: convolution and pooling, with the prims they decompose into and the backward prims
// their gradient rules record.
//   ltorch.conv{1,2,3}d(a, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
//     -> ltorch.convolution(a, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
//     -> prims.convolution(same)                         (Thunder's chain, as its printouts show it)
//   ltorch.conv_transpose{1,2,3}d(a, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
//                                 dilation=1) -> ltorch.convolution(..., transposed=True, ...)
//   ltorch.max_pool2d(a, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
//     -> prims.max_pool2d_with_indices(a, kernel_size, stride, padding, dilation, ceil_mode) -> (out, indices)
//   ltorch.avg_pool2d(a, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
//                     divisor_override=None) -> prims.avg_pool2d(same, stride filled in)
//   ltorch.adaptive_avg_pool2d(a, output_size) -> prims.adaptive_avg_pool2d(a, output_size)
// Backward prims: prims.convolution_backward(g, a, weight, stride, padding, dilation, transposed,
// output_padding, groups, output_mask) -> the gradients output_mask asks for (input, weight, bias, in
// that order); prims.max_pool2d_with_indices_backward(g, a, kernel_size, stride, padding, dilation,
// ceil_mode, indices); prims.avg_pool2d_backward(g, a, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override); prims.adaptive_avg_pool2d_backward(g, a). Each runs as one
// LibTorch kernel; a pooling backward is linear in g, and its own gradient is not defined here.
// Inputs are batched ([N, C, ...]) or, for the ltorch ops, unbatched ([C, ...]: a batch of one is
// added and taken off again). Stride, padding and dilation are an int or one int per spatial dim.
// The file holds, in order, each op's meta and decomposition, its gradient rule, its execution rule.
#include <ATen/ATen.h>

#include <algorithm>
#include <string>

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

// One value per spatial dim from an int or a list of 1 or `n` ints (`fallback` when absent or empty).
Shape per_dim(Args args, size_t i, const char* name, size_t n, int64_t fallback, const char* op) {
  Shape v = i < args.size() ? ints_arg(args, i, name) : Shape{};
  if (v.empty()) v = {fallback};
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n)
    throw OpError(std::string(op) + ": " + name + " " + shape_text(v) + " has " + std::to_string(v.size()) +
                  " values for " + std::to_string(n) + " spatial dims");
  return v;
}

T out(TraceBuilder& b, Shape shape, const T& like, Args inputs) {
  return b.tensor(std::move(shape), like->dtype, like->device, output_requires_grad(inputs, like->dtype));
}

// ---- convolution ----

Value convolution_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "input"), w = tensor_arg(args, 1, "weight"), bias = optional_tensor_arg(args, 2, "bias");
  require_floating(a, "convolution");
  int64_t r = rank(a);
  if (r < 3 || rank(w) != r)
    throw OpError("convolution takes a batched input [N, C, ...] and a weight of the same rank, got " +
                  shape_text(a->shape) + " and " + shape_text(w->shape));
  if (w->dtype != a->dtype || (bias && bias->dtype != a->dtype))
    throw OpError("convolution: input, weight and bias must have one dtype, got " + std::string(short_name(a->dtype)) +
                  " and " + std::string(short_name(w->dtype)) + " (cast the input or the module)");
  size_t n = static_cast<size_t>(r - 2);
  Shape stride = per_dim(args, 3, "stride", n, 1, "convolution");
  Shape padding = per_dim(args, 4, "padding", n, 0, "convolution");
  Shape dilation = per_dim(args, 5, "dilation", n, 1, "convolution");
  bool transposed = bool_arg(args, 6, "transposed");
  Shape output_padding = per_dim(args, 7, "output_padding", n, 0, "convolution");
  int64_t groups = int_arg(args, 8, "groups");
  if (groups < 1 || a->shape[1] % groups != 0)
    throw OpError("convolution: " + std::to_string(a->shape[1]) + " input channels are not divisible by groups " +
                  std::to_string(groups));
  int64_t in_channels = transposed ? w->shape[0] : w->shape[1] * groups;
  int64_t out_channels = transposed ? w->shape[1] * groups : w->shape[0];
  if (in_channels != a->shape[1])
    throw OpError("convolution: the weight " + shape_text(w->shape) + " expects " + std::to_string(in_channels) +
                  " input channels (groups " + std::to_string(groups) + "), the input " + shape_text(a->shape) + " has " +
                  std::to_string(a->shape[1]));
  if (bias && bias->shape != Shape{out_channels})
    throw OpError("convolution: bias " + shape_text(bias->shape) + " must be [" + std::to_string(out_channels) + "]");
  Shape shape = {a->shape[0], out_channels};
  for (size_t d = 0; d < n; ++d) {
    int64_t in = a->shape[d + 2], k = w->shape[d + 2];
    int64_t size = transposed ? (in - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k - 1) + output_padding[d] + 1
                              : (in + 2 * padding[d] - dilation[d] * (k - 1) - 1) / stride[d] + 1;
    if (stride[d] < 1 || size < 1)
      throw OpError("convolution: input " + shape_text(a->shape) + " is too small for kernel " + shape_text(w->shape) +
                    " with stride " + shape_text(stride) + ", padding " + shape_text(padding) + ", dilation " +
                    shape_text(dilation));
    shape.push_back(size);
  }
  return Value::of(out(b, shape, a, args));
}

Value convolution_impl(TraceBuilder& b, Args args, Kw) {
  std::vector<Value> all = args;
  if (all.size() != 9) throw OpError("convolution takes 9 arguments, got " + std::to_string(args.size()));
  return Value::of(call1(b, "prims.convolution", std::move(all)));
}

// Whether `a` is an unbatched [C, ...] input of `n` spatial dims (else a batched [N, C, ...] one).
bool is_unbatched(const T& a, int64_t n, const std::string& op) {
  if (rank(a) != n + 1 && rank(a) != n + 2)
    throw OpError(op + " takes a [N, C, ...] or [C, ...] input of " + std::to_string(n) + " spatial dims, got " +
                  shape_text(a->shape));
  return rank(a) == n + 1;
}

// A batch of one added in front (dim 0), or taken off.
T with_batch_of_one(TraceBuilder& b, const T& a) {
  Shape s = a->shape;
  s.insert(s.begin(), 1);
  return ltorch::reshape(b, a, s);
}
T without_batch(TraceBuilder& b, const T& a) {
  Shape s = a->shape;
  s.erase(s.begin());
  return ltorch::reshape(b, a, s);
}

// conv{n}d: padding may be 'valid' or 'same' (stride 1; an odd total padding is refused, as the
// engine has no asymmetric convolution padding).
SymbolImpl conv_impl(int64_t n) {
  return [n](TraceBuilder& b, Args args, Kw kwargs) {
    std::string op = "conv" + std::to_string(n) + "d";
    std::vector<Value> given = by_position(args, kwargs, {"input", "weight", "bias", "stride", "padding", "dilation", "groups"});
    T a = tensor_arg(given, 0, "input"), w = tensor_arg(given, 1, "weight");
    bool unbatched = is_unbatched(a, n, op);
    if (unbatched) a = with_batch_of_one(b, a);
    Shape stride = per_dim(given, 3, "stride", n, 1, op.c_str());
    Shape dilation = per_dim(given, 5, "dilation", n, 1, op.c_str());
    Shape padding;
    if (given[4].kind == Value::Kind::string) {
      if (given[4].s == "valid") {
        padding.assign(n, 0);
      } else if (given[4].s == "same") {
        for (int64_t d = 0; d < n; ++d) {
          int64_t total = dilation[d] * (w->shape[d + 2] - 1);
          if (stride[d] != 1 || total % 2 != 0)
            throw OpError(op + "(padding='same') needs stride 1 and an odd dilated kernel, got kernel " +
                          shape_text(w->shape) + " and stride " + shape_text(stride));
          padding.push_back(total / 2);
        }
      } else {
        throw OpError(op + ": padding must be 'valid', 'same' or ints, got '" + given[4].s + "'");
      }
    } else {
      padding = per_dim(given, 4, "padding", n, 0, op.c_str());
    }
    int64_t groups = given[6].is_none() ? 1 : int_arg(given, 6, "groups");
    T y = call1(b, "ltorch.convolution",
                {V(a), V(w), given[2], Value::ints(stride), Value::ints(padding), Value::ints(dilation),
                 Value::boolean(false), Value::ints(Shape(n, 0)), Value::integer(groups)});
    return Value::of(unbatched ? without_batch(b, y) : y);
  };
}

// conv_transpose{n}d(input, weight, bias, stride, padding, output_padding, groups, dilation), torch's
// layout (groups before dilation): the transposed ltorch.convolution. output_padding adds to one
// side of each output dim and must be smaller than the stride or the dilation there.
SymbolImpl conv_transpose_impl(int64_t n) {
  return [n](TraceBuilder& b, Args args, Kw kwargs) {
    std::string op = "conv_transpose" + std::to_string(n) + "d";
    std::vector<Value> given = by_position(
        args, kwargs, {"input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"});
    T a = tensor_arg(given, 0, "input"), w = tensor_arg(given, 1, "weight");
    bool unbatched = is_unbatched(a, n, op);
    if (unbatched) a = with_batch_of_one(b, a);
    Shape stride = per_dim(given, 3, "stride", n, 1, op.c_str());
    Shape padding = per_dim(given, 4, "padding", n, 0, op.c_str());
    Shape output_padding = per_dim(given, 5, "output_padding", n, 0, op.c_str());
    Shape dilation = per_dim(given, 7, "dilation", n, 1, op.c_str());
    for (int64_t d = 0; d < n; ++d)
      if (output_padding[d] < 0 || output_padding[d] >= std::max(stride[d], dilation[d]))
        throw OpError(op + ": output_padding " + shape_text(output_padding) + " must be smaller than the stride " +
                      shape_text(stride) + " or the dilation " + shape_text(dilation));
    int64_t groups = given[6].is_none() ? 1 : int_arg(given, 6, "groups");
    T y = call1(b, "ltorch.convolution",
                {V(a), V(w), given[2], Value::ints(stride), Value::ints(padding), Value::ints(dilation),
                 Value::boolean(true), Value::ints(output_padding), Value::integer(groups)});
    return Value::of(unbatched ? without_batch(b, y) : y);
  };
}

Value convolution_backward_meta(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), a = tensor_arg(args, 1, "input"), w = tensor_arg(args, 2, "weight");
  Shape mask = ints_arg(args, 9, "output_mask");
  if (mask.size() != 3) throw OpError("convolution_backward: output_mask must have 3 entries, got " + shape_text(mask));
  std::vector<Value> outs;
  if (mask[0]) outs.push_back(Value::of(out(b, a->shape, a, {V(g)})));
  if (mask[1]) outs.push_back(Value::of(out(b, w->shape, w, {V(g)})));
  if (mask[2]) outs.push_back(Value::of(out(b, {g->shape[1]}, g, {V(g)})));
  if (outs.empty()) throw OpError("convolution_backward: output_mask asks for no gradient");
  return Value::tuple(std::move(outs));
}

// ---- pooling ----

// Pooled size along one dim, as ATen computes it (ceil_mode: the last window may start in the
// padding's right half but not beyond the input).
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t size = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (size - 1) * s >= in + p) --size;
  return size;
}

struct Window {
  Shape kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

// A 2-d pooling window from (kernel_size, stride, padding, dilation-or-none, ceil_mode) at `at`.
Window window(Args args, const char* op, size_t dilation_at, size_t ceil_at) {
  Window w;
  w.kernel = per_dim(args, 1, "kernel_size", 2, 1, op);
  w.stride = per_dim(args, 2, "stride", 2, 0, op);
  if (w.stride == Shape{0, 0}) w.stride = w.kernel;
  w.padding = per_dim(args, 3, "padding", 2, 0, op);
  w.dilation = dilation_at ? per_dim(args, dilation_at, "dilation", 2, 1, op) : Shape{1, 1};
  w.ceil_mode = ceil_at < args.size() && !args[ceil_at].is_none() && bool_arg(args, ceil_at, "ceil_mode");
  for (size_t d = 0; d < 2; ++d)
    if (w.padding[d] * 2 > w.kernel[d])
      throw OpError(std::string(op) + ": padding " + shape_text(w.padding) + " must be at most half of kernel_size " +
                    shape_text(w.kernel));
  return w;
}

Shape pooled_shape(const T& a, const Window& w, const char* op) {
  if (rank(a) != 3 && rank(a) != 4)
    throw OpError(std::string(op) + " takes a [N, C, H, W] or [C, H, W] input, got " + shape_text(a->shape));
  Shape shape = a->shape;
  for (size_t d = 0; d < 2; ++d) {
    size_t at = shape.size() - 2 + d;
    shape[at] = pooled_size(a->shape[at], w.kernel[d], w.stride[d], w.padding[d], w.dilation[d], w.ceil_mode);
    if (shape[at] < 1)
      throw OpError(std::string(op) + ": input " + shape_text(a->shape) + " is too small for kernel_size " +
                    shape_text(w.kernel));
  }
  return shape;
}

std::vector<Value> window_args(const T& a, const Window& w, bool with_dilation) {
  std::vector<Value> v = {V(a), Value::ints(w.kernel), Value::ints(w.stride), Value::ints(w.padding)};
  if (with_dilation) v.push_back(Value::ints(w.dilation));
  v.push_back(Value::boolean(w.ceil_mode));
  return v;
}

Value max_pool_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "input");
  require_floating(a, "max_pool2d");
  Shape shape = pooled_shape(a, window(args, "max_pool2d", 4, 5), "max_pool2d");
  T indices = b.tensor(shape, DType::i64, a->device);
  return Value::tuple({Value::of(out(b, shape, a, args)), Value::of(indices)});
}

Value max_pool_impl(TraceBuilder& b, Args args, Kw kwargs) {
  std::vector<Value> given =
      by_position(args, kwargs, {"input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"});
  T a = tensor_arg(given, 0, "input");
  Window w = window(given, "max_pool2d", 4, 5);
  Value both = b.call("prims.max_pool2d_with_indices", window_args(a, w, true));
  bool with_indices = !given[6].is_none() && bool_arg(given, 6, "return_indices");
  return with_indices ? both : both.items.at(0);
}

Value avg_pool_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "input");
  require_floating(a, "avg_pool2d");
  return Value::of(out(b, pooled_shape(a, window(args, "avg_pool2d", 0, 4), "avg_pool2d"), a, args));
}

Value avg_pool_impl(TraceBuilder& b, Args args, Kw kwargs) {
  std::vector<Value> given = by_position(
      args, kwargs, {"input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"});
  T a = tensor_arg(given, 0, "input");
  Window w = window(given, "avg_pool2d", 0, 4);
  std::vector<Value> call = window_args(a, w, false);
  call.push_back(Value::boolean(given[5].is_none() || bool_arg(given, 5, "count_include_pad")));
  call.push_back(given[6].is_none() ? Value::none() : Value::integer(int_arg(given, 6, "divisor_override")));
  return Value::of(call1(b, "prims.avg_pool2d", std::move(call)));
}

Shape adaptive_shape(const T& a, const Value& size) {
  if (rank(a) != 3 && rank(a) != 4)
    throw OpError("adaptive_avg_pool2d takes a [N, C, H, W] or [C, H, W] input, got " + shape_text(a->shape));
  Shape shape = a->shape;
  std::vector<Value> items = size.is_sequence() ? size.items.vec() : std::vector<Value>{size, size};
  if (items.size() != 2) throw OpError("adaptive_avg_pool2d: output_size must be an int or a pair, got " + python_text(size));
  for (size_t d = 0; d < 2; ++d) {
    size_t at = shape.size() - 2 + d;
    if (items[d].is_none()) continue;  // None keeps the input's size
    if (items[d].kind != Value::Kind::integer || items[d].i < 1)
      throw OpError("adaptive_avg_pool2d: output_size must hold positive ints or None, got " + python_text(size));
    shape[at] = items[d].i;
  }
  return shape;
}

Value adaptive_avg_pool_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "input");
  require_floating(a, "adaptive_avg_pool2d");
  return Value::of(out(b, adaptive_shape(a, arg(args, 1, "output_size")), a, args));
}

Value adaptive_avg_pool_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "input");
  Shape shape = adaptive_shape(a, arg(args, 1, "output_size"));
  return Value::of(call1(b, "prims.adaptive_avg_pool2d", {V(a), Value::ints({shape[shape.size() - 2], shape.back()})}));
}

// A pooling backward's gradient, shaped and typed as its input `a` (argument 1).
Value input_like_meta(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), a = tensor_arg(args, 1, "input");
  return Value::of(out(b, a->shape, a, {V(g)}));
}

}  // namespace

}  // namespace tv::ops

// ---- Gradient rules ----
// convolution records one prims.convolution_backward for the gradients its arguments need; pooling
// records its backward prim, which LibTorch runs from the saved input (and max pooling's indices).

namespace tv {

namespace {

using ops::op;
using T = ProxyPtr;
using grad::tensor_at;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;
using ops::V;

Out convolution_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), w = tensor_at(f, 1), bias = tensor_at(f, 2);
  Out out(f.args.size());
  if (!cts[0].is_proxy()) return out;
  bool wants[3] = {a->requires_grad, w->requires_grad, bias && bias->requires_grad};
  if (!wants[0] && !wants[1] && !wants[2]) return out;
  std::vector<Value> args = {cts[0], V(a), V(w)};
  for (size_t i = 3; i < 9; ++i) args.push_back(f.args.at(i));
  args.push_back(Value::ints({wants[0], wants[1], wants[2]}));
  Value grads = b.call("prims.convolution_backward", std::move(args));
  size_t k = 0;
  for (size_t i = 0; i < 3; ++i)
    if (wants[i]) out[i] = grads.items.at(k++);
  return out;
}

Out max_pool_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Out out(f.args.size());
  if (!cts[0].is_proxy()) return out;
  std::vector<Value> args = {cts[0]};
  for (size_t i = 0; i < 6; ++i) args.push_back(f.args.at(i));
  args.push_back(V(f.outputs.at(1)));
  out[0] = V(ops::call1(b, "prims.max_pool2d_with_indices_backward", std::move(args)));
  return out;
}

Out avg_pool_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Out out(f.args.size());
  std::vector<Value> args = {cts[0]};
  for (size_t i = 0; i < 7; ++i) args.push_back(f.args.at(i));
  out[0] = V(ops::call1(b, "prims.avg_pool2d_backward", std::move(args)));
  return out;
}

Out adaptive_avg_pool_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Out out(f.args.size());
  out[0] = V(ops::call1(b, "prims.adaptive_avg_pool2d_backward", {cts[0], V(tensor_at(f, 0))}));
  return out;
}

void register_spatial_gradients() {
  register_grad_rule(op("prims.convolution"), convolution_rule);
  register_grad_rule(op("prims.max_pool2d_with_indices"), max_pool_rule);
  register_grad_rule(op("prims.avg_pool2d"), avg_pool_rule);
  register_grad_rule(op("prims.adaptive_avg_pool2d"), adaptive_avg_pool_rule);
  for (const char* n : {"ltorch.convolution", "ltorch.conv1d", "ltorch.conv2d", "ltorch.conv3d", "ltorch.conv_transpose1d",
                        "ltorch.conv_transpose2d", "ltorch.conv_transpose3d", "ltorch.max_pool2d", "ltorch.avg_pool2d",
                        "ltorch.adaptive_avg_pool2d"})
    register_grad_through_decomposition(op(n));
}

}  // namespace

}  // namespace tv

// ---- Execution rules: one LibTorch kernel each ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;
using ops::same_exec_rule;

std::vector<int64_t> stride_or_kernel(Args a, size_t i, const std::vector<int64_t>& kernel) {
  std::vector<int64_t> s = i < a.size() && !a[i].is_none() ? a[i].ints() : std::vector<int64_t>{};
  return s.empty() ? kernel : s;
}

void register_spatial_execution() {
  exec_rule("prims.convolution", [](Args a, Kw k) {
    return RValue::of(at::convolution(tensor_at(a, 0, "input"), tensor_at(a, 1, "weight"), optional_tensor_at(a, 2),
                                      ints_at(a, 3, "stride"), ints_at(a, 4, "padding"), ints_at(a, 5, "dilation"),
                                      flag_at(a, 6, k, "transposed"), ints_at(a, 7, "output_padding"), int_at(a, 8, "groups")));
  });
  same_exec_rule("ltorch.convolution", "prims.convolution");
  exec_rule("prims.convolution_backward", [](Args a, Kw k) {
    const at::Tensor &g = tensor_at(a, 0, "grad"), &w = tensor_at(a, 2, "weight");
    std::vector<int64_t> mask = ints_at(a, 9, "output_mask");
    if (mask.size() != 3) throw ExecError("convolution_backward: output_mask must have 3 entries");
    auto grads = at::convolution_backward(g, tensor_at(a, 1, "input"), w, std::vector<int64_t>{w.size(0)},
                                          ints_at(a, 3, "stride"), ints_at(a, 4, "padding"), ints_at(a, 5, "dilation"),
                                          flag_at(a, 6, k, "transposed"), ints_at(a, 7, "output_padding"), int_at(a, 8, "groups"),
                                          {mask[0] != 0, mask[1] != 0, mask[2] != 0});
    std::vector<RValue> out;
    for (auto* t : {&std::get<0>(grads), &std::get<1>(grads), &std::get<2>(grads)})
      if (t->defined()) out.push_back(RValue::of(*t));
    return RValue::tuple(std::move(out));
  });
  exec_rule("prims.max_pool2d_with_indices", [](Args a, Kw k) {
    std::vector<int64_t> kernel = ints_at(a, 1, "kernel_size");
    auto [out, indices] = at::max_pool2d_with_indices(tensor_at(a, 0, "input"), kernel, stride_or_kernel(a, 2, kernel),
                                                      ints_at(a, 3, "padding"), ints_at(a, 4, "dilation"),
                                                      flag_at(a, 5, k, "ceil_mode"));
    return RValue::tuple({RValue::of(out), RValue::of(indices)});
  });
  exec_rule("prims.max_pool2d_with_indices_backward", [](Args a, Kw k) {
    std::vector<int64_t> kernel = ints_at(a, 2, "kernel_size");
    return RValue::of(at::max_pool2d_with_indices_backward(
        tensor_at(a, 0, "grad"), tensor_at(a, 1, "input"), kernel, stride_or_kernel(a, 3, kernel), ints_at(a, 4, "padding"),
        ints_at(a, 5, "dilation"), flag_at(a, 6, k, "ceil_mode"), tensor_at(a, 7, "indices")));
  });
  // The ltorch ops as one kernel each (their decompositions run the same kernels through prims).
  for (int64_t n : {1, 2, 3})
    exec_rule("ltorch.conv" + std::to_string(n) + "d", [n](Args a, Kw k) {
      const at::Tensor &x = tensor_at(a, 0, "input"), &w = tensor_at(a, 1, "weight");
      const RValue *b = argument(a, 2, k, "bias"), *s = argument(a, 3, k, "stride"), *p = argument(a, 4, k, "padding"),
                   *d = argument(a, 5, k, "dilation"), *g = argument(a, 6, k, "groups");
      c10::optional<at::Tensor> bias = b && !b->is_none() ? c10::optional<at::Tensor>(b->tensor()) : c10::nullopt;
      auto ints = [](const RValue* v, int64_t fallback) {
        return v && !v->is_none() ? v->ints() : std::vector<int64_t>{fallback};
      };
      std::vector<int64_t> stride = ints(s, 1), dilation = ints(d, 1);
      int64_t groups = g && !g->is_none() ? g->integer_value() : 1;
      if (p && p->kind == RValue::Kind::string) {
        if (n == 1) return RValue::of(at::conv1d(x, w, bias, stride, p->s, dilation, groups));
        if (n == 2) return RValue::of(at::conv2d(x, w, bias, stride, p->s, dilation, groups));
        return RValue::of(at::conv3d(x, w, bias, stride, p->s, dilation, groups));
      }
      std::vector<int64_t> padding = ints(p, 0);
      if (n == 1) return RValue::of(at::conv1d(x, w, bias, stride, padding, dilation, groups));
      if (n == 2) return RValue::of(at::conv2d(x, w, bias, stride, padding, dilation, groups));
      return RValue::of(at::conv3d(x, w, bias, stride, padding, dilation, groups));
    });
  for (int64_t n : {1, 2, 3})
    exec_rule("ltorch.conv_transpose" + std::to_string(n) + "d", [n](Args a, Kw k) {
      const RValue *b = argument(a, 2, k, "bias"), *g = argument(a, 6, k, "groups");
      auto ints = [&](size_t i, const char* name, int64_t fallback) {
        const RValue* v = argument(a, i, k, name);
        return v && !v->is_none() ? v->ints() : std::vector<int64_t>{fallback};
      };
      const at::Tensor &x = tensor_at(a, 0, "input"), &w = tensor_at(a, 1, "weight");
      c10::optional<at::Tensor> bias = b && !b->is_none() ? c10::optional<at::Tensor>(b->tensor()) : c10::nullopt;
      std::vector<int64_t> stride = ints(3, "stride", 1), padding = ints(4, "padding", 0);
      std::vector<int64_t> output_padding = ints(5, "output_padding", 0), dilation = ints(7, "dilation", 1);
      int64_t groups = g && !g->is_none() ? g->integer_value() : 1;
      if (n == 1) return RValue::of(at::conv_transpose1d(x, w, bias, stride, padding, output_padding, groups, dilation));
      if (n == 2) return RValue::of(at::conv_transpose2d(x, w, bias, stride, padding, output_padding, groups, dilation));
      return RValue::of(at::conv_transpose3d(x, w, bias, stride, padding, output_padding, groups, dilation));
    });
  exec_rule("ltorch.max_pool2d", [](Args a, Kw k) {
    std::vector<int64_t> kernel = ints_at(a, 1, "kernel_size");
    auto ints = [&](size_t i, const char* name, std::vector<int64_t> fallback) {
      const RValue* v = argument(a, i, k, name);
      std::vector<int64_t> got = v && !v->is_none() ? v->ints() : std::vector<int64_t>{};
      return got.empty() ? fallback : got;
    };
    auto [out, idx] = at::max_pool2d_with_indices(tensor_at(a, 0, "input"), kernel, ints(2, "stride", kernel),
                                                  ints(3, "padding", {0}), ints(4, "dilation", {1}),
                                                  flag_at(a, 5, k, "ceil_mode"));
    if (flag_at(a, 6, k, "return_indices")) return RValue::tuple({RValue::of(out), RValue::of(idx)});
    return RValue::of(out);
  });
  exec_rule("prims.avg_pool2d", [](Args a, Kw k) {
    std::vector<int64_t> kernel = ints_at(a, 1, "kernel_size");
    c10::optional<int64_t> divisor;
    if (a.size() > 6 && !a[6].is_none()) divisor = a[6].integer_value();
    return RValue::of(at::avg_pool2d(tensor_at(a, 0, "input"), kernel, stride_or_kernel(a, 2, kernel),
                                     ints_at(a, 3, "padding"), flag_at(a, 4, k, "ceil_mode"),
                                     flag_at(a, 5, k, "count_include_pad", true), divisor));
  });
  same_exec_rule("ltorch.avg_pool2d", "prims.avg_pool2d");  // the same layout, read by position
  exec_rule("prims.avg_pool2d_backward", [](Args a, Kw k) {
    std::vector<int64_t> kernel = ints_at(a, 2, "kernel_size");
    c10::optional<int64_t> divisor;
    if (a.size() > 7 && !a[7].is_none()) divisor = a[7].integer_value();
    return RValue::of(at::avg_pool2d_backward(tensor_at(a, 0, "grad"), tensor_at(a, 1, "input"), kernel,
                                              stride_or_kernel(a, 3, kernel), ints_at(a, 4, "padding"),
                                              flag_at(a, 5, k, "ceil_mode"), flag_at(a, 6, k, "count_include_pad", true),
                                              divisor));
  });
  exec_rule("prims.adaptive_avg_pool2d", [](Args a, Kw) {
    const at::Tensor& x = tensor_at(a, 0, "input");
    const RValue& size = rarg(a, 1, "output_size");
    std::vector<int64_t> out = {x.size(-2), x.size(-1)};
    if (size.is_sequence()) {
      for (size_t d = 0; d < 2 && d < size.items.size(); ++d)
        if (!size.items[d].is_none()) out[d] = size.items[d].integer_value();
    } else {
      out = {size.integer_value(), size.integer_value()};
    }
    return RValue::of(at::adaptive_avg_pool2d(x, out));
  });
  same_exec_rule("ltorch.adaptive_avg_pool2d", "prims.adaptive_avg_pool2d");
  exec_rule("prims.adaptive_avg_pool2d_backward", [](Args a, Kw) {
    return RValue::of(at::_adaptive_avg_pool2d_backward(tensor_at(a, 0, "grad"), tensor_at(a, 1, "input")));
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_spatial() {
  define("prims.convolution", true, {}, convolution_meta);
  define("prims.convolution_backward", true, {}, convolution_backward_meta);
  define("prims.max_pool2d_with_indices", true, {}, max_pool_meta);
  define("prims.max_pool2d_with_indices_backward", true, {}, input_like_meta);
  define("prims.avg_pool2d", true, {}, avg_pool_meta);
  define("prims.avg_pool2d_backward", true, {}, input_like_meta);
  define("prims.adaptive_avg_pool2d", true, {}, adaptive_avg_pool_meta);
  define("prims.adaptive_avg_pool2d_backward", true, {}, input_like_meta);
  define("ltorch.convolution", false, {}, convolution_impl);
  for (int64_t n : {1, 2, 3}) define("ltorch.conv" + std::to_string(n) + "d", false, {}, conv_impl(n));
  for (int64_t n : {1, 2, 3}) define("ltorch.conv_transpose" + std::to_string(n) + "d", false, {}, conv_transpose_impl(n));
  define("ltorch.max_pool2d", false, {}, max_pool_impl);
  define("ltorch.avg_pool2d", false, {}, avg_pool_impl);
  define("ltorch.adaptive_avg_pool2d", false, {}, adaptive_avg_pool_impl);
  register_spatial_gradients();
  exec::register_spatial_execution();
}

}  // namespace tv::ops
