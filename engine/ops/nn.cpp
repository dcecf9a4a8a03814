// Neural-network ltorch ops: linear, matmul, layer_norm, batch_norm, group_norm, instance_norm,
// softmax, log_softmax, cross_entropy, nll_loss, mse_loss, smooth_l1_loss, binary_cross_entropy
// (with_logits), embedding, dropout, scaled_dot_product_attention, take_along_dim, and the backward
// ops the gradient rules record (layer_norm_backward, batch_norm_backward, softmax_backward,
// cross_entropy_backward, embedding_backward, scaled_dot_product_attention_backward). linear and
// matmul map to one prim each; the others are compositions of ltorch ops (nested subsymbols), e.g.
// layer_norm = (a - mean) * rsqrt(var + eps) with var_mean(correction=0). A backward op is
// decomposed like any other op, so the trace shows what it computes, but the executor runs
// LibTorch's fused kernel for it: as a chain of single ops a backward reads and writes its
// activations several times over.
// The file holds, in order, each op's meta and decomposition, its gradient rule, its execution rule.
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"
#include "runtime/small_kernels.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TV_FUSED_ATTENTION 1
#else
#define TV_FUSED_ATTENTION 0
#endif
// LibTorch's flash attention for the CPU (_scaled_dot_product_flash_attention_for_cpu), what eager
// torch's scaled_dot_product_attention runs there.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define TV_FUSED_ATTENTION_CPU 1
#else
#define TV_FUSED_ATTENTION_CPU 0
#endif

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

Value linear_impl(TraceBuilder& b, Args args, Kw) {
  T bias = optional_tensor_arg(args, 2, "bias");
  return Value::of(call1(b, "prims.linear",
                         {Value::of(tensor_arg(args, 0, "input")), Value::of(tensor_arg(args, 1, "weight")), V(bias)}));
}

Value matmul_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(
      call1(b, "prims.matmul", {Value::of(tensor_arg(args, 0, "a")), Value::of(tensor_arg(args, 1, "b"))}));
}

// layer_norm's decomposition: its output, and the mean and rstd it normalised with (the normalized
// dims kept as 1s).
std::tuple<T, T, T> layer_norm_parts(TraceBuilder& b, Args args, const char* op) {
  T a = tensor_arg(args, 0, "a");
  Dims normalized = ints_arg(args, 1, "normalized_shape");
  T weight = optional_tensor_arg(args, 2, "weight"), bias = optional_tensor_arg(args, 3, "bias");
  double eps = number_arg(args, 4, "eps");
  require_floating(a, op);
  Dims dims = normalized_dims(a, normalized);
  for (const T& p : {weight, bias})
    if (p && p->shape != normalized)
      throw OpError(std::string(op) + " parameter of shape " + shape_text(p->shape) + " does not match normalized_shape " +
                    shape_text(normalized));
  auto [var, m] = var_mean(b, a, dims, /*correction=*/0, /*keepdim=*/true);
  T rstd = rsqrt(b, add(b, Value::of(var), Value::floating(eps)));
  T out = mul(b, Value::of(sub(b, Value::of(a), Value::of(m))), Value::of(rstd));
  if (weight) out = mul(b, Value::of(out), Value::of(weight));
  if (bias) out = add(b, Value::of(out), Value::of(bias));
  return {out, m, rstd};
}

Value layer_norm_impl(TraceBuilder& b, Args args, Kw) { return Value::of(std::get<0>(layer_norm_parts(b, args, "layer_norm"))); }

// (out, mean, rstd): what the forward kernel computes, the statistics kept for the backward.
Value native_layer_norm_impl(TraceBuilder& b, Args args, Kw) {
  auto [out, m, rstd] = layer_norm_parts(b, args, "native_layer_norm");
  return Value::tuple({V(out), V(m), V(rstd)});
}

// The shifted input a - amax(a, dim) and the keepdim sum of its exp.
std::pair<T, T> shifted_and_norm(TraceBuilder& b, const T& a, int64_t dim, T* exps) {
  T shifted = sub(b, Value::of(a), Value::of(amax(b, a, {dim}, true)));
  *exps = exp(b, shifted);
  return {shifted, sum(b, *exps, {dim}, true)};
}

Value softmax_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  require_floating(a, "softmax");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a));
  T e;
  auto [shifted, z] = shifted_and_norm(b, a, dim, &e);
  return Value::of(true_divide(b, Value::of(e), Value::of(z)));
}

Value log_softmax_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  require_floating(a, "log_softmax");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a));
  T e;
  auto [shifted, z] = shifted_and_norm(b, a, dim, &e);
  return Value::of(sub(b, Value::of(shifted), Value::of(log(b, z))));
}

// An argument at position i (Thunder's layout) or by keyword; null when absent or None.
const Value* given(Args args, Kw kwargs, size_t i, const char* name) {
  const Value* v = i < args.size() ? &args[i] : kwarg(kwargs, name);
  return v && !v->is_none() ? v : nullptr;
}

// A loss's reduction ('mean', 'sum' or 'none', position i or keyword); the legacy size_average and
// reduce (positions legacy0, legacy1) are refused.
std::string loss_reduction(Args args, Kw kwargs, size_t i, size_t legacy0, size_t legacy1, const char* op) {
  if (given(args, kwargs, legacy0, "size_average") || given(args, kwargs, legacy1, "reduce"))
    throw OpError(std::string(op) + "'s legacy size_average and reduce are not supported: pass reduction=");
  const Value* r = given(args, kwargs, i, "reduction");
  std::string reduction = !r ? "mean" : r->kind == Value::Kind::string ? r->s : "";
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    throw OpError(std::string(op) + ": reduction must be 'mean', 'sum' or 'none', got " + python_text(*r));
  return reduction;
}

T reduced(TraceBuilder& b, const T& losses, const std::string& reduction) {
  if (reduction == "none") return losses;
  return reduction == "sum" ? sum(b, losses, {}, false) : mean(b, losses, {}, false);
}

// cross_entropy's arguments in Thunder's (and torch's) layout: (a, target, weight, size_average,
// ignore_index, reduce, reduction, label_smoothing), by position or keyword; the legacy size_average
// and reduce are refused (loss_reduction).
std::optional<int64_t> cross_entropy_ignore_index(Args args, Kw kwargs) {
  const Value* ignore = given(args, kwargs, 4, "ignore_index");
  if (!ignore) return std::nullopt;
  if (ignore->kind != Value::Kind::integer) throw OpError("cross_entropy's ignore_index must be an int, got " + python_text(*ignore));
  return ignore->i;
}

// kept: 1 where target != ignore_index, as `dtype`; safe: the target with ignored rows pointing at
// class 0; valid: target != ignore_index.
struct KeptRows {
  T kept, safe, valid;
};
KeptRows kept_rows(TraceBuilder& b, const T& target, int64_t ignore_index, DType dtype) {
  T valid = ne(b, V(target), Value::integer(ignore_index));
  T safe = where(b, valid, V(target), Value::integer(0));
  return {convert_element_type(b, valid, dtype), safe, valid};
}

// The ignored rows' losses set to 0 (as torch skips them), not multiplied by 0: their gradient is then
// 0 too where the mean divides by a kept weight of 0 (every row ignored), not 0 * inf.
T without_ignored(TraceBuilder& b, const T& losses, const T& valid) {
  return where(b, valid, V(losses), Value::integer(0));
}

// The class weight of cross_entropy and nll_loss (position 2 or weight=): a tensor [C], null when absent.
T class_weight(Args args, Kw kwargs, int64_t classes, const char* op) {
  const Value* w = given(args, kwargs, 2, "weight");
  if (!w) return nullptr;
  if (!w->is_proxy() || rank(w->proxy) != 1 || w->proxy->shape[0] != classes)
    throw OpError(std::string(op) + "'s weight must be a tensor of one weight per class [" + std::to_string(classes) +
                  "], got " + python_text(*w));
  return w->proxy;
}

// Each row's weight: weight[target] where the row is kept (kept_rows), 0 where it is ignored; `kept`
// itself without a class weight.
T row_weights(TraceBuilder& b, const T& weight, const T& safe, const T& kept) {
  if (!weight) return kept;
  int64_t count = 1;
  for (int64_t n : safe->shape) count *= n;
  T flat = rank(safe) == 1 ? safe : reshape(b, safe, {count});
  T per_row = call1(b, "ltorch.index_select", {V(weight), Value::integer(0), V(flat)});
  return mul(b, V(rank(safe) == 1 ? per_row : reshape(b, per_row, safe->shape)), V(kept));
}

// label_smoothing (position 7 or keyword) in [0, 1]; 0 when absent.
double cross_entropy_label_smoothing(Args args, Kw kwargs) {
  const Value* s = given(args, kwargs, 7, "label_smoothing");
  double smoothing = s ? s->as_double() : 0.0;
  if (smoothing < 0 || smoothing > 1) throw OpError("cross_entropy's label_smoothing must be in [0, 1], got " + python_text(*s));
  return smoothing;
}

// With label smoothing s over C classes, row i's loss is (1 - s) (-logp[i, target[i]]) + s / C
// sum_c (-logp[i, c]); the mean is over the rows whose target is not ignore_index.
T smoothed_cross_entropy(TraceBuilder& b, const T& logp, const T& target, int64_t ignore_index, double smoothing) {
  int64_t n = logp->shape[0], classes = logp->shape[1];
  auto [kept, safe, valid] = kept_rows(b, target, ignore_index, logp->dtype);
  T picked = reshape(b, take_along_dim(b, logp, unsqueeze(b, safe, 1), 1), {n});
  T spread = sum(b, logp, {1}, false);
  T hit = mul(b, V(picked), Value::floating(1.0 - smoothing));
  T smooth = mul(b, V(spread), Value::floating(smoothing / static_cast<double>(classes)));
  T rows = without_ignored(b, add(b, V(hit), V(smooth)), valid);
  T total = sum(b, rows, {}, false);
  T count = sum(b, kept, {}, false);
  return neg(b, true_divide(b, V(total), V(count)));
}

// The general case, as torch computes it: logits [N, C, d...] (classes on dim 1, moved last and the
// rest flattened into rows), class indices [N, d...]; row i's loss is
//   (1 - s) * -w[t_i] * logp[i, t_i] + s / C * -sum_c w[c] * logp[i, c]
// (w: the class weight, 1 without one; s: label_smoothing), 0 where t_i is ignore_index (-100 unless
// given); 'mean' divides the sum by the kept rows' sum of w[t_i], 'sum' sums, 'none' keeps [N, d...].
T general_cross_entropy(TraceBuilder& b, const T& logits, const T& target, const T& weight, int64_t ignore_index,
                        double smoothing, const std::string& reduction) {
  int64_t classes = logits->shape[1], rows = 1;
  for (int64_t n : target->shape) rows *= n;
  T flat = logits;
  if (rank(logits) > 2) {
    Dims classes_last = {0};
    for (int64_t d = 2; d < rank(logits); ++d) classes_last.push_back(d);
    classes_last.push_back(1);
    flat = permute(b, logits, classes_last);
  }
  flat = reshape(b, flat, {rows, classes});
  T logp = log_softmax(b, flat, 1);
  auto [kept, safe, valid] = kept_rows(b, reshape(b, target, {rows}), ignore_index, logits->dtype);
  T row_weight = row_weights(b, weight, safe, kept);
  T picked = reshape(b, take_along_dim(b, logp, unsqueeze(b, safe, 1), 1), {rows});
  T losses = neg(b, mul(b, V(picked), V(row_weight)));
  if (smoothing != 0) {
    T spread = sum(b, weight ? mul(b, V(logp), V(weight)) : logp, {1}, false);
    T smooth = neg(b, mul(b, V(spread), V(kept)));
    losses = add(b, V(mul(b, V(losses), Value::floating(1.0 - smoothing))),
                 V(mul(b, V(smooth), Value::floating(smoothing / static_cast<double>(classes)))));
  }
  losses = without_ignored(b, losses, valid);
  if (reduction == "none") return reshape(b, losses, target->shape);
  if (reduction == "sum") return sum(b, losses, {}, false);
  return true_divide(b, V(sum(b, losses, {}, false)), V(sum(b, row_weight, {}, false)));
}

// Class probabilities as the target ([N, C, d...], the logits' shape and dtype), as torch computes
// them: row i's loss is -sum_c w[c] * t[i, c] * logp[i, c] with t = (1 - s) * target + s / C; 'mean'
// divides by the number of rows (N * d...), whatever the weights.
Value probability_cross_entropy(TraceBuilder& b, const T& logits, const T& target, Args args, Kw kwargs) {
  if (target->shape != logits->shape || target->dtype != logits->dtype)
    throw OpError("cross_entropy's target holds class indices (an integer tensor [N, ...]) or class probabilities "
                  "of the logits' shape and dtype (" + shape_text(logits->shape) + " " +
                  std::string(short_name(logits->dtype)) + "), got " + shape_text(target->shape) + " " +
                  std::string(short_name(target->dtype)));
  if (auto ignore = cross_entropy_ignore_index(args, kwargs); ignore && *ignore != -100)
    throw OpError("cross_entropy: ignore_index is not supported for class probabilities (as in torch); leave it out");
  const int64_t classes = logits->shape[1];
  double smoothing = cross_entropy_label_smoothing(args, kwargs);
  std::string reduction = loss_reduction(args, kwargs, 6, 3, 5, "cross_entropy");
  T weight = class_weight(args, kwargs, classes, "cross_entropy");
  T logp = log_softmax(b, logits, 1);
  T t = target;
  if (smoothing != 0)
    t = add(b, V(mul(b, V(target), Value::floating(1.0 - smoothing))), Value::floating(smoothing / static_cast<double>(classes)));
  T terms = mul(b, V(logp), V(t));
  if (weight) {
    Shape along_classes(rank(logits), 1);
    along_classes[1] = classes;
    terms = mul(b, V(terms), V(reshape(b, weight, along_classes)));
  }
  T losses = neg(b, sum(b, terms, {1}, false));
  return Value::of(reduced(b, losses, reduction));
}

