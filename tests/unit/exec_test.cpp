// Executor tests: every ltorch op against the direct at:: computation (rules and decompositions)
// on the CPU in f32 and, where a GPU is present, on CUDA in f32 and bf16 (skipped with the reason
// elsewhere); Thunder fixtures (linear, mlp forward and backward) against at:: autograd, prologue
// checks, opaque symbols, hooks and NaN/Inf detection.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "exec/device_check.h"
#include "exec/exec_rules.h"
#include "exec/executor.h"
#include "format/parser.h"
#include "format/printer.h"
#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "passes/batch_gradients.h"
#include "passes/fusion.h"
#include "passes/residual_epilogues.h"
#include "runtime/aten_util.h"
#include "runtime/rule_util.h"
#include "runtime/small_gemm.h"
#include "runtime/small_kernels.h"
#include "test_util.h"

namespace tv {
namespace {

using exec::Executor;
using exec::ExecError;
using exec::ExecOptions;
using exec::RValue;
using ltorch::T;
using P = std::vector<ProxyPtr>;
using Ts = std::vector<at::Tensor>;

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ltorch::register_ops();
    at::manual_seed(0);
  }
};

// Where the per-op tests run: the device, and the dtype floating inputs are cast to.
struct OpConfig {
  std::string name;  // "cpu_f32"
  Device device;
  at::ScalarType dtype = at::kFloat;
  double tolerance = 1e-5;  // relative to max(1, max |reference|); bf16 as the replay's tolerance()
};
// How gtest names a configuration in test lists and ctest ("cpu_f32", not a byte dump).
void PrintTo(const OpConfig& c, std::ostream* os) { *os << c.name; }
const OpConfig kCpuF32{"cpu_f32", Device{}, at::kFloat, 1e-5};
OpConfig g_config = kCpuF32;

// Inputs on the configured device, floating ones in the configured dtype.
Ts configured(const Ts& inputs) {
  Ts out;
  for (const auto& t : inputs) {
    at::Tensor c = t.to(exec::to_device(g_config.device));
    out.push_back(at::isFloatingType(c.scalar_type()) ? c.to(g_config.dtype) : c);
  }
  return out;
}

// max |a - b| <= tolerance * max(1, max |b|) (1e-5 in f32); exact for integer and bool results.
void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  if (!at::isFloatingType(want.scalar_type())) {
    EXPECT_TRUE(at::equal(got.cpu(), want.cpu())) << what;
    return;
  }
  at::Tensor g = got.cpu().to(at::kDouble), w = want.cpu().to(at::kDouble);
  double scale = std::max(1.0, w.numel() ? w.abs().max().item<double>() : 0.0);
  double diff = g.numel() ? (g - w).abs().max().item<double>() : 0.0;
  EXPECT_LE(diff, g_config.tolerance * scale) << what << " on " << g_config.name;
}

// A trace of `build` over proxies made from the inputs' metadata.
TracePtr trace_of(const Ts& inputs, const std::function<Value(TraceBuilder&, const P&)>& build) {
  TraceBuilder b;
  P proxies;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<int64_t> shape(inputs[k].sizes().begin(), inputs[k].sizes().end());
    proxies.push_back(b.input(make_tensor("x" + std::to_string(k), shape, exec::from_scalar_type(inputs[k].scalar_type()),
                                          Device{})));
  }
  Value out = build(b, proxies);
  return b.finish(out);
}

// Runs the trace with rules and with decompositions; checks both against `want`.
void check_op(const std::string& name, const Ts& inputs, const std::function<Value(TraceBuilder&, const P&)>& build,
              const std::function<Ts(const Ts&)>& reference) {
  SCOPED_TRACE(name + " on " + g_config.name);
  Ts in = configured(inputs);
  TracePtr t = trace_of(in, build);
  Ts want = reference(in);
  for (bool decompose : {false, true}) {
    ExecOptions o;
    o.decompose = decompose;
    o.device = g_config.device;
    Executor ex(o);
    RValue got = ex.run(*t, in);
    Ts tensors = exec::tensors_of(got);
    ASSERT_EQ(tensors.size(), want.size()) << name;
    for (size_t k = 0; k < want.size(); ++k)
      expect_close(tensors[k], want[k], name + (decompose ? " (decomposed)" : " (rule)") + " output " + std::to_string(k));
  }
}

// The per-op tests, once per configuration: cpu f32 always; cuda f32 and bf16 where a GPU is.
class ExecOps : public ::testing::TestWithParam<OpConfig> {
 protected:
  void SetUp() override {
    ltorch::register_ops();
    at::manual_seed(0);
    g_config = GetParam();
    if (g_config.device.kind == Device::Kind::cuda)
      if (auto why = exec::device_unavailable(g_config.device.str()); !why.empty())
        GTEST_SKIP() << "CUDA executor tests need a GPU: " << why;
  }
  void TearDown() override { g_config = kCpuF32; }
};
INSTANTIATE_TEST_SUITE_P(Devices, ExecOps,
                         ::testing::Values(kCpuF32, OpConfig{"cuda_f32", Device{Device::Kind::cuda, 0}, at::kFloat, 1e-5},
                                           OpConfig{"cuda_bf16", Device{Device::Kind::cuda, 0}, at::kBFloat16, 2e-2}),
                         [](const ::testing::TestParamInfo<OpConfig>& info) { return info.param.name; });

Value V(const ProxyPtr& p) { return Value::of(p); }
at::Tensor randn(std::vector<int64_t> s) { return at::randn(s); }
// A transposed (non-contiguous) view of shape s.
at::Tensor randn_t(std::vector<int64_t> s) {
  std::swap(s[0], s[1]);
  return at::randn(s).transpose(0, 1);
}

// softmax(q k^T / sqrt(E), causal: j <= i, keep: where true) v, as LibTorch ops (with autograd).
at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                               const at::Tensor& keep = {}) {
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal)
    s = s.masked_fill(at::ones({q.size(-2), k.size(-2)}, s.options().dtype(at::kBool)).tril().logical_not(), -INFINITY);
  if (keep.defined()) s = s.masked_fill(keep.logical_not(), -INFINITY);
  return at::matmul(at::softmax(s, -1), v);
}

// The gradients of q, k and v for the cotangent g, by LibTorch autograd in double, in q's dtype.
Ts reference_attention_grads(const at::Tensor& g, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, const at::Tensor& keep = {}) {
  Ts in;
  for (const auto& t : {q, k, v}) in.push_back(t.to(at::kDouble).detach().requires_grad_(true));
  reference_attention(in[0], in[1], in[2], causal, keep).backward(g.to(at::kDouble));
  return Ts{in[0].grad().to(q.scalar_type()), in[1].grad().to(q.scalar_type()), in[2].grad().to(q.scalar_type())};
}

TEST_P(ExecOps, ExecLinearAlgebra) {
  check_op("linear", {randn({2, 5}), randn({10, 5}), randn({10})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::linear(b, p[0], p[1], p[2])); },
           [](const Ts& x) { return Ts{at::linear(x[0], x[1], x[2])}; });
  check_op("linear 3-D, no bias, transposed weight", {randn({3, 2, 5}), randn_t({10, 5})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::linear(b, p[0], p[1], nullptr)); },
           [](const Ts& x) { return Ts{at::linear(x[0], x[1])}; });
  check_op("matmul batched broadcast", {randn({2, 1, 3, 4}), randn({5, 4, 2})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::matmul(b, p[0], p[1])); },
           [](const Ts& x) { return Ts{at::matmul(x[0], x[1])}; });
  // Equal batch dims run as one bmm; attention's operands are strided views like these.
  check_op("matmul batched, same batch dims, strided", {randn({2, 4, 3, 5}).transpose(1, 2), randn({2, 3, 5, 6})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::matmul(b, p[0], p[1])); },
           [](const Ts& x) { return Ts{at::matmul(x[0], x[1])}; });
  check_op("matmul batched, empty batch", {randn({0, 3, 4}), randn({0, 4, 2})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::matmul(b, p[0], p[1])); },
           [](const Ts& x) { return Ts{at::matmul(x[0], x[1])}; });
  check_op("matmul 1-D", {randn({4}), randn_t({4, 3})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::matmul(b, p[0], p[1])); },
           [](const Ts& x) { return Ts{at::matmul(x[0], x[1])}; });
}

