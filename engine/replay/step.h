// One step of a built pipeline with the executor: prologue → forward, then backward. Replay and the
// Python bindings run a call through these two functions, so the sequence lives in one place.
// Contract: `step_forward` runs the final prologue on the inputs (parameters come from the
// executor's module view) and the final forward on the flat values it unpacked. When the stages
// hold a backward trace the forward is the augmented one, ({'output': ...}, saved_for_backward):
// the outputs are the tensors of 'output' and `saved` the saved values (ExecError when 'output' is
// missing); otherwise the outputs are the tensors of the forward's return and `saved` is none,
// and the step ends there: its collectives are settled as step_backward's are (below).
// `step_backward` runs the final backward on `saved` (moved into the run, so that a caller that
// moves it in lets the backward free each saved value after its last use) and one cotangent per output (an undefined
// tensor is None) and returns one gradient per argument of the computation trace (stage 0 of the
// forward), named by the parameter's qualified name ("fc1.weight") or else the argument's own name
// (an input, "x"); the tensor is undefined where the backward returns no tensor. It throws
// std::runtime_error when there is no backward trace. With an NCCL communicator of two or more
// ranks in the executor's options, the ranks first meet on the device (a barrier the stream waits
// for), so that no rank starts its gradient all-reduces ahead of the others; and the collectives
// the step waited for on the stream are settled before it returns (Communicator::settle: a rank
// that failed or timed out is thrown here) unless `settle` is Settle::later (a training loop: the
// host runs on into the next step, whose collectives throw such a failure). `before`, when set, is
// called with the kind of each trace just before it runs. Nothing is caught: errors propagate to
// the caller.
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "exec/executor.h"
#include "jit/module.h"
#include "history/stages.h"
#include "record/results.h"

namespace tv {

using TraceHook = std::function<void(TraceKind)>;

// An ExecOptions::on_timing hook that appends the time of each call statement (not structural ones
// such as unpacking or del) to `into`, labelled with `*trace`, the kind running now (a TraceHook
// keeps it current). Both referents must outlive the executor's runs.
std::function<void(const BoundSymbol&, const exec::SymbolTime&)> timing_recorder(std::vector<SymbolTiming>& into,
                                                                                 const std::string& trace);

struct StepForward {
  std::vector<at::Tensor> outputs;
  exec::RValue saved;  // saved_for_backward; none without a backward trace
};

StepForward step_forward(exec::Executor& executor, const StageHistory& stages, const std::vector<at::Tensor>& inputs,
                         const TraceHook& before = {});

// When step_backward waits on the host for the collectives it left on the stream.
enum class Settle { now, later };

// One gradient per computation argument, in argument order (step_backward without the names: a
// caller that steps many times takes the names once, from argument_names).
std::vector<at::Tensor> step_gradients(exec::Executor& executor, const StageHistory& stages, exec::RValue saved,
                                       const std::vector<at::Tensor>& cotangents, const TraceHook& before = {},
                                       Settle settle = Settle::now);

// The name of each computation argument, in argument order: the parameter's qualified name
// ("fc1.weight"), else the argument's own ("x").
std::vector<std::string> argument_names(const jit::Module& module, const StageHistory& stages);

// (name, gradient) per computation argument, in argument order.
std::vector<std::pair<std::string, at::Tensor>> step_backward(exec::Executor& executor, const jit::Module& module,
                                                              const StageHistory& stages, exec::RValue saved,
                                                              const std::vector<at::Tensor>& cotangents,
                                                              const TraceHook& before = {},
                                                              Settle settle = Settle::now);

}  // namespace tv