Value cross_entropy_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T logits = tensor_arg(args, 0, "logits"), target = tensor_arg(args, 1, "target");
  require_floating(logits, "cross_entropy");
  if (rank(logits) >= 2 && is_floating(target->dtype)) return probability_cross_entropy(b, logits, target, args, kwargs);
  Shape rows = logits->shape;
  if (rank(logits) >= 2) rows.erase(rows.begin() + 1);
  if (rank(logits) < 2 || target->shape != rows)
    throw OpError("cross_entropy needs logits [N, C, ...] and target [N, ...] (class indices) or [N, C, ...] "
                  "(class probabilities), got " +
                  shape_text(logits->shape) + " and " + shape_text(target->shape));
  if (!is_integral(target->dtype) || target->dtype == DType::b8)
    throw OpError("cross_entropy target must hold class indices (an integer tensor) or class probabilities (floating), got " +
                  std::string(short_name(target->dtype)));
  std::optional<int64_t> ignore_index = cross_entropy_ignore_index(args, kwargs);
  double smoothing = cross_entropy_label_smoothing(args, kwargs);
  std::string reduction = loss_reduction(args, kwargs, 6, 3, 5, "cross_entropy");
  T weight = class_weight(args, kwargs, logits->shape[1], "cross_entropy");
  if (weight || reduction != "mean" || rank(logits) != 2)
    return Value::of(general_cross_entropy(b, logits, target, weight, ignore_index.value_or(-100), smoothing, reduction));
  // [N, C] logits, the mean, no class weight: Thunder's decomposition.
  T logp = log_softmax(b, logits, 1);
  if (smoothing != 0) return Value::of(smoothed_cross_entropy(b, logp, target, ignore_index.value_or(-100), smoothing));
  if (!ignore_index) {
    T picked = take_along_dim(b, logp, unsqueeze(b, target, 1), 1);  // [N, 1]
    return Value::of(neg(b, mean(b, picked)));
  }
  // The mean over the kept rows: sum(-logp[i, target[i]] * kept[i]) / sum(kept).
  auto [kept, safe, valid] = kept_rows(b, target, *ignore_index, logits->dtype);
  T picked = reshape(b, take_along_dim(b, logp, unsqueeze(b, safe, 1), 1), {logits->shape[0]});
  T total = sum(b, mul(b, V(picked), V(kept)), {}, false);
  return Value::of(neg(b, true_divide(b, V(total), V(sum(b, kept, {}, false)))));
}

// mse_loss(a, target, size_average, reduce, reduction): the mean (sum, none) of (a - target)^2.
Value mse_loss_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "input"), target = tensor_arg(args, 1, "target");
  require_floating(a, "mse_loss");
  std::string reduction = loss_reduction(args, kwargs, 4, 2, 3, "mse_loss");
  T diff = sub(b, V(a), V(target));
  return Value::of(reduced(b, mul(b, V(diff), V(diff)), reduction));
}

// nll_loss(a, target, weight, size_average, ignore_index, reduce, reduction) for a [N, C, ...] input
// and a [N, ...] target: -w[target[n]] * a[n, target[n], ...] (w: the class weight, 1 without one),
// over the rows whose target is not ignore_index; the mean divides by the kept rows' sum of w.
Value nll_loss_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "input"), target = tensor_arg(args, 1, "target");
  require_floating(a, "nll_loss");
  Shape rows = a->shape;
  if (rank(a) >= 2) rows.erase(rows.begin() + 1);
  if (rank(a) < 2 || target->shape != rows || !is_integral(target->dtype) || target->dtype == DType::b8)
    throw OpError("nll_loss needs an input [N, C, ...] and integer class indices [N, ...], got " + shape_text(a->shape) +
                  " and " + std::string(short_name(target->dtype)) + shape_text(target->shape));
  std::string reduction = loss_reduction(args, kwargs, 6, 3, 5, "nll_loss");
  const Value* ignore = given(args, kwargs, 4, "ignore_index");
  if (ignore && ignore->kind != Value::Kind::integer)
    throw OpError("nll_loss's ignore_index must be an int, got " + python_text(*ignore));
  int64_t ignore_index = ignore ? ignore->i : -100;
  auto [kept, safe, valid] = kept_rows(b, target, ignore_index, a->dtype);
  T row_weight = row_weights(b, class_weight(args, kwargs, a->shape[1], "nll_loss"), safe, kept);
  T picked = reshape(b, take_along_dim(b, a, unsqueeze(b, safe, 1), 1), rows);
  T losses = without_ignored(b, neg(b, mul(b, V(picked), V(row_weight))), valid);
  if (reduction != "mean") return Value::of(reduced(b, losses, reduction));
  return Value::of(true_divide(b, V(sum(b, losses, {}, false)), V(sum(b, row_weight, {}, false))));
}

// batch_norm's arguments, in torch's layout (input, running_mean, running_var, weight, bias,
// training, momentum, eps), by position or keyword, checked.
struct BatchNormArgs {
  T a, running_mean, running_var, weight, bias;
  bool training = false;
  double momentum = 0.1, eps = 1e-5;
  Dims dims;          // every dim but the channels'
  Shape per_channel;  // [1, C, 1, ...]: a channel statistic shaped to broadcast against a
};

// The dims a batch norm reduces over: every dim but the channels' (1).
Dims all_but_channels(int64_t rank) {
  Dims dims = {0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

BatchNormArgs batch_norm_args(Args args, Kw kwargs, const char* op) {
  static const std::vector<const char*> names = {"input",  "running_mean", "running_var", "weight",
                                                  "bias",   "training",     "momentum",    "eps"};
  std::vector<Value> in = by_position(args, kwargs, names);
  BatchNormArgs n;
  n.a = tensor_arg(in, 0, "input");
  require_floating(n.a, op);
  if (rank(n.a) < 2) throw OpError(std::string(op) + " needs an input [N, C, ...], got " + shape_text(n.a->shape));
  int64_t channels = n.a->shape[1];
  T* stats[] = {&n.running_mean, &n.running_var, &n.weight, &n.bias};
  for (size_t i = 1; i <= 4; ++i) {
    *stats[i - 1] = optional_tensor_arg(in, i, names[i]);
    if (*stats[i - 1] && (*stats[i - 1])->shape != Shape{channels})
      throw OpError(std::string(op) + ": " + names[i] + " " + shape_text((*stats[i - 1])->shape) + " must be [" +
                    std::to_string(channels) + "] for an input " + shape_text(n.a->shape));
  }
  n.training = !in[5].is_none() && bool_arg(in, 5, "training");
  if (!in[6].is_none()) n.momentum = number_arg(in, 6, "momentum");
  if (!in[7].is_none()) n.eps = number_arg(in, 7, "eps");
  if (!n.training && (!n.running_mean || !n.running_var))
    throw OpError(std::string(op) + " in eval mode (training=False) needs running_mean and running_var");
  if (n.training && n.a->numel() / std::max<int64_t>(channels, 1) <= 1)
    throw OpError(std::string(op) + " in training needs more than 1 value per channel, got input " + shape_text(n.a->shape));
  n.dims = all_but_channels(rank(n.a));
  n.per_channel.assign(n.a->shape.size(), 1);
  n.per_channel[1] = channels;
  return n;
}

// batch_norm as Thunder decomposes it: in training, the batch statistics over every dim but 1
// (var with correction 0), and the running statistics moved towards them (the variance unbiased)
// and written back with prims.copy_; in eval, the running statistics. Then
// (a - mean) * rsqrt(var + eps) * weight + bias. Gives the output, and the mean and rstd ([C]).
std::tuple<T, T, T> batch_norm_parts(TraceBuilder& b, const BatchNormArgs& n) {
  T m = n.running_mean, var = n.running_var;
  if (n.training) {
    std::tie(var, m) = var_mean(b, n.a, n.dims, /*correction=*/0, /*keepdim=*/false);
    int64_t count = n.a->numel() / n.a->shape[1];
    auto update = [&](const T& running, const T& batch) {
      T moved = add(b, V(mul(b, Value::floating(1.0 - n.momentum), V(running))), V(mul(b, Value::floating(n.momentum), V(batch))));
      call1(b, "prims.copy_", {V(moved), V(running)});
    };
    if (n.running_mean) update(n.running_mean, m);
    if (n.running_var) update(n.running_var, mul(b, V(var), Value::floating(static_cast<double>(count) / static_cast<double>(count - 1))));
  }
  T rstd = rsqrt(b, add(b, V(var), Value::floating(n.eps)));
  T out = mul(b, V(sub(b, V(n.a), V(reshape(b, m, n.per_channel)))), V(reshape(b, rstd, n.per_channel)));
  if (n.weight) out = mul(b, V(out), V(reshape(b, n.weight, n.per_channel)));
  if (n.bias) out = add(b, V(out), V(reshape(b, n.bias, n.per_channel)));
  return {out, m, rstd};
}

Value batch_norm_impl(TraceBuilder& b, Args args, Kw kwargs) {
  return Value::of(std::get<0>(batch_norm_parts(b, batch_norm_args(args, kwargs, "batch_norm"))));
}

// (out, mean, rstd) of a training batch_norm: what the forward kernel computes, the batch statistics
// kept for the backward.
Value native_batch_norm_impl(TraceBuilder& b, Args args, Kw kwargs) {
  BatchNormArgs n = batch_norm_args(args, kwargs, "native_batch_norm");
  if (!n.training) throw OpError("native_batch_norm gives the batch statistics of training=True only");
  auto [out, m, rstd] = batch_norm_parts(b, n);
  return Value::tuple({V(out), V(m), V(rstd)});
}

// batch_norm_backward(g, a, running_mean, running_var, weight, training, eps[, mean, rstd]) -> the
// gradients of a, and of weight and bias when weight is given. In training, layer norm's input
// gradient over the dims but 1 (the batch statistics given, or recomputed); in eval, g scaled by the
// running statistics' rstd.
Value batch_norm_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad");
  std::vector<Value> forward = {arg(args, 1, "input"), arg(args, 2, "running_mean"), arg(args, 3, "running_var"),
                                arg(args, 4, "weight"), Value::none(), arg(args, 5, "training"), Value::floating(0.0),
                                arg(args, 6, "eps")};
  BatchNormArgs n = batch_norm_args(forward, {}, "batch_norm_backward");
  if (g->shape != n.a->shape)
    throw OpError("batch_norm_backward: grad " + shape_text(g->shape) + " and input " + shape_text(n.a->shape) + " differ");
  T w = n.weight ? reshape(b, n.weight, n.per_channel) : nullptr;
  T ga, xhat;
  if (n.training) {
    T mean = optional_tensor_arg(args, 7, "mean"), rstd = optional_tensor_arg(args, 8, "rstd");
    if (mean && rstd) {
      mean = reshape(b, mean, n.per_channel);
      rstd = reshape(b, rstd, n.per_channel);
    }
    std::tie(ga, xhat) = ops::layer_norm_input_grad(b, g, n.a, n.dims, w, Value::floating(n.eps), mean, rstd);
  } else {
    T rstd = reshape(b, rsqrt(b, add(b, V(n.running_var), Value::floating(n.eps))), n.per_channel);
    xhat = mul(b, V(sub(b, V(n.a), V(reshape(b, n.running_mean, n.per_channel)))), V(rstd));
    ga = mul(b, V(w ? mul(b, V(g), V(w)) : g), V(rstd));
  }
  if (!n.weight) return Value::tuple({V(ga)});
  return Value::tuple({V(ga), V(sum(b, mul(b, V(g), V(xhat)), n.dims, false)), V(sum(b, g, n.dims, false))});
}

// embedding's padding_idx (position 2 or keyword), normalised to [0, rows); -1 when there is none.
int64_t padding_index(Args args, Kw kwargs, size_t position, int64_t rows) {
  const Value* p = given(args, kwargs, position, "padding_idx");
  if (!p) return -1;
  if (p->kind != Value::Kind::integer) throw OpError("padding_idx must be an int, got " + python_text(*p));
  if (p->i >= rows || p->i < -rows)
    throw OpError("padding_idx " + std::to_string(p->i) + " is out of range for " + std::to_string(rows) + " rows");
  return p->i < 0 ? p->i + rows : p->i;
}

// The forward ignores padding_idx (it only keeps the padding row out of the weight's gradient).
Value embedding_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T indices = tensor_arg(args, 0, "indices"), weight = tensor_arg(args, 1, "weight");
  if (rank(weight) != 2) throw OpError("embedding weight must be 2-D, got " + shape_text(weight->shape));
  padding_index(args, kwargs, 2, weight->shape[0]);
  if (given(args, kwargs, 3, "max_norm")) throw OpError("embedding with max_norm is not supported (it renormalises the weight in place)");
  return Value::of(call1(b, "prims.take", {Value::of(weight), Value::of(indices), Value::integer(0)}));
}

