// Gradient rules of the neural-network ops. linear follows Thunder's rule exactly (the fixtures'
// backward: reshape(g, (-1, N)), permute, reshape(x, (-1, K)), matmul; bias grad = sum over the
// batch dims). Gathers scatter their grad: embedding and take through ltorch.embedding_backward
// (a one-hot matmul when decomposed; LibTorch's scatter when executed), take_along_dim with a
// one-hot sum, since the op set has no scatter. layer_norm (with weight and bias), softmax and
// cross_entropy record their backward ops (ltorch.*_backward: decomposed in the trace, one LibTorch
// kernel when executed); so does scaled_dot_product_attention without a float mask (one fused
// kernel each way on CUDA; with a float mask it is differentiated through its decomposition, which
// gives the mask its grad). The backward ops are differentiated through their decompositions.
// dropout's grad is dropout of g with the same seed (the same mask, nothing saved).
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "ops/grad_rules.h"

namespace tv {

namespace {

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
  auto [gq, gk, gv] = scaled_dot_product_attention_backward(b, g, q, k, v, mask, f.output(), causal);
  return {reduce_like(b, gq, q), reduce_like(b, gk, k), reduce_like(b, gv, v), Value::none(), Value::none()};
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

Out cross_entropy_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T logits = tensor_at(f, 0), target = tensor_at(f, 1), g = cts[0].proxy;
  Out out(f.args.size());
  out[0] = reduce_like(b, cross_entropy_backward(b, g, logits, target, given_int(f, 4, "ignore_index")), logits);
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

Out take_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {  // prims.take(a, indices, dim)
  if (f.args.at(2).i != 0) throw OpError("grad of prims.take is implemented for dim 0 only");
  return {V(scatter_rows(b, tensor_at(f, 0), tensor_at(f, 1), cts[0].proxy, std::nullopt)), Value::none(),
          Value::none()};
}

// out = take_along_dim(a, idx, d): grad[..., k, ...] = sum_j g[..., j, ...] * (idx[..., j, ...] == k).
Out take_along_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0), idx = tensor_at(f, 1), g = cts[0].proxy;
  int64_t r = rank(a), d = meta::normalize_dim(f.args.at(2).i, r);
  T gt = d == r - 1 ? g : transpose(b, g, d, -1), it = d == r - 1 ? idx : transpose(b, idx, d, -1);
  T hits = ops::one_hot(b, it, a->shape[d], g->dtype);                                     // [..., J, K]
  T s = sum(b, mul(b, V(unsqueeze(b, gt, -1)), V(hits)), {r - 1}, false);             // [..., K]
  T ga = d == r - 1 ? s : transpose(b, s, d, -1);
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

}  // namespace

void register_nn_grads() {
  for (const char* n : {"ltorch.linear", "prims.linear"}) register_grad_rule(n, linear_rule);
  for (const char* n : {"ltorch.matmul", "prims.matmul"}) register_grad_rule(n, matmul_rule);
  register_grad_rule("ltorch.layer_norm", layer_norm_rule);
  register_grad_rule("ltorch.softmax", softmax_rule);
  register_grad_rule("ltorch.log_softmax", log_softmax_rule);
  register_grad_rule("ltorch.cross_entropy", cross_entropy_rule);
  register_grad_rule("ltorch.embedding", embedding_rule);
  register_grad_rule("ltorch.embedding_backward", embedding_backward_rule);
  register_grad_rule("prims.take", take_rule);
  for (const char* n : {"ltorch.take_along_dim", "prims.take_along_axis"}) register_grad_rule(n, take_along_rule);
  register_grad_rule("ltorch.dropout", dropout_rule);
  register_grad_rule("ltorch.scaled_dot_product_attention", sdpa_rule, sdpa_rule_applies);
  for (const char* n : {"ltorch.layer_norm_backward", "ltorch.softmax_backward", "ltorch.cross_entropy_backward",
                        "ltorch.scaled_dot_product_attention_backward"})
    register_grad_through_decomposition(n);
  for (const char* n : {"ltorch.arange", "ltorch.full", "ltorch.ones", "ltorch.zeros", "prims.full", "prims.iota",
                        "prims.uniform_philox"})
    register_not_differentiable(n);
}

}  // namespace tv