TEST_P(ExecOps, ExecElementwiseBinary) {
  using F = T (*)(TraceBuilder&, const Value&, const Value&);
  using R = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
  std::vector<std::tuple<std::string, F, std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>>> ops = {
      {"add", ltorch::add, [](auto& a, auto& b) { return at::add(a, b); }},
      {"sub", ltorch::sub, [](auto& a, auto& b) { return at::sub(a, b); }},
      {"mul", ltorch::mul, [](auto& a, auto& b) { return at::mul(a, b); }},
      {"true_divide", ltorch::true_divide, [](auto& a, auto& b) { return at::true_divide(a, b); }},
      {"maximum", ltorch::maximum, [](auto& a, auto& b) { return at::maximum(a, b); }},
      {"eq", ltorch::eq, [](auto& a, auto& b) { return at::eq(a, b); }},
      {"ne", ltorch::ne, [](auto& a, auto& b) { return at::ne(a, b); }},
      {"lt", ltorch::lt, [](auto& a, auto& b) { return at::lt(a, b); }},
      {"le", ltorch::le, [](auto& a, auto& b) { return at::le(a, b); }},
      {"gt", ltorch::gt, [](auto& a, auto& b) { return at::gt(a, b); }},
      {"ge", ltorch::ge, [](auto& a, auto& b) { return at::ge(a, b); }},
  };
  (void)sizeof(R);
  for (auto& [name, f, ref] : ops) {
    check_op(name + " broadcast", {randn({2, 3, 4}), randn_t({3, 1})},
             [f = f](TraceBuilder& b, const P& p) { return V(f(b, V(p[0]), V(p[1]))); },
             [ref = ref](const Ts& x) { return Ts{ref(x[0], x[1])}; });
    check_op(name + " with a number", {randn({4, 3})},
             [f = f](TraceBuilder& b, const P& p) { return V(f(b, V(p[0]), Value::floating(0.25))); },
             [ref = ref](const Ts& x) { return Ts{ref(x[0], at::scalar_tensor(0.25, at::kFloat))}; });
  }
  check_op("pow", {at::rand({3, 4}) + 0.5, randn({4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::pow(b, V(p[0]), V(p[1]))); },
           [](const Ts& x) { return Ts{at::pow(x[0], x[1])}; });
  check_op("pow number exponent", {randn_t({3, 4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::pow(b, V(p[0]), Value::integer(2))); },
           [](const Ts& x) { return Ts{at::pow(x[0], 2)}; });
  check_op("number minus tensor", {randn({3})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::sub(b, Value::floating(1.5), V(p[0]))); },
           [](const Ts& x) { return Ts{1.5 - x[0]}; });
  check_op("int tensor plus float", {at::randint(0, 10, {3, 2}, at::kLong)},
           [](TraceBuilder& b, const P& p) { return V(ltorch::add(b, V(p[0]), Value::floating(0.5))); },
           [](const Ts& x) { return Ts{x[0] + 0.5}; });
}

TEST_P(ExecOps, ExecElementwiseUnary) {
  using F = T (*)(TraceBuilder&, const T&);
  std::vector<std::tuple<std::string, F, std::function<at::Tensor(const at::Tensor&)>, bool>> ops = {
      {"neg", ltorch::neg, [](auto& a) { return at::neg(a); }, false},
      {"exp", ltorch::exp, [](auto& a) { return at::exp(a); }, false},
      {"log", ltorch::log, [](auto& a) { return at::log(a); }, true},
      {"tanh", ltorch::tanh, [](auto& a) { return at::tanh(a); }, false},
      {"erf", ltorch::erf, [](auto& a) { return at::erf(a); }, false},
      {"rsqrt", ltorch::rsqrt, [](auto& a) { return at::rsqrt(a); }, true},
      {"sqrt", ltorch::sqrt, [](auto& a) { return at::sqrt(a); }, true},
      {"relu", ltorch::relu, [](auto& a) { return at::relu(a); }, false},
      {"silu", ltorch::silu, [](auto& a) { return at::silu(a); }, false},
      {"sigmoid", ltorch::sigmoid, [](auto& a) { return at::sigmoid(a); }, false},
  };
  for (auto& [name, f, ref, positive] : ops) {
    at::Tensor x = randn_t({4, 6});
    if (positive) x = x.abs() + 0.1;
    check_op(name, {x}, [f = f](TraceBuilder& b, const P& p) { return V(f(b, p[0])); },
             [ref = ref](const Ts& x) { return Ts{ref(x[0])}; });
  }
  for (std::string approx : {"none", "tanh"})
    check_op("gelu " + approx, {randn_t({4, 6})},
             [approx](TraceBuilder& b, const P& p) { return V(ltorch::gelu(b, p[0], approx)); },
             [approx](const Ts& x) { return Ts{at::gelu(x[0], approx)}; });
}

TEST_P(ExecOps, ExecNormalisationAndLosses) {
  check_op("layer_norm", {randn({2, 3, 8}), randn({8}), randn({8})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::layer_norm(b, p[0], {8}, p[1], p[2], 1e-5)); },
           [](const Ts& x) { return Ts{at::layer_norm(x[0], {8}, x[1], x[2], 1e-5)}; });
  check_op("layer_norm two dims, no affine", {randn_t({6, 4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::layer_norm(b, p[0], {6, 4}, nullptr, nullptr, 1e-6)); },
           [](const Ts& x) { return Ts{at::layer_norm(x[0], {6, 4}, {}, {}, 1e-6)}; });
  for (int64_t dim : {-1, 0}) {
    check_op("softmax dim " + std::to_string(dim), {randn_t({5, 7})},
             [dim](TraceBuilder& b, const P& p) { return V(ltorch::softmax(b, p[0], dim)); },
             [dim](const Ts& x) { return Ts{at::softmax(x[0], dim)}; });
    check_op("log_softmax dim " + std::to_string(dim), {randn({3, 5, 7})},
             [dim](TraceBuilder& b, const P& p) { return V(ltorch::log_softmax(b, p[0], dim)); },
             [dim](const Ts& x) { return Ts{at::log_softmax(x[0], dim)}; });
  }
  check_op("cross_entropy", {randn({6, 10}), at::randint(0, 10, {6}, at::kLong)},
           [](TraceBuilder& b, const P& p) { return V(ltorch::cross_entropy(b, p[0], p[1])); },
           [](const Ts& x) { return Ts{at::nll_loss(at::log_softmax(x[0], 1), x[1])}; });
  check_op("embedding", {at::randint(0, 12, {3, 4}, at::kLong), randn({12, 5})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::embedding(b, p[0], p[1])); },
           [](const Ts& x) { return Ts{at::embedding(x[1], x[0])}; });
  check_op("embedding_backward", {randn({7, 5}), at::randint(0, 12, {7}, at::kLong)},
           [](TraceBuilder& b, const P& p) { return V(ltorch::embedding_backward(b, p[0], p[1], 12)); },
           [](const Ts& x) { return Ts{at::zeros({12, 5}, x[0].options()).index_add(0, x[1], x[0])}; });
  // The backward ops against their formulas in double (the rule runs LibTorch's fused kernel).
  check_op("layer_norm_backward", {randn({2, 3, 8}), randn({2, 3, 8}), randn({8}), randn({8})},
           [](TraceBuilder& b, const P& p) {
             auto [ga, gw, gb] = ltorch::layer_norm_backward(b, p[0], p[1], {8}, p[2], p[3], 1e-5);
             return Value::tuple({V(ga), V(gw), V(gb)});
           },
           [](const Ts& x) {
             at::Tensor g = x[0].to(at::kDouble), a = x[1].to(at::kDouble), w = x[2].to(at::kDouble);
             at::Tensor rstd = (a.var({-1}, /*unbiased=*/false, /*keepdim=*/true) + 1e-5).rsqrt();
             at::Tensor xhat = (a - a.mean({-1}, true)) * rstd, gx = g * w;
             at::Tensor ga = rstd * (gx - gx.mean({-1}, true) - xhat * (gx * xhat).mean({-1}, true));
             auto dtype = x[1].scalar_type();
             return Ts{ga.to(dtype), (g * xhat).sum(at::IntArrayRef{0, 1}).to(dtype), g.sum(at::IntArrayRef{0, 1}).to(dtype)};
           });
  check_op("softmax_backward", {randn({5, 7}), at::softmax(randn({5, 7}), 1)},
           [](TraceBuilder& b, const P& p) { return V(ltorch::softmax_backward(b, p[0], p[1], 1)); },
           [](const Ts& x) {
             at::Tensor g = x[0].to(at::kDouble), y = x[1].to(at::kDouble);
             return Ts{(y * (g - (g * y).sum({1}, true))).to(x[1].scalar_type())};
           });
  check_op("cross_entropy_backward", {randn({}), randn({6, 10}), at::randint(0, 10, {6}, at::kLong)},
           [](TraceBuilder& b, const P& p) { return V(ltorch::cross_entropy_backward(b, p[0], p[1], p[2])); },
           [](const Ts& x) {
             at::Tensor one_hot = at::zeros({6, 10}, x[1].options().dtype(at::kDouble)).scatter_(1, x[2].unsqueeze(1), 1.0);
             at::Tensor p = at::softmax(x[1].to(at::kDouble), 1);
             return Ts{((p - one_hot) * x[0].to(at::kDouble) / 6.0).to(x[1].scalar_type())};
           });
  auto sdpa_ref = [](const Ts& x, bool causal, bool has_mask) {
    at::Tensor s = at::matmul(x[0], x[1].transpose(-2, -1)) / std::sqrt(8.0);
    if (causal) s = s.masked_fill(at::ones({4, 4}, x[0].options().dtype(at::kBool)).tril().logical_not(), -INFINITY);
    if (has_mask) s = s + x[3];
    return Ts{at::matmul(at::softmax(s, -1), x[2])};
  };
  check_op("sdpa causal", {randn({2, 4, 8}), randn({2, 4, 8}), randn({2, 4, 8})},
           [](TraceBuilder& b, const P& p) {
             return V(ltorch::scaled_dot_product_attention(b, p[0], p[1], p[2], nullptr, true));
           },
           [&](const Ts& x) { return sdpa_ref(x, true, false); });
  check_op("sdpa additive mask", {randn({2, 4, 8}), randn({2, 4, 8}), randn({2, 4, 8}), randn({4, 4})},
           [](TraceBuilder& b, const P& p) {
             return V(ltorch::scaled_dot_product_attention(b, p[0], p[1], p[2], p[3], false));
           },
           [&](const Ts& x) { return sdpa_ref(x, false, true); });
  // 4-d attention runs LibTorch's fused kernels on CUDA and, with LibTorch 2.3 or later, on the
  // CPU (ops/nn.cpp); its backward is checked against LibTorch autograd in double, 4-d causal and
  // 3-d with a bool mask.
  check_op("sdpa causal 4-d", {randn({2, 2, 8, 16}), randn({2, 2, 8, 16}), randn({2, 2, 8, 16})},
           [](TraceBuilder& b, const P& p) {
             return V(ltorch::scaled_dot_product_attention(b, p[0], p[1], p[2], nullptr, true));
           },
           [](const Ts& x) {
             auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
             return Ts{reference_attention(d(x[0]), d(x[1]), d(x[2]), true).to(x[0].scalar_type())};
           });
  // The forward with its log-sum-exp (autograd's statement with residues on CUDA), and the backward
  // that takes it (32 query rows: the fused kernel's alignment, so it reads this one as it is).
  auto scores_of = [](const at::Tensor& q, const at::Tensor& k) {
    at::Tensor s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
    return s.masked_fill(at::ones({q.size(-2), k.size(-2)}, s.options().dtype(at::kBool)).tril().logical_not(), -INFINITY);
  };
  check_op("sdpa_forward causal 4-d", {randn({2, 2, 32, 16}), randn({2, 2, 32, 16}), randn({2, 2, 32, 16})},
           [](TraceBuilder& b, const P& p) {
             return b.call("ltorch.scaled_dot_product_attention_forward",
                           {V(p[0]), V(p[1]), V(p[2]), Value::none(), Value::boolean(true)});
           },
           [&](const Ts& x) {
             auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
             return Ts{reference_attention(d(x[0]), d(x[1]), d(x[2]), true).to(x[0].scalar_type()),
                       at::logsumexp(scores_of(d(x[0]), d(x[1])), -1).to(at::kFloat)};
           });
  if (g_config.dtype == at::kFloat) {  // the log-sum-exp is f32 whatever q's dtype (inputs take the configuration's)
    at::Tensor q = randn({2, 2, 32, 16}), k = randn({2, 2, 32, 16}), v = randn({2, 2, 32, 16});
    at::Tensor out = reference_attention(q, k, v, true);
    at::Tensor lse = at::logsumexp(scores_of(q.to(at::kDouble), k.to(at::kDouble)), -1).to(at::kFloat);
    check_op("sdpa_backward causal 4-d with the forward's log-sum-exp", {randn({2, 2, 32, 16}), q, k, v, out, lse},
             [](TraceBuilder& b, const P& p) {
               auto [gq, gk, gv] =
                   ltorch::scaled_dot_product_attention_backward(b, p[0], p[1], p[2], p[3], nullptr, p[4], true, p[5]);
               return Value::tuple({V(gq), V(gk), V(gv)});
             },
             [](const Ts& x) { return reference_attention_grads(x[0], x[1], x[2], x[3], true); });
  }
  {
    at::Tensor q = randn({2, 2, 8, 16}), k = randn({2, 2, 8, 16}), v = randn({2, 2, 8, 16});
    at::Tensor out = reference_attention(q, k, v, true);
    check_op("sdpa_backward causal 4-d", {randn({2, 2, 8, 16}), q, k, v, out},
             [](TraceBuilder& b, const P& p) {
               auto [gq, gk, gv] =
                   ltorch::scaled_dot_product_attention_backward(b, p[0], p[1], p[2], p[3], nullptr, p[4], true);
               return Value::tuple({V(gq), V(gk), V(gv)});
             },
             [](const Ts& x) { return reference_attention_grads(x[0], x[1], x[2], x[3], true); });
  }
  {
    at::Tensor q = randn({2, 4, 8}), k = randn({2, 4, 8}), v = randn({2, 4, 8});
    at::Tensor keep = at::rand({4, 4}) > 0.5;
    keep.fill_diagonal_(true);  // no row without a key
    at::Tensor out = reference_attention(q, k, v, false, keep);
    check_op("sdpa_backward bool mask", {randn({2, 4, 8}), q, k, v, keep, out},
             [](TraceBuilder& b, const P& p) {
               auto [gq, gk, gv] =
                   ltorch::scaled_dot_product_attention_backward(b, p[0], p[1], p[2], p[3], p[4], p[5], false);
               return Value::tuple({V(gq), V(gk), V(gv)});
             },
             [](const Ts& x) { return reference_attention_grads(x[0], x[1], x[2], x[3], false, x[4]); });
  }
  check_op("take_along_dim", {randn({4, 6}), at::randint(0, 6, {4, 3}, at::kLong)},
           [](TraceBuilder& b, const P& p) { return V(ltorch::take_along_dim(b, p[0], p[1], 1)); },
           [](const Ts& x) { return Ts{at::take_along_dim(x[0], x[1], 1)}; });
}

TEST_P(ExecOps, ExecIndexing) {
  using B = TraceBuilder&;
  check_op("gather", {randn({3, 5}), at::randint(0, 5, {3, 4}, at::kLong)},
           [](B b, const P& p) { return V(ltorch::gather(b, p[0], 1, p[1])); },
           [](const Ts& x) { return Ts{at::gather(x[0], 1, x[1])}; });
  check_op("scatter_add", {randn({4, 5}), at::randint(0, 4, {2, 5}, at::kLong), randn({2, 5})},
           [](B b, const P& p) { return V(ltorch::scatter_add(b, p[0], 0, p[1], p[2])); },
           [](const Ts& x) { return Ts{at::scatter_add(x[0], 0, x[1], x[2])}; });
  check_op("scatter src", {randn({4, 5}), at::randperm(4, at::kLong).reshape({4, 1}).expand({4, 5}).contiguous(), randn({4, 5})},
           [](B b, const P& p) { return b.call("ltorch.scatter", {V(p[0]), Value::integer(0), V(p[1]), V(p[2])}); },
           [](const Ts& x) { return Ts{at::scatter(x[0], 0, x[1], x[2])}; });
  check_op("scatter value", {randn({4, 5}), at::randint(0, 5, {4, 2}, at::kLong)},
           [](B b, const P& p) { return b.call("ltorch.scatter", {V(p[0]), Value::integer(1), V(p[1]), Value::floating(0.5)}); },
           [](const Ts& x) { return Ts{at::scatter(x[0], 1, x[1], 0.5)}; });
  check_op("index_select", {randn({4, 3}), at::randint(0, 3, {5}, at::kLong)},
           [](B b, const P& p) { return V(ltorch::index_select(b, p[0], 1, p[1])); },
           [](const Ts& x) { return Ts{at::index_select(x[0], 1, x[1])}; });
  check_op("index_add alpha", {randn({4, 3}), at::randint(0, 4, {6}, at::kLong), randn({6, 3})},
           [](B b, const P& p) {
             return b.call("ltorch.index_add", {V(p[0]), Value::integer(0), V(p[1]), V(p[2])}, {{"alpha", Value::floating(2.0)}});
           },
           [](const Ts& x) { return Ts{at::index_add(x[0], 0, x[1], x[2], 2.0)}; });
  check_op("index_put accumulate", {randn({4, 5}), at::randint(0, 5, {3}, at::kLong), randn({4, 3})},
           [](B b, const P& p) {
             return b.call("ltorch.index_put", {V(p[0]), Value::list({Value::none(), V(p[1])}), V(p[2]), Value::boolean(true)});
           },
           [](const Ts& x) {
             return Ts{at::index_put(x[0], c10::List<c10::optional<at::Tensor>>({c10::nullopt, x[1]}), x[2], true)};
           });
  check_op("topk smallest", {randn({3, 6})},
           [](B b, const P& p) {
             return b.call("ltorch.topk", {V(p[0]), Value::integer(2), Value::integer(1), Value::boolean(false), Value::boolean(true)});
           },
           [](const Ts& x) {
             auto [values, indices] = at::topk(x[0], 2, 1, false, true);
             return Ts{values, indices};
           });
  check_op("max and min along a dim, argmax", {randn({3, 6})},
           [](B b, const P& p) {
             Value most = b.call("ltorch.torch_max", {V(p[0]), Value::integer(1), Value::boolean(false)});
             Value least = b.call("ltorch.torch_min", {V(p[0]), Value::integer(0), Value::boolean(true)});
             Value first = b.call("ltorch.argmax", {V(p[0])});
             return Value::tuple({most.items[0], most.items[1], least.items[0], least.items[1], first});
           },
           [](const Ts& x) {
             auto [most, most_at] = at::max(x[0], 1, false);
             auto [least, least_at] = at::min(x[0], 0, true);
             return Ts{most, most_at, least, least_at, at::argmax(x[0])};
           });
  check_op("interpolate", {randn({2, 3, 5, 4}), randn({1, 2, 6})},
           [](B b, const P& p) {
             Value factors = Value::list({Value::floating(1.5), Value::floating(1.5)});
             return Value::tuple({b.call("ltorch.interpolate", {V(p[0]), Value::ints({7, 3}), Value::none(), Value::string("bilinear"),
                                                                Value::boolean(true)}),
                                  b.call("ltorch.interpolate", {V(p[0]), Value::ints({7, 6}), factors, Value::string("nearest"),
                                                                Value::none()}),
                                  b.call("ltorch.interpolate", {V(p[1]), Value::ints({4}), Value::none(), Value::string("linear"),
                                                                Value::boolean(false)})});
           },
           [](const Ts& x) {
             return Ts{at::upsample_bilinear2d(x[0], {7, 3}, true), at::upsample_nearest2d(x[0], {7, 6}, 1.5, 1.5),
                       at::upsample_linear1d(x[1], {4}, false)};
           });
}