// The gradient of an embedding lookup: rows of g summed into the rows their indices name, none into
// the padding row (argument 3, -1 or absent for none). Decomposed as one_hot(indices)^T @ g (the op
// set has no scatter); the executor runs LibTorch's embedding_dense_backward instead, O(n d) rather
// than O(n rows d).
Value embedding_backward_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T g = tensor_arg(args, 0, "grad"), indices = tensor_arg(args, 1, "indices");
  int64_t rows = int_arg(args, 2, "num_weights");
  if (rank(g) != 2 || rank(indices) != 1 || g->shape[0] != indices->shape[0])
    throw OpError("embedding_backward takes grad [n, d] and indices [n], got " + shape_text(g->shape) + " and " +
                  shape_text(indices->shape));
  int64_t padding = padding_index(args, kwargs, 3, rows);
  T hits = one_hot(b, indices, rows, g->dtype);  // [n, rows]
  if (padding >= 0) {
    T kept = convert_element_type(b, ne(b, V(indices), Value::integer(padding)), g->dtype);
    hits = mul(b, V(hits), V(unsqueeze(b, kept, 1)));
  }
  return Value::of(matmul(b, permute(b, hits, {1, 0}), g));
}

// (grad_a, grad_weight, grad_bias) of layer_norm(a, normalized_shape, weight, bias, eps), with the
// forward's mean and rstd when given (arguments 6 and 7, native_layer_norm's), else the statistics
// recomputed from a. Weight and bias are required (the rule of a layer_norm without them
// differentiates its decomposition).
Value layer_norm_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), a = tensor_arg(args, 1, "a");
  Dims normalized = ints_arg(args, 2, "normalized_shape");
  T w = tensor_arg(args, 3, "weight"), bias = tensor_arg(args, 4, "bias");
  Value eps = Value::floating(number_arg(args, 5, "eps"));
  T mean = args.size() > 7 ? optional_tensor_arg(args, 6, "mean") : nullptr;
  T rstd = args.size() > 7 ? optional_tensor_arg(args, 7, "rstd") : nullptr;
  if (g->shape != a->shape)
    throw OpError("layer_norm_backward: grad " + shape_text(g->shape) + " and input " + shape_text(a->shape) +
                  " differ in shape");
  Dims dims = normalized_dims(a, normalized), batch;
  for (int64_t d = 0; d < dims.front(); ++d) batch.push_back(d);
  int64_t normalized_numel = 1;
  for (int64_t n : normalized) normalized_numel *= n;
  for (const T& stat : {mean, rstd})
    if (stat && (stat->shape.size() != a->shape.size() || stat->numel() * normalized_numel != a->numel()))
      throw OpError("layer_norm_backward: statistics " + shape_text(stat->shape) + " do not match input " +
                    shape_text(a->shape) + " normalized over " + shape_text(normalized));
  auto [ga, xhat] = layer_norm_input_grad(b, g, a, dims, w, eps, mean, rstd);
  T gw = mul(b, V(g), V(xhat)), gb = g;
  if (!batch.empty()) {
    gw = sum(b, gw, batch, false);
    gb = sum(b, g, batch, false);
  }
  return Value::tuple({V(ga), V(gw), V(gb)});
}

// The gradient of softmax through its output: output * (grad - sum(grad * output, dim)).
Value softmax_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), out = tensor_arg(args, 1, "output");
  if (g->shape != out->shape)
    throw OpError("softmax_backward: grad " + shape_text(g->shape) + " and output " + shape_text(out->shape) +
                  " differ in shape");
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), rank(out));
  T dot = sum(b, mul(b, V(g), V(out)), {dim}, true);
  return Value::of(mul(b, V(out), V(sub(b, V(g), V(dot)))));
}

// The gradient of cross_entropy(logits [N, C], target [N]) (mean over N) for the loss's cotangent
// `grad`: (softmax(logits) - one_hot(target)) * grad / N. With ignore_index (argument 3) the mean is
// over the kept rows and an ignored row is its softmax times 0, as eager's log_softmax backward
// leaves it: 0, or NaN where the row's logits make NaN (a fully masked row); not grad / 0's inf
// times 0 when every row is ignored.
Value cross_entropy_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), logits = tensor_arg(args, 1, "logits"), target = tensor_arg(args, 2, "target");
  if (rank(logits) != 2 || rank(target) != 1 || logits->shape[0] != target->shape[0] || rank(g) != 0)
    throw OpError("cross_entropy_backward needs grad [], logits [N, C] and target [N], got " + shape_text(g->shape) +
                  ", " + shape_text(logits->shape) + " and " + shape_text(target->shape));
  T p = softmax(b, logits, 1);
  if (args.size() < 4 || args[3].is_none()) {
    T diff = sub(b, V(p), V(one_hot(b, target, logits->shape[1], logits->dtype)));
    return Value::of(mul(b, V(diff), V(true_divide(b, V(g), Value::integer(logits->shape[0])))));
  }
  auto [kept, safe, valid] = kept_rows(b, target, int_arg(args, 3, "ignore_index"), logits->dtype);
  T diff = sub(b, V(p), V(one_hot(b, safe, logits->shape[1], logits->dtype)));
  T scale = true_divide(b, V(g), V(sum(b, kept, {}, false)));
  return Value::of(where(b, unsqueeze(b, valid, 1), V(mul(b, V(diff), V(scale))), V(mul(b, V(p), Value::integer(0)))));
}

// dropout(a, p, seed, training, offset): the mask is uniform_philox(seed, offset) < 1 - p. The seed is
// an int or an integer tensor of shape [] (a trace input: a caller draws it from its generator per
// call); sites of one trace sharing a seed differ by their offset.
Value dropout_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  double p = number_arg(args, 1, "p");
  const Value& seed = arg(args, 2, "seed");
  check_seed(seed, "dropout");
  bool training = args.size() < 4 || bool_arg(args, 3, "training");
  int64_t offset = args.size() < 5 ? 0 : int_arg(args, 4, "offset");
  if (p < 0 || p > 1) throw OpError("dropout probability must be in [0, 1], got " + python_text(Value::floating(p)));
  if (!training || p == 0) return Value::of(call1(b, "prims.shallow_copy", {Value::of(a)}));
  DType rdtype = is_floating(a->dtype) ? a->dtype : DType::f32;
  T r = call1(b, "prims.uniform_philox",
              {Value::ints(a->shape), Value::floating(0.0), Value::floating(1.0), Value::of(a->device),
               Value::of(rdtype), seed, Value::integer(offset)});
  T keep = lt(b, Value::of(r), Value::floating(1.0 - p));
  T kept = mul(b, Value::of(a), Value::of(keep));
  return Value::of(mul(b, Value::of(kept), Value::floating(p == 1 ? 0.0 : 1.0 / (1.0 - p))));
}

void check_attention_inputs(const T& q, const T& k, const T& v) {
  for (const T& t : {q, k, v})
    if (rank(t) < 2) throw OpError("attention inputs need shape [..., L, E], got " + shape_text(t->shape));
  require_floating(q, "scaled_dot_product_attention");
}

// softmax(q k^T / sqrt(E), masked) [..., L, S]: causal keeps j <= i, a bool mask keeps where true, a
// float mask is added.
// q k^T / sqrt(E), with -inf where causal or a bool mask hides a key, plus a float mask.
T attention_scores(TraceBuilder& b, const T& q, const T& k, const T& mask, bool causal) {
  int64_t L = q->shape[rank(q) - 2], S = k->shape[rank(k) - 2], E = q->shape.back();
  T scores = matmul(b, q, transpose(b, k, -2, -1));
  scores = mul(b, Value::of(scores), Value::floating(1.0 / std::sqrt(static_cast<double>(E))));
  Value minus_inf = Value::floating(-std::numeric_limits<double>::infinity());
  if (causal) {
    T rows = unsqueeze(b, arange(b, L, q->device), 1), cols = unsqueeze(b, arange(b, S, q->device), 0);
    scores = where(b, ge(b, Value::of(rows), Value::of(cols)), Value::of(scores), minus_inf);
  }
  if (mask) {
    scores = mask->dtype == DType::b8 ? where(b, mask, Value::of(scores), minus_inf)
                                      : add(b, Value::of(scores), Value::of(mask));
  }
  return scores;
}

T attention_probabilities(TraceBuilder& b, const T& q, const T& k, const T& mask, bool causal) {
  return softmax(b, attention_scores(b, q, k, mask, causal), -1);
}

Value sdpa_impl(TraceBuilder& b, Args args, Kw) {
  T q = tensor_arg(args, 0, "query"), k = tensor_arg(args, 1, "key"), v = tensor_arg(args, 2, "value");
  T mask = optional_tensor_arg(args, 3, "attn_mask");
  check_attention_inputs(q, k, v);
  return Value::of(matmul(b, attention_probabilities(b, q, k, mask, bool_arg(args, 4, "is_causal")), v));
}

// With P the probabilities and s = 1/sqrt(E): grad_v = P^T g, grad_scores = softmax_backward(g v^T,
// P) * s, grad_q = grad_scores k, grad_k = grad_scores^T q.
// (out, logsumexp): attention and the log-sum-exp of each query's scores [..., L] in float, what the
// fused forward kernel keeps for its backward.
Value sdpa_forward_impl(TraceBuilder& b, Args args, Kw) {
  T q = tensor_arg(args, 0, "query"), k = tensor_arg(args, 1, "key"), v = tensor_arg(args, 2, "value");
  T mask = optional_tensor_arg(args, 3, "attn_mask");
  check_attention_inputs(q, k, v);
  T scores = attention_scores(b, q, k, mask, bool_arg(args, 4, "is_causal"));
  T out = matmul(b, softmax(b, scores, -1), v);
  T wide = convert_element_type(b, scores, DType::f32);
  T top = amax(b, wide, {-1}, true);
  Dims rows(top->shape.begin(), top->shape.end() - 1);
  T lse = add(b, V(reshape(b, top, rows)), V(log(b, sum(b, exp(b, sub(b, V(wide), V(top))), {-1}, false))));
  return Value::tuple({V(out), V(lse)});
}

Value sdpa_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), q = tensor_arg(args, 1, "query"), k = tensor_arg(args, 2, "key");
  T v = tensor_arg(args, 3, "value"), mask = optional_tensor_arg(args, 4, "attn_mask");
  T out = tensor_arg(args, 5, "output");
  check_attention_inputs(q, k, v);
  if (args.size() > 7 && args[7].is_proxy()) {
    T lse = args[7].proxy;
    Dims rows(q->shape.begin(), q->shape.end() - 1);
    if (lse->shape != rows || lse->dtype != DType::f32)
      throw OpError("scaled_dot_product_attention_backward: log-sum-exp " + type_text(*lse) + " is not f32" +
                    shape_text(rows) + " (one per query row)");
  }
  if (g->shape != out->shape)
    throw OpError("scaled_dot_product_attention_backward: grad " + shape_text(g->shape) + " and output " +
                  shape_text(out->shape) + " differ in shape");
  if (mask && mask->dtype != DType::b8)
    throw OpError("scaled_dot_product_attention_backward takes a bool mask or none, got " +
                  std::string(short_name(mask->dtype)) + " (differentiate a float mask through the decomposition)");
  T p = attention_probabilities(b, q, k, mask, bool_arg(args, 6, "is_causal"));
  T gv = matmul(b, transpose(b, p, -2, -1), g);
  T gp = matmul(b, g, transpose(b, v, -2, -1));
  double scale = 1.0 / std::sqrt(static_cast<double>(q->shape.back()));
  T gs = mul(b, V(softmax_backward(b, gp, p, -1)), Value::floating(scale));
  T gq = matmul(b, gs, k);
  T gk = matmul(b, transpose(b, gs, -2, -1), q);
  return Value::tuple({V(gq), V(gk), V(gv)});
}

// ---- group_norm, instance_norm ----

// [1, C, 1, ...]: a per-channel [C] tensor shaped to broadcast against a [N, C, ...] input of rank r.
Shape channel_shape(int64_t channels, int64_t r) {
  Shape s(static_cast<size_t>(r), 1);
  s[1] = channels;
  return s;
}

void require_per_channel(const T& p, int64_t channels, const char* op, const char* name) {
  if (p && p->shape != Shape{channels})
    throw OpError(std::string(op) + ": " + name + " " + shape_text(p->shape) + " must be [" + std::to_string(channels) + "]");
}

// a * weight + bias, each per channel (dim 1), where given.
T channel_affine(TraceBuilder& b, T a, const T& weight, const T& bias) {
  Shape per_channel = channel_shape(a->shape[1], rank(a));
  if (weight) {
    T w = reshape(b, weight, per_channel);
    a = mul(b, V(a), V(w));
  }
  if (bias) {
    T c = reshape(b, bias, per_channel);
    a = add(b, V(a), V(c));
  }
  return a;
}

// (a - mean) * rsqrt(var + eps), the statistics over `dims` (var with correction 0, dims kept).
T standardized(TraceBuilder& b, const T& a, const Dims& dims, double eps) {
  auto [var, m] = var_mean(b, a, dims, /*correction=*/0, /*keepdim=*/true);
  T rstd = rsqrt(b, add(b, V(var), Value::floating(eps)));
  T centered = sub(b, V(a), V(m));
  return mul(b, V(centered), V(rstd));
}

