#include "replay/step.h"

#include <stdexcept>
#include <unordered_map>

#include "dist/communicator.h"
#include "exec/collective_rules.h"
#include "ops/collectives.h"

namespace tv {
namespace {

const Trace& final_trace(const StageHistory& stages, TraceKind kind) {
  auto t = stages.last(kind);
  if (!t) throw std::runtime_error("the pipeline has no " + std::string(trace_kind_name(kind)) + " trace");
  return *t;
}

// Waits on the host for the collectives the step left on the device stream; throws their failure.
void settle(const exec::Executor& executor) {
  for (dist::Communicator* comm : exec::communicators(executor.options())) comm->settle();
}

// Ranks that share an NCCL communicator meet on the device before their backward. A rank ahead
// of the others would otherwise start each gradient all-reduce early, and its kernel would hold
// SMs, waiting for the late ranks, while the rank's own backward runs beside it.
void align_ranks(const exec::Executor& executor) {
  dist::Communicator* comm = exec::communicator(executor.options());
  if (comm && comm->backend() == "nccl" && comm->size() >= 2) comm->barrier_async()->wait_on_stream();
}

}  // namespace

std::function<void(const BoundSymbol&, const exec::SymbolTime&)> timing_recorder(std::vector<SymbolTiming>& into,
                                                                                 const std::string& trace) {
  return [&into, &trace](const BoundSymbol& b, const exec::SymbolTime& t) {
    if (b.symbol->form != PrintForm::call && b.symbol->form != PrintForm::annotated_call) return;
    into.push_back({trace, static_cast<int>(t.index), b.name(), b.output() ? b.output()->name : "", t.seconds * 1e6,
                    t.device_timer, t.start_seconds * 1e6});
  };
}

StepForward step_forward(exec::Executor& executor, const StageHistory& stages, const std::vector<at::Tensor>& inputs,
                         const TraceHook& before) {
  if (before) before(TraceKind::prologue);
  auto unpacked = executor.run(final_trace(stages, TraceKind::prologue), inputs);
  auto flat = unpacked.items.at(0).items;
  if (before) before(TraceKind::forward);
  auto fwd = executor.run(final_trace(stages, TraceKind::forward), flat);
  StepForward out;
  if (!stages.last(TraceKind::backward)) {
    settle(executor);
    out.outputs = exec::tensors_of(fwd);
    return out;
  }
  // The augmented forward: ({'output': ...}, saved_for_backward).
  const exec::RValue* o = fwd.items.at(0).find("output");
  if (!o) throw exec::ExecError("the augmented forward returned no 'output'");
  out.outputs = exec::tensors_of(*o);
  out.saved = fwd.items.at(1);
  return out;
}

std::vector<std::string> argument_names(const jit::Module& module, const StageHistory& stages) {
  std::unordered_map<std::string, const std::string*> qualified;
  qualified.reserve(module.parameters.size());
  for (const auto& param : module.parameters) qualified[jit::parameter_proxy_name(param.name)] = &param.name;
  std::vector<std::string> out;
  const Trace& computation = *stages.forward.front().trace;
  out.reserve(computation.params.size());
  for (const auto& p : computation.params) {
    auto it = qualified.find(p.proxy->name);
    out.push_back(it == qualified.end() ? p.proxy->name : *it->second);
  }
  return out;
}

std::vector<at::Tensor> step_gradients(exec::Executor& executor, const StageHistory& stages, exec::RValue saved,
                                       const std::vector<at::Tensor>& cotangents, const TraceHook& before,
                                       Settle when) {
  auto backward = stages.last(TraceKind::backward);
  if (!backward) throw std::runtime_error("this call has no backward trace (no parameter or input requires grad)");
  std::vector<exec::RValue> cot;
  cot.reserve(cotangents.size());
  for (const auto& c : cotangents) cot.push_back(c.defined() ? exec::RValue::of(c) : exec::RValue::none());
  if (before) before(TraceKind::backward);
  align_ranks(executor);
  std::vector<exec::RValue> inputs;
  inputs.push_back(std::move(saved));
  inputs.push_back(exec::RValue::tuple(std::move(cot)));
  auto grads = executor.run(*backward, std::move(inputs));
  if (when == Settle::now) settle(executor);
  const size_t arguments = stages.forward.front().trace->params.size();
  std::vector<at::Tensor> out(arguments);
  for (size_t i = 0; i < arguments && i < grads.items.size(); ++i)
    if (grads.items[i].is_tensor()) out[i] = std::move(grads.items[i].t);
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> step_backward(exec::Executor& executor, const jit::Module& module,
                                                              const StageHistory& stages, exec::RValue saved,
                                                              const std::vector<at::Tensor>& cotangents,
                                                              const TraceHook& before, Settle when) {
  auto grads = step_gradients(executor, stages, std::move(saved), cotangents, before, when);
  auto names = argument_names(module, stages);
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) out.emplace_back(std::move(names[i]), std::move(grads[i]));
  return out;
}

}  // namespace tv
