// Neural-network ltorch ops: linear, matmul, layer_norm, softmax, log_softmax, cross_entropy,
// embedding, dropout, scaled_dot_product_attention, take_along_dim, and the backward ops the
// gradient rules record (layer_norm_backward, softmax_backward, cross_entropy_backward,
// embedding_backward, scaled_dot_product_attention_backward). linear and matmul map to one prim
// each; the others are compositions of ltorch ops (nested subsymbols), e.g. layer_norm =
// (a - mean) * rsqrt(var + eps) with var_mean(correction=0). A backward op is decomposed like any
// other op, so the trace shows what it computes, but the executor runs LibTorch's fused kernel for
// it: as a chain of single ops a backward reads and writes its activations several times over.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

void require_floating(const T& a, const char* op) {
  if (!is_floating(a->dtype))
    throw OpError(std::string(op) + " needs a floating tensor, got " + std::string(short_name(a->dtype)));
}

Value linear_impl(TraceBuilder& b, Args args, Kw) {
  T bias = optional_tensor_arg(args, 2, "bias");
  return Value::of(call1(b, "prims.linear",
                         {Value::of(tensor_arg(args, 0, "input")), Value::of(tensor_arg(args, 1, "weight")), V(bias)}));
}

Value matmul_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(
      call1(b, "prims.matmul", {Value::of(tensor_arg(args, 0, "a")), Value::of(tensor_arg(args, 1, "b"))}));
}

Value layer_norm_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Dims normalized = ints_arg(args, 1, "normalized_shape");
  T weight = optional_tensor_arg(args, 2, "weight"), bias = optional_tensor_arg(args, 3, "bias");
  double eps = number_arg(args, 4, "eps");
  require_floating(a, "layer_norm");
  Dims dims = normalized_dims(a, normalized);
  for (const T& p : {weight, bias})
    if (p && p->shape != normalized)
      throw OpError("layer_norm parameter of shape " + shape_text(p->shape) + " does not match normalized_shape " +
                    shape_text(normalized));
  auto [var, m] = var_mean(b, a, dims, /*correction=*/0, /*keepdim=*/true);
  T rstd = rsqrt(b, add(b, Value::of(var), Value::floating(eps)));
  T out = mul(b, Value::of(sub(b, Value::of(a), Value::of(m))), Value::of(rstd));
  if (weight) out = mul(b, Value::of(out), Value::of(weight));
  if (bias) out = add(b, Value::of(out), Value::of(bias));
  return Value::of(out);
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

// cross_entropy's arguments in Thunder's (and torch's) layout: (a, target, weight, size_average,
// ignore_index, reduce, reduction, label_smoothing). The traced decomposition is the mean over the
// rows whose target is not ignore_index; anything else is refused, not ignored.
std::optional<int64_t> cross_entropy_ignore_index(Args args, Kw kwargs) {
  if (given(args, kwargs, 2, "weight"))
    throw OpError("cross_entropy with a class weight is not supported: the decomposition weighs every class equally");
  if (given(args, kwargs, 3, "size_average") || given(args, kwargs, 5, "reduce"))
    throw OpError("cross_entropy's legacy size_average and reduce are not supported: pass reduction='mean'");
  if (const Value* r = given(args, kwargs, 6, "reduction"); r && !(r->kind == Value::Kind::string && r->s == "mean"))
    throw OpError("cross_entropy supports reduction='mean' only, got " + python_text(*r));
  if (const Value* s = given(args, kwargs, 7, "label_smoothing"); s && s->as_double() != 0.0)
    throw OpError("cross_entropy with label_smoothing is not supported, got " + python_text(*s));
  const Value* ignore = given(args, kwargs, 4, "ignore_index");
  if (!ignore) return std::nullopt;
  if (ignore->kind != Value::Kind::integer) throw OpError("cross_entropy's ignore_index must be an int, got " + python_text(*ignore));
  return ignore->i;
}

// 1 where target != ignore_index, as `dtype`, and the target with ignored rows pointing at class 0.
std::pair<T, T> kept_rows(TraceBuilder& b, const T& target, int64_t ignore_index, DType dtype) {
  T valid = ne(b, V(target), Value::integer(ignore_index));
  T safe = where(b, valid, V(target), Value::integer(0));
  return {convert_element_type(b, valid, dtype), safe};
}