TEST_F(ExecTest, ExecDropoutRunsItsDecomposition) {
  at::Tensor x = at::rand({64, 32}) + 1.0;
  TracePtr t = trace_of({x}, [](TraceBuilder& b, const P& p) { return V(ltorch::dropout(b, p[0], 0.25, 7)); });
  at::Tensor a = Executor().run(*t, Ts{x}).tensor(), c = Executor().run(*t, Ts{x}).tensor();
  EXPECT_TRUE(at::equal(a, c));  // deterministic in the seed
  at::Tensor kept = a != 0;
  expect_close(at::where(kept, a, at::zeros_like(a)), at::where(kept, x / 0.75, at::zeros_like(x)), "dropout scale");
  double frac = kept.to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(frac, 0.75, 0.05);
  TracePtr eval = trace_of({x}, [](TraceBuilder& b, const P& p) { return V(ltorch::dropout(b, p[0], 0.25, 7, false)); });
  expect_close(Executor().run(*eval, Ts{x}).tensor(), x, "dropout eval");
}

Value call(TraceBuilder& b, const std::string& name, std::vector<Value> args) { return b.call(name, std::move(args)); }

TEST_P(ExecOps, ExecConvolutionAndPooling) {
  check_op("conv2d stride 2 padding 1", {randn({2, 3, 9, 8}), randn({4, 3, 3, 3}), randn({4})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.conv2d", {V(p[0]), V(p[1]), V(p[2]), Value::integer(2), Value::ints({1, 1})});
           },
           [](const Ts& x) { return Ts{at::conv2d(x[0], x[1], x[2], {2, 2}, {1, 1})}; });
  check_op("conv1d grouped, dilated, unbatched", {randn({4, 11}), randn({6, 2, 3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.conv1d", {V(p[0]), V(p[1]), Value::none(), Value::integer(1), Value::integer(2),
                                              Value::integer(2), Value::integer(2)});
           },
           [](const Ts& x) { return Ts{at::conv1d(x[0].unsqueeze(0), x[1], {}, 1, 2, 2, 2).squeeze(0)}; });
  check_op("conv2d padding same", {randn({1, 2, 5, 6}), randn({3, 2, 3, 5})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.conv2d", {V(p[0]), V(p[1]), Value::none(), Value::integer(1), Value::string("same")});
           },
           [](const Ts& x) { return Ts{at::conv2d(x[0], x[1], {}, 1, {1, 2})}; });
  check_op("convolution transposed", {randn({2, 4, 5, 5}), randn({4, 3, 3, 3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.convolution", {V(p[0]), V(p[1]), Value::none(), Value::ints({2, 2}), Value::ints({1, 1}),
                                                   Value::ints({1, 1}), Value::boolean(true), Value::ints({1, 1}),
                                                   Value::integer(1)});
           },
           [](const Ts& x) { return Ts{at::conv_transpose2d(x[0], x[1], {}, 2, 1, 1)}; });
  check_op("max_pool2d ceil_mode", {randn({2, 3, 7, 6})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.max_pool2d", {V(p[0]), Value::integer(3), Value::integer(2), Value::integer(1),
                                                  Value::integer(1), Value::boolean(true)});
           },
           [](const Ts& x) { return Ts{at::max_pool2d(x[0], 3, 2, 1, 1, true)}; });
  check_op("max_pool2d with indices, unbatched", {randn({3, 8, 8})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.max_pool2d", {V(p[0]), Value::integer(2), Value::none(), Value::integer(0),
                                                  Value::integer(1), Value::boolean(false), Value::boolean(true)});
           },
           [](const Ts& x) {
             auto [out, idx] = at::max_pool2d_with_indices(x[0], 2, 2);
             return Ts{out, idx};
           });
  check_op("avg_pool2d without padding in the count", {randn({2, 3, 7, 7})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.avg_pool2d", {V(p[0]), Value::integer(3), Value::integer(2), Value::integer(1),
                                                  Value::boolean(false), Value::boolean(false)});
           },
           [](const Ts& x) { return Ts{at::avg_pool2d(x[0], 3, 2, 1, false, false)}; });
  check_op("adaptive_avg_pool2d", {randn({2, 3, 7, 5})},
           [](TraceBuilder& b, const P& p) { return call(b, "ltorch.adaptive_avg_pool2d", {V(p[0]), Value::ints({3, 2})}); },
           [](const Ts& x) { return Ts{at::adaptive_avg_pool2d(x[0], {3, 2})}; });
}

TEST_P(ExecOps, ExecBatchNormAndLosses) {
  // Training: the batch statistics (the running ones are written: BatchNormWritesItsRunningStatistics).
  check_op("batch_norm training", {randn({3, 4, 5, 2}), randn({4}), randn({4})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.batch_norm", {V(p[0]), Value::none(), Value::none(), V(p[1]), V(p[2]),
                                                  Value::boolean(true), Value::floating(0.1), Value::floating(1e-5)});
           },
           [](const Ts& x) { return Ts{at::batch_norm(x[0], x[1], x[2], {}, {}, true, 0.1, 1e-5, false)}; });
  check_op("batch_norm eval", {randn({3, 4, 5}), randn({4}), randn({4}), randn({4}), randn({4}).abs() + 0.5},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.batch_norm", {V(p[0]), V(p[3]), V(p[4]), V(p[1]), V(p[2]), Value::boolean(false),
                                                  Value::floating(0.1), Value::floating(1e-5)});
           },
           [](const Ts& x) {
             auto c = [](const at::Tensor& t) { return t.view({1, 4, 1}); };
             return Ts{(x[0] - c(x[3])) * (c(x[4]) + 1e-5).rsqrt() * c(x[1]) + c(x[2])};
           });
  for (bool training : {true, false})
    check_op(std::string("batch_norm_backward ") + (training ? "training" : "eval"),
             {randn({3, 4, 5}), randn({3, 4, 5}), randn({4}), randn({4}), randn({4}).abs() + 0.5},
             [training](TraceBuilder& b, const P& p) {
               return call(b, "ltorch.batch_norm_backward", {V(p[0]), V(p[1]), V(p[3]), V(p[4]), V(p[2]),
                                                             Value::boolean(training), Value::floating(1e-5)});
             },
             [training](const Ts& x) {  // LibTorch's autograd in double
               Ts in;
               for (size_t k : {1, 2}) in.push_back(x[k].to(at::kDouble).detach().requires_grad_(true));
               at::Tensor mean = x[3].to(at::kDouble), var = x[4].to(at::kDouble);
               at::batch_norm(in[0], in[1], at::zeros({4}, in[1].options()), mean, var, training, 0.1, 1e-5, false)
                   .backward(x[0].to(at::kDouble));
               auto dtype = x[1].scalar_type();
               return Ts{in[0].grad().to(dtype), in[1].grad().to(dtype),
                         x[0].to(at::kDouble).sum(at::IntArrayRef{0, 2}).to(dtype)};
             });
  check_op("mse_loss", {randn({4, 3}), randn({4, 3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.mse_loss", {V(p[0]), V(p[1]), Value::none(), Value::none(), Value::string("sum")});
           },
           [](const Ts& x) { return Ts{at::mse_loss(x[0], x[1], at::Reduction::Sum)}; });
  at::Tensor target = at::randint(0, 5, {6, 3}, at::kLong);
  target.index_put_({0, 1}, 2);
  check_op("nll_loss ignore_index, spatial", {at::log_softmax(randn({6, 5, 3}), 1), target},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.nll_loss", {V(p[0]), V(p[1]), Value::none(), Value::none(), Value::integer(2),
                                                Value::none(), Value::string("mean")});
           },
           [](const Ts& x) { return Ts{at::nll_loss_nd(x[0], x[1], {}, at::Reduction::Mean, 2)}; });
  for (auto [reduction, code] : {std::pair{"mean", at::Reduction::Mean}, std::pair{"none", at::Reduction::None}})
    check_op(std::string("nll_loss class weight, spatial, ") + reduction,
             {at::log_softmax(randn({6, 5, 3}), 1), target, at::rand({5}) + 0.1},
             [reduction = reduction](TraceBuilder& b, const P& p) {
               return call(b, "ltorch.nll_loss", {V(p[0]), V(p[1]), V(p[2]), Value::none(), Value::integer(2),
                                                  Value::none(), Value::string(reduction)});
             },
             [code = code](const Ts& x) { return Ts{at::nll_loss_nd(x[0], x[1], x[2], code, 2)}; });
}

TEST_P(ExecOps, ExecGroupInstanceNormAndBinaryLosses) {
  check_op("group_norm", {randn({2, 6, 3, 2}), randn({6}), randn({6})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.group_norm", {V(p[0]), Value::integer(3), V(p[1]), V(p[2]), Value::floating(1e-3)});
           },
           [](const Ts& x) { return Ts{at::group_norm(x[0], 3, x[1], x[2], 1e-3)}; });
  check_op("instance_norm input statistics", {randn({3, 4, 5}), randn({4})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.instance_norm", {V(p[0]), Value::none(), Value::none(), V(p[1])});
           },
           [](const Ts& x) { return Ts{at::instance_norm(x[0], x[1], {}, {}, {}, true, 0.1, 1e-5, false)}; });
  check_op("instance_norm running statistics", {randn({3, 4, 5}), randn({4}), randn({4}).abs() + 0.5},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.instance_norm", {V(p[0]), V(p[1]), V(p[2]), Value::none(), Value::none(),
                                                     Value::boolean(false), Value::floating(0.1), Value::floating(1e-5)});
           },
           [](const Ts& x) { return Ts{at::instance_norm(x[0], {}, {}, x[1], x[2], false, 0.1, 1e-5, false)}; });
  at::Tensor classes = at::randint(0, 5, {6}, at::kLong);
  classes.index_put_({0}, 2);
  check_op("cross_entropy label_smoothing, ignore_index", {randn({6, 5}), classes},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.cross_entropy", {V(p[0]), V(p[1]), Value::none(), Value::none(), Value::integer(2),
                                                     Value::none(), Value::string("mean"), Value::floating(0.3)});
           },
           [](const Ts& x) { return Ts{at::cross_entropy_loss(x[0], x[1], {}, at::Reduction::Mean, 2, 0.3)}; });
  // A class weight, each reduction, logits [N, C, L]: the general decomposition against torch's kernel.
  at::Tensor per_position = at::randint(0, 5, {2, 3}, at::kLong);
  per_position.index_put_({0, 1}, 4);
  struct WeightedCase {
    const char* reduction;
    int64_t code, ignore;
    double smoothing;
  };
  for (WeightedCase w : {WeightedCase{"mean", at::Reduction::Mean, -100, 0.0}, WeightedCase{"sum", at::Reduction::Sum, 2, 0.0},
                         WeightedCase{"none", at::Reduction::None, 2, 0.25}, WeightedCase{"mean", at::Reduction::Mean, 4, 0.1}}) {
    std::string label = std::string("cross_entropy weight ") + w.reduction + " ignore " + std::to_string(w.ignore) +
                        " smoothing " + std::to_string(w.smoothing);
    auto build = [w](TraceBuilder& b, const P& p) {
      return call(b, "ltorch.cross_entropy", {V(p[0]), V(p[1]), V(p[2]), Value::none(), Value::integer(w.ignore),
                                              Value::none(), Value::string(w.reduction), Value::floating(w.smoothing)});
    };
    check_op(label, {randn({6, 5}), classes, at::rand({5}) + 0.1}, build, [w](const Ts& x) {
      return Ts{at::cross_entropy_loss(x[0], x[1], x[2], w.code, w.ignore, w.smoothing)};
    });
    check_op(label + " [N, C, L]", {randn({2, 5, 3}), per_position, at::rand({5}) + 0.1}, build, [w](const Ts& x) {
      return Ts{at::cross_entropy_loss(x[0], x[1], x[2], w.code, w.ignore, w.smoothing)};
    });
  }
  check_op("smooth_l1_loss", {randn({4, 3}), randn({4, 3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.smooth_l1_loss", {V(p[0]), V(p[1]), Value::none(), Value::none(), Value::string("sum"),
                                                      Value::floating(0.5)});
           },
           [](const Ts& x) { return Ts{at::smooth_l1_loss(x[0], x[1], at::Reduction::Sum, 0.5)}; });
  check_op("binary_cross_entropy weighted", {at::rand({4, 3}), at::rand({4, 3}), at::rand({3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.binary_cross_entropy", {V(p[0]), V(p[1]), V(p[2]), Value::none(), Value::none(),
                                                            Value::string("none")});
           },
           [](const Ts& x) { return Ts{at::binary_cross_entropy(x[0], x[1], x[2].expand({4, 3}), at::Reduction::None)}; });
  check_op("binary_cross_entropy_with_logits pos_weight", {randn({4, 3}) * 10, at::rand({4, 3}), at::rand({3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.binary_cross_entropy_with_logits",
                         {V(p[0]), V(p[1]), Value::none(), Value::none(), Value::none(), Value::string("mean"), V(p[2])});
           },
           [](const Ts& x) {
             return Ts{at::binary_cross_entropy_with_logits(x[0], x[1], {}, x[2], at::Reduction::Mean)};
           });
}

