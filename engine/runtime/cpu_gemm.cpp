#include "runtime/cpu_gemm.h"

#ifdef TV_HAVE_DNNL
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#endif

namespace tv::exec {

#ifdef TV_HAVE_DNNL
namespace {

// TV_CPU_GEMM=0 in the environment: ATen's products everywhere (read once).
bool switched_on() {
  static const bool on = [] {
    const char* v = std::getenv("TV_CPU_GEMM");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

// A dense CPU float32 tensor with storage of its own and data in it (not a zero tensor's), that
// autograd would not record and whose ops do not dispatch to Python (a tensor subclass's).
bool operand_applies(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.layout() == at::kStrided && t.scalar_type() == at::kFloat &&
         t.has_storage() && t.data_ptr() != nullptr && !t.key_set().has(c10::DispatchKey::Python) &&
         !(at::GradMode::is_enabled() && t.requires_grad());
}

// A [rows, cols] matrix as sgemm (row-major) reads it: transposed or not, and its leading dimension.
struct Layout {
  char trans;
  int64_t ld;
};

// A matrix of these strides: row-major ('N', its row stride) or column-major ('T', its column
// stride); a dimension of size 1 may have any stride. nullopt for any other layout.
std::optional<Layout> layout_of(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols)) return Layout{'N', rows == 1 ? cols : row_stride};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows)) return Layout{'T', cols == 1 ? rows : col_stride};
  return std::nullopt;
}

// The offset of each matrix of t's stack (the dimensions before its last two), in the order of
// their indices, as the stack's strides place them.
std::vector<int64_t> stack_offsets(const at::Tensor& t) {
  std::vector<int64_t> offsets{0};
  for (int64_t d = 0; d + 2 < t.dim(); ++d) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * t.size(d));
    for (int64_t base : offsets)
      for (int64_t i = 0; i < t.size(d); ++i) next.push_back(base + i * t.stride(d));
    offsets = std::move(next);
  }
  return offsets;
}

// c [m, n] (dense) = a @ b + beta * c.
bool sgemm(int64_t m, int64_t n, int64_t k, const float* a, Layout la, const float* b, Layout lb, float beta, float* c) {
  return dnnl_sgemm(la.trans, lb.trans, m, n, k, 1.0f, a, la.ld, b, lb.ld, beta, c, n) == dnnl_success;
}

}  // namespace

bool cpu_gemm_available() { return switched_on(); }

void prepare_cpu_gemm() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!switched_on()) return;
    // (a product this size reaches the generated kernels; one of a few elements takes a plain loop)
    constexpr int64_t n = 64;
    std::vector<float> a(n * n, 1.0f), c(n * n);
    sgemm(n, n, n, a.data(), {'N', n}, a.data(), {'N', n}, 0.0f, c.data());
  });
}

at::Tensor cpu_gemm(const at::Tensor& a, const at::Tensor& b) {
  if (!switched_on() || !operand_applies(a) || !operand_applies(b)) return {};
  const int64_t dims = a.dim();
  if (dims < 2 || b.dim() != dims || a.sizes().slice(0, dims - 2) != b.sizes().slice(0, dims - 2)) return {};
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (b.size(-2) != k || m == 0 || n == 0 || k == 0) return {};
  const auto la = layout_of(m, k, a.stride(-2), a.stride(-1)), lb = layout_of(k, n, b.stride(-2), b.stride(-1));
  if (!la || !lb) return {};
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end());
  shape.back() = n;
  at::Tensor out = at::empty(shape, a.options());
  const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
  float* pc = out.data_ptr<float>();
  if (dims == 2) return sgemm(m, n, k, pa, *la, pb, *lb, 0.0f, pc) ? out : at::Tensor();
  const std::vector<int64_t> at_a = stack_offsets(a), at_b = stack_offsets(b);
  for (size_t i = 0; i < at_a.size(); ++i)
    if (!sgemm(m, n, k, pa + at_a[i], *la, pb + at_b[i], *lb, 0.0f, pc + static_cast<int64_t>(i) * m * n)) return {};
  return out;
}

at::Tensor cpu_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias) {
  if (!switched_on() || !operand_applies(x) || !operand_applies(w) || (bias.defined() && !operand_applies(bias)))
    return {};
  if (x.dim() < 1 || w.dim() != 2 || (x.dim() > 2 && !x.is_contiguous())) return {};
  const int64_t k = x.size(-1), n = w.size(0);
  if (w.size(1) != k || k == 0 || n == 0 || (bias.defined() && (bias.dim() != 1 || bias.size(0) != n))) return {};
  const int64_t m = x.numel() / k;
  if (m == 0) return {};
  // x as [m, k]: its own strides when it is a matrix; a vector is one row; more dimensions are dense.
  const auto lx = layout_of(m, k, x.dim() == 2 ? x.stride(0) : k, x.dim() <= 2 ? x.stride(-1) : 1);
  const auto lw = layout_of(k, n, w.stride(1), w.stride(0));  // w [n, k] read as [k, n]
  if (!lx || !lw) return {};
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(n);
  at::Tensor out = at::empty(shape, x.options());
  float* pc = out.data_ptr<float>();
  if (bias.defined()) {  // every row starts as the bias, and the product adds to it (beta = 1)
    const at::Tensor b = bias.contiguous();
    const float* pb = b.data_ptr<float>();
    for (int64_t r = 0; r < m; ++r) std::copy(pb, pb + n, pc + r * n);
  }
  if (!sgemm(m, n, k, x.data_ptr<float>(), *lx, w.data_ptr<float>(), *lw, bias.defined() ? 1.0f : 0.0f, pc)) return {};
  return out;
}

#else

bool cpu_gemm_available() { return false; }
void prepare_cpu_gemm() {}
at::Tensor cpu_gemm(const at::Tensor&, const at::Tensor&) { return {}; }
at::Tensor cpu_linear(const at::Tensor&, const at::Tensor&, const at::Tensor&) { return {}; }

#endif

}  // namespace tv::exec
