// Gradient rules of the reductions: the grad is broadcast back over the reduced dims
// (ltorch.broadcast_in_dim), divided by the count for mean; amax splits the grad evenly among
// the maxima (as torch does); var_mean combines 2 (a - mean) / (N - correction) and 1 / N.
#include "ops/ltorch.h"
#include "ops/grad_rules.h"

namespace tv {

namespace {

using namespace tv::ltorch;
using grad::tensor_at;
using grad::unreduce;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;

struct Reduction {
  T a;
  Dims dims;
  bool keepdim;
  int64_t count = 1;
};

Reduction read(const BoundSymbol& f) {
  Reduction r;
  r.a = tensor_at(f, 0);
  r.dims = grad::reduction_dims(f, 1, static_cast<int64_t>(r.a->shape.size()));
  r.keepdim = grad::flag(f, 2, "keepdim", false);
  for (int64_t d : r.dims) r.count *= r.a->shape[d];
  return r;
}

Out finish(TraceBuilder& b, const BoundSymbol& f, const Reduction& r, const T& ga) {
  Out out(f.args.size());
  out[0] = is_floating(r.a->dtype) ? Value::of(grad::sum_to(b, ga, r.a->shape, r.a->dtype)) : Value::none();
  return out;
}

Out sum_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  return finish(b, f, r, unreduce(b, cts[0].proxy, r.a->shape, r.dims, r.keepdim));
}

Out mean_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T scaled = true_divide(b, cts[0], Value::integer(r.count));
  return finish(b, f, r, unreduce(b, scaled, r.a->shape, r.dims, r.keepdim));
}

Out amax_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T g = cts[0].proxy;
  T maxima = unreduce(b, f.output(), r.a->shape, r.dims, r.keepdim);
  T mask = convert_element_type(b, eq(b, Value::of(r.a), Value::of(maxima)), g->dtype);
  T count = sum(b, mask, r.dims, true);
  T spread = mul(b, Value::of(unreduce(b, g, r.a->shape, r.dims, r.keepdim)), Value::of(mask));
  return finish(b, f, r, true_divide(b, Value::of(spread), Value::of(count)));
}

double correction_of(const BoundSymbol& f) {
  for (const auto& [k, v] : f.kwargs)
    if (k == "correction" && v.is_number()) return v.as_double();
  return 1;
}

Out var_mean_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Reduction r = read(f);
  T ga = nullptr;
  if (cts[0].is_proxy()) {  // d var / d a = 2 (a - mean) / (N - correction)
    T centered = sub(b, Value::of(r.a), Value::of(unreduce(b, f.outputs[1], r.a->shape, r.dims, r.keepdim)));
    T gv = unreduce(b, cts[0].proxy, r.a->shape, r.dims, r.keepdim);
    double scale = 2.0 / (static_cast<double>(r.count) - correction_of(f));
    ga = mul(b, Value::of(gv), Value::of(mul(b, Value::of(centered), Value::floating(scale))));
  }
  if (cts.size() > 1 && cts[1].is_proxy()) {
    T gm = true_divide(b, Value::of(unreduce(b, cts[1].proxy, r.a->shape, r.dims, r.keepdim)),
                       Value::integer(r.count));
    ga = ga ? add(b, Value::of(ga), Value::of(gm)) : gm;
  }
  return finish(b, f, r, ga);
}

}  // namespace

void register_reduction_grads() {
  // The prims take (a, dims) and never keep dims; the same rules read them.
  for (const char* n : {"ltorch.sum", "prims.sum"}) register_grad_rule(n, sum_rule);
  register_grad_rule("ltorch.mean", mean_rule);
  for (const char* n : {"ltorch.amax", "prims.amax"}) register_grad_rule(n, amax_rule);
  for (const char* n : {"ltorch.var_mean", "prims.var_mean"}) register_grad_rule(n, var_mean_rule);
}

}  // namespace tv
