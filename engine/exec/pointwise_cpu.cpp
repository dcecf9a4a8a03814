#include "exec/pointwise_cpu.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <cstring>

#include "runtime/aten_util.h"

// glibc's vector math library (libmvec, which libm pulls in) has SIMD versions of these functions;
// declared so, the compiler calls them from the vectorised loops below, four or eight elements a
// call, where the C library's scalar ones take one. engine/CMakeLists.txt defines TV_LIBMVEC when
// the toolchain builds and links such a loop. Each block loop is compiled twice, for AVX2 with FMA
// and for the baseline, and the CPU picks one at load time (target_clones).
#if TV_LIBMVEC
#define TV_VECTOR_MATH __attribute__((simd("notinbranch")))
extern "C" {
TV_VECTOR_MATH float expf(float) noexcept;
TV_VECTOR_MATH float logf(float) noexcept;
TV_VECTOR_MATH float erff(float) noexcept;
TV_VECTOR_MATH float tanhf(float) noexcept;
TV_VECTOR_MATH float powf(float, float) noexcept;
TV_VECTOR_MATH double exp(double) noexcept;
TV_VECTOR_MATH double log(double) noexcept;
TV_VECTOR_MATH double erf(double) noexcept;
TV_VECTOR_MATH double tanh(double) noexcept;
TV_VECTOR_MATH double pow(double, double) noexcept;
}
#define TV_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default"), flatten))
#else
#define TV_VECTOR_CLONES
#endif

namespace tv::exec {
namespace {

using codegen::PointwiseInstruction;
using codegen::PointwiseOp;
using codegen::PointwiseOperand;

// Elements per block: every value of the program for one block stays in the first cache levels.
constexpr int64_t kBlock = 512;

// An operand over one block: `data[0..n)`, or `scalar` everywhere when data is null.
template <typename T>
struct Source {
  const T* data = nullptr;
  T scalar{};
};

template <typename T, typename F>
void unary(T* d, Source<T> a, int64_t n, F f) {
  if (!a.data) {
    std::fill(d, d + n, f(a.scalar));
    return;
  }
  for (int64_t i = 0; i < n; ++i) d[i] = f(a.data[i]);
}

// Separate loops for a scalar operand, so that each one is a plain loop the compiler vectorises.
template <typename T, typename F>
void binary(T* d, Source<T> a, Source<T> b, int64_t n, F f) {
  if (a.data && b.data) {
    for (int64_t i = 0; i < n; ++i) d[i] = f(a.data[i], b.data[i]);
  } else if (a.data) {
    T y = b.scalar;
    for (int64_t i = 0; i < n; ++i) d[i] = f(a.data[i], y);
  } else if (b.data) {
    T x = a.scalar;
    for (int64_t i = 0; i < n; ++i) d[i] = f(x, b.data[i]);
  } else {
    std::fill(d, d + n, f(a.scalar, b.scalar));
  }
}

// The kernel's inputs as one block reads them.
struct Bound {
  std::vector<const void*> data;  // each input's first element
  std::vector<bool> one;          // an input of one element, read as a scalar
};

template <typename T>
class Block {
 public:
  Block(const codegen::ElementwiseKernel& kernel, const Bound& in, T* scratch, int64_t begin, int64_t n)
      : kernel_(kernel), in_(in), scratch_(scratch), begin_(begin), n_(n) {}

  void run() {
    for (size_t v = 0; v < kernel_.program.size(); ++v) step(kernel_.program[v], scratch_ + v * kBlock);
  }
  const T* value(size_t v) const { return scratch_ + v * kBlock; }

 private:
  Source<T> source(const PointwiseOperand& o) const {
    switch (o.kind) {
      case PointwiseOperand::Kind::number: return {nullptr, static_cast<T>(o.number)};
      case PointwiseOperand::Kind::value: return {value(o.index), T{}};
      case PointwiseOperand::Kind::input: {
        const T* p = static_cast<const T*>(in_.data[o.index]);
        return in_.one[o.index] ? Source<T>{nullptr, *p} : Source<T>{p + begin_, T{}};
      }
    }
    return {};
  }