// group_norm(a, num_groups, weight, bias, eps) for a [N, C, ...]: each sample's C channels in
// num_groups groups, each group standardised over its channels and positions, then the per-channel
// affine.
Value group_norm_impl(TraceBuilder& b, Args args, Kw kwargs) {
  std::vector<Value> in = by_position(args, kwargs, {"a", "num_groups", "weight", "bias", "eps"});
  T a = tensor_arg(in, 0, "a");
  require_floating(a, "group_norm");
  int64_t groups = int_arg(in, 1, "num_groups");
  if (rank(a) < 2 || groups < 1 || a->shape[1] % groups != 0)
    throw OpError("group_norm needs an input [N, C, ...] whose C channels split into num_groups=" + std::to_string(groups) +
                  " groups, got " + shape_text(a->shape));
  T weight = optional_tensor_arg(in, 2, "weight"), bias = optional_tensor_arg(in, 3, "bias");
  require_per_channel(weight, a->shape[1], "group_norm", "weight");
  require_per_channel(bias, a->shape[1], "group_norm", "bias");
  double eps = in[4].is_none() ? 1e-5 : number_arg(in, 4, "eps");
  T grouped = reshape(b, a, {a->shape[0], groups, a->numel() / std::max<int64_t>(a->shape[0] * groups, 1)});
  T normalized = reshape(b, standardized(b, grouped, {2}, eps), a->shape);
  return Value::of(channel_affine(b, normalized, weight, bias));
}

// The running statistic `running` moved towards the batch's `observed` by `momentum`, written back.
void update_running(TraceBuilder& b, const T& running, const T& observed, double momentum) {
  T kept = mul(b, Value::floating(1.0 - momentum), V(running));
  T added = mul(b, Value::floating(momentum), V(observed));
  call1(b, "prims.copy_", {V(add(b, V(kept), V(added))), V(running)});
}

// instance_norm(a, running_mean, running_var, weight, bias, use_input_stats, momentum, eps) for a
// [N, C, ...]: with use_input_stats, each (sample, channel) standardised over its positions, and the
// running statistics (when given) moved towards the samples' mean statistics (the variance unbiased)
// and written back with prims.copy_, as LibTorch does; else the running statistics. Then the affine.
Value instance_norm_impl(TraceBuilder& b, Args args, Kw kwargs) {
  std::vector<Value> in = by_position(
      args, kwargs, {"a", "running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps"});
  T a = tensor_arg(in, 0, "a");
  require_floating(a, "instance_norm");
  if (rank(a) < 3) throw OpError("instance_norm needs an input [N, C, ...] with spatial dims, got " + shape_text(a->shape));
  int64_t n = a->shape[0], channels = a->shape[1];
  T running_mean = optional_tensor_arg(in, 1, "running_mean"), running_var = optional_tensor_arg(in, 2, "running_var");
  T weight = optional_tensor_arg(in, 3, "weight"), bias = optional_tensor_arg(in, 4, "bias");
  require_per_channel(running_mean, channels, "instance_norm", "running_mean");
  require_per_channel(running_var, channels, "instance_norm", "running_var");
  require_per_channel(weight, channels, "instance_norm", "weight");
  require_per_channel(bias, channels, "instance_norm", "bias");
  bool use_input_stats = in[5].is_none() || bool_arg(in, 5, "use_input_stats");
  double momentum = in[6].is_none() ? 0.1 : number_arg(in, 6, "momentum");
  double eps = in[7].is_none() ? 1e-5 : number_arg(in, 7, "eps");
  Shape per_channel = channel_shape(channels, rank(a));
  if (!use_input_stats) {
    if (!running_mean || !running_var)
      throw OpError("instance_norm with use_input_stats=False needs running_mean and running_var");
    T m = reshape(b, running_mean, per_channel);
    T rstd = reshape(b, rsqrt(b, add(b, V(running_var), Value::floating(eps))), per_channel);
    T centered = sub(b, V(a), V(m));
    return Value::of(channel_affine(b, mul(b, V(centered), V(rstd)), weight, bias));
  }
  Dims positions;
  for (int64_t d = 2; d < rank(a); ++d) positions.push_back(d);
  int64_t count = a->numel() / std::max<int64_t>(n * channels, 1);
  if (count <= 1) throw OpError("instance_norm needs more than 1 value per channel, got input " + shape_text(a->shape));
  auto [var, m] = var_mean(b, a, positions, /*correction=*/0, /*keepdim=*/true);
  if (running_mean) update_running(b, running_mean, mean(b, reshape(b, m, {n, channels}), {0}, false), momentum);
  if (running_var) {
    T unbiased = mul(b, V(reshape(b, var, {n, channels})), Value::floating(static_cast<double>(count) / static_cast<double>(count - 1)));
    update_running(b, running_var, mean(b, unbiased, {0}, false), momentum);
  }
  T rstd = rsqrt(b, add(b, V(var), Value::floating(eps)));
  T centered = sub(b, V(a), V(m));
  return Value::of(channel_affine(b, mul(b, V(centered), V(rstd)), weight, bias));
}

// ---- smooth_l1_loss, binary_cross_entropy, binary_cross_entropy_with_logits ----

// `losses` times the elementwise weight (position i or keyword), when given.
T weighted(TraceBuilder& b, const T& losses, Args args, Kw kwargs, size_t i, const char* name) {
  const Value* w = given(args, kwargs, i, name);
  if (!w) return losses;
  if (!w->is_proxy()) throw OpError(std::string(name) + " must be a tensor, got " + python_text(*w));
  return mul(b, V(losses), *w);
}

// smooth_l1_loss(a, target, size_average, reduce, reduction, beta): |d| - beta/2 where |d| >= beta,
// d^2 / (2 beta) below (d = a - target); |d| for beta 0.
Value smooth_l1_loss_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "input"), target = tensor_arg(args, 1, "target");
  require_floating(a, "smooth_l1_loss");
  std::string reduction = loss_reduction(args, kwargs, 4, 2, 3, "smooth_l1_loss");
  const Value* given_beta = given(args, kwargs, 5, "beta");
  double beta = given_beta ? given_beta->as_double() : 1.0;
  if (beta < 0) throw OpError("smooth_l1_loss: beta must be >= 0, got " + python_text(*given_beta));
  T diff = sub(b, V(a), V(target));
  T distance = call1(b, "ltorch.abs", {V(diff)});
  // (beta 0: |d| as where(d > 0, d, -d), whose gradient at d = 0 is eager's -1, not abs's 0)
  if (beta == 0) return Value::of(reduced(b, where(b, gt(b, V(diff), Value::floating(0)), V(diff), V(neg(b, diff))), reduction));
  T squared = mul(b, V(diff), V(diff));
  T quadratic = mul(b, V(squared), Value::floating(0.5 / beta));
  T linear_part = sub(b, V(distance), Value::floating(0.5 * beta));
  T near = lt(b, V(distance), Value::floating(beta));
  return Value::of(reduced(b, where(b, near, V(quadratic), V(linear_part)), reduction));
}

// log(a) no lower than -100, as LibTorch clamps it (a loss of log(0) stays finite).
T clamped_log(TraceBuilder& b, const T& a) { return maximum(b, V(log(b, a)), Value::floating(-100.0)); }

// binary_cross_entropy(a, target, weight, size_average, reduce, reduction) for probabilities a:
// -(target log(a) + (1 - target) log(1 - a)), times weight.
Value binary_cross_entropy_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "input"), target = tensor_arg(args, 1, "target");
  require_floating(a, "binary_cross_entropy");
  if (a->shape != target->shape)
    throw OpError("binary_cross_entropy needs a target of the input's shape " + shape_text(a->shape) + ", got " +
                  shape_text(target->shape));
  std::string reduction = loss_reduction(args, kwargs, 5, 3, 4, "binary_cross_entropy");
  T log_p = clamped_log(b, a);
  T log_q = clamped_log(b, sub(b, Value::floating(1.0), V(a)));
  T miss = sub(b, Value::floating(1.0), V(target));
  T hit_term = mul(b, V(target), V(log_p));
  T miss_term = mul(b, V(miss), V(log_q));
  T losses = neg(b, add(b, V(hit_term), V(miss_term)));
  return Value::of(reduced(b, weighted(b, losses, args, kwargs, 2, "weight"), reduction));
}

// binary_cross_entropy_with_logits(a, target, weight, size_average, reduce, reduction, pos_weight):
// (1 - target) a + (1 + (pos_weight - 1) target) softplus(-a), times weight; softplus(-a) computed
// as relu(-a) + log(1 + exp(-|a|)), which no large |a| overflows.
Value binary_cross_entropy_with_logits_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "input"), target = tensor_arg(args, 1, "target");
  require_floating(a, "binary_cross_entropy_with_logits");
  if (a->shape != target->shape)
    throw OpError("binary_cross_entropy_with_logits needs a target of the input's shape " + shape_text(a->shape) +
                  ", got " + shape_text(target->shape));
  std::string reduction = loss_reduction(args, kwargs, 5, 3, 4, "binary_cross_entropy_with_logits");
  T negated = neg(b, a);
  T tail = exp(b, neg(b, call1(b, "ltorch.abs", {V(a)})));
  T hinge = relu(b, negated);
  T log_term = log(b, add(b, Value::floating(1.0), V(tail)));
  T softplus_of_negated = add(b, V(hinge), V(log_term));
  T miss = sub(b, Value::floating(1.0), V(target));
  T miss_term = mul(b, V(miss), V(a));
  T scaled = softplus_of_negated;
  if (const Value* pos_weight = given(args, kwargs, 6, "pos_weight")) {
    if (!pos_weight->is_proxy()) throw OpError("pos_weight must be a tensor, got " + python_text(*pos_weight));
    T extra = mul(b, V(sub(b, *pos_weight, Value::floating(1.0))), V(target));
    scaled = mul(b, V(add(b, Value::floating(1.0), V(extra))), V(softplus_of_negated));
  }
  T losses = add(b, V(miss_term), V(scaled));
  return Value::of(reduced(b, weighted(b, losses, args, kwargs, 2, "weight"), reduction));
}

Value take_along_dim_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(call1(b, "prims.take_along_axis",
                         {Value::of(tensor_arg(args, 0, "a")), Value::of(tensor_arg(args, 1, "indices")),
                          Value::integer(int_arg(args, 2, "dim"))}));
}

}  // namespace

T linear(TraceBuilder& b, const T& x, const T& weight, const T& bias) {
  return call1(b, "ltorch.linear", {V(x), V(weight), V(bias)});
}
T matmul(TraceBuilder& b, const T& a, const T& c) { return call1(b, "ltorch.matmul", {V(a), V(c)}); }
T layer_norm(TraceBuilder& b, const T& a, const Dims& normalized_shape, const T& weight, const T& bias, double eps) {
  return call1(b, "ltorch.layer_norm", {V(a), Value::ints(normalized_shape), V(weight), V(bias), Value::floating(eps)});
}
std::tuple<T, T, T> native_layer_norm(TraceBuilder& b, const T& a, const Dims& normalized_shape, const T& weight,
                                      const T& bias, double eps) {
  Value out = b.call("ltorch.native_layer_norm",
                     {V(a), Value::ints(normalized_shape), V(weight), V(bias), Value::floating(eps)});
  return {out.items.at(0).proxy, out.items.at(1).proxy, out.items.at(2).proxy};
}
T softmax(TraceBuilder& b, const T& a, int64_t dim) { return call1(b, "ltorch.softmax", {V(a), Value::integer(dim)}); }
T log_softmax(TraceBuilder& b, const T& a, int64_t dim) {
  return call1(b, "ltorch.log_softmax", {V(a), Value::integer(dim)});
}
T cross_entropy(TraceBuilder& b, const T& logits, const T& target) {
  return call1(b, "ltorch.cross_entropy", {V(logits), V(target)});
}
T embedding(TraceBuilder& b, const T& indices, const T& weight) {
  return call1(b, "ltorch.embedding", {V(indices), V(weight)});
}
T embedding_backward(TraceBuilder& b, const T& grad, const T& indices, int64_t num_weights,
                     std::optional<int64_t> padding_idx) {
  std::vector<Value> args = {V(grad), V(indices), Value::integer(num_weights)};
  if (padding_idx) args.push_back(Value::integer(*padding_idx));
  return call1(b, "ltorch.embedding_backward", std::move(args));
}
std::tuple<T, T, T> layer_norm_backward(TraceBuilder& b, const T& grad, const T& a, const Dims& normalized_shape,
                                        const T& weight, const T& bias, double eps, const T& mean, const T& rstd) {
  std::vector<Value> args = {V(grad), V(a), Value::ints(normalized_shape), V(weight), V(bias), Value::floating(eps)};
  if (mean && rstd) args.insert(args.end(), {V(mean), V(rstd)});
  Value out = b.call("ltorch.layer_norm_backward", std::move(args));
  return {out.items.at(0).proxy, out.items.at(1).proxy, out.items.at(2).proxy};
}
T softmax_backward(TraceBuilder& b, const T& grad, const T& output, int64_t dim) {
  return call1(b, "ltorch.softmax_backward", {V(grad), V(output), Value::integer(dim)});
}
T cross_entropy_backward(TraceBuilder& b, const T& grad, const T& logits, const T& target,
                         std::optional<int64_t> ignore_index) {
  std::vector<Value> args = {V(grad), V(logits), V(target)};
  if (ignore_index) args.push_back(Value::integer(*ignore_index));
  return call1(b, "ltorch.cross_entropy_backward", std::move(args));
}
T dropout(TraceBuilder& b, const T& a, double p, int64_t seed, bool training) {
  return call1(b, "ltorch.dropout", {V(a), Value::floating(p), Value::integer(seed), Value::boolean(training)});
}
T scaled_dot_product_attention(TraceBuilder& b, const T& q, const T& k, const T& v, const T& attn_mask,
                               bool is_causal) {
  return call1(b, "ltorch.scaled_dot_product_attention", {V(q), V(k), V(v), V(attn_mask), Value::boolean(is_causal)});
}
std::tuple<T, T, T> scaled_dot_product_attention_backward(TraceBuilder& b, const T& grad, const T& q, const T& k,
                                                          const T& v, const T& attn_mask, const T& output,
                                                          bool is_causal, const T& logsumexp) {
  std::vector<Value> args = {V(grad), V(q), V(k), V(v), V(attn_mask), V(output), Value::boolean(is_causal)};
  if (logsumexp) args.push_back(V(logsumexp));
  Value out = b.call("ltorch.scaled_dot_product_attention_backward", std::move(args));
  return {out.items.at(0).proxy, out.items.at(1).proxy, out.items.at(2).proxy};
}
T take_along_dim(TraceBuilder& b, const T& a, const T& indices, int64_t dim) {
  return call1(b, "ltorch.take_along_dim", {V(a), V(indices), Value::integer(dim)});
}