TEST_P(ExecOps, ExecConvTransposeAndRecurrent) {
  check_op("conv_transpose2d grouped, output_padding", {randn({2, 4, 5, 5}), randn({4, 3, 3, 3}), randn({6})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.conv_transpose2d", {V(p[0]), V(p[1]), V(p[2]), Value::integer(2), Value::integer(1),
                                                        Value::integer(1), Value::integer(2)});
           },
           [](const Ts& x) { return Ts{at::conv_transpose2d(x[0], x[1], x[2], 2, 1, 1, 2)}; });
  check_op("conv_transpose1d unbatched, dilated", {randn({4, 7}), randn({4, 2, 3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.conv_transpose1d", {V(p[0]), V(p[1]), Value::none(), Value::integer(2), Value::integer(0),
                                                        Value::integer(1), Value::integer(1), Value::integer(2)});
           },
           [](const Ts& x) { return Ts{at::conv_transpose1d(x[0].unsqueeze(0), x[1], {}, 2, 0, 1, 1, 2).squeeze(0)}; });
  check_op("conv_transpose3d", {randn({1, 2, 2, 3, 2}), randn({2, 2, 2, 2, 2})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.conv_transpose3d", {V(p[0]), V(p[1]), Value::none(), Value::integer(2)});
           },
           [](const Ts& x) { return Ts{at::conv_transpose3d(x[0], x[1], {}, 2)}; });
  // The recurrent references: cuDNN's RNN kernels compute in TF32 unless told otherwise (the
  // decomposition's matmuls do not), and sum each step's gates in another order, whose f32 rounding
  // a recurrence carries through every step and layer: 4 times one op's tolerance.
  struct RecurrentReference {
    bool tf32 = at::globalContext().allowTF32CuDNN();
    double tolerance = g_config.tolerance;
    RecurrentReference() {
      at::globalContext().setAllowTF32CuDNN(false);
      g_config.tolerance *= 4;
    }
    ~RecurrentReference() {
      at::globalContext().setAllowTF32CuDNN(tf32);
      g_config.tolerance = tolerance;
    }
  } recurrent_reference;
  check_op("lstm bidirectional, batch_first",
           {randn({2, 3, 4}), randn({2, 2, 3}), randn({2, 2, 3}), randn({12, 4}), randn({12, 3}), randn({12}), randn({12}),
            randn({12, 4}), randn({12, 3}), randn({12}), randn({12})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.lstm", {V(p[0]), Value::list({V(p[1]), V(p[2])}),
                                            Value::list({V(p[3]), V(p[4]), V(p[5]), V(p[6]), V(p[7]), V(p[8]), V(p[9]), V(p[10])}),
                                            Value::boolean(true), Value::integer(1), Value::floating(0.0), Value::boolean(true),
                                            Value::boolean(true), Value::boolean(true)});
           },
           [](const Ts& x) {
             Ts hx = {x[1], x[2]}, params(x.begin() + 3, x.end());
             auto [out, h, c] = at::lstm(x[0], hx, params, true, 1, 0.0, true, true, true);
             return Ts{out, h, c};
           });
  check_op("gru two layers, no biases", {randn({3, 2, 4}), randn({2, 2, 3}), randn({9, 4}), randn({9, 3}), randn({9, 3}), randn({9, 3})},
           [](TraceBuilder& b, const P& p) {
             return call(b, "ltorch.gru", {V(p[0]), V(p[1]), Value::list({V(p[2]), V(p[3]), V(p[4]), V(p[5])}),
                                           Value::boolean(false), Value::integer(2), Value::floating(0.0), Value::boolean(true),
                                           Value::boolean(false), Value::boolean(false)});
           },
           [](const Ts& x) {
             Ts params(x.begin() + 2, x.end());
             auto [out, h] = at::gru(x[0], x[1], params, false, 2, 0.0, true, false, false);
             return Ts{out, h};
           });
}

TEST_P(ExecOps, ExecMoreElementwiseAndMasks) {
  for (std::string name : {"abs", "sign", "sin", "cos", "reciprocal"}) {
    check_op(name, {randn_t({4, 6})}, [name](TraceBuilder& b, const P& p) { return call(b, "ltorch." + name, {V(p[0])}); },
             [name](const Ts& x) {
               const at::Tensor& a = x[0];
               return Ts{name == "abs" ? a.abs() : name == "sign" ? a.sign() : name == "sin" ? a.sin()
                         : name == "cos" ? a.cos() : a.reciprocal()};
             });
  }
  check_op("bitwise_not", {at::rand({3, 4}) > 0.5},
           [](TraceBuilder& b, const P& p) { return call(b, "ltorch.bitwise_not", {V(p[0])}); },
           [](const Ts& x) { return Ts{at::bitwise_not(x[0])}; });
  check_op("minimum", {randn({3, 4}), randn({4})},
           [](TraceBuilder& b, const P& p) { return call(b, "ltorch.minimum", {V(p[0]), V(p[1])}); },
           [](const Ts& x) { return Ts{at::minimum(x[0], x[1])}; });
  check_op("clamp", {randn({5, 4})},
           [](TraceBuilder& b, const P& p) {
             return Value::tuple({call(b, "ltorch.clamp", {V(p[0]), Value::floating(-0.5), Value::floating(0.5)}),
                                  call(b, "ltorch.clamp", {V(p[0]), Value::none(), Value::integer(0)})});
           },
           [](const Ts& x) { return Ts{x[0].clamp(-0.5, 0.5), x[0].clamp_max(0)}; });
  check_op("flip and flatten", {randn({2, 3, 4})},
           [](TraceBuilder& b, const P& p) {
             return Value::tuple({call(b, "ltorch.flip", {V(p[0]), Value::ints({0, -1})}),
                                  call(b, "ltorch.flatten", {V(p[0]), Value::integer(1)})});
           },
           [](const Ts& x) { return Ts{x[0].flip({0, 2}), x[0].flatten(1)}; });
  for (int64_t diagonal : {-1, 0, 2})
    check_op("tril and triu, diagonal " + std::to_string(diagonal), {randn({2, 4, 5})},
             [diagonal](TraceBuilder& b, const P& p) {
               return Value::tuple({call(b, "ltorch.tril", {V(p[0]), Value::integer(diagonal)}),
                                    call(b, "ltorch.triu", {V(p[0]), Value::integer(diagonal)})});
             },
             [diagonal](const Ts& x) { return Ts{x[0].tril(diagonal), x[0].triu(diagonal)}; });
}

TEST_P(ExecOps, ExecShapes) {
  check_op("reshape -1", {randn_t({4, 6})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::reshape(b, p[0], {2, -1, 3})); },
           [](const Ts& x) { return Ts{x[0].reshape({2, -1, 3})}; });
  check_op("view", {randn({4, 6})}, [](TraceBuilder& b, const P& p) { return V(ltorch::view(b, p[0], {24})); },
           [](const Ts& x) { return Ts{x[0].reshape({24})}; });
  check_op("transpose", {randn({2, 3, 4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::transpose(b, p[0], 0, -1)); },
           [](const Ts& x) { return Ts{x[0].transpose(0, -1)}; });
  check_op("permute", {randn({2, 3, 4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::permute(b, p[0], {1, 2, 0})); },
           [](const Ts& x) { return Ts{x[0].permute({1, 2, 0})}; });
  check_op("unsqueeze", {randn_t({2, 3})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::unsqueeze(b, p[0], 1)); },
           [](const Ts& x) { return Ts{x[0].unsqueeze(1)}; });
  check_op("expand", {randn({3, 1})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::expand(b, p[0], {2, -1, 4})); },
           [](const Ts& x) { return Ts{x[0].expand({2, 3, 4})}; });
  check_op("broadcast_in_dim", {randn({3})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::broadcast_in_dim(b, p[0], {2, 3, 4}, {1})); },
           [](const Ts& x) { return Ts{x[0].reshape({1, 3, 1}).expand({2, 3, 4})}; });
  check_op("convert_element_type", {randn({3, 4}) * 10},
           [](TraceBuilder& b, const P& p) { return V(ltorch::convert_element_type(b, p[0], DType::i32)); },
           [](const Ts& x) { return Ts{x[0].to(at::kInt)}; });
  check_op("split", {randn({7, 4})},
           [](TraceBuilder& b, const P& p) {
             std::vector<Value> parts;
             for (auto& t : ltorch::split(b, p[0], 3, 0)) parts.push_back(V(t));
             return Value::tuple(parts);
           },
           [](const Ts& x) { return Ts(at::split(x[0], 3, 0)); });
  check_op("cat", {randn({2, 3}), randn_t({2, 5})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::cat(b, {p[0], p[1]}, 1)); },
           [](const Ts& x) { return Ts{at::cat({x[0], x[1]}, 1)}; });
}

TEST_P(ExecOps, ExecReductions) {
  at::Tensor x = randn({3, 4, 5}).transpose(0, 2);  // [5, 4, 3], non-contiguous
  for (bool keepdim : {false, true}) {
    std::string k = keepdim ? " keepdim" : "";
    check_op("sum dims (0, 2)" + k, {x},
             [keepdim](TraceBuilder& b, const P& p) { return V(ltorch::sum(b, p[0], {0, 2}, keepdim)); },
             [keepdim](const Ts& x) { return Ts{x[0].sum(std::vector<int64_t>{0, 2}, keepdim)}; });
    check_op("sum all" + k, {x}, [keepdim](TraceBuilder& b, const P& p) { return V(ltorch::sum(b, p[0], {}, keepdim)); },
             [keepdim](const Ts& x) { return Ts{x[0].sum(std::vector<int64_t>{0, 1, 2}, keepdim)}; });
    check_op("mean dims (-1, 1)" + k, {x},
             [keepdim](TraceBuilder& b, const P& p) { return V(ltorch::mean(b, p[0], {-1, 1}, keepdim)); },
             [keepdim](const Ts& x) { return Ts{x[0].mean(std::vector<int64_t>{-1, 1}, keepdim)}; });
    check_op("amax dims (1,)" + k, {x},
             [keepdim](TraceBuilder& b, const P& p) { return V(ltorch::amax(b, p[0], {1}, keepdim)); },
             [keepdim](const Ts& x) { return Ts{at::amax(x[0], std::vector<int64_t>{1}, keepdim)}; });
    check_op("amin dims (0, 2)" + k, {x},
             [keepdim](TraceBuilder& b, const P& p) {
               return b.call("ltorch.amin", {V(p[0]), Value::ints({0, 2}), Value::boolean(keepdim)});
             },
             [keepdim](const Ts& x) { return Ts{at::amin(x[0], std::vector<int64_t>{0, 2}, keepdim)}; });
    for (int64_t correction : {0, 1})
      check_op("var_mean correction " + std::to_string(correction) + k, {x},
               [=](TraceBuilder& b, const P& p) {
                 auto [v, m] = ltorch::var_mean(b, p[0], {0, 2}, correction, keepdim);
                 return Value::tuple({V(v), V(m)});
               },
               [=](const Ts& x) {
                 std::vector<int64_t> d{0, 2};
                 bool unbiased = correction == 1;
                 return Ts{at::var(x[0], d, unbiased, keepdim), at::mean(x[0], d, keepdim)};
               });
  }
}

// var, std, cumsum, roll, repeat, addmm, baddbmm, einsum and normalize: each rule and each
// decomposition against LibTorch's own function.
TEST_P(ExecOps, ExecScansRollsAndProducts) {
  auto kw = [](TraceBuilder& b, const std::string& name, std::vector<Value> args, Kwargs kwargs) {
    return b.call(name, std::move(args), std::move(kwargs));
  };
  at::Tensor x = randn({3, 4, 5}).transpose(0, 2);  // [5, 4, 3], non-contiguous
  check_op("var and std", {x},
           [&](TraceBuilder& b, const P& p) {
             return Value::tuple({kw(b, "ltorch.var", {V(p[0]), Value::ints({0, 2}), Value::boolean(false)},
                                     {{"correction", Value::integer(1)}}),
                                  kw(b, "ltorch.std", {V(p[0]), Value::ints({1}), Value::boolean(true)},
                                     {{"correction", Value::integer(0)}})});
           },
           [](const Ts& x) {
             return Ts{at::var(x[0], std::vector<int64_t>{0, 2}, true, false), at::std(x[0], std::vector<int64_t>{1}, false, true)};
           });
  check_op("cumsum", {x}, [](TraceBuilder& b, const P& p) { return V(ltorch::cumsum(b, p[0], 1)); },
           [](const Ts& x) { return Ts{at::cumsum(x[0], 1)}; });
  check_op("roll", {x},
           [](TraceBuilder& b, const P& p) {
             return Value::tuple({call(b, "ltorch.roll", {V(p[0]), Value::ints({2, -1}), Value::ints({0, 2})}),
                                  call(b, "ltorch.roll", {V(p[0]), Value::ints({7}), Value::none()})});
           },
           [](const Ts& x) { return Ts{at::roll(x[0], {2, -1}, {0, 2}), at::roll(x[0], {7})}; });
  check_op("repeat", {randn({2, 3})},
           [](TraceBuilder& b, const P& p) { return call(b, "ltorch.repeat", {V(p[0]), Value::ints({2, 1, 3})}); },
           [](const Ts& x) { return Ts{x[0].repeat({2, 1, 3})}; });
  check_op("addmm", {randn({4}), randn({3, 5}), randn_t({5, 4})},
           [&](TraceBuilder& b, const P& p) {
             return kw(b, "ltorch.addmm", {V(p[0]), V(p[1]), V(p[2])}, {{"beta", Value::floating(0.5)}, {"alpha", Value::integer(2)}});
           },
           [](const Ts& x) { return Ts{at::addmm(x[0], x[1], x[2], 0.5, 2)}; });
  check_op("baddbmm", {randn({2, 3, 4}), randn({2, 3, 5}), randn({2, 5, 4})},
           [&](TraceBuilder& b, const P& p) { return kw(b, "ltorch.baddbmm", {V(p[0]), V(p[1]), V(p[2])}, {}); },
           [](const Ts& x) { return Ts{at::baddbmm(x[0], x[1], x[2])}; });
  check_op("einsum", {randn({2, 3, 4}), randn({2, 4, 5}), randn({5})},
           [](TraceBuilder& b, const P& p) {
             return Value::tuple({call(b, "ltorch.einsum", {Value::string("bij,bjk,k->bi"), V(p[0]), V(p[1]), V(p[2])}),
                                  call(b, "ltorch.einsum", {Value::string("...ij,...jk"), V(p[0]), V(p[1])}),
                                  call(b, "ltorch.einsum", {Value::string("bij->jb"), V(p[0])})});
           },
           [](const Ts& x) {
             return Ts{at::einsum("bij,bjk,k->bi", {x[0], x[1], x[2]}), at::einsum("...ij,...jk", {x[0], x[1]}),
                       at::einsum("bij->jb", {x[0]})};
           });
  check_op("normalize", {x},
           [](TraceBuilder& b, const P& p) {
             std::vector<Value> outs;
             for (double pn : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()})
               outs.push_back(call(b, "ltorch.normalize", {V(p[0]), Value::floating(pn), Value::integer(1), Value::floating(1e-12)}));
             return Value::tuple(outs);
           },
           [](const Ts& x) {
             Ts outs;
             for (double pn : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()})
               outs.push_back(x[0] / at::linalg_vector_norm(x[0], pn, at::IntArrayRef{1}, true, c10::nullopt).clamp_min(1e-12));
             return outs;
           });
}

