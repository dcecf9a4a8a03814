// Host cost of one call of the ATen calls that the executor's rules choose between, on the shapes
// of the overhead-bound gpt step (tokens 32, d_model 64, heads 4: tests/bench/bench_step.cpp). When
// a step is host-bound, the microseconds a call holds the host (kernel launches included) are its
// cost, so a rule that picks the cheaper spelling of the same numbers shortens the step.
// Not a test: prints one Markdown row per variant (median over --repeats of the mean of --calls).
// On the CPU, beside ATen's: the executor's oneDNN products (runtime/cpu_gemm.h).
// Usage: tv_bench_ops [--device cuda] [--calls 200] [--repeats 7]
#include <ATen/ATen.h>
#include <torch/version.h>

#include <array>
#include <iostream>
#include <string>

#include "bench_util.h"
#include "exec/device_check.h"
#include "runtime/cpu_gemm.h"
#include "runtime/small_gemm.h"
#include "runtime/small_kernels.h"

namespace tv {
namespace {

int run(int argc, char** argv) {
  bench::BenchArgs args(argc, argv, {"device", "calls", "repeats"});
  if (args.help) {
    std::cout << "Usage: tv_bench_ops [--device cpu|cuda] [--calls 200] [--repeats 7]\n";
    return 0;
  }
  std::string device = args.get("device", "cpu");
  bool cuda = device.rfind("cuda", 0) == 0;
  if (cuda) device = "cuda:0";
  if (auto why = exec::device_unavailable(device); !why.empty()) throw std::invalid_argument(why);
  int calls = args.get_int("calls", 200), repeats = args.get_int("repeats", 7);
  at::AutoDispatchBelowADInplaceOrView below_autograd;  // as the executor runs
  auto on = at::TensorOptions().device(device);

  auto time = [&](const std::string& name, auto&& fn) {
    for (int w = 0; w < 10; ++w) fn();
    bench::synchronize_cuda(0);
    double us = bench::median_us(repeats, [&] {
                  for (int c = 0; c < calls; ++c) fn();
                  if (cuda) bench::synchronize_cuda(0);
                }) /
                calls;
    std::cout << "| " << name << " | " << us << " |\n";
  };
  std::cout << "| call | host us per call |\n| --- | --- |\n";

  const int64_t tokens = 32, d = 64;
  for (int64_t out : {192, 256}) {
    auto x = at::randn({2, 16, d}, on), w = at::randn({out, d}, on), b = at::randn({out}, on);
    auto x2 = x.view({tokens, d});
    std::string shape = "[32," + std::to_string(d) + "]x[" + std::to_string(out) + "," + std::to_string(d) + "]^T";
    time("linear " + shape, [&] { return at::linear(x, w, b); });
    time("addmm, bias 1-D " + shape, [&] { return at::addmm(b, x2, w.t()); });
    time("addmm, bias expanded " + shape, [&] { return at::addmm(b.expand({tokens, out}), x2, w.t()); });
    time("mm " + shape, [&] { return at::mm(x2, w.t()); });
    if (cuda) {
      // The executor's linear on CUDA: one cuBLASLt call with the bias in its epilogue.
      time("small_gemm of views, bias " + shape, [&] { return exec::small_gemm(x.view({tokens, d}), w.t(), b).view({2, 16, out}); });
      time("small_linear, bias " + shape, [&] { return exec::small_linear(x, w, b); });
    } else if (exec::cpu_gemm_available()) {
      // The executor's products on the CPU: oneDNN's sgemm (the bias copied into the rows first).
      time("cpu_linear, bias " + shape, [&] { return exec::cpu_linear(x, w, b); });
      time("cpu_gemm " + shape, [&] { return exec::cpu_gemm(x2, w.t()); });
    }
    auto g = at::randn({tokens, out}, on);
    time("mm dX [32,out]x[out,64]", [&] { return at::mm(g, w); });
    time("mm dW [out,32]x[32,64]", [&] { return at::mm(g.t(), x2); });
    if (!cuda && exec::cpu_gemm_available()) {
      time("cpu_gemm dX [32,out]x[out,64]", [&] { return exec::cpu_gemm(g, w); });
      time("cpu_gemm dW [out,32]x[32,64]", [&] { return exec::cpu_gemm(g.t(), x2); });
    }
    time("sum dB over tokens", [&] { return at::sum(g, {0}); });
  }

  // Attention: q, k, v as the model makes them (split, reshape, transpose: batch dims not mergeable).
  auto qkv = at::randn({2, 16, 3 * d}, on);
  auto q = qkv.narrow(2, 0, d).reshape({2, 16, 4, 16}).transpose(1, 2);
  auto k = qkv.narrow(2, d, d).reshape({2, 16, 4, 16}).transpose(1, 2);
  auto qc = q.contiguous(), kc = k.contiguous();
  time("matmul q k^T, strided", [&] { return at::matmul(q, k.transpose(-2, -1)); });
  time("matmul q k^T, contiguous", [&] { return at::matmul(qc, kc.transpose(-2, -1)); });
  time("bmm q k^T, contiguous", [&] {
    return at::bmm(qc.view({8, 16, 16}), kc.transpose(-2, -1).reshape({8, 16, 16})).view({2, 4, 16, 16});
  });
  time("contiguous of q", [&] { return q.contiguous(); });
  time("reshape+transpose views", [&] { return qkv.narrow(2, 0, d).reshape({2, 16, 4, 16}).transpose(1, 2); });
  auto v = qkv.narrow(2, 2 * d, d).reshape({2, 16, 4, 16}).transpose(1, 2);
  auto grad = at::randn({2, 4, 16, 16}, on);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  if (cuda) {
    // The memory-efficient kernels, as the attention rules call them where the small kernels decline.
    auto [out, lse, seed, offset] = at::_scaled_dot_product_efficient_attention(q, k, v, {}, true, 0.0, true);
    auto no_dropout = at::empty({}, at::kLong);
    time("memory-efficient attention, forward", [&] {
      return at::_scaled_dot_product_efficient_attention(q, k, v, {}, true, 0.0, true);
    });
    time("memory-efficient attention, backward", [&] {
      return at::_scaled_dot_product_efficient_attention_backward(grad, q, k, v, at::Tensor(), out, lse, no_dropout,
                                                                   no_dropout, 0.0, std::array<bool, 4>{true, true, true, false}, true);
    });
  }
#endif
  if (cuda && exec::small_kernels_available()) {
    auto small = exec::small_attention(q, k, v, true);
    time("small_attention, forward", [&] { return exec::small_attention(q, k, v, true); });
    time("small_attention, backward", [&] {
      return exec::small_attention_backward(grad, q, k, v, small.out, small.log_sumexp, true);
    });
  }

  auto h = at::randn({2, 16, d}, on), lw = at::randn({d}, on), lb = at::randn({d}, on);
  time("native_layer_norm", [&] { return at::native_layer_norm(h, {d}, lw, lb, 1e-5); });
  auto [y, mean, rstd] = at::native_layer_norm(h, {d}, lw, lb, 1e-5);
  time("native_layer_norm_backward", [&] {
    return at::native_layer_norm_backward(h, h, {d}, mean, rstd, lw, lb, {true, true, true});
  });
  if (cuda && exec::small_kernels_available()) {
    time("small_layer_norm", [&] { return exec::small_layer_norm(h, {d}, lw, lb, 1e-5); });
    time("small_layer_norm_backward", [&] { return exec::small_layer_norm_backward(h, h, {d}, mean, rstd, lw); });
  }
  time("add [2,16,64]", [&] { return at::add(h, h); });
  time("empty [2,16,64]", [&] { return at::empty({2, 16, d}, on); });
  return 0;
}

}  // namespace
}  // namespace tv

int main(int argc, char** argv) { return tv::bench::main_of("tv_bench_ops", argc, argv, tv::run); }
