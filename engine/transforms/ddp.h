// The `ddp` transform: data parallelism with replicated parameters, as thunder.distributed.ddp.
// Contract:
//  - claims "parameter-distribution" (ddp and fsdp exclude each other).
//  - transform_module: sets the module attributes use_ddp=True and bucket_size_in_mb=<MB> (the
//    acquired prologue checks them, as Thunder's does) and, when replayed, broadcasts every
//    parameter from rank 0 (real collective), so every rank starts from rank 0's weights.
//  - post_optimization: stage "ddp pass": each parameter gradient g of the backward becomes
//    `ltorch.true_divide(g, W)` -> torch_all_reduce_prim_impl (FUTURE) -> torch_wait_prim_impl, and
//    the return hands out the waited tensors (Thunder's printout of the seed, to names). Then stage
//    "ddp bucketing (N MB)": gradients grouped, in reverse parameter order as torch DDP does, in
//    buckets of at most N MiB (a larger gradient alone); a bucket of two or more is packed
//    (ltorch.reshape to 1-D, ltorch.cat), divided, all-reduced once and unpacked (prims.slice,
//    ltorch.reshape); a bucket of one keeps the plain form. Then stage "Sort Collectives"
//    (passes/sort_collectives.h): each bucket's all-reduce starts right after its last gradient and
//    is waited for only before the return, so communication overlaps the rest of the backward.
//  - The group of the plain all-reduces is what the forward's synchronize finds, the bucketing's
//    what the backward bucketing finds (TransformContext::finds_process_group): None in
//    thunder-2024-03 when ddp came after jit, and the stage fails (distributed_state.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "transforms/transform.h"

namespace tv {

std::unique_ptr<Transform> make_ddp_transform();

// Names of the proxies the prologue unpacks with get_parameter (the module's parameters).
std::vector<std::string> parameter_proxies(const Trace& prologue);

// The slots of the backward's returned tuple that hold the parameters' gradients (the computation's
// arguments the prologue unpacks with get_parameter).
std::vector<size_t> parameter_gradient_slots(const StageHistory& h);

// The backward with the gradients in `slots` (indices into its returned tuple) averaged over
// `world` ranks by all-reduce; `bucket_bytes` <= 0 gives one all-reduce per gradient.
TracePtr ddp_backward(const Trace& backward, const std::vector<size_t>& slots, int world, int64_t bucket_bytes,
                      const std::string& pass);
// The same with the all-reduces' group argument as read (None when the reader found none): then
// the first all-reduce's meta check fails and this throws PartialTraceError (distributed_state.h)
// holding the backward up to and including that all-reduce. `names`: the names `backward` uses
// (collectives::names_of), when the caller made them for several stages of one backward; read from
// `backward` when null.
TracePtr ddp_backward(const Trace& backward, const std::vector<size_t>& slots, int world, int64_t bucket_bytes,
                      const std::string& pass, const Value& group, const ReservedNames* names = nullptr);

}  // namespace tv
