#include "exec/device_check.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <cstdlib>

#include "ir/dtype.h"

namespace tv::exec {

int visible_gpus() {
  if (!at::hasCUDA()) return 0;
  return static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
}

std::string device_unavailable(const std::string& device, int ranks) {
  auto d = Device::parse(device);
  if (!d) return "unknown device '" + device + "': use cpu or cuda (cuda:N)";
  if (d->kind == Device::Kind::cpu) return "";
  if (!at::hasCUDA())
    return "--device " + device + ": this build's LibTorch has no CUDA (or no GPU is visible); run with --device cpu, "
           "or build on a GPU machine against a CUDA LibTorch (tests/gpu/run_gpu_tests.sh)";
  int gpus = visible_gpus();
  int needed = d->index + ranks;
  if (gpus < needed) {
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    std::string seen = std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " visible" +
                       (mask ? std::string(" (CUDA_VISIBLE_DEVICES=") + mask + ")" : std::string());
    if (ranks > 1)
      return "--world " + std::to_string(ranks) + " --device " + device + " needs one GPU per rank (" +
             std::to_string(needed) + "), " + seen + "; use --world " + std::to_string(std::max(1, gpus - d->index)) +
             " or --device cpu (gloo ranks)";
    return "--device " + device + ": " + seen + "; use cuda:0..cuda:" + std::to_string(std::max(0, gpus - 1)) + " or cpu";
  }
  return "";
}

bool is_out_of_memory(const std::string& error_text) {
  return error_text.find("out of memory") != std::string::npos ||
         error_text.find("can't allocate memory") != std::string::npos ||  // LibTorch's CPU allocator
         error_text.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos ||
         error_text.find("cudaErrorMemoryAllocation") != std::string::npos;
}

}  // namespace tv::exec
