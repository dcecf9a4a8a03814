// The tensors file a capture may name (ModelRecord::tensors): a model's weights and inputs and the
// eager numbers computed on them, written from Python with torch.save.
// Contract: `load_tensor_file(path)` reads a torch.save'd flat dict of name -> tensor (LibTorch's
// pickle_load reads that format) onto the CPU. Keys `parameter:NAME`, `buffer:NAME` and `input:K`
// go to `held` as they are (jit/captured.h takes them so); `output:I`, `grad:NAME` and
// `cotangent_seed` make `reference` (null when the file holds no output). A file that is missing,
// larger than 16 GiB, not such a dict, or has a key or value of another kind throws
// std::invalid_argument naming the file and the key.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>

#include "replay/eager.h"

namespace tv {

struct CapturedTensors {
  std::map<std::string, at::Tensor> held;            // parameter:, buffer:, input:
  std::shared_ptr<const StoredReference> reference;  // output:, grad:, cotangent_seed
};

CapturedTensors load_tensor_file(const std::string& path);

}  // namespace tv
