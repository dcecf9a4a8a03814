#include "exec/generated_kernels.h"

#include <stdexcept>

#include "exec/pointwise_cpu.h"
#include "runtime/aten_util.h"

#ifdef TV_HAVE_CUDA
#include <ATen/cuda/jiterator.h>
#endif

namespace tv::exec {

bool generated_kernels_available(const Device& device) {
  if (device.kind == Device::Kind::cpu) return true;
#ifdef TV_HAVE_CUDA
  return device.kind == Device::Kind::cuda;
#else
  return false;
#endif
}

bool inputs_match(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs) {
  if (inputs.size() != kernel.inputs.size()) return false;
  if (!inputs.empty() && inputs[0].defined() && inputs[0].device().is_cpu()) return pointwise_cpu_applies(kernel, inputs);
  at::ScalarType want = to_scalar_type(kernel.dtype);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    if (!t.defined() || !t.is_cuda()) return false;
    if (t.scalar_type() != (kernel.bool_inputs[i] ? at::kBool : want)) return false;
  }
  return true;
}

std::vector<at::Tensor> launch_generated(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs) {
  if (!inputs.empty() && inputs[0].device().is_cpu()) return run_pointwise_cpu(kernel, inputs);
#ifdef TV_HAVE_CUDA
  c10::SmallVector<at::Tensor> args(inputs.begin(), inputs.end());
  auto outs = at::cuda::CompileAndLaunchKernel(kernel.source, kernel.name, static_cast<int>(kernel.outputs.size()), args,
                                               {}, /*return_by_ref=*/true);
  return std::vector<at::Tensor>(outs.begin(), outs.end());
#else
  (void)kernel;
  (void)inputs;
  throw std::logic_error("generated kernels need a build with CUDA");
#endif
}

}  // namespace tv::exec