TEST_P(ExecOps, ExecSelectionAndCreation) {
  check_op("where", {randn({3, 4}) > 0, randn({3, 4}), randn({4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::where(b, p[0], V(p[1]), V(p[2]))); },
           [](const Ts& x) { return Ts{at::where(x[0], x[1], x[2])}; });
  check_op("where with a number", {randn({3, 4}) > 0, randn({3, 4})},
           [](TraceBuilder& b, const P& p) { return V(ltorch::where(b, p[0], V(p[1]), Value::floating(-1.0))); },
           [](const Ts& x) { return Ts{at::where(x[0], x[1], at::full({}, -1.0, at::kFloat))}; });
  check_op("masked_fill", {randn_t({3, 4}), randn({3, 4}) > 0},
           [](TraceBuilder& b, const P& p) { return V(ltorch::masked_fill(b, p[0], p[1], Value::floating(2.0))); },
           [](const Ts& x) { return Ts{x[0].masked_fill(x[1], 2.0)}; });
  Device cpu;
  check_op("arange", {}, [cpu](TraceBuilder& b, const P&) { return V(ltorch::arange(b, 7, cpu)); },
           [](const Ts&) { return Ts{at::arange(7, at::kLong)}; });
  check_op("full", {}, [cpu](TraceBuilder& b, const P&) {
             return V(ltorch::full(b, {2, 3}, Value::floating(1.5), DType::f32, cpu));
           },
           [](const Ts&) { return Ts{at::full({2, 3}, 1.5, at::kFloat)}; });
  check_op("ones", {}, [cpu](TraceBuilder& b, const P&) { return V(ltorch::ones(b, {4}, DType::f64, cpu)); },
           [](const Ts&) { return Ts{at::ones({4}, at::kDouble)}; });
  check_op("zeros", {}, [cpu](TraceBuilder& b, const P&) { return V(ltorch::zeros(b, {2, 2}, DType::i64, cpu)); },
           [](const Ts&) { return Ts{at::zeros({2, 2}, at::kLong)}; });
}

// ---- Thunder fixtures ----

TracePtr fixture(const std::string& name) {
  auto r = parse_trace(testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name));
  EXPECT_TRUE(r.trace) << name << ": " << (r.error ? r.error->message : "");
  return r.trace;
}

// A training batch_norm writes its running statistics (its rule through at::batch_norm, its
// decomposition through prims.copy_), as eager torch does: momentum towards the batch's mean and
// unbiased variance.
TEST(ExecRules, BatchNormWritesItsRunningStatistics) {
  ltorch::register_ops();
  at::manual_seed(0);
  at::Tensor x = at::randn({6, 3, 4}), w = at::randn({3}), bias = at::randn({3});
  at::Tensor mean0 = at::randn({3}), var0 = at::rand({3}) + 0.5;
  TracePtr t = trace_of({x, w, bias, mean0, var0}, [](TraceBuilder& b, const P& p) {
    return call(b, "ltorch.batch_norm", {V(p[0]), V(p[3]), V(p[4]), V(p[1]), V(p[2]), Value::boolean(true),
                                         Value::floating(0.2), Value::floating(1e-5)});
  });
  at::Tensor want_mean = mean0.clone(), want_var = var0.clone();
  at::Tensor want = at::batch_norm(x, w, bias, want_mean, want_var, true, 0.2, 1e-5, false);
  for (bool decompose : {false, true}) {
    SCOPED_TRACE(decompose ? "decomposed" : "rule");
    at::Tensor mean = mean0.clone(), var = var0.clone();
    ExecOptions o;
    o.decompose = decompose;
    expect_close(Executor(o).run(*t, Ts{x, w, bias, mean, var}).tensor(), want, "output");
    expect_close(mean, want_mean, "running_mean");
    expect_close(var, want_var, "running_var");
  }
  const auto& traits = SymbolRegistry::global().find("ltorch.batch_norm")->traits;
  EXPECT_NE(std::find(traits.begin(), traits.end(), "effect"), traits.end()) << "kept by DCE, never merged by CSE";
}

// Every op of Thunder's printouts that the engine runs finds its rule through its bound symbol, the
// one the parser gave it: Thunder's spellings (torch.*, torch_*_prim_impl), the prologue's checks
// and getters in the forms Thunder prints them, ATen fallbacks made on first use. The list holds the
// ops the engine does not run yet; one that gains a rule leaves the list.
TEST(ExecRules, ThunderPrintoutsFindTheirRulesBySymbol) {
  static const std::set<std::string> not_yet = {
    "ltorch._softmax", "ltorch.dim", "ltorch.dropout", "ltorch.getitem", "ltorch.nll_loss_backward", "prims.get_grad",
    "prims.shape", "prims.slice_prim", "smooth_l1_loss_vjp", "thunder.distributed.prims.all_reduce",
    "thunder.distributed.prims.synchronize", "thunder.distributed.prims.wait"};
  std::set<std::string> missing, now_run;
  size_t statements = 0;
  for (const auto& path : testing::all_fixture_files()) {
    auto parsed = parse_trace(testing::read_file(path));
    ASSERT_TRUE(parsed.trace) << path;
    walk(parsed.trace->body, [&](const BoundSymbol& b, int) {
      PrintForm form = b.symbol->form;
      if (form == PrintForm::unpack_trivial || form == PrintForm::unpack_sequence || form == PrintForm::del ||
          form == PrintForm::ret)
        return;  // the executor's own statements
      ++statements;
      bool runs = exec::find_exec_rule(*b.symbol) != nullptr;
      if (!runs && !not_yet.count(b.name())) missing.insert(b.name() + " in " + path.filename().string());
      if (runs && not_yet.count(b.name())) now_run.insert(b.name());
    });
  }
  EXPECT_GT(statements, 10000u);
  EXPECT_TRUE(missing.empty()) << "no rule found through the symbol: " << ::testing::PrintToString(missing);
  EXPECT_TRUE(now_run.empty()) << "these run now; take them off the list: " << ::testing::PrintToString(now_run);
}

TEST_F(ExecTest, ExecThunderLinearForwardAndBackward) {
  at::Tensor x = randn({2, 5}), w = randn({10, 5}), g = randn({2, 10});
  Executor ex;
  RValue fwd = ex.run(*fixture("linear__fwd__06.txt"), Ts{x, w});
  ASSERT_EQ(fwd.kind, RValue::Kind::tuple);
  const RValue* out = fwd[0].find("output");
  ASSERT_NE(out, nullptr);
  expect_close((*out)[0].tensor(), at::linear(x, w), "linear forward");

  RValue bwd = ex.run(*fixture("linear__bwd__00.txt"), {fwd[1], RValue::tuple({RValue::of(g)})});
  at::Tensor xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true);
  at::linear(xr, wr).backward(g);
  EXPECT_TRUE(bwd[0].is_none());
  expect_close(bwd[1].tensor(), wr.grad(), "linear weight grad");
}

TEST_F(ExecTest, ExecThunderMlpForwardAndBackward) {
  at::Tensor x = randn({2, 64}), b1 = randn({256}), w1 = randn({256, 64}) * 0.1, b2 = randn({64}),
             w2 = randn({64, 256}) * 0.1, g = randn({2, 64});
  Executor ex;
  RValue fwd = ex.run(*fixture("mlp__fwd__06.txt"), Ts{x, b1, w1, b2, w2});
  at::Tensor want = at::linear(at::gelu(at::linear(x, w1, b1)), w2, b2);
  expect_close((*fwd[0].find("output"))[0].tensor(), want, "mlp forward");

  RValue bwd = ex.run(*fixture("mlp__bwd__00.txt"), {fwd[1], RValue::tuple({RValue::of(g)})});
  Ts leaves = {x, b1, w1, b2, w2};
  for (auto& t : leaves) t = t.clone().requires_grad_(true);
  at::linear(at::gelu(at::linear(leaves[0], leaves[2], leaves[1])), leaves[4], leaves[3]).backward(g);
  ASSERT_EQ(bwd.items.size(), 5u);
  EXPECT_TRUE(bwd[0].is_none());
  const char* names[] = {"x", "fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"};
  for (size_t k = 1; k < 5; ++k) expect_close(bwd[k].tensor(), leaves[k].grad(), std::string("grad of ") + names[k]);
}

// Thunder's final traces of a conv net (tests/fixtures/thunder_cpu/blocks.py: conv, batch norm in
// training, max pool, strided conv, adaptive average pool, linear, log_softmax), run on the engine:
// the output, the running statistics its copy_ statements write, and every gradient, against LibTorch.
TEST_F(ExecTest, ExecThunderConvNetForwardAndBackward) {
  at::Tensor x = randn({2, 3, 16, 16}), bn_bias = randn({8}), tracked = at::zeros({}, at::kLong), mean = randn({8}),
             var = at::rand({8}) + 0.5, bn_weight = randn({8}), bias = randn({8}), weight = randn({8, 3, 3, 3}) * 0.3,
             c2_bias = randn({16}), c2_weight = randn({16, 8, 3, 3}) * 0.2, fc_bias = randn({10}),
             fc_weight = randn({10, 144}) * 0.1, g = randn({2, 10});
  Ts inputs = {x, bn_bias, tracked, mean.clone(), var.clone(), bn_weight, bias, weight, c2_bias, c2_weight, fc_bias, fc_weight};
  Executor ex;
  RValue fwd = ex.run(*fixture("../thunder_cpu/convnet__fwd__07.txt"), inputs);

  Ts leaves = inputs;
  for (size_t k : {1, 5, 6, 7, 8, 9, 10, 11}) leaves[k] = leaves[k].clone().requires_grad_(true);
  at::Tensor want_mean = mean.clone(), want_var = var.clone();
  at::Tensor h = at::conv2d(x, leaves[7], leaves[6], 1, 1);
  h = at::relu(at::batch_norm(h, leaves[5], leaves[1], want_mean, want_var, true, 0.1, 1e-5, false));
  h = at::relu(at::conv2d(at::max_pool2d(h, 2, 2), leaves[9], leaves[8], 2));
  at::Tensor want = at::log_softmax(at::linear(at::adaptive_avg_pool2d(h, {3, 3}).flatten(1), leaves[11], leaves[10]), -1);
  expect_close((*fwd[0].find("output"))[0].tensor(), want, "convnet forward");
  expect_close(inputs[3], want_mean, "running_mean written by copy_");
  expect_close(inputs[4], want_var, "running_var written by copy_");
  EXPECT_EQ(inputs[2].item<int64_t>(), 1) << "num_batches_tracked";

  RValue bwd = ex.run(*fixture("../thunder_cpu/convnet__bwd__00.txt"), {fwd[1], RValue::tuple({RValue::of(g)})});
  want.backward(g);
  ASSERT_EQ(bwd.items.size(), 12u);
  for (size_t k : {1, 5, 6, 7, 8, 9, 10, 11})
    expect_close(bwd[k].tensor(), leaves[k].grad(), "grad of computation input " + std::to_string(k));
}

// A module for prologues: parameters and attributes by qualified name.
struct TestModule : exec::ModuleView {
  std::map<std::string, at::Tensor> params;
  std::map<std::string, Attr> attrs;
  std::optional<at::Tensor> parameter(const std::string& n) const override {
    auto it = params.find(n);
    return it == params.end() ? std::nullopt : std::optional<at::Tensor>(it->second);
  }
  std::optional<Attr> attribute(const std::string& n) const override {
    auto it = attrs.find(n);
    return it == attrs.end() ? std::nullopt : std::optional<Attr>(it->second);
  }
};

