// The small attention and layer norm kernels (runtime/small_kernels.h) against LibTorch in double
// precision, forward and backward, for the layouts a step gives them; and what they decline.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "exec/device_check.h"
#include "runtime/small_gemm.h"
#include "runtime/small_kernels.h"

using namespace tv;

namespace {

double largest_difference(const at::Tensor& got, const at::Tensor& want) {
  double scale = std::max(1.0, want.abs().max().item<double>());
  return (got.to(at::kDouble) - want).abs().max().item<double>() / scale;
}

// softmax(q k^T / sqrt(E), causal: j <= i) v and the log-sum-exp of each row, in q's dtype's math.
std::pair<at::Tensor, at::Tensor> attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal)
    s = s.masked_fill(at::ones({q.size(-2), k.size(-2)}, s.options().dtype(at::kBool)).tril().logical_not(), -INFINITY);
  return {at::matmul(at::softmax(s, -1), v), at::logsumexp(s, -1)};
}

struct AttentionCase {
  std::string name;
  int64_t batch, heads, queries, keys, head_dim, value_dim;
  bool causal, from_one_projection;  // q, k, v as views of one [B, L, 3 * H * E] tensor, as gpt makes them
};

}  // namespace

TEST(GpuSmallKernels, AttentionMatchesDoublePrecision) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  ASSERT_TRUE(exec::small_kernels_available());
  auto on = at::TensorOptions().device(at::kCUDA);
  std::vector<AttentionCase> cases{{"gpt's heads, causal", 2, 4, 16, 16, 16, 16, true, true},
                                   {"more keys than queries", 3, 2, 8, 24, 32, 16, false, false},
                                   {"one query", 1, 3, 1, 40, 8, 8, false, false},
                                   {"64 positions, causal", 1, 2, 64, 64, 16, 16, true, false}};
  for (const auto& c : cases)
    for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
      std::string what = c.name + (dtype == at::kFloat ? ", f32" : ", bf16");
      at::Tensor q, k, v;
      if (c.from_one_projection) {
        at::Tensor qkv = at::randn({c.batch, c.queries, 3 * c.heads * c.head_dim}, on).to(dtype);
        auto parts = qkv.split(c.heads * c.head_dim, 2);
        auto heads = [&](const at::Tensor& t) { return t.view({c.batch, c.queries, c.heads, c.head_dim}).transpose(1, 2); };
        q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
      } else {
        q = at::randn({c.batch, c.heads, c.queries, c.head_dim}, on).to(dtype);
        k = at::randn({c.batch, c.heads, c.keys, c.head_dim}, on).to(dtype);
        v = at::randn({c.batch, c.heads, c.keys, c.value_dim}, on).to(dtype);
      }
      auto got = exec::small_attention(q, k, v, c.causal);
      ASSERT_TRUE(got.out.defined()) << what;
      EXPECT_EQ(got.out.sizes(), (std::vector<int64_t>{c.batch, c.heads, c.queries, v.size(3)})) << what;
      EXPECT_EQ(got.out.scalar_type(), dtype) << what;
      at::Tensor qd = q.to(at::kDouble).requires_grad_(true), kd = k.to(at::kDouble).requires_grad_(true),
                 vd = v.to(at::kDouble).requires_grad_(true);
      auto [want, want_lse] = attention(qd, kd, vd, c.causal);
      double tolerance = dtype == at::kFloat ? 1e-5 : 2e-2;
      EXPECT_LE(largest_difference(got.out, want.detach()), tolerance) << what << ": output";
      EXPECT_LE(largest_difference(got.log_sumexp, want_lse.detach()), 1e-5 * (dtype == at::kFloat ? 1 : 100))
          << what << ": log-sum-exp";

      at::Tensor grad = at::randn(want.sizes(), on).to(dtype);
      want.backward(grad.to(at::kDouble));
      auto grads = exec::small_attention_backward(grad, q, k, v, got.out, got.log_sumexp, c.causal);
      ASSERT_TRUE(grads[0].defined()) << what;
      const char* names[] = {"grad q", "grad k", "grad v"};
      at::Tensor wanted[] = {qd.grad(), kd.grad(), vd.grad()};
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(grads[i].sizes(), wanted[i].sizes()) << what << ": " << names[i];
        EXPECT_LE(largest_difference(grads[i], wanted[i]), dtype == at::kFloat ? 1e-4 : 5e-2) << what << ": " << names[i];
      }
      // the backward reads a log-sum-exp of other strides (the memory-efficient kernel's padded rows)
      at::Tensor padded = at::full({c.batch, c.heads, c.queries + 5}, 7.0, on).narrow(2, 0, c.queries);
      padded.copy_(got.log_sumexp);
      auto again = exec::small_attention_backward(grad, q, k, v, got.out, padded, c.causal);
      ASSERT_TRUE(again[0].defined()) << what;
      EXPECT_TRUE(again[1].equal(grads[1])) << what << ": a strided log-sum-exp";
      // and without one, from the forward kernel run again
      auto without = exec::small_attention_backward(grad, q, k, v, got.out, at::Tensor(), c.causal);
      ASSERT_TRUE(without[0].defined()) << what;
      EXPECT_TRUE(without[0].equal(grads[0])) << what << ": no log-sum-exp";
    }
  at::Tensor q = at::randn({1, 1, 16, 16}, on);
  EXPECT_FALSE(exec::small_attention(q.cpu(), q.cpu(), q.cpu(), false).out.defined()) << "CPU";
  EXPECT_FALSE(exec::small_attention(q.to(at::kDouble), q.to(at::kDouble), q.to(at::kDouble), false).out.defined()) << "f64";
  at::Tensor longer = at::randn({1, 1, 128, 16}, on);
  EXPECT_FALSE(exec::small_attention(longer, longer, longer, true).out.defined()) << "128 positions";
  at::Tensor keys = at::randn({1, 1, 8, 16}, on);
  EXPECT_FALSE(exec::small_attention(q, keys, keys, true).out.defined()) << "causal with fewer keys than queries";
  at::Tensor strided = at::randn({1, 1, 32, 16}, on).transpose(2, 3);  // its last dimension not dense
  EXPECT_FALSE(exec::small_attention(strided, strided, strided, false).out.defined()) << "last dimension strided";
  at::Tensor leaf = at::randn({1, 1, 16, 16}, on).requires_grad_(true);
  EXPECT_FALSE(exec::small_attention(leaf, leaf, leaf, false).out.defined()) << "a tensor autograd records";
}