  void step(const PointwiseInstruction& in, T* d) {
    const auto& ops = in.operands;
    auto a = [&] { return source(ops[0]); };
    auto b = [&] { return source(ops[1]); };
    T alpha = static_cast<T>(in.alpha);
    int64_t n = n_;
    switch (in.op) {
      case PointwiseOp::add:
        if (in.alpha == 1) return binary(d, a(), b(), n, [](T x, T y) { return x + y; });
        return binary(d, a(), b(), n, [alpha](T x, T y) { return x + alpha * y; });
      case PointwiseOp::sub:
        if (in.alpha == 1) return binary(d, a(), b(), n, [](T x, T y) { return x - y; });
        return binary(d, a(), b(), n, [alpha](T x, T y) { return x - alpha * y; });
      case PointwiseOp::mul: return binary(d, a(), b(), n, [](T x, T y) { return x * y; });
      case PointwiseOp::div: return binary(d, a(), b(), n, [](T x, T y) { return x / y; });
      case PointwiseOp::pow: return binary(d, a(), b(), n, [](T x, T y) { return std::pow(x, y); });
      case PointwiseOp::neg: return unary(d, a(), n, [](T x) { return -x; });
      case PointwiseOp::exp: return unary(d, a(), n, [](T x) { return std::exp(x); });
      case PointwiseOp::log: return unary(d, a(), n, [](T x) { return std::log(x); });
      case PointwiseOp::erf: return unary(d, a(), n, [](T x) { return std::erf(x); });
      case PointwiseOp::tanh: return unary(d, a(), n, [](T x) { return std::tanh(x); });
      case PointwiseOp::sqrt: return unary(d, a(), n, [](T x) { return std::sqrt(x); });
      case PointwiseOp::rsqrt: return unary(d, a(), n, [](T x) { return T(1) / std::sqrt(x); });
      case PointwiseOp::sigmoid: return unary(d, a(), n, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
      case PointwiseOp::square: return unary(d, a(), n, [](T x) { return x * x; });
      case PointwiseOp::reciprocal: return unary(d, a(), n, [](T x) { return T(1) / x; });
      case PointwiseOp::copy: return unary(d, a(), n, [](T x) { return x; });
      case PointwiseOp::where: return where(ops, d);
    }
  }

  // The condition is a bool input or a number.
  void where(const std::vector<PointwiseOperand>& ops, T* d) {
    Source<T> x = source(ops[1]), y = source(ops[2]);
    const PointwiseOperand& c = ops[0];
    bool one = c.kind != PointwiseOperand::Kind::input || in_.one[c.index];
    if (one) {
      bool take_x = c.kind == PointwiseOperand::Kind::number ? c.number != 0
                                                              : *static_cast<const bool*>(in_.data[c.index]);
      return unary(d, take_x ? x : y, n_, [](T v) { return v; });
    }
    select(d, static_cast<const bool*>(in_.data[c.index]) + begin_, x, y, n_);
  }

  // d[i] = p[i] ? x[i] : y[i] as a select of bits under a mask made of the condition: a loop without
  // branches, which the compiler vectorises (a branch per element mispredicts on a relu's signs).
  static void select(T* d, const bool* p, Source<T> x, Source<T> y, int64_t n) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    auto pick = [](bool c, T a, T b) {
      Bits mask = Bits{0} - static_cast<Bits>(c);
      return std::bit_cast<T>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask));
    };
    if (x.data && y.data) {
      for (int64_t i = 0; i < n; ++i) d[i] = pick(p[i], x.data[i], y.data[i]);
    } else if (x.data) {
      T b = y.scalar;
      for (int64_t i = 0; i < n; ++i) d[i] = pick(p[i], x.data[i], b);
    } else if (y.data) {
      T a = x.scalar;
      for (int64_t i = 0; i < n; ++i) d[i] = pick(p[i], a, y.data[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] = pick(p[i], x.scalar, y.scalar);
    }
  }