TestModule linear_module() {
  TestModule m;
  m.params["weight"] = randn({10, 5}).requires_grad_(true);
  m.attrs = {{"training", true}, {"in_features", int64_t{5}}, {"out_features", int64_t{10}}};
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ExecError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(ExecTest, ExecThunderPrologueUnpacksAndChecks) {
  for (const char* file : {"linear__prologue__01.txt", "linear__prologue__01.python.txt"}) {
    SCOPED_TRACE(file);
    TracePtr pro = fixture(file);
    TestModule m = linear_module();
    ExecOptions o;
    o.module = &m;
    Executor ex(o);
    at::Tensor x = randn({2, 5});
    RValue r = ex.run(*pro, {RValue::of(x)});
    EXPECT_TRUE(at::equal(r[0][0].tensor(), x));
    EXPECT_TRUE(at::equal(r[0][1].tensor(), m.params["weight"]));

    EXPECT_EQ(error_of([&] { ex.run(*pro, {RValue::of(randn({3, 5}))}); }),
              "input 'input': expected shape (2, 5), got (3, 5)");
    EXPECT_EQ(error_of([&] { ex.run(*pro, {RValue::of(randn({2, 5}).to(at::kDouble))}); }),
              "input 'input': expected dtype torch.float32, got torch.float64");
    EXPECT_EQ(error_of([&] { ex.run(*pro, std::vector<RValue>{}); }), "input 'args': expected length 1, got 0");
    EXPECT_EQ(error_of([&] { ex.run(*pro, {RValue::of(x)}, {{"y", RValue::of(x)}}); }),
              "input 'kwargs': expected length 0, got 1");
    m.attrs["in_features"] = int64_t{6};
    EXPECT_EQ(error_of([&] { ex.run(*pro, {RValue::of(x)}); }), "input 'i1': expected int 5, got int 6");
    m.attrs["in_features"] = int64_t{5};
    m.params["weight"] = randn({10, 5});
    EXPECT_EQ(error_of([&] { ex.run(*pro, {RValue::of(x)}); }),
              "input 't_weight': expected requires_grad=True, got False");
    m.params.clear();
    EXPECT_NE(error_of([&] { ex.run(*pro, {RValue::of(x)}); }).find("no parameter or buffer 'weight'"), std::string::npos);
  }
  // Without a module the prologue says what it needs.
  EXPECT_NE(error_of([&] { Executor().run(*fixture("linear__prologue__01.txt"), {RValue::of(randn({2, 5}))}); })
                .find("ExecOptions::module"),
            std::string::npos);
}

TEST_F(ExecTest, ExecThunderMlpPrologueWithSubmodules) {
  TestModule m;
  m.params = {{"fc1.weight", randn({256, 64}).requires_grad_(true)}, {"fc1.bias", randn({256}).requires_grad_(true)},
              {"fc2.weight", randn({64, 256}).requires_grad_(true)}, {"fc2.bias", randn({64}).requires_grad_(true)}};
  m.attrs = {{"training", true},         {"fc1.training", true},         {"fc1.in_features", int64_t{64}},
             {"fc1.out_features", int64_t{256}}, {"act.approximate", std::string("none")}, {"fc2.training", true},
             {"fc2.in_features", int64_t{256}}, {"fc2.out_features", int64_t{64}}};
  ExecOptions o;
  o.module = &m;
  Executor ex(o);
  RValue r = ex.run(*fixture("mlp__prologue__00.txt"), {RValue::of(randn({2, 64}))});
  ASSERT_EQ(r[0].items.size(), 5u);
  EXPECT_TRUE(at::equal(r[0][2].tensor(), m.params["fc1.weight"]));
  m.attrs["act.approximate"] = std::string("tanh");
  EXPECT_EQ(error_of([&] { ex.run(*fixture("mlp__prologue__00.txt"), {RValue::of(randn({2, 64}))}); }),
            "input 's5': expected str 'none', got str 'tanh'");
}

TEST_F(ExecTest, ExecOpaqueSymbolIsRefused) {
  auto r = parse_trace("def computation(x):\n  # x: \"cpu f32[2]\"\n  t0 = mystery.op(x)  # t0: \"cpu f32[2]\"\n  return t0");
  ASSERT_TRUE(r.trace) << r.error->message;
  std::string msg = error_of([&] { Executor().run(*r.trace, Ts{randn({2})}); });
  EXPECT_NE(msg.find("'mystery.op'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not executable"), std::string::npos) << msg;
  // Registration is open: a rule makes it executable.
  exec::register_exec_rule("mystery.op", exec::SimpleExecRule([](const std::vector<RValue>& a, const exec::RKwargs&) {
                             return RValue::of(a[0].tensor() * 3);
                           }));
  at::Tensor x = randn({2});
  expect_close(Executor().run(*r.trace, Ts{x}).tensor(), x * 3, "registered rule");
}

// An executor keeps each statement's rule between runs of a trace; a rule set in between is the
// one the next run uses.
TEST_F(ExecTest, ARuleSetBetweenRunsOfOneTraceIsTheOneTheNextRunUses) {
  auto r = parse_trace("def computation(x):\n  # x: \"cpu f32[2]\"\n  t0 = mystery.scale(x)  # t0: \"cpu f32[2]\"\n  return t0");
  ASSERT_TRUE(r.trace) << r.error->message;
  auto scale_by = [](double k) {
    return exec::SimpleExecRule([k](const std::vector<RValue>& a, const exec::RKwargs&) { return RValue::of(a[0].tensor() * k); });
  };
  exec::register_exec_rule("mystery.scale", scale_by(2));
  Executor ex;
  at::Tensor x = randn({2});
  expect_close(ex.run(*r.trace, Ts{x}).tensor(), x * 2, "first rule");
  expect_close(ex.run(*r.trace, Ts{x}).tensor(), x * 2, "first rule, kept");
  exec::register_exec_rule("mystery.scale", scale_by(5));
  expect_close(ex.run(*r.trace, Ts{x}).tensor(), x * 5, "the rule set after two runs");
}

// Thunder prints view, permute and expand with their sizes as separate arguments (`*shape`).
TEST_F(ExecTest, ExecShapesGivenAsSeparateArguments) {
  auto r = parse_trace(
      "def computation(x):\n  # x: \"cpu f32[2, 12]\"\n"
      "  t0 = ltorch.view(x, 2, 3, 4)  # t0: \"cpu f32[2, 3, 4]\"\n"
      "  t1 = ltorch.permute(t0, 2, 0, 1)  # t1: \"cpu f32[4, 2, 3]\"\n"
      "  t2 = ltorch.reshape(t1, (8, 3))  # t2: \"cpu f32[8, 3]\"\n"
      "  return t2");
  ASSERT_TRUE(r.trace) << r.error->message;
  at::Tensor x = randn({2, 12});
  expect_close(Executor().run(*r.trace, Ts{x}).tensor(), x.view({2, 3, 4}).permute({2, 0, 1}).reshape({8, 3}),
               "view, permute and reshape");
}

// The torch executor's prim implementations and functional calls, as Thunder's final traces write them.
TEST_F(ExecTest, ExecTorchExecutorSpellings) {
  auto r = parse_trace(
      "def computation(x, y):\n  # x: \"cpu f32[2, 8]\"\n  # y: \"cpu f32[4, 4]\"\n"
      "  t0 = torch_prims_reshape_impl(x, (4, 4))  # t0: \"cpu f32[4, 4]\"\n"
      "  t1 = torch_slice_prim_impl(t0, [0, 1], [4, 3], [1, 1])  # t1: \"cpu f32[4, 2]\"\n"
      "  t2 = torch_div_prim_impl(t1, 2.0)  # t2: \"cpu f32[4, 2]\"\n"
      "  t3 = torch.nn.functional.smooth_l1_loss(t0, y)  # t3: \"cpu f32[]\"\n"
      "  t4 = torch.arange(start=1, step=2, end=9, device=torch.device(\"cpu\"), dtype=None)  # t4: \"cpu i64[4]\"\n"
      "  return (t2, t3, t4)");
  ASSERT_TRUE(r.trace) << r.error->message;
  at::Tensor x = randn({2, 8}), y = randn({4, 4});
  auto out = Executor().run(*r.trace, Ts{x, y});
  expect_close(out.items.at(0).tensor(), x.reshape({4, 4}).slice(1, 1, 3) / 2.0, "reshape, slice, div");
  expect_close(out.items.at(1).tensor(), at::smooth_l1_loss(x.reshape({4, 4}), y), "smooth_l1_loss");
  EXPECT_TRUE(at::equal(out.items.at(2).tensor(), at::arange(1, 9, 2, at::kLong))) << out.items.at(2).tensor();
}

// A helper of Thunder's backward that the registry lacks, with a destructuring target.
TEST_F(ExecTest, ExecOpaqueSymbolOfAThunderPrintoutIsNamed) {
  auto r = parse_trace(
      "def backward_fn(x, y):\n  # x: \"cpu f32[2]\"\n  # y: \"cpu f32[2]\"\n"
      "  [t0, t1] = smooth_l1_loss_vjp(((x, y), {}), x)\n  return (t0, t1)");
  ASSERT_TRUE(r.trace) << r.error->message;
  std::string msg = error_of([&] { Executor().run(*r.trace, Ts{randn({2}), randn({2})}); });
  EXPECT_NE(msg.find("'smooth_l1_loss_vjp'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[t0, t1] = smooth_l1_loss_vjp(((x, y), {}), x)"), std::string::npos) << msg;
}

// A loss's reduction that is not 'none', 'mean' or 'sum' is named, with the values it takes.
TEST_F(ExecTest, ExecLossReductionIsChecked) {
  auto r = parse_trace(
      "def computation(x, y):\n  # x: \"cpu f32[2]\"\n  # y: \"cpu f32[2]\"\n"
      "  t0 = torch.nn.functional.mse_loss(x, y, reduction='avg')  # t0: \"cpu f32[]\"\n  return t0");
  ASSERT_TRUE(r.trace) << r.error->message;
  std::string msg = error_of([&] { Executor().run(*r.trace, Ts{randn({2}), randn({2})}); });
  EXPECT_NE(msg.find("ltorch.mse_loss: reduction must be 'none', 'mean' or 'sum', got str 'avg'"), std::string::npos) << msg;
}

// Thunder's printouts pass attention's is_causal (and attn_mask) by keyword.
TEST_F(ExecTest, ExecAttentionTakesIsCausalByKeyword) {
  auto r = parse_trace(
      "def computation(q, k, v):\n"
      "  # q: \"cpu f32[2, 4, 8]\"\n  # k: \"cpu f32[2, 4, 8]\"\n  # v: \"cpu f32[2, 4, 8]\"\n"
      "  t0 = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # t0: \"cpu f32[2, 4, 8]\"\n"
      "  return t0");
  ASSERT_TRUE(r.trace) << r.error->message;
  at::Tensor q = randn({2, 4, 8}), k = randn({2, 4, 8}), v = randn({2, 4, 8});
  expect_close(Executor().run(*r.trace, Ts{q, k, v}).tensor(), reference_attention(q, k, v, true), "causal by keyword");
}

TEST_F(ExecTest, ExecHooksAndFirstNonFinite) {
  at::Tensor x = at::tensor({1.0f, -1.0f, 4.0f});
  TracePtr t = trace_of({x}, [](TraceBuilder& b, const P& p) {
    T e = ltorch::exp(b, p[0]);
    T l = ltorch::log(b, p[0]);  // log(-1) = NaN
    return V(ltorch::add(b, V(e), V(l)));
  });
  ExecOptions o;
  o.detect_non_finite = true;
  int timed = 0;
  std::vector<std::string> observed;
  double last_start = -1;
  o.on_timing = [&](const BoundSymbol&, const exec::SymbolTime& s) {
    EXPECT_EQ(s.index, static_cast<size_t>(timed % 4));  // every symbol, in order, once per run
    ++timed;
    EXPECT_GE(s.seconds, 0.0);
    if (s.index == 0) last_start = -1;
    EXPECT_GE(s.start_seconds, last_start);
    last_start = s.start_seconds;
    EXPECT_FALSE(s.device_timer);
  };
  o.on_output = [&](const BoundSymbol&, const ProxyPtr& p, const at::Tensor&) { observed.push_back(p->name); };
  Executor ex(o);
  ex.run(*t, Ts{x});
  EXPECT_EQ(timed, 4);  // the input and three ops
  EXPECT_EQ(observed.size(), 4u);
  ASSERT_TRUE(ex.first_non_finite());
  const auto& nf = *ex.first_non_finite();
  EXPECT_EQ(nf.symbol, "ltorch.log");
  EXPECT_EQ(nf.nan_count, 1);
  EXPECT_GT(nf.line, 0);
  EXPECT_NE(nf.describe().find("ltorch.log"), std::string::npos) << nf.describe();
  ex.run(*t, Ts{at::tensor({1.0f, 2.0f, 4.0f})});
  EXPECT_FALSE(ex.first_non_finite());
}

// A strided view that a batched matmul reads is made contiguous once, when it is written: the
// trace's later readers (here a second matmul and the return) get that copy, with the same values.
TEST_F(ExecTest, ExecMatmulOperandIsMadeContiguousOnce) {
  at::Tensor x = randn({2, 3, 4, 5});
  TracePtr t = trace_of({x}, [](TraceBuilder& b, const P& p) {
    T q = ltorch::transpose(b, p[0], 1, 2);  // [2, 4, 3, 5]: its batch dims do not flatten
    T scores = ltorch::matmul(b, q, ltorch::transpose(b, q, -2, -1));
    T out = ltorch::matmul(b, scores, q);
    return Value::tuple({V(out), V(q)});
  });
  std::map<std::string, bool> contiguous;
  ExecOptions o;
  o.on_output = [&](const BoundSymbol&, const ProxyPtr& p, const at::Tensor& v) {
    contiguous[p->name] = v.is_contiguous();
  };
  Executor ex(o);
  Ts got = exec::tensors_of(ex.run(*t, Ts{x}));
  ASSERT_EQ(got.size(), 2u);
  at::Tensor q = x.transpose(1, 2);
  expect_close(got[0], at::matmul(at::matmul(q, q.transpose(-2, -1)), q), "attention-like product");
  EXPECT_TRUE(at::equal(got[1], q));
  EXPECT_TRUE(got[1].is_contiguous());
  EXPECT_TRUE(contiguous.at(t->body[1].outputs[0]->name)) << "the transpose feeding the matmuls";
  EXPECT_FALSE(exec::rules::batched_matmul_copies(got[1]));
  EXPECT_TRUE(exec::rules::batched_matmul_copies(q));
  EXPECT_FALSE(exec::rules::batched_matmul_copies(got[1].transpose(-2, -1)));
}

// The executor keeps each statement's constant arguments between runs, but no tensor: after a run
// the caller's tensors are referenced by the caller alone.
TEST_F(ExecTest, ExecKeepsNoTensorOfARunAfterIt) {
  at::Tensor x = randn({4, 6});
  TracePtr t = trace_of({x}, [](TraceBuilder& b, const P& p) {
    T y = ltorch::reshape(b, p[0], {6, 4});
    return V(ltorch::sum(b, ltorch::exp(b, y), {0}, false));
  });
  Executor ex;
  for (int run = 0; run < 2; ++run) {
    Ts got = exec::tensors_of(ex.run(*t, Ts{x}));
    expect_close(got.at(0), x.reshape({6, 4}).exp().sum(0), "run " + std::to_string(run));
    got.clear();
    EXPECT_EQ(x.use_count(), 1) << "run " << run;
  }
}

// layer_norm_backward takes the statistics its forward computed on the same input, and only while
// that input is unchanged: after an in-place update it computes them again.
TEST_F(ExecTest, ExecLayerNormBackwardTakesTheForwardsStatistics) {
  at::Tensor x = randn({2, 3, 8}), w = randn({8}), bias = randn({8}), g = randn({2, 3, 8});
  TracePtr forward = trace_of({x, w, bias}, [](TraceBuilder& b, const P& p) {
    return V(ltorch::layer_norm(b, p[0], {8}, p[1], p[2], 1e-5));
  });
  TracePtr backward = trace_of({g, x, w, bias}, [](TraceBuilder& b, const P& p) {
    auto [ga, gw, gb] = ltorch::layer_norm_backward(b, p[0], p[1], {8}, p[2], p[3], 1e-5);
    return Value::tuple({V(ga), V(gw), V(gb)});
  });
  auto reference = [&](const at::Tensor& input) {
    at::Tensor xr = input.clone().requires_grad_(true), wr = w.clone().requires_grad_(true),
               br = bias.clone().requires_grad_(true);
    at::layer_norm(xr, {8}, wr, br, 1e-5).backward(g);
    return Ts{xr.grad(), wr.grad(), br.grad()};
  };
  Executor ex;
  ex.run(*forward, Ts{x, w, bias});
  Ts got = exec::tensors_of(ex.run(*backward, Ts{g, x, w, bias}));
  Ts want = reference(x);
  for (size_t k = 0; k < 3; ++k) expect_close(got[k], want[k], "gradient " + std::to_string(k) + " after the forward");

  ex.run(*forward, Ts{x, w, bias});
  x.mul_(3.0).add_(1.0);  // the forward's statistics no longer describe x
  got = exec::tensors_of(ex.run(*backward, Ts{g, x, w, bias}));
  want = reference(x);
  for (size_t k = 0; k < 3; ++k) expect_close(got[k], want[k], "gradient " + std::to_string(k) + " after x changed");
}

// The Batch Gradients pass: same-shaped gradients that only the return reads become one stack,
// one batched op and one unbind per group, with the statements' values; a matmul whose output
// another statement reads stays as it is.
TEST_F(ExecTest, BatchGradientsPassKeepsTheValues) {
  Ts in{randn({5, 3}), randn({3, 4}), randn({5, 3}), randn({3, 4}), randn({5, 3}), randn({3, 4}), randn({2, 5, 4}),
        randn({2, 5, 4})};
  TracePtr t = trace_of(in, [](TraceBuilder& b, const P& p) {
    T used = ltorch::matmul(b, p[4], p[5]);  // read by the exp below: stays
    return Value::tuple({V(ltorch::matmul(b, p[0], p[1])), V(ltorch::matmul(b, p[2], p[3])), V(ltorch::exp(b, used)),
                         V(ltorch::sum(b, p[6], {0, -2}, false)), V(ltorch::sum(b, p[7], {0, -2}, false))});
  });
  std::vector<int64_t> batch_dims{0, 1};
  Ts want{at::mm(in[0], in[1]), at::mm(in[2], in[3]), at::mm(in[4], in[5]).exp(), in[6].sum(batch_dims),
          in[7].sum(batch_dims)};
  TracePtr batched = passes::batch_gradients(*t);
  std::map<std::string, int> calls;
  for (const auto& s : batched->body) ++calls[s.name()];
  EXPECT_EQ(calls["ltorch.matmul"], 2) << print_trace(*batched) << "the two returned matmuls as one, the read one alone";
  EXPECT_EQ(calls["ltorch.sum"], 1) << print_trace(*batched);
  EXPECT_EQ(calls["ltorch.stack"], 3) << print_trace(*batched);
  EXPECT_EQ(calls["ltorch.unbind"], 2) << print_trace(*batched);
  EXPECT_EQ(passes::batch_gradients(*batched)->body.size(), batched->body.size()) << "nothing left to batch";
  // It prints and parses back, and runs to the statements' values.
  TracePtr reparsed = parse_trace(print_trace(*batched)).trace;
  ASSERT_TRUE(reparsed);
  EXPECT_EQ(print_trace(*reparsed), print_trace(*batched));
  for (const auto& trace : {t, batched, reparsed}) {
    Ts got = exec::tensors_of(Executor().run(*trace, in));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], "output " + std::to_string(i));
  }
  // The batched statements differentiate like the ones they replace.
  EXPECT_NE(find_grad_rule(*SymbolRegistry::global().find("ltorch.stack")), nullptr);
  EXPECT_NE(find_grad_rule(*SymbolRegistry::global().find("ltorch.unbind")), nullptr);
}

