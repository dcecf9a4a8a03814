// Execution rules of the distributed prims (transforms/collectives.h).
// A collective starts asynchronously on its group's communicator, found in ExecOptions::user
// (exec/collective_rules.h), and yields a handle: a runtime name
// "FUTURE#<id>" keyed into a process-wide table of pending work. torch_wait_prim_impl waits on it,
// removes it from the table and returns the tensor. The wait is on the device stream
// (Work::wait_on_stream; gloo's blocks): the host runs on and queues more work, as torch's DDP does.
// A collective that fails or times out is thrown by the communicator's next collective or blocking
// wait, or by Communicator::settle (which replay/step.h's step_backward calls unless told not to).
// The tensor a collective works on is a copy (rules never modify their arguments), except
// all_reduce's when its skip_clone is True: the trace then says that nothing else reads it.
// Without a communicator the collectives compute what a group of one rank computes (all_reduce,
// all_gather and reduce_scatter are the identity), so Thunder's DDP printouts run on one rank. A
// process group that is None fails as Thunder does.
#include <ATen/ATen.h>

#include <atomic>
#include <map>
#include <mutex>

#include "dist/communicator.h"
#include "exec/collective_rules.h"
#include "exec/exec_rules.h"
#include "exec/executor.h"
#include "ops/collectives.h"
#include "runtime/rule_util.h"

namespace tv::exec {
namespace {

struct Pending {
  dist::WorkPtr work;  // null when the result is already there
  at::Tensor tensor;   // all_reduce: the tensor reduced in place; otherwise the result once known
  bool in_place = false;
};

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
std::map<uint64_t, Pending>& table() {
  static std::map<uint64_t, Pending> t;
  return t;
}

constexpr const char* kPrefix = "FUTURE#";

RValue handle(Pending p) {
  static std::atomic<uint64_t> next{1};
  uint64_t id = next++;
  std::lock_guard lock(table_mutex());
  table().emplace(id, std::move(p));
  return RValue::name(kPrefix + std::to_string(id));
}

// The communicator of the group argument at `i`, or null (one rank alone).
dist::Communicator* group_at(const ExecContext& c, const std::vector<RValue>& a, size_t i, const char* symbol) {
  const RValue& g = rarg(a, i, "group");
  if (g.is_none())
    throw ExecError(std::string(symbol) +
                        ": ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
                        "'torch.distributed.distributed_c10d.ProcessGroup'>",
                    symbol);
  return communicator(c.options, g.kind == RValue::Kind::name ? g.s : std::string());
}

void check_sum(const std::vector<RValue>& a, size_t i, const char* symbol) {
  const RValue& op = rarg(a, i, "op");
  if (op.kind != RValue::Kind::name || op.s.find("SUM") == std::string::npos)
    throw ExecError(std::string(symbol) + ": only the SUM reduction is supported, got " + describe(op), symbol);
}

RValue all_reduce(const ExecContext& c, const std::vector<RValue>& a, const RKwargs&) {
  check_sum(a, 1, collectives::kAllReduce);
  auto* comm = group_at(c, a, 2, collectives::kAllReduce);
  Pending p;
  const at::Tensor& t = rules::tensor_at(a, 0, "tensor");
  bool skip_clone = a.size() > 4 && a[4].is_number() && a[4].integer_value() != 0;
  p.tensor = skip_clone ? t : t.clone();
  p.in_place = true;
  if (comm) p.work = comm->all_reduce_async(p.tensor);
  return handle(std::move(p));
}

RValue all_gather(const ExecContext& c, const std::vector<RValue>& a, const RKwargs&) {
  auto* comm = group_at(c, a, 1, collectives::kAllGather);
  Pending p;
  const at::Tensor& t = rules::tensor_at(a, 0, "tensor");
  if (a.size() > 3 && a[3].is_number() && a[3].integer_value() != 0)
    throw ExecError(std::string(collectives::kAllGather) + ": only dim 0 is supported", collectives::kAllGather);
  if (comm)
    p.work = comm->all_gather_async(t.contiguous());
  else
    p.tensor = t.dim() == 0 ? t.reshape({1}).clone() : t.clone();
  return handle(std::move(p));
}

RValue reduce_scatter(const ExecContext& c, const std::vector<RValue>& a, const RKwargs&) {
  check_sum(a, 1, collectives::kReduceScatter);
  auto* comm = group_at(c, a, 2, collectives::kReduceScatter);
  Pending p;
  const at::Tensor& t = rules::tensor_at(a, 0, "tensor");
  if (comm)
    p.work = comm->reduce_scatter_async(t.contiguous());
  else
    p.tensor = t.clone();
  return handle(std::move(p));
}

RValue wait(const ExecContext&, const std::vector<RValue>& a, const RKwargs&) {
  const RValue& h = rarg(a, 0, "future");
  if (h.kind == RValue::Kind::tensor) return h;  // already a tensor (a synchronous collective)
  if (h.kind != RValue::Kind::name || h.s.rfind(kPrefix, 0) != 0)
    throw ExecError(std::string(collectives::kWait) + " expects a future, got " + describe(h), collectives::kWait);
  uint64_t id = std::stoull(h.s.substr(std::string(kPrefix).size()));
  Pending p;
  {
    std::lock_guard lock(table_mutex());
    auto it = table().find(id);
    if (it == table().end())
      throw ExecError(std::string(collectives::kWait) + ": " + h.s + " was already waited or never started",
                      collectives::kWait);
    p = std::move(it->second);
    table().erase(it);
  }
  if (!p.work) return RValue::of(p.tensor);
  p.work->wait_on_stream();
  return RValue::of(p.in_place ? p.tensor : p.work->result());
}

}  // namespace

void detail::register_collective_rules() {
  collectives::register_collective_symbols();
  auto& registry = SymbolRegistry::global();
  set_exec_rule(*registry.find(collectives::kAllReduce), ExecRule(all_reduce));
  set_exec_rule(*registry.find(collectives::kAllGather), ExecRule(all_gather));
  set_exec_rule(*registry.find(collectives::kReduceScatter), ExecRule(reduce_scatter));
  set_exec_rule(*registry.find(collectives::kWait), ExecRule(wait));
}

dist::Communicator* communicator(const ExecOptions& options, const std::string& group) {
  if (!options.user.has_value()) return nullptr;
  if (auto* p = std::any_cast<dist::Communicator*>(&options.user)) return *p;
  auto* groups = std::any_cast<const dist::ProcessGroups*>(&options.user);
  if (!groups || !*groups) return nullptr;
  if (group.empty() || group == collectives::kGroup) return (*groups)->world;
  if (auto* comm = (*groups)->find(group)) return comm;
  throw ExecError("no communicator for the process group '" + group +
                      "' on this rank: the run made no such group (a trace of a mesh replayed without its mesh?)",
                  "collective");
}

std::vector<dist::Communicator*> communicators(const ExecOptions& options) {
  std::vector<dist::Communicator*> out;
  if (auto* world = communicator(options)) out.push_back(world);
  if (auto* groups = std::any_cast<const dist::ProcessGroups*>(&options.user); groups && *groups)
    for (const auto& [name, comm] : (*groups)->named) out.push_back(comm.get());
  return out;
}

size_t pending_collectives() {
  std::lock_guard lock(table_mutex());
  return table().size();
}

}  // namespace tv::exec