bool writes_into_arguments(const BoundSymbol& s) {
  if (!s.symbol->has(Trait::effect)) return false;
  const std::string& name = s.name();
  bool batch = name == "ltorch.batch_norm" || name == "ltorch.native_batch_norm";
  if (!batch && name != "ltorch.instance_norm") return true;
  std::vector<Value> in = by_position(s.args, s.kwargs.vec(), {"input", "running_mean", "running_var", "weight", "bias",
                                                               "training", "momentum", "eps"});
  bool statistics = !in[1].is_none() || !in[2].is_none();
  // (training for a batch norm; use_input_stats, None meaning true, for an instance norm)
  bool from_batch = in[5].is_none() ? !batch : in[5].kind == Value::Kind::boolean ? in[5].b : true;
  return statistics && from_batch;
}

}  // namespace tv::ltorch

// ---- Gradient rules ----
// Gradient rules of the neural-network ops. linear follows Thunder's rule exactly (the fixtures'
// backward: reshape(g, (-1, N)), permute, reshape(x, (-1, K)), matmul; bias grad = sum over the
// batch dims). Gathers scatter their grad: embedding through ltorch.embedding_backward (a one-hot
// matmul when decomposed; LibTorch's scatter when executed), take_along_dim with scatter_add
// (prims.take's rule is with the indexing ops, ops/indexing.cpp). layer_norm (with weight and
// bias), softmax and cross_entropy record their backward ops (ltorch.*_backward: decomposed in the
// trace, one LibTorch kernel when executed); so does scaled_dot_product_attention without a float
// mask (one fused kernel each way on CUDA; with a float mask it is differentiated through its
// decomposition, which gives the mask its grad). The backward ops are differentiated through their decompositions.
// dropout's grad is dropout of g with the same seed (the same mask, nothing saved).

namespace tv {

namespace {

using ops::op;

using namespace tv::ltorch;
using ops::call1;
using grad::reduce_like;
using grad::sum_to;
using grad::tensor_at;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;

Value V(const ProxyPtr& p) { return p ? Value::of(p) : Value::none(); }
int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

Out linear_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T x = tensor_at(f, 0), w = tensor_at(f, 1), bias = tensor_at(f, 2), g = cts[0].proxy;
  int64_t n = g->shape.back(), k = x->shape.back();
  // One statement per line: C++ leaves the order of nested calls in arguments unspecified.
  T g2 = reshape(b, g, {-1, n});
  T gx = reshape(b, matmul(b, g2, w), x->shape);
  T gt = permute(b, reshape(b, g, {-1, n}), {1, 0});
  T gw = matmul(b, gt, reshape(b, x, {-1, k}));
  Out out = {reduce_like(b, gx, x), reduce_like(b, gw, w), Value::none()};
  if (bias) {
    Dims batch;
    for (int64_t d = 0; d + 1 < rank(g); ++d) batch.push_back(d);
    out[2] = reduce_like(b, batch.empty() ? g : sum(b, g, batch, false), bias);
  }
  return out;
}

// Batched matmul; 1-D operands are lifted to [1, K] / [K, 1] and their grads reduced back.
Out matmul_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), c = tensor_at(f, 1), g = cts[0].proxy;
  T a2 = rank(a) == 1 ? reshape(b, a, {1, a->shape[0]}) : a;
  T c2 = rank(c) == 1 ? reshape(b, c, {c->shape[0], 1}) : c;
  auto out2 = meta::matmul_shape(a2->shape, c2->shape);
  T g2 = g->shape == out2 ? g : reshape(b, g, out2);
  T ga = sum_to(b, matmul(b, g2, transpose(b, c2, -2, -1)), a2->shape, a->dtype);
  T gc = sum_to(b, matmul(b, transpose(b, a2, -2, -1), g2), c2->shape, c->dtype);
  if (rank(a) == 1) ga = reshape(b, ga, a->shape);
  if (rank(c) == 1) gc = reshape(b, gc, c->shape);
  return {Value::of(ga), Value::of(gc)};
}

Out layer_norm_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), w = tensor_at(f, 2), bias = tensor_at(f, 3), g = cts[0].proxy;
  if (w && bias) {
    auto [ga, gw, gb] = layer_norm_backward(b, g, a, f.args.at(1).as_ints(), w, bias, f.args.at(4).as_double());
    return {reduce_like(b, ga, a), Value::none(), reduce_like(b, gw, w), reduce_like(b, gb, bias), Value::none()};
  }
  auto [ga, xhat] = ops::layer_norm_input_grad(b, g, a, ops::normalized_dims(a, f.args.at(1).as_ints()), w, f.args.at(4));
  return {reduce_like(b, ga, a), Value::none(), w ? reduce_like(b, mul(b, V(g), V(xhat)), w) : Value::none(),
          reduce_like(b, g, bias), Value::none()};
}

// Replaces every use of `from` in `b` (arguments, outputs, subsymbols) by `to`.
void substitute(Value& v, const Proxy* from, const T& to) {
  if (v.is_proxy() && v.proxy.get() == from) v.proxy = to;
  for (auto& item : v.items) substitute(item, from, to);
  for (auto& [key, item] : v.entries) substitute(item, from, to);
}
void substitute(BoundSymbol& b, const Proxy* from, const T& to) {
  for (auto& a : b.args) substitute(a, from, to);
  for (auto& [name, a] : b.kwargs) substitute(a, from, to);
  for (auto& o : b.outputs)
    if (o.get() == from) o = to;
  if (b.subsymbols.empty()) return;
  for (auto& s : b.subsymbols.mutable_vec()) substitute(s, from, to);
}

// The statement `names` recorded last, taken out of its trace, with `f`'s output in place of the
// one it recorded (`out`): a statement with residues that defines what `f` defined.
BoundSymbol recorded_in_place_of(const BoundSymbol& f, TraceBuilder& names, const T& out) {
  BoundSymbol with = std::move(names.trace().body.back());
  names.trace().body.pop_back();
  substitute(with, out.get(), f.output());
  return with;
}

// Where the statement's decomposition is layer_norm_parts' (the engine's own traces), the statistics
// are already in it, a var_mean's mean and an rsqrt: the statement needs only its symbol and outputs
// changed, and no decomposition is recorded again.
std::optional<BoundSymbol> with_statistics_of_decomposition(const BoundSymbol& f) {
  T mean, rstd;
  for (const auto& s : f.subsymbols) {
    if (s.name() == "ltorch.var_mean" && s.outputs.size() == 2 && !mean) mean = s.outputs[1];
    if (s.name() == "ltorch.rsqrt" && s.outputs.size() == 1 && !rstd) rstd = s.outputs[0];
  }
  T a = tensor_at(f, 0);
  Dims stat_shape = a->shape;
  for (size_t d = a->shape.size() - f.args.at(1).as_ints().size(); d < stat_shape.size(); ++d) stat_shape[d] = 1;
  if (!mean || !rstd || mean->shape != stat_shape || rstd->shape != stat_shape) return std::nullopt;
  BoundSymbol with = f;
  with.symbol = &ops::op("ltorch.native_layer_norm");
  with.outputs = {f.output(), mean, rstd};
  return with;
}

// `t5 = ltorch.layer_norm(...)` as `(t5, t6, t7) = ltorch.native_layer_norm(...)`: the kernel's mean
// and rstd become saved values, where it keeps them in the input's dtype (f32, f64; in half
// precision the backward computes them in float) and weight and bias are given.
std::optional<BoundSymbol> layer_norm_with_residues(TraceBuilder& names, const BoundSymbol& f) {
  T a = tensor_at(f, 0), w = tensor_at(f, 2), bias = tensor_at(f, 3);
  if (!w || !bias || (a->dtype != DType::f32 && a->dtype != DType::f64)) return std::nullopt;
  if (auto with = with_statistics_of_decomposition(f)) return with;
  auto [out, mean, rstd] = native_layer_norm(names, a, f.args.at(1).as_ints(), w, bias, f.args.at(4).as_double());
  return recorded_in_place_of(f, names, out);
}

Out native_layer_norm_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  for (size_t k = 1; k < cts.size(); ++k)
    if (cts[k].is_proxy())
      throw std::runtime_error("autograd: a gradient through native_layer_norm's " + std::string(k == 1 ? "mean" : "rstd") +
                               " (" + f.outputs.at(k)->name + ") is not supported");
  T a = tensor_at(f, 0), w = tensor_at(f, 2), bias = tensor_at(f, 3);
  if (!w || !bias) return layer_norm_rule(b, f, cts);
  auto [ga, gw, gb] = layer_norm_backward(b, cts[0].proxy, a, f.args.at(1).as_ints(), w, bias, f.args.at(4).as_double(),
                                          f.outputs.at(1), f.outputs.at(2));
  return {reduce_like(b, ga, a), Value::none(), reduce_like(b, gw, w), reduce_like(b, gb, bias), Value::none()};
}

// batch_norm(a, running_mean, running_var, weight, bias, training, momentum, eps): one
// batch_norm_backward, given the forward kernel's batch statistics where it kept them.
Out batch_norm_grads(TraceBuilder& b, const BoundSymbol& f, Cts cts, const T& mean, const T& rstd) {
  Out out(f.args.size());
  if (!cts[0].is_proxy()) return out;
  T a = tensor_at(f, 0), w = tensor_at(f, 3), bias = tensor_at(f, 4);
  // In training the gradient reads the batch's statistics, not the running ones: they are not saved
  // (a later forward's update of them would fail this backward's check, as eager's does not).
  bool training = f.args.at(5).kind == Value::Kind::boolean && f.args.at(5).b;
  std::vector<Value> args = {cts[0], V(a), training ? Value::none() : f.args.at(1),
                             training ? Value::none() : f.args.at(2), f.args.at(3), f.args.at(5), f.args.at(7)};
  if (mean && rstd) args.insert(args.end(), {V(mean), V(rstd)});
  Value grads = b.call("ltorch.batch_norm_backward", std::move(args));
  out[0] = reduce_like(b, grads.items.at(0).proxy, a);
  if (w) out[3] = reduce_like(b, grads.items.at(1).proxy, w);
  if (w && bias) out[4] = reduce_like(b, grads.items.at(2).proxy, bias);
  if (bias && !w)  // a bias alone: the backward gives no per-channel sums
    out[4] = reduce_like(b, sum(b, cts[0].proxy, all_but_channels(rank(a)), false), bias);
  return out;
}

Out batch_norm_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  if (f.args.size() < 8) throw std::runtime_error("autograd: batch_norm needs its 8 arguments written out by position");
  return batch_norm_grads(b, f, cts, nullptr, nullptr);
}

// `t5 = ltorch.batch_norm(..., True, ...)` as `(t5, t6, t7) = ltorch.native_batch_norm(...)`: the
// kernel's batch mean and rstd become saved values, as eager's batch norm keeps them.
std::optional<BoundSymbol> batch_norm_with_residues(TraceBuilder& names, const BoundSymbol& f) {
  if (f.args.size() < 8 || f.args[5].kind != Value::Kind::boolean || !f.args[5].b) return std::nullopt;
  DType dtype = tensor_at(f, 0)->dtype;  // the kernel keeps them in float for half precision
  if (dtype != DType::f32 && dtype != DType::f64) return std::nullopt;
  Value out = names.call("ltorch.native_batch_norm", f.args);
  return recorded_in_place_of(f, names, out.items.at(0).proxy);
}

Out native_batch_norm_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  for (size_t k = 1; k < cts.size(); ++k)
    if (cts[k].is_proxy())
      throw std::runtime_error("autograd: a gradient through native_batch_norm's " + std::string(k == 1 ? "mean" : "rstd") +
                               " (" + f.outputs.at(k)->name + ") is not supported");
  return batch_norm_grads(b, f, cts, f.outputs.at(1), f.outputs.at(2));
}

Out softmax_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), out = f.output(), g = cts[0].proxy;
  int64_t dim = meta::normalize_dim(f.args.at(1).i, rank(a));
  return {reduce_like(b, softmax_backward(b, g, out, dim), a), Value::none()};
}