// On CUDA, attention's backward takes the log-sum-exp its fused forward computed for the same
// output, and only while q, k and v are unchanged: after an in-place update it computes it again.
TEST_F(ExecTest, ExecAttentionBackwardTakesTheForwardsLogSumExp) {
  Device cuda{Device::Kind::cuda, 0};
  if (auto why = exec::device_unavailable(cuda.str()); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  if (!ltorch::fused_attention_on(cuda)) GTEST_SKIP() << "LibTorch before 2.1 has no fused attention kernels";
  auto on_gpu = [](std::vector<int64_t> s) { return at::randn(s).cuda(); };
  at::Tensor q = on_gpu({2, 4, 16, 8}), k = on_gpu({2, 4, 16, 8}), v = on_gpu({2, 4, 16, 8}), g = on_gpu({2, 4, 16, 8});
  TracePtr forward = trace_of({q, k, v}, [](TraceBuilder& b, const P& p) {
    return V(ltorch::scaled_dot_product_attention(b, p[0], p[1], p[2], nullptr, true));
  });
  TracePtr backward = trace_of({g, q, k, v, q}, [](TraceBuilder& b, const P& p) {
    auto [gq, gk, gv] = ltorch::scaled_dot_product_attention_backward(b, p[0], p[1], p[2], p[3], nullptr, p[4], true);
    return Value::tuple({V(gq), V(gk), V(gv)});
  });
  auto reference = [&] { return reference_attention_grads(g, q, k, v, true); };
  ExecOptions options;
  options.device = cuda;
  Executor ex(options);
  at::Tensor out = ex.run(*forward, Ts{q, k, v}).tensor();
  Ts got = exec::tensors_of(ex.run(*backward, Ts{g, q, k, v, out}));
  Ts want = reference();
  for (size_t i = 0; i < 3; ++i) expect_close(got[i], want[i], "gradient " + std::to_string(i) + " after the forward");

  out = ex.run(*forward, Ts{q, k, v}).tensor();
  k.mul_(3.0).add_(1.0);  // the forward's log-sum-exp no longer describes k
  got = exec::tensors_of(ex.run(*backward, Ts{g, q, k, v, out}));
  want = reference();
  for (size_t i = 0; i < 3; ++i) expect_close(got[i], want[i], "gradient " + std::to_string(i) + " after k changed");
}

// small_gemm against double-precision products, for each way the step's gemms lay out their
// operands (row-major, transposed, a slice's leading dimension), with and without a bias, in f32
// and bf16; and what it declines (the caller runs ATen then).
TEST(SmallGemm, MatchesTheProductForEveryLayout) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  ASSERT_TRUE(exec::small_gemm_available());
  auto on = at::TensorOptions().device(at::kCUDA);
  at::Tensor wide = at::randn({32, 200}, on);  // its slices have leading dimension 200
  struct Case {
    std::string name;
    at::Tensor a, b;
  };
  std::vector<Case> cases{{"row-major a and b", at::randn({32, 64}, on), at::randn({64, 48}, on)},
                          {"b transposed (a linear's weight)", at::randn({32, 64}, on), at::randn({48, 64}, on).t()},
                          {"a transposed (a weight's gradient)", at::randn({64, 32}, on).t(), at::randn({64, 48}, on)},
                          {"a a slice", wide.narrow(1, 8, 64), at::randn({64, 48}, on)},
                          {"one row", at::randn({1, 64}, on), at::randn({64, 48}, on)},
                          {"one column", at::randn({32, 64}, on), at::randn({64, 1}, on)}};
  for (const auto& c : cases)
    for (bool with_bias : {false, true})
      for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
        std::string what = c.name + (with_bias ? ", bias" : "") + (dtype == at::kFloat ? ", f32" : ", bf16");
        at::Tensor a = c.a.to(dtype), b = c.b.to(dtype);
        at::Tensor bias = with_bias ? at::randn({b.size(1)}, on).to(dtype) : at::Tensor();
        at::Tensor got = exec::small_gemm(a, b, bias);
        ASSERT_TRUE(got.defined()) << what;
        EXPECT_TRUE(got.is_contiguous()) << what;
        at::Tensor want = at::mm(a.to(at::kDouble), b.to(at::kDouble));
        if (with_bias) want = want + bias.to(at::kDouble);
        double tolerance = dtype == at::kFloat ? 1e-4 : 5e-2;
        double scale = std::max(1.0, want.abs().max().item<double>());
        EXPECT_LE((got.to(at::kDouble) - want).abs().max().item<double>(), tolerance * scale) << what;
      }
  at::Tensor a = at::randn({32, 64}, on), b = at::randn({64, 48}, on);
  EXPECT_FALSE(exec::small_gemm(a.cpu(), b.cpu()).defined()) << "CPU operands";
  EXPECT_FALSE(exec::small_gemm(a.to(at::kDouble), b.to(at::kDouble)).defined()) << "f64";
  EXPECT_FALSE(exec::small_gemm(a, b.to(at::kBFloat16)).defined()) << "mixed dtypes";
  at::Tensor strided = at::randn({64, 48, 2}, on).select(2, 0);
  at::Tensor small = exec::small_gemm(a, strided);  // (up to kSmallProductWork: the kernel reads any strides)
  ASSERT_TRUE(small.defined()) << "no unit stride, a small product";
  EXPECT_LE((small.to(at::kDouble) - at::mm(a.to(at::kDouble), strided.to(at::kDouble))).abs().max().item<double>(), 1e-3);
  EXPECT_FALSE(exec::small_gemm(at::randn({256, 512}, on), at::randn({512, 64, 2}, on).select(2, 0)).defined())
      << "no unit stride, above kSmallProductWork (cuBLASLt's)";
  EXPECT_FALSE(exec::small_gemm(at::randn({1024, 64}, on), at::randn({64, 1024}, on)).defined()) << "large output";
}

// small_linear, the executor's linear on CUDA, against double-precision x @ w^T + bias: a batch of
// tokens, a weight stored row-major and as a transposed view, with and without a bias, in f32 and
// bf16; a matrix x is read by its strides, a strided x of more dimensions is declined (the caller
// runs ATen then).
TEST(SmallGemm, LinearMatchesTheProduct) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  auto on = at::TensorOptions().device(at::kCUDA);
  at::Tensor x = at::randn({2, 16, 64}, on);
  for (bool weight_transposed : {false, true})
    for (bool with_bias : {false, true})
      for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
        std::string what = std::string(weight_transposed ? "w a transposed view" : "w row-major") +
                           (with_bias ? ", bias" : "") + (dtype == at::kFloat ? ", f32" : ", bf16");
        at::Tensor w = (weight_transposed ? at::randn({64, 48}, on).t() : at::randn({48, 64}, on)).to(dtype);
        at::Tensor bias = with_bias ? at::randn({48}, on).to(dtype) : at::Tensor();
        at::Tensor xd = x.to(dtype);
        at::Tensor got = exec::small_linear(xd, w, bias);
        ASSERT_TRUE(got.defined()) << what;
        EXPECT_EQ(got.sizes(), (std::vector<int64_t>{2, 16, 48})) << what;
        EXPECT_TRUE(got.is_contiguous()) << what;
        at::Tensor want = at::linear(xd.to(at::kDouble), w.to(at::kDouble), with_bias ? bias.to(at::kDouble) : at::Tensor());
        double tolerance = dtype == at::kFloat ? 1e-4 : 5e-2;
        double scale = std::max(1.0, want.abs().max().item<double>());
        EXPECT_LE((got.to(at::kDouble) - want).abs().max().item<double>(), tolerance * scale) << what;
      }
  at::Tensor w = at::randn({48, 64}, on), bias = at::randn({48}, on), residual = at::randn({2, 16, 48}, on);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    at::Tensor xd = x.to(dtype), wd = w.to(dtype), bd = bias.to(dtype), rd = residual.to(dtype);
    at::Tensor got = exec::small_linear(xd, wd, bd, rd);
    ASSERT_TRUE(got.defined()) << "with a residual";
    at::Tensor want = at::linear(xd.to(at::kDouble), wd.to(at::kDouble), bd.to(at::kDouble)) + rd.to(at::kDouble);
    double tolerance = dtype == at::kFloat ? 1e-4 : 5e-2;
    EXPECT_LE((got.to(at::kDouble) - want).abs().max().item<double>(),
              tolerance * std::max(1.0, want.abs().max().item<double>()))
        << "with a residual, " << (dtype == at::kFloat ? "f32" : "bf16");
  }
  EXPECT_FALSE(exec::small_linear(x, w, bias, at::randn({48}, on)).defined()) << "a residual to broadcast";
  EXPECT_FALSE(exec::small_linear(x, w, bias, at::randn({2, 48, 16}, on).transpose(1, 2)).defined())
      << "a strided residual";
  EXPECT_FALSE(exec::small_linear(x, w, bias, residual.to(at::kDouble)).defined()) << "a residual of another dtype";
  for (at::Tensor x2 : {at::randn({64, 32}, on).t(), at::randn({32, 128}, on).narrow(1, 0, 64)}) {
    at::Tensor got = exec::small_linear(x2, w, bias);
    ASSERT_TRUE(got.defined()) << "a matrix x of strides " << x2.strides();
    at::Tensor want = at::linear(x2.to(at::kDouble), w.to(at::kDouble), bias.to(at::kDouble));
    EXPECT_LE((got.to(at::kDouble) - want).abs().max().item<double>(), 1e-4 * std::max(1.0, want.abs().max().item<double>()))
        << "a matrix x of strides " << x2.strides();
  }
  EXPECT_FALSE(exec::small_linear(x.transpose(0, 1), w).defined()) << "strided x of three dimensions";
  EXPECT_FALSE(exec::small_linear(x, at::randn({48, 32}, on)).defined()) << "depths differ";
  EXPECT_FALSE(exec::small_linear(x.cpu(), w.cpu()).defined()) << "CPU operands";
}

