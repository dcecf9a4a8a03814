// Float32 matrix products on the CPU through oneDNN's sgemm (Debian's libdnnl), where LibTorch's
// CPU products go to whichever BLAS the system provides: Debian's torch gets the reference BLAS,
// whose small products run an order of magnitude slower than oneDNN's (a [16, 64] x [64, 64]
// product, one thread: 20.5 against 2.3 us a call).
// Contract: cpu_gemm(a, b) is a @ b for float32 matrices, or stacks of them with the same batch
// dimensions on both sides (of any strides); cpu_linear(x, w, bias)
// is x @ w^T (+ bias added to every row) for x [..., k] (a matrix of any strides; with more
// dimensions, contiguous), w [n, k] and bias [n]. Each returns a new contiguous tensor shaped as
// ATen's, or an undefined tensor where it does not apply: a build without oneDNN, TV_CPU_GEMM=0 in
// the environment, an operand that is not a dense CPU float32 tensor with storage, one autograd
// would record (grad mode on and it requires grad), a matrix neither row- nor column-major, an
// empty dimension. The caller then runs ATen. The sums are float32's in oneDNN's order (they
// differ from another BLAS's in the last bits). Runs on the calling thread's OpenMP team, the one
// torch.set_num_threads sizes. Thread-safe.
#pragma once
#include <ATen/core/Tensor.h>

namespace tv::exec {

at::Tensor cpu_gemm(const at::Tensor& a, const at::Tensor& b);
at::Tensor cpu_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias = {});

// Whether this build has oneDNN's sgemm and TV_CPU_GEMM does not turn it off.
bool cpu_gemm_available();

// oneDNN's one-time setup (it generates its kernels for this CPU: about 45 ms at a process's first
// product), done now on the calling thread by one product; once per process, nothing where
// cpu_gemm does not apply. The Python door runs it on a thread of its own when a module is jitted,
// so that the first call finds it done.
void prepare_cpu_gemm();

}  // namespace tv::exec
