#include "runtime/small_gemm.h"

#include "runtime/small_kernels.h"

#ifdef TV_HAVE_CUDA
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#endif

namespace tv::exec {

#ifdef TV_HAVE_CUDA
namespace {

// cuBLASLt is column-major; a row-major [m, n] product D = a b is the column-major D^T = b^T a^T.
// Each operand is read as the column-major matrix `stored`, with `transposed` telling whether the
// product reads it as stored or transposed, so that op(stored) is the operand's transpose.
struct Operand {
  bool transposed = false;
  int64_t rows = 0, cols = 0, ld = 0;
  bool ok = false;
};

// A matrix [r, c] with strides s0, s1 such that op(stored) = its transpose.
Operand operand_of(int64_t r, int64_t c, int64_t s0, int64_t s1) {
  if ((s1 == 1 || c == 1) && s0 >= std::max<int64_t>(c, 1)) return {false, c, r, s0, true};  // row-major
  if ((s0 == 1 || r == 1) && s1 >= std::max<int64_t>(r, 1)) return {true, r, c, s1, true};   // column-major
  return {};
}

uint32_t alignment_of(const void* p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

struct PlanKey {
  int device;
  at::ScalarType dtype;
  bool tf32, bias;
  Operand x, y;  // x = b, y = a (see above)
  int64_t m, n;
  uint32_t align_x, align_y, align_d, align_c;  // align_c: the residual's (C), else align_d

  bool operator==(const PlanKey& o) const {
    return device == o.device && dtype == o.dtype && tf32 == o.tf32 && bias == o.bias && same(x, o.x) &&
           same(y, o.y) && m == o.m && n == o.n && align_x == o.align_x && align_y == o.align_y &&
           align_d == o.align_d && align_c == o.align_c;
  }
  static bool same(const Operand& p, const Operand& q) {
    return p.transposed == q.transposed && p.rows == q.rows && p.cols == q.cols && p.ld == q.ld;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (uint64_t v : {uint64_t(k.device), uint64_t(k.dtype), uint64_t(k.tf32), uint64_t(k.bias),
                       uint64_t(k.x.transposed), uint64_t(k.x.rows), uint64_t(k.x.cols), uint64_t(k.x.ld),
                       uint64_t(k.y.transposed), uint64_t(k.y.rows), uint64_t(k.y.cols), uint64_t(k.y.ld),
                       uint64_t(k.m), uint64_t(k.n), uint64_t(k.align_x), uint64_t(k.align_y), uint64_t(k.align_d),
                       uint64_t(k.align_c)})
      mix(v);
    return h;
  }
};

// The descriptors and the algorithm of one key; `found` false when cuBLASLt offered none. The
// bias pointer is an attribute of the descriptor, so a call holds `use` from setting it to the
// launch.
struct Plan {
  bool found = false;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::mutex use;

  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (y) cublasLtMatrixLayoutDestroy(y);
    if (x) cublasLtMatrixLayoutDestroy(x);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

cudaDataType_t data_type(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return CUDA_R_16BF;
    case at::kHalf: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

std::unique_ptr<Plan> make_plan(cublasLtHandle_t handle, const PlanKey& k) {
  auto plan = std::make_unique<Plan>();
  cublasComputeType_t compute =
      k.dtype == at::kFloat && k.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cudaDataType_t type = data_type(k.dtype);
  if (cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return plan;
  cublasOperation_t tx = k.x.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, ty = k.y.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &tx, sizeof(tx));
  cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &ty, sizeof(ty));
  if (k.bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  }
  if (cublasLtMatrixLayoutCreate(&plan->x, type, k.x.rows, k.x.cols, k.x.ld) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&plan->y, type, k.y.rows, k.y.cols, k.y.ld) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&plan->d, type, k.n, k.m, k.n) != CUBLAS_STATUS_SUCCESS)
    return plan;
  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasLtMatmulPreferenceCreate(&preference) != CUBLAS_STATUS_SUCCESS) return plan;
  size_t no_workspace = 0;  // also rules out split-K's second kernel
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &no_workspace,
                                       sizeof(no_workspace));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &k.align_x,
                                       sizeof(k.align_x));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &k.align_y,
                                       sizeof(k.align_y));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &k.align_c,
                                       sizeof(k.align_c));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &k.align_d,
                                       sizeof(k.align_d));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->x, plan->y, plan->d, plan->d,
                                                         preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    plan->algo = result.algo;
    plan->found = true;
  }
  return plan;
}

// One cuBLASLt handle per device and the plans, for the process (never destroyed: the CUDA
// runtime may be gone by the time static destructors run).
struct Plans {
  std::mutex mutex;
  std::unordered_map<int, cublasLtHandle_t> handles;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> by_key;

  static Plans& instance() {
    static Plans* plans = new Plans;
    return *plans;
  }

  // The handle and the plan of `key`, made on first use; null plan when cuBLASLt failed.
  std::pair<cublasLtHandle_t, Plan*> of(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto h = handles.find(key.device);
    if (h == handles.end()) {
      cublasLtHandle_t handle = nullptr;
      if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) return {nullptr, nullptr};
      h = handles.emplace(key.device, handle).first;
    }
    auto p = by_key.find(key);
    if (p == by_key.end()) {
      if (by_key.size() >= 4096) by_key.clear();  // shapes of traces long gone
      p = by_key.emplace(key, make_plan(h->second, key)).first;
    }
    return {h->second, p->second.get()};
  }
};

bool supported_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf; }

