// Device check: whether this build and this machine can run W ranks on a device, said before any
// work starts, so that a missing GPU is an error message and not a LibTorch dispatcher dump.
// Contract: `device_unavailable("cpu" | "cuda" | "cuda:N", ranks)` returns "" when every rank can
// have a device of its own (cpu: always; cuda: this LibTorch has CUDA and at least `ranks` GPUs are
// visible, counting from N), else one message saying what is missing and how to fix it.
// `visible_gpus()` is 0 when this LibTorch has no CUDA.
#pragma once
#include <string>

namespace tv::exec {

int visible_gpus();
std::string device_unavailable(const std::string& device, int ranks = 1);

// True when an error text is LibTorch's (CPU or CUDA) or CUDA's out-of-memory report.
bool is_out_of_memory(const std::string& error_text);

}  // namespace tv::exec
