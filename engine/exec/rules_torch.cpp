// Rules for the ltorch ops (direct at:: calls, faster and closer to eager than the
// decompositions) and Thunder's torch executor spellings (`torch.reshape`,
// `torch.nn.functional.linear`, `torch.sum(t, (0,), False, dtype=None)`, ...), which share them.
// ltorch.dropout has no rule on purpose: it runs its decomposition (uniform_philox), so the same
// seed gives the same mask whichever way it runs.
#include <optional>
#include <tuple>
#include <utility>

#include "exec/forward_residues.h"
#include "exec/rule_util.h"

namespace tv::exec::detail {

namespace {

using namespace rules;
using TT = const at::Tensor&;

void def(const std::string& name, std::function<RValue(Args, Kw)> fn) {
  add_builtin(name, [fn = std::move(fn)](const ExecContext&, Args a, Kw k) { return fn(a, k); });
}

at::Scalar alpha_of(Kw k) {
  const RValue* a = rkwarg(k, "alpha");
  return a && !a->is_none() ? scalar_of(*a) : at::Scalar(int64_t{1});
}

std::optional<DType> dtype_kw(Kw k) {
  const RValue* d = rkwarg(k, "dtype");
  if (!d || d->is_none()) return std::nullopt;
  if (d->kind != RValue::Kind::dtype) throw ExecError("dtype= expects a dtype, got " + describe(*d));
  return d->dtype;
}

bool keepdim_at(Args a, size_t i, Kw k) { return flag_at(a, i, k, "keepdim"); }

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

// The statistics (mean and rstd) of the layer norms that forwards computed, by input tensor, so
// that layer_norm_backward on the same input takes them instead of computing them again (a kernel
// launch per norm saved in a host-bound step).
struct LayerNormStats {
  std::vector<int64_t> normalized;
  double eps;
  at::Tensor mean, rstd;
};

ResiduesByTensor<LayerNormStats>& layer_norm_stats() {
  thread_local ResiduesByTensor<LayerNormStats> stats;
  return stats;
}

}  // namespace

void register_torch_rules() {
  alias("ltorch.linear", "prims.linear");
  alias("ltorch.matmul", "prims.matmul");

  def("ltorch.add", [](Args a, Kw k) {
    at::Scalar alpha = alpha_of(k);
    return binary(a, [alpha](TT x, TT y) { return at::add(x, y, alpha); });
  });
  def("ltorch.sub", [](Args a, Kw k) {
    at::Scalar alpha = alpha_of(k);
    return binary(a, [alpha](TT x, TT y) { return at::sub(x, y, alpha); });
  });
  def("ltorch.mul", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::mul(x, y); }); });
  def("ltorch.true_divide", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::true_divide(x, y); }); });
  def("ltorch.pow", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::pow(x, y); }); });
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge", "maximum"})
    alias(std::string("ltorch.") + n, std::string("prims.") + n);
  for (const char* n : {"neg", "exp", "log", "tanh", "erf", "rsqrt", "sqrt"})
    alias(std::string("ltorch.") + n, std::string("prims.") + n);
  def("ltorch.relu", [](Args a, Kw) { return RValue::of(at::relu(tensor_at(a, 0, "a"))); });
  def("ltorch.sigmoid", [](Args a, Kw) { return RValue::of(at::sigmoid(tensor_at(a, 0, "a"))); });
  def("ltorch.silu", [](Args a, Kw) { return RValue::of(at::silu(tensor_at(a, 0, "a"))); });
  def("ltorch.gelu", [](Args a, Kw k) {
    std::string approximate = "none";
    if (const RValue* v = rkwarg(k, "approximate")) approximate = v->s;
    else if (a.size() > 1 && a[1].kind == RValue::Kind::string) approximate = a[1].s;
    return RValue::of(at::gelu(tensor_at(a, 0, "a"), approximate));
  });
  def("ltorch.where", [](Args a, Kw) {
    return RValue::of(where(tensor_at(a, 0, "condition"), rarg(a, 1, "a"), rarg(a, 2, "b")));
  });
  def("ltorch.masked_fill", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue& v = rarg(a, 2, "value");
    if (v.is_tensor()) return RValue::of(at::where(tensor_at(a, 1, "mask"), v.t.to(t.scalar_type()), t));
    return RValue::of(t.masked_fill(tensor_at(a, 1, "mask"), scalar_of(v)));
  });
  alias("ltorch.convert_element_type", "prims.convert_element_type");

  def("ltorch.layer_norm", [](Args a, Kw) {
    const at::Tensor& x = tensor_at(a, 0, "a");
    auto normalized = ints_at(a, 1, "normalized_shape");
    double eps = a.size() > 4 ? number_at(a, 4, "eps") : 1e-5;
    auto [out, mean, rstd] =
        at::native_layer_norm(x, normalized, optional_tensor_at(a, 2), optional_tensor_at(a, 3), eps);
    layer_norm_stats().remember(x, {normalized, eps, std::move(mean), std::move(rstd)});
    return RValue::of(out);
  });
  // A view cut from autograd (the engine's own runs are below autograd; the eager reference is not).
  def("ltorch.detach", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").detach()); });
  def("ltorch.softmax", [](Args a, Kw) { return RValue::of(at::softmax(tensor_at(a, 0, "a"), int_at(a, 1, "dim"))); });
  def("ltorch.log_softmax", [](Args a, Kw) {
    return RValue::of(at::log_softmax(tensor_at(a, 0, "a"), int_at(a, 1, "dim")));
  });
  // Thunder's layout (a, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing),
  // each by position or keyword, as its printouts pass them; absent ones take torch's defaults.
  def("ltorch.cross_entropy", [](Args a, Kw k) {
    const RValue* weight = argument(a, 2, k, "weight");
    const RValue* ignore = argument(a, 4, k, "ignore_index");
    const RValue* reduction = argument(a, 6, k, "reduction");
    const RValue* smoothing = argument(a, 7, k, "label_smoothing");
    for (const char* legacy : {"size_average", "reduce"})
      if (const RValue* v = argument(a, std::string_view(legacy) == "reduce" ? 5 : 3, k, legacy); v && !v->is_none())
        throw ExecError(std::string("ltorch.cross_entropy: the legacy argument ") + legacy + " is not supported; pass reduction",
                        "ltorch.cross_entropy");
    std::string mode = reduction && reduction->kind == RValue::Kind::string ? reduction->s : "mean";
    if (mode != "mean" && mode != "sum" && mode != "none")
      throw ExecError("ltorch.cross_entropy: unknown reduction '" + mode + "'", "ltorch.cross_entropy");
    int64_t code = mode == "none" ? at::Reduction::None : mode == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
    return RValue::of(at::cross_entropy_loss(
        tensor_at(a, 0, "logits"), tensor_at(a, 1, "target"),
        weight && !weight->is_none() ? c10::optional<at::Tensor>(weight->tensor()) : c10::nullopt, code,
        ignore && !ignore->is_none() ? ignore->integer_value() : -100,
        smoothing && !smoothing->is_none() ? smoothing->number() : 0.0));
  });
  // The backward ops: LibTorch's fused kernels instead of their decompositions.
  def("ltorch.softmax_backward", [](Args a, Kw) {
    const at::Tensor& out = tensor_at(a, 1, "output");
    return RValue::of(at::_softmax_backward_data(tensor_at(a, 0, "grad"), out, int_at(a, 2, "dim"), out.scalar_type()));
  });
  // softmax - one_hot(target), times g / N; with ignore_index (argument 3) the ignored rows are zero
  // and N counts the kept rows.
  def("ltorch.cross_entropy_backward", [](Args a, Kw) {
    const at::Tensor &g = tensor_at(a, 0, "grad"), &target = tensor_at(a, 2, "target");
    at::Tensor p = at::softmax(tensor_at(a, 1, "logits"), 1);
    if (a.size() < 4 || a[3].is_none()) {
      p.scatter_add_(1, target.unsqueeze(1), at::full({target.size(0), 1}, -1.0, p.options()));
      return RValue::of(p.mul_(g.div(static_cast<double>(target.size(0)))));
    }
    at::Tensor kept = target.ne(int_at(a, 3, "ignore_index"));
    at::Tensor safe = at::where(kept, target, at::zeros_like(target));
    p.scatter_add_(1, safe.unsqueeze(1), at::full({target.size(0), 1}, -1.0, p.options()));
    at::Tensor kept_rows = kept.to(p.scalar_type());
    return RValue::of(p.mul_(kept_rows.unsqueeze(1)).mul_(g.div(kept_rows.sum())));
  });
  def("ltorch.layer_norm_backward", [](Args a, Kw) {
    at::Tensor g = tensor_at(a, 0, "grad"), x = tensor_at(a, 1, "a");
    at::Tensor w = tensor_at(a, 3, "weight"), bias = tensor_at(a, 4, "bias");
    auto normalized = ints_at(a, 2, "normalized_shape");
    double eps = number_at(a, 5, "eps");
    // The decomposition's result dtypes (with autocast the input can be bf16 and the weight f32).
    at::ScalarType ga_type = at::promote_types(at::promote_types(g.scalar_type(), x.scalar_type()), w.scalar_type());
    at::ScalarType gw_type = at::promote_types(g.scalar_type(), x.scalar_type()), gb_type = g.scalar_type();
    // One compute dtype; float for half and bfloat16 (the kernel takes the statistics in float).
    at::ScalarType compute = at::promote_types(ga_type, bias.scalar_type());
    if (compute == at::kHalf || compute == at::kBFloat16) compute = at::kFloat;
    // The forward's statistics when it normalised this very tensor in the compute dtype; else
    // computed as the forward kernel computes them (one launch, where var_mean, add and rsqrt took
    // three).
    const LayerNormStats* seen = x.scalar_type() == compute ? layer_norm_stats().recall(x) : nullptr;
    at::Tensor mean, rstd;
    if (seen && seen->normalized == normalized && seen->eps == eps) mean = seen->mean, rstd = seen->rstd;
    g = g.to(compute), x = x.to(compute), w = w.to(compute), bias = bias.to(compute);
    x = x.contiguous();
    if (!mean.defined()) std::tie(std::ignore, mean, rstd) = at::native_layer_norm(x, normalized, {}, {}, eps);
    auto [ga, gw, gb] =
        at::native_layer_norm_backward(g.contiguous(), x, normalized, mean, rstd, w, bias, {true, true, true});
    return RValue::tuple({RValue::of(ga.to(ga_type)), RValue::of(gw.to(gw_type)), RValue::of(gb.to(gb_type))});
  });
  def("ltorch.embedding_backward", [](Args a, Kw) {
    int64_t padding = a.size() < 4 || a[3].is_none() ? -1 : int_at(a, 3, "padding_idx");
    return RValue::of(at::embedding_dense_backward(tensor_at(a, 0, "grad"), tensor_at(a, 1, "indices"),
                                                   int_at(a, 2, "num_weights"), padding, /*scale_grad_by_freq=*/false));
  });
  // padding_idx changes only the gradient; passed on for runs under LibTorch's autograd (the reference).
  def("ltorch.embedding", [](Args a, Kw k) {
    const RValue* padding = argument(a, 2, k, "padding_idx");
    return RValue::of(at::embedding(tensor_at(a, 1, "weight"), tensor_at(a, 0, "indices"),
                                    padding && !padding->is_none() ? padding->integer_value() : -1));
  });
  def("ltorch.take_along_dim", [](Args a, Kw) {
    return RValue::of(at::take_along_dim(tensor_at(a, 0, "a"), tensor_at(a, 1, "indices"), int_at(a, 2, "dim")));
  });

  def("ltorch.reshape", [](Args a, Kw) { return RValue::of(reshaped(tensor_at(a, 0, "a"), sizes_from(a, 1, "shape"))); });
  alias("ltorch.view", "ltorch.reshape");
  def("ltorch.transpose", [](Args a, Kw) {
    return RValue::of(tensor_at(a, 0, "a").transpose(int_at(a, 1, "dim0"), int_at(a, 2, "dim1")));
  });
  def("ltorch.permute", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").permute(sizes_from(a, 1, "dims"))); });
  def("ltorch.unsqueeze", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").unsqueeze(int_at(a, 1, "dim"))); });
  def("ltorch.expand", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").expand(sizes_from(a, 1, "shape"))); });
  alias("ltorch.broadcast_in_dim", "prims.broadcast_in_dim");
  def("ltorch.split", [](Args a, Kw) {
    std::vector<RValue> parts;
    for (const auto& t : at::split(tensor_at(a, 0, "a"), int_at(a, 1, "split_size"), int_at(a, 2, "dim")))
      parts.push_back(RValue::of(t));
    return RValue::tuple(std::move(parts));
  });
  def("ltorch.cat", [](Args a, Kw) {
    std::vector<at::Tensor> ts;
    for (const auto& v : rarg(a, 0, "tensors").items) ts.push_back(v.tensor());
    return RValue::of(at::cat(ts, int_at(a, 1, "dim")));
  });
  def("ltorch.stack", [](Args a, Kw) {
    std::vector<at::Tensor> ts;
    for (const auto& v : rarg(a, 0, "tensors").items) ts.push_back(v.tensor());
    return RValue::of(at::stack(ts, int_at(a, 1, "dim")));
  });
  def("ltorch.unbind", [](Args a, Kw) {
    std::vector<RValue> parts;
    for (const auto& t : at::unbind(tensor_at(a, 0, "a"), int_at(a, 1, "dim"))) parts.push_back(RValue::of(t));
    return RValue::tuple(std::move(parts));
  });

  def("ltorch.sum", [](Args a, Kw k) {
    at::Tensor t = tensor_at(a, 0, "a");
    if (auto d = dtype_kw(k)) t = t.to(to_scalar_type(*d));
    return RValue::of(at::sum(t, reduction_dims(a.size() > 1 ? a[1] : RValue::none(), t.dim()), keepdim_at(a, 2, k)));
  });
  def("ltorch.mean", [](Args a, Kw k) {
    at::Tensor t = tensor_at(a, 0, "a");
    if (auto d = dtype_kw(k)) t = t.to(to_scalar_type(*d));
    return RValue::of(at::mean(t, reduction_dims(a.size() > 1 ? a[1] : RValue::none(), t.dim()), keepdim_at(a, 2, k)));
  });
  def("ltorch.amax", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    return RValue::of(at::amax(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), keepdim_at(a, 2, k)));
  });
  def("ltorch.var_mean", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue* c = rkwarg(k, "correction");
    auto [var, mean] = rules::var_mean(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), c ? c->integer_value() : 1,
                                       keepdim_at(a, 2, k));
    return RValue::tuple({RValue::of(var), RValue::of(mean)});
  });

  // arange(end) as the engine records it; arange(start, end, step) and the keywords as Thunder's
  // printouts write it (`torch.arange(start=0, step=1, end=16, device=..., dtype=None)`).
  def("ltorch.arange", [](Args a, Kw k) {
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
  def("ltorch.full", [](Args a, Kw k) {
    return RValue::of(at::full(ints_at(a, 0, "shape"), scalar_of(rarg(a, 1, "fill")), creation_options(a, 2, k)));
  });
  def("ltorch.ones", [](Args a, Kw k) { return RValue::of(at::ones(ints_at(a, 0, "shape"), creation_options(a, 1, k))); });
  def("ltorch.zeros", [](Args a, Kw k) {
    return RValue::of(at::zeros(ints_at(a, 0, "shape"), creation_options(a, 1, k)));
  });

  // Thunder's torch executor spellings.
  for (const char* n : {"reshape", "permute", "matmul", "true_divide", "sum", "mean", "add", "sub", "mul", "pow", "exp",
                        "neg", "erf", "tanh", "log", "rsqrt", "sqrt", "relu", "sigmoid", "where", "eq", "ne", "lt", "le",
                        "gt", "ge", "maximum", "transpose", "unsqueeze", "cat", "amax", "var_mean", "split",
                        "masked_fill", "take_along_dim", "softmax", "log_softmax", "layer_norm", "embedding", "full",
                        "ones", "zeros", "arange"})
    alias(std::string("torch.") + n, std::string("ltorch.") + n);
  alias("torch.div", "ltorch.true_divide");
  alias("torch.Tensor.expand", "ltorch.expand");
  // The torch executor's implementations of prims, as its final traces call them.
  alias("torch_prims_reshape_impl", "ltorch.reshape");
  alias("torch_slice_prim_impl", "prims.slice");
  alias("torch_div_prim_impl", "prims.div");
  def("torch.nn.functional.smooth_l1_loss", [](Args a, Kw k) {
    const RValue* r = argument(a, 4, k, "reduction");
    const std::string reduction = r && r->kind == RValue::Kind::string ? r->s : "mean";
    const RValue* beta = argument(a, 5, k, "beta");
    int64_t mode = reduction == "none" ? at::Reduction::None : reduction == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
    if (reduction != "none" && reduction != "sum" && reduction != "mean")
      throw ExecError("torch.nn.functional.smooth_l1_loss: unknown reduction '" + reduction + "'",
                      "torch.nn.functional.smooth_l1_loss");
    return RValue::of(at::smooth_l1_loss(tensor_at(a, 0, "input"), tensor_at(a, 1, "target"), mode,
                                         beta && !beta->is_none() ? beta->number() : 1.0));
  });
  for (const char* n : {"linear", "gelu", "silu", "relu", "softmax", "log_softmax", "layer_norm", "cross_entropy",
                        "embedding"})
    alias(std::string("torch.nn.functional.") + n, std::string("ltorch.") + n);
}

}  // namespace tv::exec::detail
