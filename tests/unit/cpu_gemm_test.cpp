// The CPU's oneDNN products (runtime/cpu_gemm.h) against LibTorch in double precision, for every
// layout a trace hands them (row-major, transposed, a slice, a vector, stacks with batch strides),
// with and without a bias; what they decline; and the rules that call them (matmul, linear).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/cpu_gemm.h"
#include "runtime/rule_util.h"

using namespace tv;

namespace {

double largest_difference(const at::Tensor& got, const at::Tensor& want) {
  double scale = std::max(1.0, want.abs().max().item<double>());
  return (got.to(at::kDouble) - want).abs().max().item<double>() / scale;
}

at::Tensor in_double(const at::Tensor& t) { return t.to(at::kDouble); }

}  // namespace

TEST(CpuGemm, MatchesTheProductForEveryLayout) {
  if (!exec::cpu_gemm_available()) GTEST_SKIP() << "this build has no oneDNN (libdnnl-dev), or TV_CPU_GEMM=0";
  struct Case {
    std::string name;
    at::Tensor a, b;
  };
  std::vector<Case> cases{
      {"row-major", at::randn({16, 64}), at::randn({64, 48})},
      {"a transposed", at::randn({64, 16}).t(), at::randn({64, 48})},
      {"b transposed", at::randn({16, 64}), at::randn({48, 64}).t()},
      {"both transposed", at::randn({64, 16}).t(), at::randn({48, 64}).t()},
      {"a a slice of wider rows", at::randn({16, 200}).narrow(1, 8, 64), at::randn({64, 48})},
      {"one row", at::randn({1, 64}), at::randn({64, 5})},
      {"one column", at::randn({7, 64}), at::randn({64, 1})},
      {"depth one", at::randn({9, 1}), at::randn({1, 11})},
      {"a stack", at::randn({2, 3, 16, 32}), at::randn({2, 3, 32, 8})},
      {"a stack, b's matrices transposed", at::randn({4, 16, 32}), at::randn({4, 8, 32}).transpose(-2, -1)},
      {"a stack of heads (gpt's strided q)", at::randn({2, 16, 4, 32}).transpose(1, 2), at::randn({2, 4, 32, 16})},
      {"a stack of one matrix repeated", at::randn({1, 16, 32}).expand({3, 16, 32}), at::randn({3, 32, 8})},
  };
  for (const auto& [name, a, b] : cases) {
    at::Tensor got = exec::cpu_gemm(a, b);
    ASSERT_TRUE(got.defined()) << name;
    EXPECT_EQ(got.sizes(), at::matmul(a, b).sizes()) << name;
    EXPECT_TRUE(got.is_contiguous()) << name;
    EXPECT_LE(largest_difference(got, at::matmul(in_double(a), in_double(b))), 1e-5) << name;
  }
}

TEST(CpuGemm, LinearMatchesTheProduct) {
  if (!exec::cpu_gemm_available()) GTEST_SKIP() << "this build has no oneDNN (libdnnl-dev), or TV_CPU_GEMM=0";
  at::Tensor w = at::randn({48, 64}), bias = at::randn({48});
  struct Case {
    std::string name;
    at::Tensor x, w;
  };
  std::vector<Case> cases{{"a matrix", at::randn({16, 64}), w},
                          {"more dimensions", at::randn({2, 8, 64}), w},
                          {"a vector", at::randn({64}), w},
                          {"x transposed", at::randn({64, 16}).t(), w},
                          {"w transposed (a tied embedding read as [k, n])", at::randn({16, 64}), at::randn({64, 48}).t()}};
  for (const auto& [name, x, weight] : cases) {
    at::Tensor want = at::linear(in_double(x), in_double(weight));
    at::Tensor plain = exec::cpu_linear(x, weight);
    ASSERT_TRUE(plain.defined()) << name;
    EXPECT_EQ(plain.sizes(), want.sizes()) << name;
    EXPECT_LE(largest_difference(plain, want), 1e-5) << name;
    at::Tensor biased = exec::cpu_linear(x, weight, bias);
    ASSERT_TRUE(biased.defined()) << name << ", with a bias";
    EXPECT_LE(largest_difference(biased, want + in_double(bias)), 1e-5) << name << ", with a bias";
  }
}

// Each declines (undefined: the rule runs ATen) where the product is not float32 matrices it reads.
TEST(CpuGemm, DeclinesWhatItDoesNotRead) {
  at::Tensor a = at::randn({4, 8}), b = at::randn({8, 3});
  EXPECT_FALSE(exec::cpu_gemm(a.to(at::kDouble), b.to(at::kDouble)).defined()) << "double";
  EXPECT_FALSE(exec::cpu_gemm(a.to(at::kBFloat16), b.to(at::kBFloat16)).defined()) << "bfloat16";
  EXPECT_FALSE(exec::cpu_gemm(a, b.to(at::kDouble)).defined()) << "mixed dtypes";
  EXPECT_FALSE(exec::cpu_gemm(at::randn({4, 16}).narrow(1, 0, 16).slice(1, 0, 16, 2), b).defined())
      << "a matrix neither row- nor column-major";
  EXPECT_FALSE(exec::cpu_gemm(at::randn({4, 0}), at::randn({0, 3})).defined()) << "an empty depth";
  EXPECT_FALSE(exec::cpu_gemm(at::randn({2, 4, 8}), b).defined()) << "a stack times a matrix (ATen broadcasts)";
  at::Tensor w = at::randn({3, 8}).set_requires_grad(true);
  EXPECT_FALSE(exec::cpu_linear(a, w).defined()) << "an operand autograd records";
  {
    at::AutoGradMode no_grad(false);
    EXPECT_TRUE(exec::cpu_linear(a, w).defined() || !exec::cpu_gemm_available()) << "the same under no_grad";
  }
  EXPECT_FALSE(exec::cpu_linear(a, w.detach(), at::randn({1, 3})).defined()) << "a bias of two dims";
}

// The rules that traces' products run through give LibTorch's numbers, whichever path they take.
TEST(CpuGemm, RulesGiveTheProduct) {
  at::Tensor a = at::randn({2, 4, 16, 32}), b = at::randn({2, 4, 32, 8}), x = at::randn({3, 5, 32}),
             w = at::randn({8, 32}), bias = at::randn({8});
  EXPECT_LE(largest_difference(exec::rules::matmul(a, b), at::matmul(in_double(a), in_double(b))), 1e-5);
  EXPECT_LE(largest_difference(exec::rules::matmul(x, w.t()), at::matmul(in_double(x), in_double(w).t())), 1e-5);
  EXPECT_LE(largest_difference(exec::rules::linear(x, w, bias), at::linear(in_double(x), in_double(w), in_double(bias))),
            1e-5);
}
