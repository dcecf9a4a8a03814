// Distributed prims: the collectives ddp and fsdp record, spelled as Thunder prints them.
// Contract:
//  - torch_all_reduce_prim_impl(t, _DistributedReduceOps_SUM_0, <group>, True, False) -> FUTURE t
//    torch_all_gather_prim_impl(t, <group>, True, 0)                -> FUTURE [W*N, ...]
//    torch_reduce_scatter_prim_impl(t, _DistributedReduceOps_SUM_0, <group>, True) -> FUTURE [N/W, ...]
//    torch_wait_prim_impl(ft)                                        -> the tensor
//    The reduce op and the group are opaque names (Value::name); the world's group is
//    `_torch_distributed_distributed_c10d_ProcessGroup_1` (kGroup), a mesh's subgroups are
//    `..._ProcessGroup_2`, `_3`, ... (group_name). The executor runs a collective on the
//    communicator of its group's name. Every symbol has the trait "collective" (DCE, CSE, fusion
//    and remat leave them alone).
//  - The recorders below append one bound symbol at the builder's current level and return its
//    output; gather and scatter take the group's size (it is not in the arguments).
//  - Gradient rules (installed by register_collective_symbols): wait passes its cotangent through;
//    all_gather's cotangent is divided by the group's size W and reduce-scattered over the same
//    group, so differentiating a forward that gathers shards gives each rank the shard of the
//    group's mean gradient (FSDP's backward).
//  - Execution rules live in exec/rules_collectives.cpp (exec/collective_rules.h).
#pragma once
#include <string>

#include "ir/builder.h"

namespace tv::collectives {

inline constexpr const char* kAllReduce = "torch_all_reduce_prim_impl";
inline constexpr const char* kAllGather = "torch_all_gather_prim_impl";
inline constexpr const char* kReduceScatter = "torch_reduce_scatter_prim_impl";
inline constexpr const char* kWait = "torch_wait_prim_impl";
inline constexpr const char* kSumOp = "_DistributedReduceOps_SUM_0";
inline constexpr const char* kGroup = "_torch_distributed_distributed_c10d_ProcessGroup_1";

// Thunder's all_reduce meta check of the group argument (utils.check_type), as its ValueError.
class CollectiveTypeError : public OpError {
 public:
  using OpError::OpError;
};

// The group argument: the process group's name, or None when the reader found none.
Value group_argument(bool found);
// The name of the world's group (index 1) or of a subgroup (index 2, 3, ...), as Thunder numbers them.
std::string group_name(int index);

// Registers the four symbols and their gradient rules. Idempotent.
void register_collective_symbols();

// An asynchronous SUM all-reduce (do_async True). `skip_clone` (Thunder's last argument) lets it
// reduce `t` in place: only for a tensor the caller made for it and that nothing else reads.
ProxyPtr all_reduce(TraceBuilder&, const ProxyPtr& t, bool skip_clone = false);
// The same with the group the caller read. A group that is not a process group (None) is recorded
// first, then its meta check throws CollectiveTypeError, so the builder ends with the failing call.
ProxyPtr all_reduce(TraceBuilder&, const ProxyPtr& t, const Value& group, bool skip_clone);
ProxyPtr all_gather(TraceBuilder&, const ProxyPtr& t, int group_size, const Value& group = Value::name(kGroup));
ProxyPtr reduce_scatter(TraceBuilder&, const ProxyPtr& t, int group_size, const Value& group = Value::name(kGroup));
ProxyPtr wait(TraceBuilder&, const ProxyPtr& future);

// The names used in `t` (params, outputs, subsymbols' outputs): a builder given them never hands one
// out, so the bound symbols it records can be spliced into a copy of `t`.
ReservedNames names_of(const Trace& t);
void reserve_names(TraceBuilder&, const Trace& t);  // b.reserve_names(names_of(t))

}  // namespace tv::collectives