TEST(GpuSmallKernels, LayerNormMatchesDoublePrecision) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  auto on = at::TensorOptions().device(at::kCUDA);
  struct Case {
    std::string name;
    std::vector<int64_t> shape, normalized;
    bool affine;
  };
  std::vector<Case> cases{{"gpt's tokens", {2, 16, 64}, {64}, true},
                          {"no weight or bias", {2, 16, 64}, {64}, false},
                          {"two normalised dimensions", {3, 5, 4, 6}, {4, 6}, true},
                          {"a row wider than a warp's stride", {4, 300}, {300}, true},
                          {"one row", {1, 64}, {64}, true}};
  for (const auto& c : cases) {
    at::Tensor x = at::randn(c.shape, on) * 3 + 1;
    at::Tensor w = c.affine ? at::randn(c.normalized, on) : at::Tensor(), b = c.affine ? at::randn(c.normalized, on) : at::Tensor();
    auto got = exec::small_layer_norm(x, c.normalized, w, b, 1e-5);
    ASSERT_TRUE(got[0].defined()) << c.name;
    at::Tensor xd = x.to(at::kDouble).requires_grad_(true);
    at::Tensor wd = c.affine ? w.to(at::kDouble).requires_grad_(true) : at::Tensor();
    at::Tensor bd = c.affine ? b.to(at::kDouble).requires_grad_(true) : at::Tensor();
    auto [want, want_mean, want_rstd] = at::native_layer_norm(xd, c.normalized, wd, bd, 1e-5);
    EXPECT_LE(largest_difference(got[0], want.detach()), 1e-5) << c.name << ": output";
    EXPECT_EQ(got[1].sizes(), want_mean.sizes()) << c.name << ": mean's shape";
    EXPECT_LE(largest_difference(got[1], want_mean.detach()), 1e-5) << c.name << ": mean";
    EXPECT_LE(largest_difference(got[2], want_rstd.detach()), 1e-5) << c.name << ": rstd";
    if (!c.affine) continue;
    at::Tensor grad = at::randn(c.shape, on);
    want.backward(grad.to(at::kDouble));
    auto grads = exec::small_layer_norm_backward(grad, x, c.normalized, got[1], got[2], w);
    ASSERT_TRUE(grads[0].defined()) << c.name;
    EXPECT_LE(largest_difference(grads[0], xd.grad()), 1e-4) << c.name << ": grad x";
    EXPECT_EQ(grads[1].sizes(), w.sizes()) << c.name;
    EXPECT_LE(largest_difference(grads[1], wd.grad()), 1e-4) << c.name << ": grad weight";
    EXPECT_LE(largest_difference(grads[2], bd.grad()), 1e-4) << c.name << ": grad bias";
  }
  at::Tensor x = at::randn({2, 16, 64}, on);
  EXPECT_FALSE(exec::small_layer_norm(x.to(at::kBFloat16), {64}, {}, {}, 1e-5)[0].defined()) << "bf16";
  EXPECT_FALSE(exec::small_layer_norm(x.transpose(0, 1), {64}, {}, {}, 1e-5)[0].defined()) << "not dense";
  EXPECT_FALSE(exec::small_layer_norm(x, {32}, {}, {}, 1e-5)[0].defined()) << "another normalized shape";
  EXPECT_FALSE(exec::small_layer_norm(at::randn({1024, 1024}, on), {1024}, {}, {}, 1e-5)[0].defined()) << "large";
  EXPECT_FALSE(exec::small_layer_norm(x.cpu(), {64}, {}, {}, 1e-5)[0].defined()) << "CPU";
}

