// Batch Gradients: the same-shaped weight and bias gradients of a backward (one per layer of a
// stack of identical blocks) computed by one batched op each. A host-bound step launches two
// kernels per layer and linear for them (the weight's matmul, the bias's sum); batched, four
// linears of 32 layers take about twenty launches instead of 256.
// Contract: picks the top-level statements that are a 2-d matmul (ltorch.matmul, prims.matmul) of
// floating tensors, or an ltorch.sum over constant dims of a floating tensor (keepdim False, no
// dtype), whose single output nothing but the `return` reads (a `del` does not count); groups them
// by symbol, operand shapes, dtypes, devices and dims. A group of two or more whose operands take
// at most `max_bytes` is replaced, just before the return, by `ltorch.stack` of each operand list,
// one `ltorch.matmul` (or `ltorch.sum` over the dims shifted by one) and `ltorch.unbind`; the
// return reads the unbound pieces instead. The values are the statements' (a batched matmul's
// slices, up to the GEMM's rounding). Other statements keep their order. Provenance
// "Batch Gradients".
#pragma once
#include <cstdint>

#include "ir/trace.h"

namespace tv::passes {

TracePtr batch_gradients(const Trace&, int64_t max_bytes = int64_t{16} << 20);

}  // namespace tv::passes
