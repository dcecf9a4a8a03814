#include "ops/spellings.h"

#include <ATen/ATen.h>

#include <string>

#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ops {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

const Symbol& spelling(std::string_view name) { return SymbolRegistry::global().find_or_opaque(name, PrintForm::call); }

// `name` runs as the op `of` does.
void runs_as(std::string_view name, std::string_view of) { exec::share_exec_rule(spelling(name), op(of)); }

using exec::ExecError;
using exec::rarg;
using exec::RValue;
using exec::rules::Args;
using exec::rules::Kw;

// prims.pad(a, padding_value, [(low, high, interior), ...]) as Thunder's torch executor runs it:
// `interior` values between neighbours, then `low` and `high` at the ends (negative ones crop).
RValue pad(Args a, Kw) {
  using namespace exec::rules;
  at::Tensor t = tensor_at(a, 0, "a");
  at::Scalar value = scalar_of(rarg(a, 1, "padding_value"));
  const RValue& config = rarg(a, 2, "padding_config");
  if (!config.is_sequence() || static_cast<int64_t>(config.items.size()) != t.dim())
    throw ExecError("pad: padding_config needs one (low, high, interior) per dim of " + std::to_string(t.dim()),
                    "torch_pad_prim_impl");
  std::vector<int64_t> ends;  // constant_pad_nd's order: the last dim first
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    std::vector<int64_t> lhi = config.items[static_cast<size_t>(d)].ints();
    if (lhi.size() != 3 || lhi[2] < 0) throw ExecError("pad: each dim's config is (low, high, interior >= 0)", "torch_pad_prim_impl");
    if (lhi[2] > 0 && t.size(d) > 1) {
      std::vector<int64_t> sizes = t.sizes().vec();
      sizes[static_cast<size_t>(d)] = t.size(d) + (t.size(d) - 1) * lhi[2];
      at::Tensor spread = at::full(sizes, value, t.options());
      spread.slice(d, 0, sizes[static_cast<size_t>(d)], lhi[2] + 1).copy_(t);
      t = spread;
    }
    ends.push_back(lhi[0]);
    ends.push_back(lhi[1]);
  }
  return RValue::of(at::constant_pad_nd(t, ends, value));
}

// torch_nll_loss_backward_impl(g, a, target, weight, reduction, ignore_index, total_weight).
RValue nll_loss_backward(Args a, Kw k) {
  using namespace exec::rules;
  rarg(a, 4, "reduction");  // given, as Thunder prints it
  int64_t mode = reduction_at(a, 4, k, "torch_nll_loss_backward_impl");
  const at::Tensor &g = tensor_at(a, 0, "g"), &input = tensor_at(a, 1, "a"), &target = tensor_at(a, 2, "target");
  const at::Tensor& total_weight = tensor_at(a, 6, "total_weight");
  int64_t ignore_index = int_at(a, 5, "ignore_index");
  if (input.dim() > 2)
    return RValue::of(at::nll_loss2d_backward(g, input, target, optional_tensor_at(a, 3), mode, ignore_index, total_weight));
  return RValue::of(at::nll_loss_backward(g, input, target, optional_tensor_at(a, 3), mode, ignore_index, total_weight));
}

// Tensor.to / ltorch.to with a dtype or a device among the positional arguments or as keywords,
// and copy=: the same tensor when nothing changes and no copy is asked for.
RValue tensor_to(Args a, Kw k) {
  using namespace exec::rules;
  at::Tensor t = tensor_at(a, 0, "a");
  std::optional<at::ScalarType> dtype;
  std::optional<at::Device> device;
  auto take = [&](const RValue& v) {
    if (v.kind == RValue::Kind::dtype) dtype = exec::to_scalar_type(v.dtype);
    if (v.kind == RValue::Kind::device) device = exec::to_device(v.device);
  };
  for (size_t i = 1; i < a.size(); ++i) take(a[i]);
  for (const char* key : {"dtype", "device"})
    if (const RValue* v = exec::rkwarg(k, key)) take(*v);
  const RValue* copy = exec::rkwarg(k, "copy");
  bool copied = copy && !copy->is_none() && copy->integer_value() != 0;
  return RValue::of(t.to(device.value_or(t.device()), dtype.value_or(t.scalar_type()), /*non_blocking=*/false, copied));
}

}  // namespace