  const codegen::ElementwiseKernel& kernel_;
  const Bound& in_;
  T* scratch_;
  int64_t begin_, n_;
};

// Elements [begin, end) of every output, block by block.
template <typename T>
void run_range(const codegen::ElementwiseKernel& kernel, const Bound& in, T* const* outs, int64_t begin, int64_t end) {
  std::vector<T> scratch(kernel.program.size() * kBlock);
  for (int64_t start = begin; start < end; start += kBlock) {
    int64_t n = std::min(kBlock, end - start);
    Block<T> block(kernel, in, scratch.data(), start, n);
    block.run();
    for (size_t o = 0; o < kernel.output_values.size(); ++o)
      std::memcpy(outs[o] + start, block.value(kernel.output_values[o]), n * sizeof(T));
  }
}

// run_range for each dtype as a plain function, which target_clones can compile twice.
TV_VECTOR_CLONES void run_blocks(const codegen::ElementwiseKernel& kernel, const Bound& in, float* const* outs,
                                 int64_t begin, int64_t end) {
  run_range<float>(kernel, in, outs, begin, end);
}

TV_VECTOR_CLONES void run_blocks(const codegen::ElementwiseKernel& kernel, const Bound& in, double* const* outs,
                                 int64_t begin, int64_t end) {
  run_range<double>(kernel, in, outs, begin, end);
}

template <typename T>
void run_typed(const codegen::ElementwiseKernel& kernel, const Bound& in, std::vector<at::Tensor>& outs, int64_t numel) {
  std::vector<T*> out_data;
  for (auto& o : outs) out_data.push_back(o.data_ptr<T>());
  at::parallel_for(0, numel, at::internal::GRAIN_SIZE,
                   [&](int64_t begin, int64_t end) { run_blocks(kernel, in, out_data.data(), begin, end); });
}

// The broadcast shape of the inputs; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<at::Tensor>& inputs) {
  std::vector<int64_t> shape;
  try {
    for (const auto& t : inputs) {
      auto s = at::infer_size_dimvector(shape, t.sizes());
      shape.assign(s.begin(), s.end());
    }
  } catch (const c10::Error&) {
    return std::nullopt;
  }
  return shape;
}

}  // namespace

bool pointwise_cpu_applies(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs) {
  if (inputs.size() != kernel.inputs.size() || kernel.program.size() != kernel.members) return false;
  at::ScalarType want = to_scalar_type(kernel.dtype);
  if (want != at::kFloat && want != at::kDouble) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    if (!t.defined() || !t.device().is_cpu() || t.scalar_type() != (kernel.bool_inputs[i] ? at::kBool : want))
      return false;
  }
  auto shape = broadcast_shape(inputs);
  if (!shape) return false;
  for (const auto& t : inputs)
    if (t.numel() != 1 && (t.sizes() != at::IntArrayRef(*shape) || !t.is_contiguous())) return false;
  return true;
}

std::vector<at::Tensor> run_pointwise_cpu(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs) {
  auto shape = broadcast_shape(inputs);
  if (!shape) throw std::logic_error("run_pointwise_cpu: the inputs do not broadcast (pointwise_cpu_applies first)");
  at::ScalarType dtype = to_scalar_type(kernel.dtype);
  std::vector<at::Tensor> outs;
  for (size_t o = 0; o < kernel.outputs.size(); ++o) outs.push_back(at::empty(*shape, at::TensorOptions().dtype(dtype)));
  Bound in;
  for (const auto& t : inputs) {
    in.data.push_back(t.data_ptr());
    in.one.push_back(t.numel() == 1);
  }
  int64_t numel = outs.empty() ? 0 : outs[0].numel();
  if (numel == 0) return outs;
  if (dtype == at::kFloat)
    run_typed<float>(kernel, in, outs, numel);
  else
    run_typed<double>(kernel, in, outs, numel);
  return outs;
}

}  // namespace tv::exec