// The Residual Epilogues pass and its run: a linear whose output only the next statement, an add,
// reads becomes a region with it, which runs on CUDA as one product (the add in the gemm's
// epilogue) and elsewhere member by member; a scaled add and a linear output read again stay as
// they are; a residual the add broadcasts makes a region that runs its members.
constexpr const char* kLinearsAndAdds = R"(import torch
import thunder.torch as ltorch
from thunder.executors.torchex import no_autocast

@torch.no_grad()
@no_autocast
def computation(x, w, b, r, v):
  # x: "cuda:0 f32[2, 16, 48]"
  # w: "cuda:0 f32[48, 48]"
  # b: "cuda:0 f32[48]"
  # r: "cuda:0 f32[2, 16, 48]"
  # v: "cuda:0 f32[48]"
  t0 = prims.linear(x, w, b)  # t0: "cuda:0 f32[2, 16, 48]"
  t1 = ltorch.add(r, t0, alpha=1)  # t1: "cuda:0 f32[2, 16, 48]"
  t2 = prims.linear(t1, w, None)  # t2: "cuda:0 f32[2, 16, 48]"
  t3 = ltorch.add(t2, t1)  # t3: "cuda:0 f32[2, 16, 48]"
  t4 = prims.linear(t3, w, b)  # t4: "cuda:0 f32[2, 16, 48]"
  t5 = ltorch.add(t4, t3, alpha=2)  # t5: "cuda:0 f32[2, 16, 48]"
  t6 = prims.linear(t5, w, b)  # t6: "cuda:0 f32[2, 16, 48]"
  t7 = ltorch.add(t6, t5, alpha=1)  # t7: "cuda:0 f32[2, 16, 48]"
  t8 = prims.linear(t7, w, b)  # t8: "cuda:0 f32[2, 16, 48]"
  t9 = ltorch.add(t8, v, alpha=1)  # t9: "cuda:0 f32[2, 16, 48]"
  return (t9, t6)
)";

TracePtr linears_and_adds_with_regions() {
  auto parsed = parse_trace(kLinearsAndAdds);
  if (!parsed) throw std::runtime_error(parsed.error ? parsed.error->message : "kLinearsAndAdds does not parse");
  return passes::residual_epilogues(*parsed.trace);
}

Ts linears_and_adds_inputs(at::Device device) {
  auto on = at::TensorOptions().device(device);
  at::manual_seed(11);
  return {at::randn({2, 16, 48}, on), at::randn({48, 48}, on) * 0.2, at::randn({48}, on), at::randn({2, 16, 48}, on),
          at::randn({48}, on)};
}

TEST_F(ExecTest, ResidualEpiloguesPassPairsALinearWithTheAddItFeeds) {
  TracePtr t = linears_and_adds_with_regions();
  std::vector<std::string> regions;
  for (const auto& b : t->body)
    if (passes::is_fusion_region(b)) {
      ASSERT_EQ(b.subsymbols.size(), 2u) << print_trace(*t);
      ASSERT_EQ(b.outputs.size(), 1u) << print_trace(*t);
      regions.push_back(b.subsymbols[0].outputs[0]->name + "+" + b.outputs[0]->name);
    }
  EXPECT_EQ(regions, (std::vector<std::string>{"t0+t1", "t2+t3", "t8+t9"})) << print_trace(*t);
  EXPECT_EQ(t->provenance->pass, "Residual Epilogues");
  EXPECT_EQ(passes::residual_epilogues(*t)->body.size(), t->body.size()) << "nothing left to pair";
  // On the CPU each region runs its members: the numbers of the trace without regions.
  auto parsed = parse_trace(kLinearsAndAdds);
  ASSERT_TRUE(parsed);
  exec::Executor with_regions, without;
  Ts inputs = linears_and_adds_inputs(at::kCPU);
  Ts got = exec::tensors_of(with_regions.run(*t, inputs)), want = exec::tensors_of(without.run(*parsed.trace, inputs));
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(at::equal(got[i], want[i])) << "output " << i;
  EXPECT_EQ(with_regions.residual_epilogues(), 0u);
}

TEST(GpuExec, ALinearAndTheAddItFeedsRunAsOneProduct) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  TracePtr t = linears_and_adds_with_regions();
  Ts inputs = linears_and_adds_inputs(at::kCUDA);
  auto run = [&](bool plans, size_t* fused) {
    exec::ExecOptions o;
    o.device = Device{Device::Kind::cuda, 0};
    o.generated_kernels = plans;
    exec::Executor e(o);
    Ts out;
    for (int i = 0; i < 2; ++i) out = exec::tensors_of(e.run(*t, inputs));
    *fused = e.residual_epilogues();
    return out;
  };
  size_t fused = 0, unfused = 0;
  Ts together = run(true, &fused), apart = run(false, &unfused);
  EXPECT_EQ(fused, 4u);  // t0 + r and t2 + t1 in each of the two runs; t8 + v broadcasts: its members
  EXPECT_EQ(unfused, 0u);
  ASSERT_EQ(together.size(), 2u);
  ASSERT_EQ(apart.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    double scale = std::max(1.0, apart[i].abs().max().item<double>());
    EXPECT_LE((together[i] - apart[i]).abs().max().item<double>(), 1e-5 * scale) << "output " << i;
  }
}

// Layer norm's backward and the add of its first output to the skip connection's gradient: the
// add alone after it (a block's first layer norm) and the add that begins a fusion region with a
// reshape (the block's second) each join it in one region, which runs on CUDA as one small-kernel
// launch and elsewhere member by member. A gradient read again stays as it is.
constexpr const char* kNormBackwardsAndAdds = R"(import torch
import thunder.torch as ltorch
from thunder.executors.torchex import no_autocast

@torch.no_grad()
@no_autocast
def backward_fn(g, x, w, b, mean, rstd, r):
  # g: "cuda:0 f32[2, 16, 48]"
  # x: "cuda:0 f32[2, 16, 48]"
  # w: "cuda:0 f32[48]"
  # b: "cuda:0 f32[48]"
  # mean: "cuda:0 f32[2, 16, 1]"
  # rstd: "cuda:0 f32[2, 16, 1]"
  # r: "cuda:0 f32[2, 16, 48]"
  (t0, t1, t2) = ltorch.layer_norm_backward(g, x, (48,), w, b, 1e-05, mean, rstd)  # t0: "cuda:0 f32[2, 16, 48]", t1: "cuda:0 f32[48]", t2: "cuda:0 f32[48]"
  t3 = ltorch.add(r, t0, alpha=1)  # t3: "cuda:0 f32[2, 16, 48]"
  t4 = ltorch.reshape(t3, (-1, 48))  # t4: "cuda:0 f32[32, 48]"
  (t5, t6, t7) = ltorch.layer_norm_backward(t3, x, (48,), w, b, 1e-05, mean, rstd)  # t5: "cuda:0 f32[2, 16, 48]", t6: "cuda:0 f32[48]", t7: "cuda:0 f32[48]"
  t8 = ltorch.add(t5, t3)  # t8: "cuda:0 f32[2, 16, 48]"
  (t9, t10, t11) = ltorch.layer_norm_backward(t8, x, (48,), w, b, 1e-05, mean, rstd)  # t9: "cuda:0 f32[2, 16, 48]", t10: "cuda:0 f32[48]", t11: "cuda:0 f32[48]"
  t12 = ltorch.add(t9, r)  # t12: "cuda:0 f32[2, 16, 48]"
  return (t4, t8, t12, t9, t1, t2, t6, t7, t10, t11)
)";

TracePtr norm_backwards_and_adds(bool passes) {
  auto parsed = parse_trace(kNormBackwardsAndAdds);
  if (!parsed) throw std::runtime_error(parsed.error ? parsed.error->message : "kNormBackwardsAndAdds does not parse");
  if (!passes) return parsed.trace;
  return passes::residual_epilogues(*passes::fusion_grouping(*parsed.trace));
}

Ts norm_backwards_and_adds_inputs(at::Device device) {
  auto on = at::TensorOptions().device(device);
  at::manual_seed(12);
  at::Tensor x = at::randn({2, 16, 48}, on);
  auto [y, mean, rstd] = at::native_layer_norm(x, {48}, {}, {}, 1e-5);
  return {at::randn({2, 16, 48}, on), x, at::randn({48}, on), at::randn({48}, on), mean, rstd, at::randn({2, 16, 48}, on)};
}

TEST_F(ExecTest, ResidualEpiloguesPassPairsLayerNormBackwardWithTheAddItFeeds) {
  TracePtr t = norm_backwards_and_adds(true);
  std::vector<std::string> regions;
  for (const auto& b : t->body)
    if (passes::is_fusion_region(b)) {
      std::string members;
      for (const auto& m : b.subsymbols) members += (members.empty() ? "" : " ") + m.name();
      regions.push_back(members);
    }
  EXPECT_EQ(regions, (std::vector<std::string>{"ltorch.layer_norm_backward ltorch.add ltorch.reshape",
                                                "ltorch.layer_norm_backward ltorch.add"}))
      << print_trace(*t) << "(the third gradient, t9, is returned too: its add stays apart)";
  exec::Executor with_regions, without;
  Ts inputs = norm_backwards_and_adds_inputs(at::kCPU);
  Ts got = exec::tensors_of(with_regions.run(*t, inputs));
  Ts want = exec::tensors_of(without.run(*norm_backwards_and_adds(false), inputs));
  ASSERT_EQ(got.size(), 10u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], want[i])) << "output " << i;
  EXPECT_EQ(with_regions.residual_epilogues(), 0u) << "the CPU runs the members";
}

TEST(GpuExec, LayerNormBackwardAndTheAddItFeedsRunAsOneKernel) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  if (!exec::small_kernels_available()) GTEST_SKIP() << "this build has no small kernels (nvcc was not found)";
  Ts inputs = norm_backwards_and_adds_inputs(at::kCUDA);
  auto run = [&](bool passes, size_t* fused) {
    exec::ExecOptions o;
    o.device = Device{Device::Kind::cuda, 0};
    exec::Executor e(o);
    TracePtr t = norm_backwards_and_adds(passes);
    Ts out;
    for (int i = 0; i < 2; ++i) out = exec::tensors_of(e.run(*t, inputs));
    *fused = e.residual_epilogues();
    return out;
  };
  size_t fused = 0, unfused = 0;
  Ts together = run(true, &fused), apart = run(false, &unfused);
  EXPECT_EQ(fused, 4u);  // two pairs in each of the two runs
  EXPECT_EQ(unfused, 0u);
  ASSERT_EQ(together.size(), 10u);
  ASSERT_EQ(apart.size(), 10u);
  for (size_t i = 0; i < together.size(); ++i) {
    double scale = std::max(1.0, apart[i].abs().max().item<double>());
    EXPECT_LE((together[i] - apart[i]).abs().max().item<double>(), 1e-6 * scale) << "output " << i;
  }
  // Against LibTorch's own kernels and add, the reference nobody here wrote.
  at::Tensor ga = std::get<0>(at::native_layer_norm_backward(inputs[0], inputs[1], {48}, inputs[4], inputs[5], inputs[2],
                                                              inputs[3], {true, true, true}));
  at::Tensor first = inputs[6] + ga;
  EXPECT_LE((together[0].view({2, 16, 48}) - first).abs().max().item<double>(), 1e-5 * std::max(1.0, first.abs().max().item<double>()));
}

TEST_F(ExecTest, ExecWrongInputCount) {
  TracePtr t = trace_of({randn({2})}, [](TraceBuilder& b, const P& p) { return V(ltorch::neg(b, p[0])); });
  EXPECT_NE(error_of([&] { Executor().run(*t, Ts{}); }).find("expects 1 inputs, got 0"), std::string::npos);
}

}  // namespace
}  // namespace tv
