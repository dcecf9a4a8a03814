#include "replay/world_replay.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "dist/launch.h"
#include "dist/world.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "replay/eager.h"
#include "replay/replay.h"

namespace tv {
namespace {

jit::Module model_for_rank(const WorldReplayRequest& request, int rank) {
  auto params = request.params;
  int base = params.count("seed") ? std::stoi(params["seed"]) : 0;
  params["seed"] = std::to_string(base + rank);
  if (request.spec.device != "cpu") {
    auto d = Device::parse(request.spec.device);
    if (!d) throw std::invalid_argument("bad device '" + request.spec.device + "' (use cpu or cuda:N)");
    // Threads: rank r on GPU r. One rank per process: every model of this process on its GPU.
    if (d->kind == Device::Kind::cuda) d->index = request.launch ? request.launch->local_rank() : rank;
    params["device"] = d->str();
  }
  return request.model_factory ? request.model_factory(params) : jit::make_model(request.model, params);
}

// A copy of `m` with its own tensors and `weights`' parameter values, on `m`'s devices.
jit::Module with_weights(jit::Module m, const jit::Module& weights) {
  for (auto& p : m.parameters)
    if (auto* w = weights.find_parameter(p.name))
      p.value = std::make_shared<at::Tensor>(
          w->value->detach().to(p.value->device()).clone().requires_grad_(w->value->requires_grad()));
  return m;
}

// The mean over ranks of the eager gradients, by parameter name (cotangents as replay_rank draws them).
std::map<std::string, at::Tensor> mean_eager_grads(const WorldReplayRequest& request, const jit::Module& weights,
                                                   uint64_t cotangent_seed) {
  int world = request.spec.world_size;
  std::map<std::string, at::Tensor> sum;
  for (int k = 0; k < world; ++k) {
    auto m = with_weights(model_for_rank(request, k), weights);
    std::vector<at::Tensor> inputs;
    for (const auto& i : m.inputs) inputs.push_back(*i.value);
    auto eager = [&](const std::vector<at::Tensor>& cotangents) {
      return request.reference.compute ? request.reference.compute(m, inputs, cotangents)
                                       : eager_reference(m, inputs, cotangents);
    };
    auto outputs = eager({}).outputs;
    const uint64_t seed = request.reference.cotangent_seed ? *request.reference.cotangent_seed : cotangent_seed + k;
    auto grads = eager(make_cotangents(outputs, seed)).parameter_grads;
    for (const auto& [name, g] : grads) {
      if (!g.defined()) continue;
      auto on_cpu = g.detach().cpu();  // each rank's model lives on its own GPU
      sum[name] = sum.count(name) ? sum[name] + on_cpu : on_cpu.clone();
    }
  }
  for (auto& [name, g] : sum) g = g / world;
  return sum;
}

// This process's rank of a one-rank-per-process launch; an error aborts the group and is recorded
// in this rank's slot, as World::run_all records a thread's.
template <class RunRank>
void run_own_rank(dist::Launch& launch, dist::Backend backend, const dist::CommOptions& options, RunRank& run_rank,
                  WorldReplayResult& result) {
  const int rank = launch.rank();
  for (int r = 0; r < static_cast<int>(result.replay.ranks.size()); ++r) result.replay.ranks[r].rank = r;
  std::unique_ptr<dist::Communicator> comm;
  try {
    comm = launch.communicator(backend, options);
    run_rank(rank, comm.get());
  } catch (const std::exception& e) {
    if (comm) comm->abort("rank " + std::to_string(rank) + " failed: " + e.what());
    std::string what = e.what();
    // A broken connection does not say which peer went away: the launch's heartbeats do.
    if (what.find("stopped answering") == std::string::npos)
      if (auto silent = launch.silent_ranks(); !silent.empty()) {
        std::string ranks;
        for (int s : silent) ranks += (ranks.empty() ? "" : ", ") + std::to_string(s);
        what += " Rank(s) " + ranks + " stopped answering the launch's store (dead or stuck).";
      }
    auto& r = result.replay.ranks[rank];
    if (r.error.empty()) r.error = what;
  }
  try {
    comm.reset();
  } catch (...) {
  }
}

}  // namespace

WorldReplayResult run_world(const WorldReplayRequest& request, const ValidatedOrder& order) {
  const auto& spec = request.spec;
  if (spec.world_size < 1) throw std::invalid_argument("world size must be at least 1");
  if (request.cuda_graph_steps > 0 && spec.world_size > 1)
    throw std::invalid_argument("a CUDA graph replays one rank's step: its collectives wait on the host, which a capture "
                                "forbids (drop --cuda-graph or use --world 1)");
  const Transform* distributor = order.parameter_distributor();
  bool distributed = distributor != nullptr;
  ReplayOptions options;
  if (auto lowered = order.computes_in(TransformContext{})) options.min_tolerance = tolerance(*lowered);
  if (distributed) options.summed_ranks = spec.world_size;
  std::map<std::string, at::Tensor> mean;
  if (request.replay && distributed) {
    mean = mean_eager_grads(request, model_for_rank(request, 0), options.cotangent_seed);
  }

  WorldReplayResult result;
  result.replay.ranks.resize(spec.world_size);
  std::mutex result_mutex;
  std::optional<PipelineFailure> failure;  // every rank fails the same way while building
  auto run_rank = [&](int rank, dist::Communicator* comm) {
    auto module = model_for_rank(request, rank);
    // The reference runs on unsharded weights: rank 0's when the pipeline distributes parameters.
    auto reference = with_weights(model_for_rank(request, rank), distributed ? model_for_rank(request, 0) : module);
    TransformContext context;
    context.world_size = spec.world_size;
    context.rank = rank;
    if (comm) context.broadcast_from_rank0 = [comm](at::Tensor& t) { comm->broadcast(t, 0); };
    if (auto d = Device::parse(module.inputs.empty() ? "cpu" : jit::TensorMeta::of(*module.inputs[0].value).device.str()))
      context.device = *d;
    context.semantics = &find_semantics(spec.semantics);
    context.workaround = spec.workaround;
    context.shard_group_size = spec.shard_group;
    // The subgroups (hsdp's mesh) are formed before the pipeline, in the same order on every rank.
    dist::ProcessGroups groups(comm);
    if (comm && distributor)
      for (const auto& g : distributor->subgroups(context)) groups.form(g.name, g.ranks);
    BuiltPipeline built;
    try {
      built = build_pipeline(module, order, context);
    } catch (const PipelineFailure& e) {
      std::lock_guard lock(result_mutex);
      if (!failure) failure = e;
      return;
    }
    RankResult r;
    if (request.replay) {
      ReplayOptions o = options;
      o.device = context.device;
      o.cuda_graph_steps = request.cuda_graph_steps;
      o.generated_kernels = request.generated_kernels;
      o.reference_module = &reference;
      o.reference = request.reference;
      if (comm) o.prepare_executor = [&groups](std::any& user) { user = static_cast<const dist::ProcessGroups*>(&groups); };
      if (distributed)
        o.expected_grad = [&mean, distributor, context](const std::string& name, const at::Tensor& own) {
          auto it = mean.find(name);
          if (it == mean.end()) return own;
          return distributor->local_gradient(it->second.to(own.device()), context);
        };
      r = replay_rank(module, built, rank, o);
    }
    r.rank = rank;
    std::lock_guard lock(result_mutex);
    result.replay.ranks[rank] = std::move(r);
    if (rank == 0) result.stages = built.stages;
  };

  if (spec.world_size == 1) {
    run_rank(0, nullptr);
    if (failure) throw *failure;
    return result;
  }
  bool cuda = spec.device.rfind("cuda", 0) == 0;
  if (request.launch && request.launch->size() != spec.world_size)
    throw std::invalid_argument("the pipeline asks for " + std::to_string(spec.world_size) + " ranks but the launch has " +
                                std::to_string(request.launch->size()) + " (WORLD_SIZE)");
  if (cuda && !dist::nccl_available())
    throw std::invalid_argument("--device cuda with --world " + std::to_string(spec.world_size) +
                                " needs NCCL: this build has no CUDA/NCCL support (rebuild where /usr/local/cuda has them, or use --device cpu)");
  dist::CommOptions comm_options;
  comm_options.timeout = std::chrono::seconds(request.timeout_seconds);
  if (request.launch) {
    run_own_rank(*request.launch, cuda ? dist::Backend::nccl : dist::Backend::gloo, comm_options, run_rank, result);
    if (failure) throw *failure;
    return result;
  }
  dist::World world(spec.world_size, cuda ? dist::Backend::nccl : dist::Backend::gloo, comm_options);
  auto outcomes = world.run_all([&](int rank, dist::Communicator& comm) { run_rank(rank, &comm); });
  if (failure) throw *failure;
  for (const auto& o : outcomes)
    if (!o.ok) {
      auto& r = result.replay.ranks[o.rank];
      r.rank = o.rank;
      if (r.error.empty()) r.error = o.error;
    }
  return result;
}

}  // namespace tv