const Symbol* spelled_op(std::string_view name) {
  std::string target;
  if (starts_with(name, "torch.nn.functional.")) target = "ltorch." + std::string(name.substr(20));
  else if (starts_with(name, "torch.")) target = "ltorch." + std::string(name.substr(6));
  else if (starts_with(name, "torch_") && ends_with(name, "_prim_impl"))
    target = "prims." + std::string(name.substr(6, name.size() - 6 - 10));
  if (target.empty()) return nullptr;
  const Symbol* s = SymbolRegistry::global().find(target);
  return s && !s->traits.empty() ? s : nullptr;
}

void register_spellings() {
  using namespace exec::rules;
  // The torch executor's implementations of the prims, as its final traces call them.
  for (const char* p : {"neg", "abs", "sign", "exp", "log", "tanh", "erf", "rsqrt", "sqrt", "sin", "cos", "reciprocal",
                        "bitwise_not", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le",
                        "gt", "ge", "where", "convert_element_type", "reshape", "transpose", "broadcast_in_dim", "slice",
                        "cat", "shallow_copy", "flip", "sum", "amax", "amin", "var_mean", "linear", "matmul", "take",
                        "take_along_axis", "full", "iota", "uniform_philox", "convolution"})
    runs_as(std::string("torch_") + p + "_prim_impl", std::string("prims.") + p);
  runs_as("torch_prims_reshape_impl", "ltorch.reshape");
  runs_as("shallow_copy", "prims.shallow_copy");
  exec::set_exec_rule(spelling("clear_mutable_collection"), exec::SimpleExecRule([](Args, Kw) { return RValue::none(); }));
  // The torch executor's functional forms of in-place updates: copy_(value, into) writes a buffer;
  // update_aliases((t, ...)) marks tensors that may alias, and gives them back.
  runs_as("copy_", "prims.copy_");
  exec::set_exec_rule(spelling("update_aliases"), exec::SimpleExecRule([](Args a, Kw) {
    const RValue& tensors = rarg(a, 0, "tensors");
    return tensors.is_sequence() ? RValue::tuple(tensors.items) : tensors;
  }));
  runs_as("max_pool2d_with_indices", "prims.max_pool2d_with_indices");
  runs_as("max_pool2d_with_indices_backward", "prims.max_pool2d_with_indices_backward");
  runs_as("torch.torch.ops.aten._adaptive_avg_pool2d_backward", "prims.adaptive_avg_pool2d_backward");
  for (const char* n : {"torch_pad_prim_impl", "prims.pad"}) exec::set_exec_rule(spelling(n), exec::SimpleExecRule(pad));
  exec::share_exec_rule(spelling("prims.update_aliases"), spelling("update_aliases"));
  exec::set_exec_rule(spelling("prims.clone"), exec::SimpleExecRule([](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").clone()); }));
  for (const char* n : {"ltorch.bitwise_and", "prims.bitwise_and", "torch.bitwise_and"})
    exec::set_exec_rule(spelling(n), exec::SimpleExecRule([](Args a, Kw) {
                          return binary(a, [](TT x, TT y) { return at::bitwise_and(x, y); });
                        }));
  // ltorch.add_(a, b, alpha=): Thunder's in-place add before functionalisation; it writes into a.
  exec::set_exec_rule(spelling("ltorch.add_"), exec::SimpleExecRule([](Args a, Kw k) {
    at::Tensor t = tensor_at(a, 0, "a");
    const RValue* alpha = exec::rkwarg(k, "alpha");
    t.add_(operand(rarg(a, 1, "b")), alpha && !alpha->is_none() ? scalar_of(*alpha) : at::Scalar(int64_t{1}));
    return RValue::of(t);
  }));
  exec::set_exec_rule(spelling("ltorch.logsumexp"), exec::SimpleExecRule([](Args a, Kw k) {
    const RValue* keepdim = argument(a, 2, k, "keepdim");
    return RValue::of(at::logsumexp(tensor_at(a, 0, "a"), ints_at(a, 1, "dim"),
                                    keepdim && !keepdim->is_none() && keepdim->integer_value() != 0));
  }));
  // ltorch.torch_max(a, dim=None, keepdim=False): the maximum, or (values, indices) along dim.
  exec::set_exec_rule(spelling("ltorch.torch_max"), exec::SimpleExecRule([](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue *dim = argument(a, 1, k, "dim"), *keepdim = argument(a, 2, k, "keepdim");
    if (!dim || dim->is_none()) return RValue::of(at::max(t));
    auto [values, indices] = at::max(t, dim->integer_value(), keepdim && !keepdim->is_none() && keepdim->integer_value() != 0);
    return RValue::tuple({RValue::of(values), RValue::of(indices)});
  }));
  // Thunder's ltorch spellings of backward kernels: log_softmax_backward(g, out, dim, dtype).
  exec::set_exec_rule(spelling("ltorch.log_softmax_backward"), exec::SimpleExecRule([](Args a, Kw) {
    const RValue& dtype = rarg(a, 3, "dtype");
    const at::Tensor& out = tensor_at(a, 1, "output");
    return RValue::of(at::_log_softmax_backward_data(tensor_at(a, 0, "grad"), out, int_at(a, 2, "dim"),
                                                     dtype.kind == RValue::Kind::dtype ? exec::to_scalar_type(dtype.dtype)
                                                                                       : out.scalar_type()));
  }));
  runs_as("ltorch.adaptive_avg_pool2d_backward", "prims.adaptive_avg_pool2d_backward");
  exec::set_exec_rule(spelling("torch_nll_loss_backward_impl"), exec::SimpleExecRule(nll_loss_backward));
  exec::set_exec_rule(spelling("Tensor.to"), exec::SimpleExecRule(tensor_to));
  exec::set_exec_rule(spelling("ltorch.to"), exec::SimpleExecRule(tensor_to));

  // The torch executor's spellings of the ltorch ops.
  for (const char* n : {"reshape", "permute", "matmul", "true_divide", "sum", "mean", "add", "sub", "mul", "pow", "exp",
                        "neg", "erf", "tanh", "log", "rsqrt", "sqrt", "relu", "sigmoid", "where", "eq", "ne", "lt", "le",
                        "gt", "ge", "maximum", "transpose", "unsqueeze", "cat", "amax", "amin", "var_mean", "split",
                        "masked_fill", "take_along_dim", "softmax", "log_softmax", "layer_norm", "embedding", "full",
                        "ones", "zeros", "arange", "abs", "sign", "sin", "cos", "reciprocal", "bitwise_not", "minimum",
                        "clamp", "flip", "flatten", "tril", "triu", "convolution", "conv1d", "conv2d", "conv3d",
                        "batch_norm", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "mse_loss", "nll_loss"})
    runs_as(std::string("torch.") + n, std::string("ltorch.") + n);
  for (const char* n : {"gather", "scatter_add", "scatter", "index_select", "index_add", "index_put", "topk", "argmax", "argmin"})
    runs_as(std::string("torch.") + n, std::string("ltorch.") + n);
  runs_as("torch.div", "ltorch.true_divide");
  runs_as("torch.sgn", "ltorch.sign");  // of real tensors
  for (const char* n : {"torch.Tensor.expand", "Tensor.expand"}) runs_as(n, "ltorch.expand");
  exec::set_exec_rule(spelling("torch.nn.functional.smooth_l1_loss"), exec::SimpleExecRule([](Args a, Kw k) {
    const RValue* beta = argument(a, 5, k, "beta");
    int64_t mode = reduction_at(a, 4, k, "torch.nn.functional.smooth_l1_loss");
    return RValue::of(at::smooth_l1_loss(tensor_at(a, 0, "input"), tensor_at(a, 1, "target"), mode,
                                         beta && !beta->is_none() ? beta->number() : 1.0));
  }));
  for (const char* n : {"linear", "gelu", "silu", "relu", "softmax", "log_softmax", "layer_norm", "cross_entropy",
                        "embedding", "conv1d", "conv2d", "conv3d", "batch_norm", "max_pool2d", "avg_pool2d",
                        "adaptive_avg_pool2d", "mse_loss", "nll_loss"})
    runs_as(std::string("torch.nn.functional.") + n, std::string("ltorch.") + n);
  runs_as("torch.nn.functional.scaled_dot_product_attention", "ltorch.scaled_dot_product_attention");
  exec::share_exec_rule(spelling("ltorch.smooth_l1_loss"), spelling("torch.nn.functional.smooth_l1_loss"));
}

}  // namespace tv::ops