Out log_softmax_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), out = f.output(), g = cts[0].proxy;
  int64_t dim = meta::normalize_dim(f.args.at(1).i, rank(a));
  T total = sum(b, g, {dim}, true);
  return {reduce_like(b, sub(b, V(g), V(mul(b, V(exp(b, out)), V(total)))), a), Value::none()};
}

bool sdpa_rule_applies(const BoundSymbol& f) {
  T mask = tensor_at(f, 3);
  return !mask || mask->dtype == DType::b8;
}

Out sdpa_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T q = tensor_at(f, 0), k = tensor_at(f, 1), v = tensor_at(f, 2), mask = tensor_at(f, 3), g = cts[0].proxy;
  bool causal = grad::flag(f, 4, "is_causal", false);
  T lse = f.outputs.size() > 1 ? f.outputs[1] : nullptr;  // the forward's, with its residue
  if (cts.size() > 1 && cts[1].is_proxy())
    throw std::runtime_error("autograd: a gradient through scaled_dot_product_attention_forward's log-sum-exp (" +
                             lse->name + ") is not supported");
  auto [gq, gk, gv] = scaled_dot_product_attention_backward(b, g, q, k, v, mask, f.output(), causal, lse);
  return {reduce_like(b, gq, q), reduce_like(b, gk, k), reduce_like(b, gv, v), Value::none(), Value::none()};
}

// `t = ltorch.scaled_dot_product_attention(q, k, v, None, causal)` on CUDA as
// `(t, t_lse) = ltorch.scaled_dot_product_attention_forward(...)`, where the fused kernel may run (4-d
// q, k, v of one floating dtype, no mask, head dims a multiple of 8): the kernel's log-sum-exp
// becomes a saved value instead of being computed again by the backward.
std::optional<BoundSymbol> sdpa_with_residues(TraceBuilder& names, const BoundSymbol& f) {
  T q = tensor_at(f, 0), k = tensor_at(f, 1), v = tensor_at(f, 2), mask = tensor_at(f, 3);
  if (mask || !fused_attention_on(q->device) || rank(q) != 4 || rank(k) != 4 || rank(v) != 4) return std::nullopt;
  if (k->dtype != q->dtype || v->dtype != q->dtype || q->shape.back() % 8 != 0 || v->shape.back() % 8 != 0)
    return std::nullopt;
  Value out = names.call("ltorch.scaled_dot_product_attention_forward",
                         {V(q), V(k), V(v), Value::none(), Value::boolean(grad::flag(f, 4, "is_causal", false))});
  return recorded_in_place_of(f, names, out.items.at(0).proxy);
}

// An argument at position i or by keyword; None when absent.
Value given(const BoundSymbol& f, size_t i, const char* name) {
  if (i < f.args.size()) return f.args[i];
  for (const auto& [k, v] : f.kwargs)
    if (k == name) return v;
  return Value::none();
}

// An int argument at position i or by keyword; nullopt when absent or None.
std::optional<int64_t> given_int(const BoundSymbol& f, size_t i, const char* name) {
  Value v = given(f, i, name);
  return v.is_none() ? std::nullopt : std::optional<int64_t>(v.i);
}

// cross_entropy_backward is the plain case's: [N, C] logits, class indices, the mean, no class weight,
// no label smoothing. Any other loss is differentiated through its decomposition.
bool cross_entropy_rule_applies(const BoundSymbol& f) {
  Value smoothing = given(f, 7, "label_smoothing"), weight = given(f, 2, "weight"), reduction = given(f, 6, "reduction");
  return (smoothing.is_none() || smoothing.as_double() == 0.0) && weight.is_none() &&
         (reduction.is_none() || reduction.s == "mean") && f.args.at(0).is_proxy() && f.args[0].proxy->shape.size() == 2 &&
         f.args.at(1).is_proxy() && !is_floating(f.args[1].proxy->dtype);
}

Out cross_entropy_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T logits = tensor_at(f, 0), target = tensor_at(f, 1), g = cts[0].proxy;
  Out out(f.args.size());
  out[0] = reduce_like(b, cross_entropy_backward(b, g, logits, target, given_int(f, 4, "ignore_index")), logits);
  return out;
}

// binary_cross_entropy(a, target, weight, size_average, reduce, reduction), torch's rules: a's grad is
// g (a - t) / max((1 - a) a, 1e-12), finite where a is exactly 0 or 1 (the decomposition's clamped
// logs give 0 * inf there); the target's is g * -logit(a). Each times the weight, / numel for the mean.
Out binary_cross_entropy_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), target = tensor_at(f, 1), g = cts[0].proxy;
  Value weight = given(f, 2, "weight"), reduction = given(f, 5, "reduction");
  auto weighted_and_reduced = [&](T grad, const T& like) {
    if (weight.is_proxy()) grad = mul(b, V(grad), weight);
    if (reduction.is_none() || reduction.s == "mean") grad = true_divide(b, V(grad), Value::integer(a->numel()));
    return reduce_like(b, grad, like);
  };
  Out out(f.args.size());
  T one_minus_a = sub(b, Value::floating(1.0), V(a));
  T denominator = maximum(b, V(mul(b, V(one_minus_a), V(a))), Value::floating(1e-12));
  out[0] = weighted_and_reduced(true_divide(b, V(mul(b, V(g), V(sub(b, V(a), V(target))))), V(denominator)), a);
  if (target->requires_grad) {
    T logit = log(b, true_divide(b, V(a), V(one_minus_a)));
    out[1] = weighted_and_reduced(mul(b, V(neg(b, logit)), V(g)), target);
  }
  return out;
}

// grad of weight[indices] (gathered along dim 0): embedding_backward (one_hot(indices)^T @ g), with
// nothing into the padding row.
T scatter_rows(TraceBuilder& b, const T& weight, const T& indices, const T& g, std::optional<int64_t> padding_idx) {
  int64_t n = indices->numel(), rows = weight->shape[0];
  T flat = reshape(b, indices, {n});
  T rest = reshape(b, g, {n, weight->numel() / std::max<int64_t>(rows, 1)});
  T gw = embedding_backward(b, rest, flat, rows, padding_idx);
  return sum_to(b, gw, weight->shape, weight->dtype);
}

Out embedding_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Out out(f.args.size());
  out[1] = V(scatter_rows(b, tensor_at(f, 1), tensor_at(f, 0), cts[0].proxy, given_int(f, 2, "padding_idx")));
  return out;
}

// embedding_backward(g, indices, rows[, padding_idx]) is linear in g: its transpose gathers the
// cotangent's rows (zero where the index is the padding row).
Out embedding_backward_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T indices = tensor_at(f, 1), gathered = embedding(b, indices, cts[0].proxy);
  if (Value padding = given(f, 3, "padding_idx"); !padding.is_none() && padding.i >= 0) {
    T kept = convert_element_type(b, ne(b, V(indices), padding), gathered->dtype);
    gathered = mul(b, V(gathered), V(unsqueeze(b, kept, 1)));
  }
  Out out(f.args.size());
  out[0] = V(gathered);
  return out;
}

// out = take_along_dim(a, idx, d): g added into zeros at the indices.
Out take_along_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), idx = tensor_at(f, 1), g = cts[0].proxy;
  int64_t d = meta::normalize_dim(f.args.at(2).i, rank(a));
  T ga = scatter_add(b, zeros(b, a->shape, a->dtype, a->device), d, idx, g);
  return {reduce_like(b, ga, a), Value::none(), Value::none()};
}

Out dropout_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  std::vector<Value> args = f.args;  // the same p, seed, training and offset: the same mask
  args[0] = V(cts[0].proxy);
  T ga = call1(b, "ltorch.dropout", std::move(args));
  Out out(f.args.size());
  out[0] = reduce_like(b, ga, tensor_at(f, 0));
  return out;
}

void register_nn_gradients() {
  for (const char* n : {"ltorch.linear", "prims.linear"}) register_grad_rule(op(n), linear_rule);
  for (const char* n : {"ltorch.matmul", "prims.matmul"}) register_grad_rule(op(n), matmul_rule);
  register_grad_rule(op("ltorch.layer_norm"), layer_norm_rule);
  register_residues(op("ltorch.layer_norm"), layer_norm_with_residues);
  register_grad_rule(op("ltorch.native_layer_norm"), native_layer_norm_rule);
  register_grad_rule(op("ltorch.batch_norm"), batch_norm_rule);
  register_residues(op("ltorch.batch_norm"), batch_norm_with_residues);
  register_grad_rule(op("ltorch.native_batch_norm"), native_batch_norm_rule);
  register_grad_rule(op("ltorch.softmax"), softmax_rule);
  register_grad_rule(op("ltorch.log_softmax"), log_softmax_rule);
  register_grad_rule(op("ltorch.cross_entropy"), cross_entropy_rule, cross_entropy_rule_applies);
  register_grad_rule(op("ltorch.binary_cross_entropy"), binary_cross_entropy_rule);
  register_grad_rule(op("ltorch.embedding"), embedding_rule);
  register_grad_rule(op("ltorch.embedding_backward"), embedding_backward_rule);
  for (const char* n : {"ltorch.take_along_dim", "prims.take_along_axis"}) register_grad_rule(op(n), take_along_rule);
  register_grad_rule(op("ltorch.dropout"), dropout_rule);
  register_not_differentiable(op("prims.copy_"));  // batch_norm's write of its running statistics
  register_grad_rule(op("ltorch.scaled_dot_product_attention"), sdpa_rule, sdpa_rule_applies);
  register_residues(op("ltorch.scaled_dot_product_attention"), sdpa_with_residues);
  register_grad_rule(op("ltorch.scaled_dot_product_attention_forward"), sdpa_rule);
  for (const char* n : {"ltorch.layer_norm_backward", "ltorch.softmax_backward", "ltorch.cross_entropy_backward",
                        "ltorch.scaled_dot_product_attention_backward", "ltorch.batch_norm_backward", "ltorch.mse_loss",
                        "ltorch.nll_loss", "ltorch.group_norm", "ltorch.instance_norm", "ltorch.smooth_l1_loss",
                        "ltorch.binary_cross_entropy_with_logits"})
    register_grad_through_decomposition(op(n));
}

}  // namespace

}  // namespace tv

// ---- Execution rules: direct at:: calls (faster and closer to eager than the decompositions) ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;
using ops::same_exec_rule;
using ops::residual_rule;
using ops::same_residual_rule;

// On CUDA a small float layer norm is one kernel of ours (runtime/small_kernels.h), else ATen's.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(Args a) {
  const at::Tensor& x = tensor_at(a, 0, "a");
  const std::vector<int64_t> normalized = ints_at(a, 1, "normalized_shape");
  at::Tensor weight = optional_tensor_at(a, 2), bias = optional_tensor_at(a, 3);
  const double eps = a.size() > 4 ? number_at(a, 4, "eps") : 1e-5;
  if (auto [y, mean, rstd] = small_layer_norm(x, normalized, weight, bias, eps); y.defined()) return {y, mean, rstd};
  return at::native_layer_norm(x, normalized, weight, bias, eps);
}

// -- attention --
// Rules for scaled_dot_product_attention and its backward (ltorch.scaled_dot_product_attention_backward,
// recorded by its gradient rule). On CUDA, attention of up to 64 positions without a mask runs the
// engine's own kernel each way (runtime/small_kernels.h), whose host cost is a few microseconds.
// Otherwise, on CUDA with LibTorch 2.1 or later, 4-d q, k and v of one dtype
// (f32, f16, bf16), no mask, head dims a multiple of 8 and the last dim dense run LibTorch's
// memory-efficient attention kernels: one call each way (one kernel forward, four backward), where
// the matmuls, scale, mask, softmax, their backward and the operands' copies took about fifteen
// kernels. PyTorch documents that backward as not deterministic: two runs can differ in the last
// bits. On the CPU with LibTorch 2.3 or later, the same inputs in f32 or bf16 run LibTorch's CPU
// flash attention, as eager torch does there (blocks of keys with a running softmax; no L x S
// scores in memory). scaled_dot_product_attention_forward also returns the kernel's log-sum-exp (on
// CUDA its first L entries per query row: the kernel pads its rows to an alignment), which the
// backward takes when the trace passes it (a saved value), else the backward runs the forward
// kernel again for it.
// Anything else runs softmax(q k^T / sqrt(E), masked) v as single at:: calls, the backward with the
// probabilities recomputed, the forward's log-sum-exp from the scores.

bool causal_at(Args a, size_t i, Kw k) { return flag_at(a, i, k, "is_causal"); }

at::Tensor mask_at(Args a, size_t i, Kw k) {
  const RValue* v = argument(a, i, k, "attn_mask");
  return v && v->is_tensor() ? v->t : at::Tensor();
}

// q k^T / sqrt(E) with causal keeping j <= i, a bool mask keeping where true, a float mask added.
at::Tensor attention_scores(TT q, TT k, TT mask, bool causal) {
  at::Tensor scores = rules::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  double minus_inf = -std::numeric_limits<double>::infinity();
  if (causal) {
    at::Tensor keep = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), minus_inf);
  }
  if (mask.defined())
    scores = mask.scalar_type() == at::kBool ? scores.masked_fill(mask.logical_not(), minus_inf) : scores + mask;
  return scores;
}

at::Tensor attention_probabilities(TT q, TT k, TT mask, bool causal) {
  return at::softmax(attention_scores(q, k, mask, causal), -1);
}