// Whether tensors a and b (and bias, when defined) can enter a product here at all.
bool operands_apply(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias) {
  if (!a.defined() || !b.defined() || !a.is_cuda() || !b.is_cuda()) return false;
  if (a.device() != b.device() || a.scalar_type() != b.scalar_type() || !supported_dtype(a.scalar_type())) return false;
  if (a.is_conj() || b.is_conj() || a.is_neg() || b.is_neg() || !a.has_storage() || !b.has_storage()) return false;
  // (a run that records autograd, a create_graph backward: ATen's product, which autograd knows)
  if (at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad() || (bias.defined() && bias.requires_grad())))
    return false;
  return true;
}

// The product of the [m, k] matrix `a` (of tensor a_data's storage and device) and the [k, n]
// matrix `b`, plus bias, plus residual (contiguous, m * n elements, or undefined), into a new
// contiguous tensor of `out_shape` (m * n elements): both operands are given by their sizes and
// strides, so that no view of them is made.
at::Tensor product(const at::Tensor& a_data, const Operand& a, const at::Tensor& b_data, const Operand& b,
                   const at::Tensor& bias, const at::Tensor& residual, int64_t m, int64_t n, int64_t k,
                   at::IntArrayRef out_shape) {
  if (m == 0 || n == 0 || k == 0 || m * n > kSmallGemmOutputs || k > kSmallGemmDepth) return {};
  if (bias.defined() && (!bias.is_cuda() || bias.device() != a_data.device() ||
                         bias.scalar_type() != a_data.scalar_type() || bias.dim() != 1 || bias.size(0) != n ||
                         !bias.is_contiguous() || alignment_of(bias.data_ptr()) < 16))
    return {};
  if (!a.ok || !b.ok) return {};
  PlanKey key{static_cast<int>(a_data.get_device()), a_data.scalar_type(), at::globalContext().allowTF32CuBLAS(), bias.defined(), b, a,
              m, n, alignment_of(b_data.data_ptr()), alignment_of(a_data.data_ptr()), 0, 0};
  c10::cuda::CUDAGuard guard(a_data.device());
  // (the CUDA allocation without the dispatcher's round trip of at::empty: a host-bound step makes
  // one per product)
  at::Tensor out = at::detail::empty_cuda(out_shape, a_data.options());
  key.align_d = alignment_of(out.data_ptr());
  key.align_c = residual.defined() ? alignment_of(residual.data_ptr()) : key.align_d;
  auto [handle, plan] = Plans::instance().of(key);
  if (!plan || !plan->found) return {};
  float one = 1, beta = residual.defined() ? 1 : 0;
  const void* c = residual.defined() ? residual.data_ptr() : out.data_ptr();
  const void* bias_pointer = bias.defined() ? bias.data_ptr() : nullptr;
  std::lock_guard<std::mutex> lock(plan->use);
  if (bias_pointer)
    cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof(bias_pointer));
  cublasStatus_t status = cublasLtMatmul(handle, plan->desc, &one, b_data.data_ptr(), plan->x, a_data.data_ptr(),
                                         plan->y, &beta, c, plan->d, out.data_ptr(), plan->d, &plan->algo,
                                         nullptr, 0, c10::cuda::getCurrentCUDAStream(a_data.get_device()).stream());
  if (status != CUBLAS_STATUS_SUCCESS) return {};
  return out;
}

}  // namespace

bool small_gemm_available() { return true; }

at::Tensor small_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias) {
  if (!operands_apply(a, b, bias) || a.dim() != 2 || b.dim() != 2 || b.size(0) != a.size(1)) return {};
  int64_t m = a.size(0), n = b.size(1);
  if (m * n <= kSmallGemmOutputs)
    if (at::Tensor out = small_product({a, a.stride(0), a.stride(1)}, {b, b.stride(0), b.stride(1)}, bias, {}, m, n,
                                       a.size(1), {m, n});
        out.defined())
      return out;
  return product(a, operand_of(m, a.size(1), a.stride(0), a.stride(1)), b,
                 operand_of(b.size(0), n, b.stride(0), b.stride(1)), bias, {}, m, n, a.size(1), {m, n});
}

at::Tensor small_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const at::Tensor& residual) {
  // x is read as [m, k]: a matrix by its own strides, more dimensions only when contiguous.
  if (!operands_apply(x, w, bias) || x.dim() < 1 || w.dim() != 2 || (x.dim() != 2 && !x.is_contiguous())) return {};
  int64_t k = x.size(-1), n = w.size(0);
  if (w.size(1) != k || k == 0) return {};
  int64_t m = x.numel() / k;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(n);
  if (residual.defined() &&
      (!residual.is_cuda() || residual.device() != x.device() || residual.scalar_type() != x.scalar_type() ||
       residual.sizes() != at::IntArrayRef(shape) || !residual.is_contiguous() || residual.is_conj() ||
       residual.is_neg() || !residual.has_storage() || (at::GradMode::is_enabled() && residual.requires_grad())))
    return {};
  const int64_t x_row = x.dim() == 2 ? x.stride(0) : k, x_column = x.dim() == 2 ? x.stride(1) : 1;
  if (m * n <= kSmallGemmOutputs)
    if (at::Tensor out = small_product({x, x_row, x_column}, {w, w.stride(1), w.stride(0)}, bias, residual, m, n, k, shape);
        out.defined())
      return out;
  Operand x_read = operand_of(m, k, x_row, x_column);
  // w [n, k] is read transposed, as [k, n] with its strides swapped.
  return product(x, x_read, w, operand_of(k, n, w.stride(1), w.stride(0)), bias, residual, m, n, k, shape);
}

#else

bool small_gemm_available() { return false; }

at::Tensor small_gemm(const at::Tensor&, const at::Tensor&, const at::Tensor&) { return {}; }

at::Tensor small_linear(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&) { return {}; }

#endif

}  // namespace tv::exec
