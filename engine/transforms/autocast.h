// The `autocast` transform: mixed precision as torch.autocast does it for matmul-like ops.
// Contract: pre_prologue (stage "autocast (bf16)" or "(f16)"): each ltorch.linear, ltorch.matmul
// and ltorch.scaled_dot_product_attention of the computation runs in TransformContext::autocast_dtype:
// its float32 tensor arguments are converted (ltorch.convert_element_type) to the low dtype before
// it, and its result converted back to float32 after it, under the original output name; every
// other op stays in float32. Autograd then differentiates the converts, so parameter gradients
// come back in float32. Numbers differ from the f32 reference within the low dtype's tolerance.
#pragma once
#include <memory>

#include "transforms/transform.h"

namespace tv {

std::unique_ptr<Transform> make_autocast_transform();

// The computation with the matmul-like ops in `dtype` (what the hook records).
TracePtr autocast_computation(const Trace& computation, DType dtype, const std::string& pass);

}  // namespace tv