#if TV_FUSED_ATTENTION
bool fused_kernel_applies(TT q, TT k, TT v, TT mask, bool causal) {
  if (!(q.is_cuda() || (TV_FUSED_ATTENTION_CPU && q.is_cpu())) || mask.defined() || q.dim() != 4 || k.dim() != 4 ||
      v.dim() != 4 || k.device() != q.device() || v.device() != q.device())
    return false;
  at::ScalarType st = q.scalar_type();
  if ((st != at::kFloat && st != at::kBFloat16 && (st != at::kHalf || q.is_cpu())) || k.scalar_type() != st ||
      v.scalar_type() != st)
    return false;
  for (int64_t d : {0, 1})
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) return false;
  if (k.size(2) != v.size(2) || k.size(3) != q.size(3) || (causal && q.size(2) != k.size(2))) return false;
  if (q.size(3) % 8 != 0 || v.size(3) % 8 != 0) return false;
  return q.stride(-1) == 1 && k.stride(-1) == 1 && v.stride(-1) == 1;
}

// (out, log-sum-exp [..., L] in float) from the fused kernel; on CUDA its log-sum-exp is a view of
// the first L entries of the kernel's padded rows.
std::pair<at::Tensor, at::Tensor> fused_forward(TT q, TT k, TT v, bool causal) {
#if TV_FUSED_ATTENTION_CPU
  if (q.is_cpu()) {
    auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, /*dropout_p=*/0.0, causal);
    return {out, lse};
  }
#endif
  auto [out, lse, seed, offset] = at::_scaled_dot_product_efficient_attention(
      q, k, v, {}, /*compute_log_sumexp=*/true, /*dropout_p=*/0.0, causal);
  return {out, lse.narrow(2, 0, q.size(2))};
}

// The log-sum-exp as the kernel gave it, from fused_forward's view: its padded rows, which the view
// still has in its strides. Undefined for one the kernel may not read: unpadded rows of a length
// off the kernel's alignment (32), as the unfused forward computes them.
at::Tensor kernel_log_sumexp(const at::Tensor& lse) {
  if (lse.defined() && lse.is_cpu() && lse.dim() == 3 && lse.scalar_type() == at::kFloat)
    return lse;  // the CPU kernel reads it through its strides, as it gave it or contiguous
  if (!lse.defined() || lse.dim() != 3 || lse.stride(2) != 1 || lse.scalar_type() != at::kFloat) return {};
  if (lse.stride(1) > lse.size(2))
    return lse.as_strided({lse.size(0), lse.size(1), lse.stride(1)}, lse.strides(), lse.storage_offset());
  return lse.is_contiguous() && lse.size(2) % 32 == 0 ? lse : at::Tensor();
}
#endif

// Attention and its log-sum-exp; `with_log_sumexp` false leaves the second undefined.
std::pair<at::Tensor, at::Tensor> attention_forward(Args a, Kw kw, bool with_log_sumexp) {
  TT q = tensor_at(a, 0, "query"), k = tensor_at(a, 1, "key"), v = tensor_at(a, 2, "value");
  at::Tensor mask = mask_at(a, 3, kw);
  bool causal = causal_at(a, 4, kw);
  if (!mask.defined())
    if (auto [out, lse] = small_attention(q, k, v, causal); out.defined()) return {out, with_log_sumexp ? lse : at::Tensor()};
#if TV_FUSED_ATTENTION
  if (fused_kernel_applies(q, k, v, mask, causal)) {
    if (with_log_sumexp || q.is_cpu()) {
      auto [out, lse] = fused_forward(q, k, v, causal);
      return {out, with_log_sumexp ? lse : at::Tensor()};
    }
    return {std::get<0>(at::_scaled_dot_product_efficient_attention(q, k, v, {}, false, 0.0, causal)), {}};
  }
#endif
  at::Tensor scores = attention_scores(q, k, mask, causal);
  at::Tensor out = rules::matmul(at::softmax(scores, -1), v);
  return {out, with_log_sumexp ? at::logsumexp(scores.to(at::kFloat), -1) : at::Tensor()};
}

RValue attention(Args a, Kw kw) { return RValue::of(attention_forward(a, kw, false).first); }

RValue attention_with_log_sumexp(Args a, Kw kw) {
  auto [out, lse] = attention_forward(a, kw, true);
  return RValue::tuple({RValue::of(out), RValue::of(lse)});
}

RValue attention_backward(Args a, Kw kw) {
  at::Tensor g = tensor_at(a, 0, "grad");
  TT q = tensor_at(a, 1, "query"), k = tensor_at(a, 2, "key"), v = tensor_at(a, 3, "value");
  at::Tensor mask = mask_at(a, 4, kw);
  bool causal = causal_at(a, 6, kw);
  if (!mask.defined()) {
    at::Tensor lse = optional_tensor_at(a, 7);
    if (lse.defined() && lse.scalar_type() != at::kFloat) lse = at::Tensor();  // (the kernel gives it anew)
    if (auto [gq, gk, gv] = small_attention_backward(g, q, k, v, tensor_at(a, 5, "output"), lse, causal); gq.defined())
      return RValue::tuple({RValue::of(gq), RValue::of(gk), RValue::of(gv)});
  }
#if TV_FUSED_ATTENTION
  if (fused_kernel_applies(q, k, v, mask, causal)) {
    at::Tensor out = tensor_at(a, 5, "output"), lse = kernel_log_sumexp(optional_tensor_at(a, 7));
    if (!lse.defined()) {  // no saved log-sum-exp: the forward kernel again
      std::tie(out, lse) = fused_forward(q, k, v, causal);
      lse = kernel_log_sumexp(lse);
    }
    if (g.stride(-1) != 1) g = g.contiguous();
#if TV_FUSED_ATTENTION_CPU
    if (q.is_cpu()) {
      auto [gq, gk, gv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, out, lse, 0.0, causal);
      return RValue::tuple({RValue::of(gq), RValue::of(gk), RValue::of(gv)});
    }
#endif
    // The random state the kernel reads only with dropout; one for the process, since nothing writes it.
    static const at::Tensor no_dropout = at::empty({}, at::kLong);
    auto [gq, gk, gv, unused] = at::_scaled_dot_product_efficient_attention_backward(
        g, q, k, v, at::Tensor(), out, lse, no_dropout, no_dropout, /*dropout_p=*/0.0,
        std::array<bool, 4>{true, true, true, false}, causal);
    return RValue::tuple({RValue::of(gq), RValue::of(gk), RValue::of(gv)});
  }
#endif
  at::Tensor p = attention_probabilities(q, k, mask, causal);
  at::Tensor gv = rules::matmul(p.transpose(-2, -1), g);
  at::Tensor gp = rules::matmul(g, v.transpose(-2, -1));
  double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor gs = at::_softmax_backward_data(gp, p, -1, p.scalar_type()).mul_(scale);
  at::Tensor gq = rules::matmul(gs, k), gk = rules::matmul(gs.transpose(-2, -1), q);
  return RValue::tuple({RValue::of(gq), RValue::of(gk), RValue::of(gv)});
}

// A tensor argument by keyword or at position i; nullopt when absent or None.
c10::optional<at::Tensor> maybe_tensor(Args a, size_t i, Kw k, const char* keyword) {
  const RValue* v = argument(a, i, k, keyword);
  return v && !v->is_none() ? c10::optional<at::Tensor>(v->tensor()) : c10::nullopt;
}

// A number argument by keyword or at position i; `fallback` when absent or None.
double number_or(Args a, size_t i, Kw k, const char* keyword, double fallback) {
  const RValue* v = argument(a, i, k, keyword);
  return v && !v->is_none() ? v->number() : fallback;
}

// group_norm, instance_norm (which writes the running statistics, as the decomposition's copy_ does)
// and the binary losses: one LibTorch call each, the arguments in torch.nn.functional's layout.
void register_norm_and_loss_execution() {
  exec_rule("ltorch.group_norm", [](Args a, Kw k) {
    return RValue::of(at::group_norm(tensor_at(a, 0, "a"), int_at(a, 1, "num_groups"), maybe_tensor(a, 2, k, "weight"),
                                     maybe_tensor(a, 3, k, "bias"), number_or(a, 4, k, "eps", 1e-5), /*cudnn_enabled=*/true));
  });
  exec_rule("ltorch.instance_norm", [](Args a, Kw k) {
    return RValue::of(at::instance_norm(tensor_at(a, 0, "a"), maybe_tensor(a, 3, k, "weight"), maybe_tensor(a, 4, k, "bias"),
                                        maybe_tensor(a, 1, k, "running_mean"), maybe_tensor(a, 2, k, "running_var"),
                                        flag_at(a, 5, k, "use_input_stats", true), number_or(a, 6, k, "momentum", 0.1),
                                        number_or(a, 7, k, "eps", 1e-5), /*cudnn_enabled=*/true));
  });
  exec_rule("ltorch.binary_cross_entropy", [](Args a, Kw k) {
    return RValue::of(at::binary_cross_entropy(tensor_at(a, 0, "input"), tensor_at(a, 1, "target"),
                                               maybe_tensor(a, 2, k, "weight"),
                                               reduction_at(a, 5, k, "ltorch.binary_cross_entropy")));
  });
  exec_rule("ltorch.binary_cross_entropy_with_logits", [](Args a, Kw k) {
    return RValue::of(at::binary_cross_entropy_with_logits(
        tensor_at(a, 0, "input"), tensor_at(a, 1, "target"), maybe_tensor(a, 2, k, "weight"),
        maybe_tensor(a, 6, k, "pos_weight"), reduction_at(a, 5, k, "ltorch.binary_cross_entropy_with_logits")));
  });
}