Value cross_entropy_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T logits = tensor_arg(args, 0, "logits"), target = tensor_arg(args, 1, "target");
  if (rank(logits) != 2 || rank(target) != 1 || logits->shape[0] != target->shape[0])
    throw OpError("cross_entropy needs logits [N, C] and target [N], got " + shape_text(logits->shape) + " and " +
                  shape_text(target->shape));
  if (!is_integral(target->dtype) || target->dtype == DType::b8)
    throw OpError("cross_entropy target must hold class indices (an integer tensor), got " +
                  std::string(short_name(target->dtype)));
  std::optional<int64_t> ignore_index = cross_entropy_ignore_index(args, kwargs);
  T logp = log_softmax(b, logits, 1);
  if (!ignore_index) {
    T picked = take_along_dim(b, logp, unsqueeze(b, target, 1), 1);  // [N, 1]
    return Value::of(neg(b, mean(b, picked)));
  }
  // The mean over the kept rows: sum(-logp[i, target[i]] * kept[i]) / sum(kept).
  auto [kept, safe] = kept_rows(b, target, *ignore_index, logits->dtype);
  T picked = reshape(b, take_along_dim(b, logp, unsqueeze(b, safe, 1), 1), {logits->shape[0]});
  T total = sum(b, mul(b, V(picked), V(kept)), {}, false);
  return Value::of(neg(b, true_divide(b, V(total), V(sum(b, kept, {}, false)))));
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

// (grad_a, grad_weight, grad_bias) of layer_norm(a, normalized_shape, weight, bias, eps), the
// statistics recomputed from a. Weight and bias are required (the rule of a layer_norm without them
// differentiates its decomposition).
Value layer_norm_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), a = tensor_arg(args, 1, "a");
  Dims normalized = ints_arg(args, 2, "normalized_shape");
  T w = tensor_arg(args, 3, "weight"), bias = tensor_arg(args, 4, "bias");
  Value eps = Value::floating(number_arg(args, 5, "eps"));
  if (g->shape != a->shape)
    throw OpError("layer_norm_backward: grad " + shape_text(g->shape) + " and input " + shape_text(a->shape) +
                  " differ in shape");
  Dims dims = normalized_dims(a, normalized), batch;
  for (int64_t d = 0; d < dims.front(); ++d) batch.push_back(d);
  auto [ga, xhat] = layer_norm_input_grad(b, g, a, dims, w, eps);
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
// `grad`: (softmax(logits) - one_hot(target)) * grad / N. With ignore_index (argument 3) the
// ignored rows get none and the mean is over the kept rows.
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
  auto [kept, safe] = kept_rows(b, target, int_arg(args, 3, "ignore_index"), logits->dtype);
  T diff = sub(b, V(p), V(one_hot(b, safe, logits->shape[1], logits->dtype)));
  T scale = true_divide(b, V(g), V(sum(b, kept, {}, false)));
  return Value::of(mul(b, V(mul(b, V(diff), V(unsqueeze(b, kept, 1)))), V(scale)));
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
T attention_probabilities(TraceBuilder& b, const T& q, const T& k, const T& mask, bool causal) {
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
  return softmax(b, scores, -1);
}

Value sdpa_impl(TraceBuilder& b, Args args, Kw) {
  T q = tensor_arg(args, 0, "query"), k = tensor_arg(args, 1, "key"), v = tensor_arg(args, 2, "value");
  T mask = optional_tensor_arg(args, 3, "attn_mask");
  check_attention_inputs(q, k, v);
  return Value::of(matmul(b, attention_probabilities(b, q, k, mask, bool_arg(args, 4, "is_causal")), v));
}

// With P the probabilities and s = 1/sqrt(E): grad_v = P^T g, grad_scores = softmax_backward(g v^T,
// P) * s, grad_q = grad_scores k, grad_k = grad_scores^T q.
Value sdpa_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), q = tensor_arg(args, 1, "query"), k = tensor_arg(args, 2, "key");
  T v = tensor_arg(args, 3, "value"), mask = optional_tensor_arg(args, 4, "attn_mask");
  T out = tensor_arg(args, 5, "output");
  check_attention_inputs(q, k, v);
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
                                        const T& weight, const T& bias, double eps) {
  Value out = b.call("ltorch.layer_norm_backward", {V(grad), V(a), Value::ints(normalized_shape), V(weight), V(bias),
                                                    Value::floating(eps)});
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
                                                          bool is_causal) {
  Value out = b.call("ltorch.scaled_dot_product_attention_backward",
                     {V(grad), V(q), V(k), V(v), V(attn_mask), V(output), Value::boolean(is_causal)});
  return {out.items.at(0).proxy, out.items.at(1).proxy, out.items.at(2).proxy};
}
T take_along_dim(TraceBuilder& b, const T& a, const T& indices, int64_t dim) {
  return call1(b, "ltorch.take_along_dim", {V(a), V(indices), Value::integer(dim)});
}

}  // namespace tv::ltorch

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
                                      const Value& eps) {
  using namespace tv::ltorch;
  auto [var, m] = var_mean(b, a, dims, 0, true);
  T rstd = rsqrt(b, add(b, V(var), eps));
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
  define("ltorch.scaled_dot_product_attention_backward", false, {}, sdpa_backward_impl);
  define("ltorch.take_along_dim", false, {}, take_along_dim_impl);
}

}  // namespace tv::ops