// The product kernel behind small_gemm's smallest products, by the strides it is given: row-major,
// a transposed weight, a slice; with a bias and a residual; f32 and bf16. Above kSmallProductWork
// it declines, and small_gemm's cuBLASLt product gives the numbers.
TEST(GpuSmallKernels, ProductMatchesDoublePrecision) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  auto on = at::TensorOptions().device(at::kCUDA);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    auto randn = [&](std::vector<int64_t> shape) { return at::randn(shape, on).to(dtype); };
    struct Case {
      std::string name;
      at::Tensor a, b;
    };
    std::vector<Case> cases{{"row-major", randn({32, 64}), randn({64, 48})},
                            {"b a transposed weight", randn({32, 64}), randn({48, 64}).t()},
                            {"a a slice", randn({32, 200}).narrow(1, 8, 64), randn({64, 48})},
                            {"one row", randn({1, 64}), randn({64, 3})}};
    for (const auto& [name, a, b] : cases) {
      std::string what = name + (dtype == at::kFloat ? ", f32" : ", bf16");
      const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
      at::Tensor bias = randn({n}), residual = randn({m, n});
      at::Tensor product = at::mm(a.to(at::kDouble), b.to(at::kDouble));
      at::Tensor got = exec::small_product({a, a.stride(0), a.stride(1)}, {b, b.stride(0), b.stride(1)}, bias, residual,
                                           m, n, k, {m, n});
      ASSERT_TRUE(got.defined()) << what;
      const double tolerance = dtype == at::kFloat ? 1e-5 : 2e-2;
      EXPECT_LE(largest_difference(got, product + bias.to(at::kDouble) + residual.to(at::kDouble)), tolerance) << what;
      at::Tensor plain = exec::small_product({a, a.stride(0), a.stride(1)}, {b, b.stride(0), b.stride(1)}, {}, {}, m, n, k, {m, n});
      EXPECT_LE(largest_difference(plain, product), tolerance) << what << ", no bias";
    }
  }
  at::Tensor a = at::randn({128, 512}, on), b = at::randn({512, 64}, on);
  EXPECT_FALSE(exec::small_product({a, 512, 1}, {b, 64, 1}, {}, {}, 128, 64, 512, {128, 64}).defined())
      << "above kSmallProductWork";
  at::Tensor cublas = exec::small_gemm(a, b);
  ASSERT_TRUE(cublas.defined());
  EXPECT_LE(largest_difference(cublas, at::mm(a.to(at::kDouble), b.to(at::kDouble))), 1e-4) << "cuBLASLt above it";
}

// Without CUDA (or without nvcc at build time) nothing applies: the rules run ATen.
TEST(SmallKernels, DeclineWhereNotBuilt) {
  if (exec::small_kernels_available()) GTEST_SKIP() << "this build has the kernels (GpuSmallKernels tests them)";
  at::Tensor x = at::randn({2, 4, 16, 16});
  EXPECT_FALSE(exec::small_attention(x, x, x, true).out.defined());
  EXPECT_FALSE(exec::small_layer_norm(x, {16}, {}, {}, 1e-5)[0].defined());
}