void register_nn_execution() {
  register_norm_and_loss_execution();
  // at::batch_norm writes the running statistics in training, as the decomposition's copy_ does.
  exec_rule("ltorch.batch_norm", [](Args a, Kw k) {
    auto tensor = [&](size_t i, const char* name) {
      const RValue* v = argument(a, i, k, name);
      return v && !v->is_none() ? c10::optional<at::Tensor>(v->tensor()) : c10::nullopt;
    };
    const RValue *momentum = argument(a, 6, k, "momentum"), *eps = argument(a, 7, k, "eps");
    return RValue::of(at::batch_norm(tensor_at(a, 0, "input"), tensor(3, "weight"), tensor(4, "bias"),
                                     tensor(1, "running_mean"), tensor(2, "running_var"),
                                     flag_at(a, 5, k, "training"),
                                     momentum && !momentum->is_none() ? momentum->number() : 0.1,
                                     eps && !eps->is_none() ? eps->number() : 1e-5, /*cudnn_enabled=*/true));
  });
  exec_rule("ltorch.native_batch_norm", [](Args a, Kw) {
    auto [out, mean, invstd] = at::native_batch_norm(tensor_at(a, 0, "input"), optional_tensor_at(a, 3), optional_tensor_at(a, 4),
                                                     optional_tensor_at(a, 1), optional_tensor_at(a, 2), flag_at(a, 5, {}, "training"),
                                                     number_at(a, 6, "momentum"), number_at(a, 7, "eps"));
    return RValue::tuple({RValue::of(out), RValue::of(mean), RValue::of(invstd)});
  });
  // (g, a, running_mean, running_var, weight, training, eps[, mean, rstd]): LibTorch's backward kernel,
  // on the forward's batch statistics (recomputed when not given).
  exec_rule("ltorch.batch_norm_backward", [](Args a, Kw) {
    const at::Tensor &g = tensor_at(a, 0, "grad"), &x = tensor_at(a, 1, "input");
    at::Tensor weight = optional_tensor_at(a, 4);
    bool training = flag_at(a, 5, {}, "training");
    double eps = number_at(a, 6, "eps");
    at::Tensor mean = optional_tensor_at(a, 7), invstd = optional_tensor_at(a, 8);
    if (training && (!mean.defined() || !invstd.defined())) {
      // the forward kernel's statistics, in the dtype its backward takes on this device and LibTorch
      // (float for a half input on CUDA, the input's own on the CPU of LibTorch 1.13)
      auto stats = at::native_batch_norm(x, weight, at::Tensor(), at::Tensor(), at::Tensor(), /*training=*/true, 0.0, eps);
      mean = std::get<1>(stats);
      invstd = std::get<2>(stats);
    }
    auto [ga, gw, gb] = at::native_batch_norm_backward(g, x, weight, optional_tensor_at(a, 2), optional_tensor_at(a, 3), mean,
                                                       invstd, training, eps, {true, weight.defined(), weight.defined()});
    if (!weight.defined()) return RValue::tuple({RValue::of(ga)});
    return RValue::tuple({RValue::of(ga), RValue::of(gw), RValue::of(gb)});
  });
  exec_rule("ltorch.mse_loss", [](Args a, Kw k) {
    return RValue::of(at::mse_loss(tensor_at(a, 0, "input"), tensor_at(a, 1, "target"), reduction_at(a, 4, k, "ltorch.mse_loss")));
  });
  exec_rule("ltorch.nll_loss", [](Args a, Kw k) {
    const RValue* ignore = argument(a, 4, k, "ignore_index");
    return RValue::of(at::nll_loss_nd(tensor_at(a, 0, "input"), tensor_at(a, 1, "target"), maybe_tensor(a, 2, k, "weight"),
                                      reduction_at(a, 6, k, "ltorch.nll_loss"),
                                      ignore && !ignore->is_none() ? ignore->integer_value() : -100));
  });
  same_exec_rule("ltorch.linear", "prims.linear");
  same_residual_rule("ltorch.linear", "prims.linear");
  same_exec_rule("ltorch.matmul", "prims.matmul");

  exec_rule("ltorch.layer_norm", [](Args a, Kw) { return RValue::of(std::get<0>(native_layer_norm(a))); });
  exec_rule("ltorch.native_layer_norm", [](Args a, Kw) {
    auto [out, mean, rstd] = native_layer_norm(a);
    return RValue::tuple({RValue::of(out), RValue::of(mean), RValue::of(rstd)});
  });
  exec_rule("ltorch.softmax", [](Args a, Kw) { return RValue::of(at::softmax(tensor_at(a, 0, "a"), int_at(a, 1, "dim"))); });
  exec_rule("ltorch.log_softmax", [](Args a, Kw) {
    return RValue::of(at::log_softmax(tensor_at(a, 0, "a"), int_at(a, 1, "dim")));
  });
  // Thunder's layout (a, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing),
  // each by position or keyword, as its printouts pass them; absent ones take torch's defaults.
  exec_rule("ltorch.cross_entropy", [](Args a, Kw k) {
    const RValue* weight = argument(a, 2, k, "weight");
    const RValue* ignore = argument(a, 4, k, "ignore_index");
    const RValue* smoothing = argument(a, 7, k, "label_smoothing");
    for (const char* legacy : {"size_average", "reduce"})
      if (const RValue* v = argument(a, std::string_view(legacy) == "reduce" ? 5 : 3, k, legacy); v && !v->is_none())
        throw ExecError(std::string("ltorch.cross_entropy: the legacy argument ") + legacy + " is not supported; pass reduction",
                        "ltorch.cross_entropy");
    int64_t code = reduction_at(a, 6, k, "ltorch.cross_entropy");
    return RValue::of(at::cross_entropy_loss(
        tensor_at(a, 0, "logits"), tensor_at(a, 1, "target"),
        weight && !weight->is_none() ? c10::optional<at::Tensor>(weight->tensor()) : c10::nullopt, code,
        ignore && !ignore->is_none() ? ignore->integer_value() : -100,
        smoothing && !smoothing->is_none() ? smoothing->number() : 0.0));
  });
  // The backward ops: LibTorch's fused kernels instead of their decompositions.
  exec_rule("ltorch.softmax_backward", [](Args a, Kw) {
    const at::Tensor& out = tensor_at(a, 1, "output");
    return RValue::of(at::_softmax_backward_data(tensor_at(a, 0, "grad"), out, int_at(a, 2, "dim"), out.scalar_type()));
  });
  // softmax - one_hot(target), times g / N; with ignore_index (argument 3) N counts the kept rows and
  // an ignored row is its softmax times 0 (NaN where the softmax is, as eager's).
  exec_rule("ltorch.cross_entropy_backward", [](Args a, Kw) {
    const at::Tensor &g = tensor_at(a, 0, "grad"), &target = tensor_at(a, 2, "target");
    at::Tensor p = at::softmax(tensor_at(a, 1, "logits"), 1);
    // In place where nothing records; a run that records autograd (a create_graph backward) keeps
    // the softmax its own backward saved.
    const bool in_place = !at::GradMode::is_enabled();
    auto minus_one_at = [&](const at::Tensor& index) {
      at::Tensor ones = at::full({target.size(0), 1}, -1.0, p.options());
      p = in_place ? p.scatter_add_(1, index.unsqueeze(1), ones) : p.scatter_add(1, index.unsqueeze(1), ones);
    };
    auto times = [&](const at::Tensor& scale) { return in_place ? p.mul_(scale) : p.mul(scale); };
    if (a.size() < 4 || a[3].is_none()) {
      minus_one_at(target);
      return RValue::of(times(g.div(static_cast<double>(target.size(0)))));
    }
    at::Tensor kept = target.ne(int_at(a, 3, "ignore_index"));
    at::Tensor safe = at::where(kept, target, at::zeros_like(target));
    at::Tensor ignored_rows = p.mul(0);
    minus_one_at(safe);
    return RValue::of(at::where(kept.unsqueeze(1), times(g.div(kept.sum())), ignored_rows));
  });
  exec_rule("ltorch.layer_norm_backward", [](Args a, Kw) {
    at::Tensor g = tensor_at(a, 0, "grad"), x = tensor_at(a, 1, "a");
    at::Tensor w = tensor_at(a, 3, "weight"), bias = tensor_at(a, 4, "bias");
    auto normalized = ints_at(a, 2, "normalized_shape");
    double eps = number_at(a, 5, "eps");
    // The decomposition's result dtypes (with autocast the input can be bf16 and the weight f32).
    // (c10::promoteTypes and `as`, not at::promote_types and Tensor::to: each of those is a
    // dispatcher call, thirteen a layer in a host-bound step where the dtypes already agree)
    at::ScalarType ga_type = c10::promoteTypes(c10::promoteTypes(g.scalar_type(), x.scalar_type()), w.scalar_type());
    at::ScalarType gw_type = c10::promoteTypes(g.scalar_type(), x.scalar_type()), gb_type = g.scalar_type();
    // One compute dtype; float for half and bfloat16 (the kernel takes the statistics in float).
    at::ScalarType compute = c10::promoteTypes(ga_type, bias.scalar_type());
    if (compute == at::kHalf || compute == at::kBFloat16) compute = at::kFloat;
    auto as = [](const at::Tensor& t, at::ScalarType type) { return t.scalar_type() == type ? t : t.to(type); };
    // The forward's statistics when the trace passes them (native_layer_norm's); else computed as
    // the forward kernel computes them (one launch, where var_mean, add and rsqrt took three).
    at::Tensor mean = optional_tensor_at(a, 6), rstd = optional_tensor_at(a, 7);
    g = as(g, compute), x = as(x, compute), w = as(w, compute), bias = as(bias, compute);
    x = x.contiguous(), g = g.contiguous();
    if (mean.defined() && rstd.defined())
      mean = as(mean, compute), rstd = as(rstd, compute);
    else if (auto small = small_layer_norm(x, normalized, {}, {}, eps); small[0].defined())
      mean = small[1], rstd = small[2];
    else
      std::tie(std::ignore, mean, rstd) = at::native_layer_norm(x, normalized, {}, {}, eps);
    auto [ga, gw, gb] = small_layer_norm_backward(g, x, normalized, mean, rstd, w);
    if (!ga.defined())
      std::tie(ga, gw, gb) = at::native_layer_norm_backward(g, x, normalized, mean, rstd, w, bias, {true, true, true});
    return RValue::tuple({RValue::of(as(ga, ga_type)), RValue::of(as(gw, gw_type)), RValue::of(as(gb, gb_type))});
  });
  // grad_x + residual from the small kernel's one launch (a skip connection's gradient in a
  // transformer's backward). small_layer_norm_backward itself declines all but dense float32
  // operands with the forward's statistics passed; a bias of another dtype would make the rule
  // above compute in that dtype. Declined, the rule above and an add run apart.
  residual_rule("ltorch.layer_norm_backward", [](Args a, Kw, const at::Tensor& residual) {
    at::Tensor bias = optional_tensor_at(a, 4);
    if (bias.defined() && bias.scalar_type() != at::kFloat) return RValue::none();
    auto [ga, gw, gb] = small_layer_norm_backward(tensor_at(a, 0, "grad"), tensor_at(a, 1, "a"),
                                                  ints_at(a, 2, "normalized_shape"), optional_tensor_at(a, 6),
                                                  optional_tensor_at(a, 7), optional_tensor_at(a, 3), residual);
    if (!ga.defined()) return RValue::none();
    return RValue::tuple({RValue::of(std::move(ga)), RValue::of(std::move(gw)), RValue::of(std::move(gb))});
  });
  exec_rule("ltorch.embedding_backward", [](Args a, Kw) {
    int64_t padding = a.size() < 4 || a[3].is_none() ? -1 : int_at(a, 3, "padding_idx");
    return RValue::of(at::embedding_dense_backward(tensor_at(a, 0, "grad"), tensor_at(a, 1, "indices"),
                                                   int_at(a, 2, "num_weights"), padding, /*scale_grad_by_freq=*/false));
  });
  // padding_idx changes only the gradient; passed on for runs under LibTorch's autograd (the reference).
  exec_rule("ltorch.embedding", [](Args a, Kw k) {
    const RValue* padding = argument(a, 2, k, "padding_idx");
    return RValue::of(at::embedding(tensor_at(a, 1, "weight"), tensor_at(a, 0, "indices"),
                                    padding && !padding->is_none() ? padding->integer_value() : -1));
  });
  exec_rule("ltorch.take_along_dim", [](Args a, Kw) {
    return RValue::of(at::take_along_dim(tensor_at(a, 0, "a"), tensor_at(a, 1, "indices"), int_at(a, 2, "dim")));
  });
  set_exec_rule(ops::op("ltorch.scaled_dot_product_attention"), SimpleExecRule(attention));
  set_exec_rule(ops::op("ltorch.scaled_dot_product_attention_forward"), SimpleExecRule(attention_with_log_sumexp));
  set_exec_rule(ops::op("ltorch.scaled_dot_product_attention_backward"), SimpleExecRule(attention_backward));
}

}  // namespace

}  // namespace tv::exec

bool tv::ltorch::fused_attention_on(const Device& device) {
  return (TV_FUSED_ATTENTION && device.kind == Device::Kind::cuda) ||
         (TV_FUSED_ATTENTION_CPU && device.kind == Device::Kind::cpu);
}

namespace tv::ops {

Shape normalized_dims(const T& a, const Shape& normalized) {
  auto k = static_cast<int64_t>(normalized.size()), r = static_cast<int64_t>(a->shape.size());
  if (k == 0 || k > r || !std::equal(normalized.begin(), normalized.end(), a->shape.end() - k))
    throw OpError("normalized_shape " + shape_text(normalized) + " does not match the trailing dims of shape " +
                  shape_text(a->shape));
  Shape dims;
  for (int64_t i = r - k; i < r; ++i) dims.push_back(i);
  return dims;
}

T one_hot(TraceBuilder& b, const T& indices, int64_t classes, DType dtype) {
  T hit = ltorch::eq(b, V(ltorch::unsqueeze(b, indices, -1)), V(ltorch::arange(b, classes, indices->device)));
  return ltorch::convert_element_type(b, hit, dtype);
}

std::pair<T, T> layer_norm_input_grad(TraceBuilder& b, const T& g, const T& a, const Shape& dims, const T& weight,
                                      const Value& eps, T m, T rstd) {
  using namespace tv::ltorch;
  if (!m || !rstd) {
    auto [var, mean] = var_mean(b, a, dims, 0, true);
    m = mean;
    rstd = rsqrt(b, add(b, V(var), eps));
  }
  T xhat = mul(b, V(sub(b, V(a), V(m))), V(rstd));
  T gx = weight ? mul(b, V(g), V(weight)) : g;
  T m1 = mean(b, gx, dims, true);
  T m2 = mean(b, mul(b, V(gx), V(xhat)), dims, true);
  T centered = sub(b, V(gx), V(m1));
  return {mul(b, V(rstd), V(sub(b, V(centered), V(mul(b, V(xhat), V(m2)))))), xhat};
}

void register_nn() {
  using namespace tv::ltorch;
  define("ltorch.linear", false, {"matmul"}, linear_impl);
  define("ltorch.matmul", false, {"matmul"}, matmul_impl);
  define("ltorch.layer_norm", false, {}, layer_norm_impl);
  define("ltorch.native_layer_norm", false, {}, native_layer_norm_impl);
  define("ltorch.softmax", false, {}, softmax_impl);
  define("ltorch.log_softmax", false, {}, log_softmax_impl);
  define("ltorch.cross_entropy", false, {}, cross_entropy_impl);
  define("ltorch.embedding", false, {}, embedding_impl);
  define("ltorch.embedding_backward", false, {}, embedding_backward_impl);
  define("ltorch.layer_norm_backward", false, {}, layer_norm_backward_impl);
  define("ltorch.softmax_backward", false, {}, softmax_backward_impl);
  define("ltorch.cross_entropy_backward", false, {}, cross_entropy_backward_impl);
  define("ltorch.dropout", false, {"random"}, dropout_impl);
  define("ltorch.scaled_dot_product_attention", false, {}, sdpa_impl);
  define("ltorch.scaled_dot_product_attention_forward", false, {}, sdpa_forward_impl);
  define("ltorch.scaled_dot_product_attention_backward", false, {}, sdpa_backward_impl);
  define("ltorch.take_along_dim", false, {}, take_along_dim_impl);
  define("ltorch.batch_norm", false, {"effect"}, batch_norm_impl);
  define("ltorch.native_batch_norm", false, {"effect"}, native_batch_norm_impl);
  define("ltorch.batch_norm_backward", false, {}, batch_norm_backward_impl);
  define("ltorch.mse_loss", false, {}, mse_loss_impl);
  define("ltorch.nll_loss", false, {}, nll_loss_impl);
  define("ltorch.group_norm", false, {}, group_norm_impl);
  define("ltorch.instance_norm", false, {"effect"}, instance_norm_impl);
  define("ltorch.smooth_l1_loss", false, {}, smooth_l1_loss_impl);  // run by its spelling's rule (spellings.cpp)
  define("ltorch.binary_cross_entropy", false, {}, binary_cross_entropy_impl);
  define("ltorch.binary_cross_entropy_with_logits", false, {}, binary_cross_entropy_with_logits_impl);
  register_nn_gradients();
  exec::register_nn_execution();
}

}  // namespace tv::ops
