// The extension _thunder_viz: the jit of recorded torch programs, the executor bridge, the world.
// This is the one file that includes <torch/extension.h> (the torch.Tensor <-> at::Tensor caster).
// Contract:
//  - A Program is what the Python recorder saw: calls of engine symbols ("ltorch.linear") with their
//    arguments and keywords (slots of earlier values, parameters by qualified name, literals) and
//    the user's file:line header. Its forward makes each call with TraceBuilder::call, the one
//    path for every op (no per-op code here); an unknown symbol is an OpError.
//  - JitCore holds the engine Module whose parameters ARE the torch module's tensors (shared
//    TensorImpl, no copy). build() makes a cache entry: a copy of that module with the call's
//    inputs (dropped once built), the pipeline built for the transform order (transform_module,
//    acquisition, autograd, passes).
//  - Entry.forward runs prologue -> forward (step_forward of engine/replay/step.h, as replay does)
//    and returns the output tensors and the saved-for-backward values; Entry.backward runs the
//    backward trace (step_gradients) and returns one gradient per bridge tensor (inputs, then the
//    module's parameters in order; None where there is none). With `timed` set, each keeps the
//    per-bound-symbol times of its last run (forward_timings: prologue and forward; backward_timings).
//  - Entry.apply(inputs, parameters) runs both under one autograd node in C++ (EngineNode): the
//    outputs' grad_fn runs the engine's backward and gives each input and parameter its gradient,
//    with no Python between; jit.py uses it for calls that need nothing of Python in the backward.
//  - check_against_reference is replay's check (engine/replay/replay.h), so the Inspector's checks of
//    Python calls against eager torch use the same tolerances as `thunder-viz run`.
//  - run_world(W, fn) runs fn(rank) on W threads (gloo ranks); jitted modules built on a rank's
//    thread use that rank's communicator. The GIL is released while the engine works.
//  - join_process_group(...) makes this process one rank of the engine's own group beside an
//    initialised torch.distributed group (one rank per process: torchrun): a dist::Launch over the
//    TCP store torch's group already uses (MASTER_ADDR:MASTER_PORT, a client; keys under a prefix
//    of their own) and one communicator (gloo, or NCCL on LOCAL_RANK's GPU). Jitted modules built
//    outside run_world's threads then use it. leave_process_group() releases it (atexit).
#include <torch/extension.h>

#include <torch/csrc/Exceptions.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/graph_task.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "bindings.h"
#include "aten/convert.h"
#include "capture/gather.h"
#include "dist/launch.h"
#include "dist/world.h"
#include "exec/executor.h"
#include "format/printer.h"
#include "jit/acquire.h"
#include "ops/aten_fallback.h"
#include "ops/collectives.h"
#include "ops/ltorch.h"
#include "pipeline/pipeline.h"
#include "replay/module_view.h"
#include "replay/eager.h"
#include "replay/replay.h"
#include "replay/step.h"
#include "runtime/cpu_gemm.h"
#include "transforms/distributed_state.h"

namespace py = pybind11;

namespace tv::py_bindings {
namespace {

// ---------------------------------------------------------------- recorded programs

struct Ref {
  int slot = -1;      // an input or an earlier op's value
  std::string param;  // or a parameter/buffer by qualified name
};

// An argument as recorded: a literal, a reference to a tensor, or a list or tuple of arguments.
struct Arg {
  enum class Kind { literal, ref, list, tuple } kind = Kind::literal;
  Value literal;  // None, bool, int, float, str, dtype, device, a tuple of ints
  Ref ref;
  std::vector<Arg> items;
};

// One call of an engine symbol ("ltorch.add"); its outputs' proxies fill `outputs`, in order.
struct Op {
  std::string symbol;
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  std::vector<int> outputs;  // slots
  std::string header;        // "tests/python/test_jit.py:12: \t    h = self.fc1(x)"
};

struct Program {
  std::vector<std::string> input_names;  // slots 0..n-1
  std::vector<Op> ops;
  std::vector<Ref> outputs;
  int num_slots = 0;
};

Ref ref_of(const py::handle& h) {
  auto t = py::reinterpret_borrow<py::tuple>(h);
  auto tag = py::cast<std::string>(t[0]);
  if (tag == "v") return Ref{py::cast<int>(t[1]), {}};
  if (tag == "p") return Ref{-1, py::cast<std::string>(t[1])};
  throw py::value_error("bad reference tag '" + tag + "'");
}

// The recorder's encoding (recorder.py, Recorder.enc): None, bool, int, float, str, a sequence of
// ints, ("v", slot), ("p", name), ("l", [args]), ("t", [args]), ("d", "f32"), ("dev", "cuda:0"),
// ("n", "torch.strided") (a layout or memory format).
Arg arg_of(const py::handle& h) {
  Arg a;
  if (h.is_none()) return a;
  if (py::isinstance<py::bool_>(h)) {
    a.literal = Value::boolean(py::cast<bool>(h));
  } else if (py::isinstance<py::int_>(h)) {
    a.literal = Value::integer(py::cast<int64_t>(h));
  } else if (py::isinstance<py::float_>(h)) {
    a.literal = Value::floating(py::cast<double>(h));
  } else if (py::isinstance<py::str>(h)) {
    a.literal = Value::string(py::cast<std::string>(h));
  } else if (py::isinstance<py::tuple>(h) && py::len(h) == 2 && py::isinstance<py::str>(py::reinterpret_borrow<py::tuple>(h)[0])) {
    auto t = py::reinterpret_borrow<py::tuple>(h);
    auto tag = py::cast<std::string>(t[0]);
    if (tag == "l" || tag == "t") {
      a.kind = tag == "l" ? Arg::Kind::list : Arg::Kind::tuple;
      for (auto item : t[1]) a.items.push_back(arg_of(item));
    } else if (tag == "d") {
      auto d = dtype_from_short(py::cast<std::string>(t[1]));
      if (!d) throw py::value_error("unknown dtype " + py::cast<std::string>(t[1]));
      a.literal = Value::of(*d);
    } else if (tag == "n") {
      a.literal = Value::name(py::cast<std::string>(t[1]));
    } else if (tag == "dev") {
      auto d = Device::parse(py::cast<std::string>(t[1]));
      if (!d) throw py::value_error("unknown device " + py::cast<std::string>(t[1]));
      a.literal = Value::of(*d);
    } else {
      a.kind = Arg::Kind::ref;
      a.ref = ref_of(h);
    }
  } else if (py::isinstance<py::sequence>(h)) {
    a.literal = Value::ints(py::cast<std::vector<int64_t>>(h));
  } else {
    throw py::type_error("unsupported argument in a recorded program: " + py::cast<std::string>(py::repr(h)));
  }
  return a;
}

std::shared_ptr<const Program> program_of(const py::dict& d) {
  auto p = std::make_shared<Program>();
  p->input_names = py::cast<std::vector<std::string>>(d["inputs"]);
  p->num_slots = py::cast<int>(d["num_slots"]);
  for (auto item : d["ops"]) {
    auto t = py::reinterpret_borrow<py::tuple>(item);
    Op op;
    op.symbol = py::cast<std::string>(t[0]);
    for (auto a : t[1]) op.args.push_back(arg_of(a));
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(t[2])) op.kwargs.emplace_back(py::cast<std::string>(k), arg_of(v));
    op.outputs = py::cast<std::vector<int>>(t[3]);
    op.header = py::cast<std::string>(t[4]);
    p->ops.push_back(std::move(op));
  }
  for (auto item : d["outputs"]) p->outputs.push_back(ref_of(item));
  return p;
}

// Replays a program on proxies: each op is one TraceBuilder::call of its symbol.
class Replayer {
 public:
  Replayer(const Program& p, jit::ForwardContext& ctx) : p_(p), ctx_(ctx), slots_(p.num_slots) {
    for (size_t i = 0; i < p.input_names.size(); ++i) slots_.at(i) = ctx.input(p.input_names[i]);
  }

  std::vector<ProxyPtr> run() {
    auto& b = ctx_.builder();
    for (const auto& op : p_.ops) {
      b.set_location(op.header);
      std::vector<Value> args;
      for (const auto& a : op.args) args.push_back(value(a));
      Kwargs kwargs;
      for (const auto& [k, a] : op.kwargs) kwargs.emplace_back(k, value(a));
      std::vector<ProxyPtr> outs;
      if (ops::is_fallback_name(op.symbol)) ops::fallback_symbol(op.symbol);  // registered on first use
      for_each_proxy(b.call(op.symbol, std::move(args), std::move(kwargs)), [&](const ProxyPtr& p) { outs.push_back(p); });
      if (outs.size() != op.outputs.size())
        throw OpError(op.header + ": " + op.symbol + " gave " + std::to_string(outs.size()) + " values, the recording expected " +
                      std::to_string(op.outputs.size()));
      for (size_t k = 0; k < outs.size(); ++k) slots_.at(op.outputs[k]) = outs[k];
    }
    std::vector<ProxyPtr> out;
    for (const auto& r : p_.outputs) out.push_back(proxy(r));
    return out;
  }

 private:
  ProxyPtr proxy(const Ref& r) const {
    if (r.slot < 0) return ctx_.param(r.param);
    auto p = slots_.at(r.slot);
    if (!p) throw OpError("the recorded program reads a value before it is defined (slot " + std::to_string(r.slot) + ")");
    return p;
  }
  Value value(const Arg& a) const {
    switch (a.kind) {
      case Arg::Kind::literal: return a.literal;
      case Arg::Kind::ref: return Value::of(proxy(a.ref));
      case Arg::Kind::list:
      case Arg::Kind::tuple: {
        std::vector<Value> items;
        for (const auto& item : a.items) items.push_back(value(item));
        return a.kind == Arg::Kind::list ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      }
    }
    return Value::none();
  }

  const Program& p_;
  jit::ForwardContext& ctx_;
  std::vector<ProxyPtr> slots_;
};

// Every symbol a recorded program can call (the ones with a meta function or a decomposition).
std::vector<std::string> symbol_names() {
  ltorch::register_ops();
  std::vector<std::string> names;
  for (const Symbol* s : SymbolRegistry::global().all())
    if (s->impl && s->form == PrintForm::call) names.push_back(s->name);
  return names;
}

// ---------------------------------------------------------------- world context

struct RankContext {
  dist::Communicator* comm = nullptr;
  int rank = 0;
  int world = 1;
};
thread_local RankContext tl_rank;

// This process's rank beside a torch.distributed group (join_process_group), for every thread.
struct ProcessRank {
  std::unique_ptr<dist::Launch> launch;
  std::unique_ptr<dist::Communicator> comm;
  RankContext rank;
};
ProcessRank& process_rank() {
  static ProcessRank p;
  return p;
}

// A run_world thread's rank, else the process's rank, else a single rank.
RankContext current_rank() { return tl_rank.comm ? tl_rank : process_rank().rank; }

// ---------------------------------------------------------------- jit core and cache entries

// A second backward through one call, whose first backward freed what it saved: eager allows it where
// the two losses' graphs share nothing (two independent heads of one forward).
constexpr const char* kSecondBackward =
    "thunder_viz: a second backward through the same jitted call: the call is one autograd node, and the first "
    "backward freed the values it saved. Eager torch allows this only where the two losses share no part of the "
    "graph (two independent heads of one forward). Call backward once on the sum of the losses, or pass "
    "retain_graph=True to the first backward";

// What a call's forward saved for its backward. The tensors that are also the call's outputs go to
// autograd (save_for_backward of the autograd node, EngineNode's or jit.py's _Bridge): held here,
// they would keep their own graph alive through a cycle that nothing frees when no backward runs.
// The others stay here and move into the backward's run, which frees each one after its last use
// (held to the end, a step's saved values are all freed at once, and the allocator hands the memory
// back to the system only to fault it in again on the next step).
// Autograd's check that nothing it saved was modified in place before the backward is kept for
// those too: their versions are noted at the forward and compared at the backward.
struct Saved {
  exec::RValue value;
  bool used = false;
  // each output's shape and options: the zeros of an output whose cotangent autograd did not give
  std::vector<std::pair<std::vector<int64_t>, at::TensorOptions>> outputs;
  // For a backward with create_graph=True, which runs the forward again: the random generators'
  // states before the forward drew from them (where it draws other than dropout's seeded masks),
  // and the module's buffers' versions after it.
  struct GeneratorState {
    at::Generator generator;
    at::Tensor state;
  };
  std::vector<GeneratorState> draws;
  std::vector<uint32_t> buffer_versions;

  // Moves out the tensors that are one of `outputs` (depth first), leaving undefined tensors in
  // their places, and notes the version of every other one.
  std::vector<at::Tensor> take_outputs(const std::vector<at::Tensor>& outputs) {
    std::vector<at::Tensor> out;
    taken_.clear();
    versions_.clear();
    visit_tensors(value, [&](at::Tensor& t) {
      bool is_output = t.defined() && std::any_of(outputs.begin(), outputs.end(), [&](const at::Tensor& o) {
                         return o.defined() && o.unsafeGetTensorImpl() == t.unsafeGetTensorImpl();
                       });
      taken_.push_back(is_output);
      if (is_output) {
        out.push_back(std::move(t));
        t = at::Tensor();
      } else if (t.defined()) {
        versions_.emplace_back(t, t._version());
      }
    });
    return out;
  }
  // Puts back what take_outputs moved out, in the same order.
  void put_tensors(const std::vector<std::optional<at::Tensor>>& tensors) {
    check_unused();
    size_t next = 0, position = 0;
    visit_tensors(value, [&](at::Tensor& t) {
      if (position >= taken_.size() || !taken_[position++]) return;
      if (next >= tensors.size()) throw std::runtime_error("SavedForBackward.put_tensors: fewer tensors than were taken");
      t = tensors[next] ? *tensors[next] : at::Tensor();
      ++next;
    });
    if (next != tensors.size()) throw std::runtime_error("SavedForBackward.put_tensors: more tensors than were taken");
  }
  // std::runtime_error when a backward has run on these values already (it freed them).
  void check_unused() const {
    if (used) throw std::runtime_error(kSecondBackward);
  }
  // std::runtime_error when a tensor kept here was modified in place since the forward (as
  // autograd's own check says it); its references are dropped with the versions.
  void check_versions() {
    for (const auto& [t, version] : versions_)
      if (t._version() != version)
        throw std::runtime_error(
            "one of the tensors the backward needs (" + describe_tensor(t) + ", saved by the forward at version " +
            std::to_string(version) + ") has been modified by an inplace operation (now version " +
            std::to_string(t._version()) + "): clone it before modifying it, or run the backward before the in-place change");
    versions_.clear();
  }

 private:
  static std::string describe_tensor(const at::Tensor& t) { return exec::describe(exec::RValue::of(t)); }

  std::vector<bool> taken_;                            // per tensor visited, whether take_outputs moved it out
  std::vector<std::pair<at::Tensor, uint32_t>> versions_;  // the others, as the forward left them


  template <typename Fn>
  static void visit_tensors(exec::RValue& v, Fn&& fn) {
    if (v.kind == exec::RValue::Kind::tensor) fn(v.t);
    for (auto& item : v.items) visit_tensors(item, fn);
    for (auto& [key, entry] : v.entries) {
      visit_tensors(key, fn);
      visit_tensors(entry, fn);
    }
  }
};

// An undefined tensor for None, and back.
std::vector<at::Tensor> defined_or_empty(const std::vector<std::optional<at::Tensor>>& tensors) {
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t ? *t : at::Tensor());
  return out;
}
std::vector<std::optional<at::Tensor>> optional_tensors(std::vector<at::Tensor> tensors) {
  std::vector<std::optional<at::Tensor>> out;
  for (auto& t : tensors) out.push_back(t.defined() ? std::optional<at::Tensor>(std::move(t)) : std::nullopt);
  return out;
}

// A call's inputs and the module's parameters as the forward took them, with their versions: a
// backward with create_graph=True runs the forward again on them, and refuses (as autograd's own
// check of saved tensors does) where one was modified in place since.
class CallInputs {
 public:
  CallInputs() = default;
  // The versions now, or as the caller noted them at the forward.
  CallInputs(std::vector<at::Tensor> tensors, int64_t inputs, std::vector<uint32_t> versions = {})
      : tensors_(std::move(tensors)), versions_(std::move(versions)), inputs_(inputs) {
    if (versions_.size() == tensors_.size()) return;
    versions_.clear();
    versions_.reserve(tensors_.size());
    for (const auto& t : tensors_) versions_.push_back(t.defined() ? t._version() : 0);
  }
  // The call's own inputs (without the parameters).
  std::vector<at::Tensor> inputs() const { return {tensors_.begin(), tensors_.begin() + inputs_}; }
  // std::runtime_error where a tensor changed since the forward.
  void check_versions() const {
    for (size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].defined() && tensors_[i]._version() != versions_[i])
        throw_changed(static_cast<int64_t>(i) < inputs_ ? "inputs" : "parameters", tensors_[i], versions_[i]);
  }
  [[noreturn]] static void throw_changed(const std::string& kind, const at::Tensor& t, uint32_t version) {
    throw std::runtime_error(
        "thunder_viz: a backward with create_graph=True runs the jitted module's forward again, and one of its " + kind +
        " (" + exec::describe(exec::RValue::of(t)) + ", at version " + std::to_string(version) +
        " after the forward) has been modified by an inplace operation since (now version " +
        std::to_string(t._version()) + "): run the backward before the in-place change (an optimizer step)");
  }

 private:
  std::vector<at::Tensor> tensors_;  // the inputs, then the parameters
  std::vector<uint32_t> versions_;
  int64_t inputs_ = 0;
};

class Entry {
 public:
  Entry(jit::Module module, std::vector<std::string> bridge_names, RankContext rank)
      : module_(std::move(module)), bridge_names_(std::move(bridge_names)), rank_(rank), view_(module_) {}

  // `source` is the module this entry's was copied from: its parameters are the caller's tensors.
  void build(const ValidatedOrder& order, const TransformContext& context, const jit::Module& source) {
    built_ = build_pipeline(module_, order, context);
    bridge_of_argument_.clear();  // (found again from the new stages at the first backward)
    device_ = device_of_call();
    // The call that built the entry needs its inputs no more: kept, they would hold that call's
    // batch (its images, a KV cache) for as long as the entry is cached.
    for (auto& input : module_.inputs) input.value = std::make_shared<at::Tensor>();
    auto forward = built_.stages.last(TraceKind::forward);
    draws_unseeded_ = forward && std::any_of(forward->body.begin(), forward->body.end(), [](const BoundSymbol& s) {
                        return s.symbol->has(Trait::random) && s.name() != "ltorch.dropout";  // (dropout's mask: the seed input's)
                      });
    keep_local_parts(order, context, source);
  }

  py::tuple forward(const std::vector<at::Tensor>& inputs) {
    auto saved = std::make_shared<Saved>();
    std::vector<at::Tensor> outputs;
    {
      py::gil_scoped_release release;
      outputs = run_forward(inputs, *saved);
    }
    return py::make_tuple(outputs, saved);
  }

  // One gradient per bridge tensor (inputs then parameters); None where the engine gives none.
  std::vector<std::optional<at::Tensor>> backward(Saved& saved, const std::vector<std::optional<at::Tensor>>& cotangents) {
    std::vector<at::Tensor> cot = defined_or_empty(cotangents);
    std::vector<at::Tensor> grads;
    {
      py::gil_scoped_release release;
      grads = run_backward(saved, std::move(cot));
    }
    return optional_tensors(std::move(grads));
  }

  // The forward's run (prologue, forward), its saved values and its outputs' shapes into `saved`.
  // Needs no GIL.
  std::vector<at::Tensor> run_forward(const std::vector<at::Tensor>& inputs, Saved& saved) {
    take_local_parts();
    forward_timings_.clear();
    if (draws_unseeded_) saved.draws = generator_states(inputs);
    auto step = step_forward(executor(forward_executor_, forward_timings_), built_.stages, inputs, [this](TraceKind k) { running_ = trace_kind_name(k); });
    saved.value = std::move(step.saved);
    saved.buffer_versions.clear();
    for (const auto& b : module_.buffers) saved.buffer_versions.push_back(b.value->_version());
    for (auto& o : step.outputs) {
      // a buffer returned as it is: a tensor of its own over its memory, so that autograd's
      // bookkeeping of the output leaves the module's tensor as it is
      if (o.defined() && holds(o)) o = o.detach();
      saved.outputs.emplace_back(o.sizes().vec(), o.options());
    }
    return std::move(step.outputs);
  }

  // The backward's run, on autograd's thread: one gradient per bridge tensor (inputs then
  // parameters), undefined where the engine gives none or where no output whose cotangent autograd
  // gave reaches it (an undefined cotangent: an output the loss did not use, taken as zeros). The
  // saved values are freed as it goes, or, where autograd keeps the graph (backward(retain_graph=
  // True)), kept for another backward. Needs no GIL.
  std::vector<at::Tensor> run_backward(Saved& saved, std::vector<at::Tensor> cotangents) {
    saved.check_unused();
    saved.check_versions();
    bool keep = torch::autograd::get_current_graph_task_keep_graph();
    backward_timings_.clear();
    saved.used = !keep;
    // A cotangent without storage of its own (vmap's batched tensor: jacobian(vectorize=True),
    // autograd.grad(is_grads_batched=True)) goes through ATen's batching rules, statement by statement.
    bool wrapped = std::any_of(cotangents.begin(), cotangents.end(), [](const at::Tensor& c) { return c.defined() && !c.has_storage(); });
    if (wrapped && !aten_only_executor_) {
      exec::ExecOptions eo = options();
      eo.generated_kernels = false;
      aten_only_executor_.emplace(eo);
    }
    return gradients(wrapped ? *aten_only_executor_ : executor(backward_executor_, backward_timings_),
                     keep ? saved.value : std::exchange(saved.value, {}), saved.outputs, std::move(cotangents));
  }

  // A backward with create_graph=True (a gradient penalty, a Hessian-vector product, a physics-informed
  // loss on du/dx): the forward runs again on the call's inputs and the module's parameters with
  // LibTorch's autograd recording, every statement through ATen (no generated kernel, no direct
  // cuBLASLt call), then the backward on what that forward saved, recording too. The gradients are
  // then differentiable in the inputs, the parameters and the cotangents, as eager's are; the
  // forward's own saved values stay for a backward without create_graph. Refused (EngineError)
  // where the forward would do again what it did once: a write into a buffer or an input (a
  // running statistic, a cache), or a collective of ddp/fsdp. Needs no GIL.
  std::vector<at::Tensor> run_backward_differentiable(const CallInputs& call, const Saved& saved,
                                                      std::vector<at::Tensor> cotangents) {
    saved.check_unused();
    check_differentiable();
    call.check_versions();
    for (size_t i = 0; i < module_.buffers.size() && i < saved.buffer_versions.size(); ++i)
      if (module_.buffers[i].value->_version() != saved.buffer_versions[i])
        CallInputs::throw_changed("buffers (" + module_.buffers[i].name + ")", *module_.buffers[i].value, saved.buffer_versions[i]);
    backward_timings_.clear();
    // the forward's draws again (a reparameterisation's noise, a fallback dropout's mask), then the
    // generators as they are now
    struct Restore {
      std::vector<Saved::GeneratorState> states;
      ~Restore() {
        for (auto& s : states) set_generator_state(s);
      }
    } restore;
    for (const auto& d : saved.draws) restore.states.push_back(state_of(d.generator));
    for (const auto& d : saved.draws) set_generator_state(d);
    if (!differentiable_executor_) {
      exec::ExecOptions eo = options();
      eo.no_grad = false;
      eo.generated_kernels = false;
      differentiable_executor_.emplace(eo);
    }
    auto step = step_forward(*differentiable_executor_, built_.stages, call.inputs(), [this](TraceKind k) { running_ = trace_kind_name(k); });
    return gradients(*differentiable_executor_, std::move(step.saved), saved.outputs, std::move(cotangents));
  }

  // For each output, the bridge tensors eager autograd reaches from it: a gradient flows to a tensor
  // only from the outputs the loss used, as in eager (a head whose output the loss ignores: None).
  void set_output_reach(std::vector<std::vector<size_t>> reach) { output_reach_ = std::move(reach); }

  // Bridge tensors that eager autograd reaches from the outputs (a gradient of zeros where nothing
  // flows back, as addmm's bias with beta=0 gets): given by a tensor of the same shape and options,
  // each gets zeros where the engine's backward gives no gradient.
  void set_zero_gradients(const std::vector<std::pair<int64_t, at::Tensor>>& like) {
    zero_gradients_.clear();
    for (const auto& [i, t] : like)
      if (i >= 0 && static_cast<size_t>(i) < bridge_names_.size())
        zero_gradients_.push_back({static_cast<size_t>(i), t.sizes().vec(), t.options()});
  }

  // Whether `t` is one of the module's parameters or buffers (the same tensor, not a copy).
  bool holds(const at::Tensor& t) const {
    auto same = [&](const jit::NamedTensor& n) { return n.value->unsafeGetTensorImpl() == t.unsafeGetTensorImpl(); };
    return std::any_of(module_.parameters.begin(), module_.parameters.end(), same) ||
           std::any_of(module_.buffers.begin(), module_.buffers.end(), same);
  }

  const BuiltPipeline& built() const { return built_; }

  // The collectives the built forward and backward run, in order, as "symbol dtype[shape]": the
  // ranks of one world must run the same ones, or gloo's transport aborts the process on a size
  // it did not expect (jit.py compares them across ranks before the first run).
  std::vector<std::string> collective_calls() const {
    std::vector<std::string> out;
    for (TraceKind kind : {TraceKind::forward, TraceKind::backward}) {
      auto trace = built_.stages.last(kind);
      if (!trace) continue;
      for (const auto& s : trace->body) {
        const std::string& name = s.name();
        if (name != collectives::kAllReduce && name != collectives::kAllGather && name != collectives::kReduceScatter)
          continue;
        std::string call = name;
        if (!s.args.empty() && s.args[0].is_proxy() && s.args[0].proxy->is_tensor())
          call += " " + std::string(short_name(s.args[0].proxy->dtype)) + shape_text(s.args[0].proxy->shape);
        out.push_back(std::move(call));
      }
    }
    return out;
  }
  // The inputs the forward writes into in place (the caller copies the new values in after it).
  void set_written_inputs(std::vector<std::string> names) { written_inputs_ = std::move(names); }
  // Per-bound-symbol timing costs clock reads and a record per statement: off unless asked for.
  bool timed() const { return timed_; }
  void set_timed(bool on) { timed_ = on; }
  const std::vector<SymbolTiming>& forward_timings() const { return forward_timings_; }
  const std::vector<SymbolTiming>& backward_timings() const { return backward_timings_; }

 private:
  // One executor per direction, kept from call to call: it holds each trace's name tables and
  // fusion-region plans, which a new executor would build again on every step.
  struct CachedExecutor {
    std::optional<exec::Executor> executor;
    bool timed = false;
  };
  // What every executor of this entry runs with: the call's device and the module's view.
  exec::ExecOptions options() const {
    exec::ExecOptions eo;
    eo.device = device_;
    eo.module = &view_;
    return eo;
  }
  exec::Executor& executor(CachedExecutor& cache, std::vector<SymbolTiming>& timings) {
    if (!cache.executor || cache.timed != timed_) {
      exec::ExecOptions eo = options();
      if (rank_.comm) eo.user = rank_.comm;
      if (timed_) eo.on_timing = timing_recorder(timings, running_);
      cache.executor.emplace(eo);
      cache.timed = timed_;
    }
    return *cache.executor;
  }

  // The backward trace on `saved`, with zeros for the cotangents autograd did not give: one gradient
  // per bridge tensor, kept to what eager autograd reaches (set_output_reach, set_zero_gradients).
  std::vector<at::Tensor> gradients(exec::Executor& executor, exec::RValue saved,
                                    const std::vector<std::pair<std::vector<int64_t>, at::TensorOptions>>& outputs,
                                    std::vector<at::Tensor> cotangents) {
    std::vector<bool> given(cotangents.size());
    for (size_t k = 0; k < cotangents.size(); ++k) {
      given[k] = cotangents[k].defined();
      if (!given[k] && k < outputs.size()) cotangents[k] = at::zeros(outputs[k].first, outputs[k].second);
    }
    auto grads = step_gradients(executor, built_.stages, std::move(saved), cotangents,
                                [this](TraceKind k) { running_ = trace_kind_name(k); });
    if (bridge_of_argument_.empty()) {  // (the bridge tensor of each computation argument; -1: none)
      for (const auto& name : argument_names(module_, built_.stages)) {
        auto it = std::find(bridge_names_.begin(), bridge_names_.end(), name);
        bridge_of_argument_.push_back(it == bridge_names_.end() ? -1 : static_cast<int>(it - bridge_names_.begin()));
      }
    }
    std::vector<at::Tensor> out(bridge_names_.size());
    std::vector<const c10::TensorImpl*> handed_out;  // (a cotangent passed through as it came: another's too)
    for (const auto& c : cotangents)
      if (c.defined()) handed_out.push_back(c.unsafeGetTensorImpl());
    for (size_t a = 0; a < grads.size() && a < bridge_of_argument_.size(); ++a) {
      at::Tensor g = std::move(grads[a]);
      const int bridge = bridge_of_argument_[a];
      if (!g.defined() || bridge < 0) continue;
      g = whole_gradient(bridge_names_[bridge], g);
      // one tensor given to two (b1 + b2's gradient), or the cotangent itself: each its own, so that a
      // hook that changes one in place (p.register_hook(lambda g: g.mul_(2))) leaves the others
      bool again = std::find(handed_out.begin(), handed_out.end(), g.unsafeGetTensorImpl()) != handed_out.end();
      handed_out.push_back(g.unsafeGetTensorImpl());
      out[bridge] = again ? g.clone() : g;
    }
    std::vector<bool> reached(out.size(), output_reach_.size() != given.size());
    if (output_reach_.size() == given.size())
      for (size_t k = 0; k < given.size(); ++k)
        for (size_t i : given[k] ? output_reach_[k] : std::vector<size_t>{})
          if (i < reached.size()) reached[i] = true;
    for (size_t i = 0; i < out.size(); ++i)
      if (!reached[i]) out[i] = at::Tensor();  // as eager leaves it: None, not zeros
    for (const auto& z : zero_gradients_)
      if (!out[z.index].defined() && reached[z.index]) out[z.index] = at::zeros(z.sizes, z.options);
    return out;
  }

  // Where the call runs: the device of its first tensor input, else of the module's first parameter
  // or buffer (the CPU for none), as eager's ops run where their tensors are.
  Device device_of_call() const {
    for (const auto* tensors : {&module_.inputs, &module_.parameters, &module_.buffers})
      for (const auto& t : *tensors)
        if (t.value->defined()) return aten::from_device(t.value->device());
    return Device{};
  }

  // The default generators a forward on these inputs draws from (the CPU's, and each input's CUDA
  // device's), with their states now.
  static std::vector<Saved::GeneratorState> generator_states(const std::vector<at::Tensor>& inputs) {
    std::vector<Saved::GeneratorState> out{state_of(at::detail::getDefaultCPUGenerator())};
    for (const auto& t : inputs)
      if (t.defined() && t.is_cuda()) {
        at::Generator g = at::globalContext().defaultGenerator(t.device());
        if (std::none_of(out.begin(), out.end(), [&](const Saved::GeneratorState& s) { return s.generator == g; }))
          out.push_back(state_of(g));
      }
    return out;
  }
  static Saved::GeneratorState state_of(at::Generator g) {
    std::lock_guard<std::mutex> lock(g.mutex());
    return {g, g.get_state()};
  }
  static void set_generator_state(const Saved::GeneratorState& s) {
    at::Generator g = s.generator;
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_state(s.state);
  }

  // EngineError where running the forward again, for a differentiable backward, would not be the
  // forward that ran: it writes into module state or an input, or it communicates.
  void check_differentiable() const {
    const char* what = "thunder_viz: a backward with create_graph=True through a jitted module";
    if (!local_parts_.empty() || !collective_calls().empty())
      throw std::runtime_error(std::string(what) + " whose order distributes it (ddp, fsdp) is not supported: the engine's "
                               "collectives are not differentiable. Compute that loss without ddp/fsdp, or differentiate "
                               "without create_graph");
    if (!written_inputs_.empty())
      throw std::runtime_error(std::string(what) + " is not supported where its forward writes into its input `" +
                               written_inputs_.front() + "` in place: the differentiable backward runs the forward "
                               "again, which would read the written value. Clone the input in forward before changing "
                               "it, or differentiate without create_graph");
    auto forward = built_.stages.last(TraceKind::forward);
    if (!forward) return;
    for (const auto& s : forward->body)
      if (ltorch::writes_into_arguments(s))
        throw std::runtime_error(std::string(what) + " is not supported where its forward writes into a tensor (`" +
                                 print_statement(s) + "`: a running statistic of a batch norm in training mode, a cache, "
                                 "an in-place update of an input): the differentiable backward runs the forward again, "
                                 "which would write twice. Put such layers in eval mode for that loss (model.eval() "
                                 "for the batch norms), or differentiate without create_graph");
  }

  // A transform that distributes parameters by parts (fsdp: this rank's shard of dim 0) gives the
  // built module a tensor of its own for each part. The caller's parameters stay whole and the
  // caller's optimizer steps them, as eager's: the part is taken from the parameter again before
  // every run, and the part's gradient comes back whole (gathered from every rank), so that every
  // rank steps the same whole parameters with the mean gradient, whatever the optimizer.
  struct LocalPart {
    std::string name;
    at::Tensor whole;  // the caller's parameter
    at::Tensor part;   // what the built module holds
  };
  void keep_local_parts(const ValidatedOrder& order, const TransformContext& context, const jit::Module& source) {
    local_parts_.clear();
    for (size_t i = 0; i < module_.parameters.size() && i < source.parameters.size(); ++i) {
      const at::Tensor& built = *module_.parameters[i].value;
      const at::Tensor& whole = *source.parameters[i].value;
      if (built.unsafeGetTensorImpl() != whole.unsafeGetTensorImpl())
        local_parts_.push_back({module_.parameters[i].name, whole, built});
    }
    if (!local_parts_.empty()) {
      order_.emplace(order);
      context_ = context;
      context_.broadcast_from_rank0 = nullptr;  // (the build's, once)
    }
  }
  void take_local_parts() {
    if (local_parts_.empty()) return;
    at::NoGradGuard no_grad;
    const Transform* distributor = order_->parameter_distributor();
    for (auto& p : local_parts_)  // (local_gradient: a whole tensor's part on this rank, a gradient's or not)
      p.part.copy_(distributor ? distributor->local_gradient(p.whole.detach(), context_) : p.whole.detach());
  }
  at::Tensor whole_gradient(const std::string& name, const at::Tensor& g) const {
    auto it = std::find_if(local_parts_.begin(), local_parts_.end(), [&](const LocalPart& p) { return p.name == name; });
    if (it == local_parts_.end()) return g;
    // (every rank's part, padded to one size, in rank order: also where a part has the whole's shape,
    // a parameter of one row; a 0-d parameter's part is one element)
    at::Tensor gathered = rank_.comm && rank_.world > 1 ? rank_.comm->all_gather(g.contiguous()) : g;
    int64_t rows = it->whole.dim() == 0 ? 1 : it->whole.size(0);
    return gathered.narrow(0, 0, rows).reshape(it->whole.sizes());
  }

  jit::Module module_;
  std::vector<std::string> bridge_names_;  // input names, then the parameters' qualified names
  std::vector<int> bridge_of_argument_;   // each computation argument's index in bridge_names_ (-1: none)
  RankContext rank_;
  std::vector<LocalPart> local_parts_;
  std::optional<ValidatedOrder> order_;
  TransformContext context_;
  JitModuleView view_;
  BuiltPipeline built_;
  std::string running_;  // the trace kind being executed, for the timings' labels
  std::vector<SymbolTiming> forward_timings_, backward_timings_;
  bool timed_ = false;
  CachedExecutor forward_executor_, backward_executor_;
  std::optional<exec::Executor> differentiable_executor_;  // made by the first create_graph backward
  std::optional<exec::Executor> aten_only_executor_;      // made by the first backward of batched cotangents
  std::vector<std::string> written_inputs_;
  bool draws_unseeded_ = false;  // the forward draws random numbers other than dropout's seeded masks
  Device device_;               // where the executors run (device_of_call)
  struct ZeroGradient {
    size_t index;
    std::vector<int64_t> sizes;
    at::TensorOptions options;
  };
  std::vector<ZeroGradient> zero_gradients_;
  std::vector<std::vector<size_t>> output_reach_;  // empty: every output reaches every tensor
};

// Called in a catch block: rethrows the exception in flight as the Python exception this module's
// translators give it (a torch python_error, which autograd raises in the caller as it is), so that
// an error in EngineNode's backward, which runs on autograd's thread outside pybind11's dispatch,
// reaches Python as OpError, ExecError, DistError, ... as one in _Bridge's does. An exception no
// translator of this module takes (torch's own) is rethrown unchanged.
[[noreturn]] void rethrow_as_python_error() {
  py::gil_scoped_acquire gil;
  if (!py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators)) throw;
  python_error error;
  error.persist();
  throw error;
}

// The engine's forward and backward as one autograd node over (inputs, parameters), all in C++: what
// jit.py's _Bridge does in Python, for the calls that need nothing of Python between the two (no
// per-symbol timings, no backward listeners) and whose order distributes no parameters. Its
// backward runs on autograd's thread without the GIL; a cotangent autograd has none for is
// materialised as zeros, as _Bridge does.
struct EngineCall : torch::CustomClassHolder {
  std::shared_ptr<Entry> entry;
  Saved saved;
  CallInputs inputs;  // for a backward with create_graph=True, which runs the forward again
};

struct EngineNode : torch::autograd::Function<EngineNode> {
  // tensors: the call's inputs, then the module's parameters (one gradient each).
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const c10::intrusive_ptr<EngineCall>& call,
                                                at::TensorList tensors, int64_t inputs) {
    call->inputs = CallInputs(std::vector<at::Tensor>(tensors.begin(), tensors.end()), inputs);
    auto outputs = call->entry->run_forward(call->inputs.inputs(), call->saved);
    ctx->save_for_backward(call->saved.take_outputs(outputs));
    ctx->saved_data["call"] = c10::IValue::make_capsule(call);
    ctx->set_materialize_grads(false);  // (an output the loss did not use: no gradient from it)
    std::vector<at::Tensor> nondifferentiable;
    for (const auto& o : outputs)
      if (!o.is_floating_point()) nondifferentiable.push_back(o);
    ctx->mark_non_differentiable(nondifferentiable);
    return outputs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list cotangents) {
    auto call = c10::static_intrusive_pointer_cast<EngineCall>(ctx->saved_data["call"].toCapsule());
    torch::autograd::variable_list saved_outputs;
    try {
      saved_outputs = ctx->get_saved_variables();  // autograd's own checks (freed, changed in place)
    } catch (const c10::Error& e) {
      if (std::string(e.what()).find("backward through the graph a second time") == std::string::npos) throw;
      throw std::runtime_error(std::string(kSecondBackward) + " (" + e.what_without_backtrace() + ")");
    }
    std::vector<at::Tensor> grads;
    try {
      call->saved.put_tensors(std::vector<std::optional<at::Tensor>>(saved_outputs.begin(), saved_outputs.end()));
      if (at::GradMode::is_enabled())  // autograd enables it in a backward exactly when create_graph is set
        grads = call->entry->run_backward_differentiable(call->inputs, call->saved, std::move(cotangents));
      else
        grads = call->entry->run_backward(call->saved, std::move(cotangents));
    } catch (...) {
      rethrow_as_python_error();
    }
    torch::autograd::variable_list out{at::Tensor()};  // none for `call`
    out.insert(out.end(), grads.begin(), grads.end());
    out.emplace_back();  // none for `inputs`
    return out;
  }
};

// (trace, index, symbol, output, microseconds, device_timer, start_microseconds) per timing.
py::list timing_tuples(const std::vector<SymbolTiming>& timings) {
  py::list out;
  for (const auto& t : timings)
    out.append(py::make_tuple(t.trace, t.index, t.symbol, t.output, t.microseconds, t.device_timer, t.start_microseconds));
  return out;
}

class JitCore {
 public:
  JitCore(std::string name, const std::vector<std::pair<std::string, at::Tensor>>& parameters,
          const std::vector<std::pair<std::string, at::Tensor>>& buffers) {
    jit::register_jit_symbols();
    module_.name = std::move(name);
    // The engine's tensors are the torch module's tensors (same TensorImpl): no copy.
    for (const auto& [n, t] : parameters) module_.add_parameter(n, t);
    for (const auto& [n, t] : buffers) module_.add_buffer(n, t);
  }

  void set_attribute(const std::string& name, const py::object& v) {
    if (py::isinstance<py::bool_>(v)) module_.set_attribute(name, py::cast<bool>(v));
    else if (py::isinstance<py::int_>(v)) module_.set_attribute(name, py::cast<int64_t>(v));
    else if (py::isinstance<py::float_>(v)) module_.set_attribute(name, py::cast<double>(v));
    else module_.set_attribute(name, py::cast<std::string>(py::str(v)));
  }

  std::shared_ptr<Entry> build(const py::dict& program, const std::vector<at::Tensor>& inputs,
                               const std::vector<std::string>& order, const std::string& semantics,
                               const std::string& workaround, const std::string& module_class) {
    auto prog = program_of(program);
    if (prog->input_names.size() != inputs.size()) throw py::value_error("the program and the call disagree on the inputs");
    jit::Module m = module_;  // shares the tensors
    m.inputs.clear();
    for (size_t i = 0; i < inputs.size(); ++i) m.add_input(prog->input_names[i], inputs[i]);
    m.forward = [prog](jit::ForwardContext& ctx) { return Replayer(*prog, ctx).run(); };
    std::vector<std::string> bridge = prog->input_names;
    for (const auto& p : module_.parameters) bridge.push_back(p.name);
    RankContext rank = current_rank();
    auto entry = std::make_shared<Entry>(std::move(m), bridge, rank);
    const SemanticsMode& mode = find_semantics(semantics);
    check_workaround(mode, workaround);
    ValidatedOrder validated(order, mode, module_class);
    TransformContext context;
    context.semantics = &mode;
    context.workaround = workaround;
    context.world_size = rank.world;
    context.rank = rank.rank;
    if (rank.comm) context.broadcast_from_rank0 = [comm = rank.comm](at::Tensor& t) { comm->broadcast(t, 0); };
    if (const Transform* d = validated.parameter_distributor(); d && !d->subgroups(context).empty() && rank.world > 1)
      throw py::value_error("thunder_viz: " + d->name() + " runs its collectives on subgroups of the ranks (a mesh), which "
                            "the Python door does not form; run it with the CLI: thunder-viz compare --order jit," +
                            d->name() + " --order " + d->name() + ",jit --world 4");
    {
      py::gil_scoped_release release;
      entry->build(validated, context, module_);
    }
    // A Python meta kernel of torch's that failed, and that the build replaced by a run on the CPU
    // (ops/aten_fallback.cpp), leaves its error set: the build succeeded, so it is dropped.
    if (PyErr_Occurred()) PyErr_Clear();
    return entry;
  }

 private:
  jit::Module module_;
};

}  // namespace

dist::Communicator* current_communicator() { return current_rank().comm; }

std::pair<int, int> current_world() {
  auto r = current_rank();
  return {r.rank, r.world};
}

}  // namespace tv::py_bindings

using namespace tv;
using namespace tv::py_bindings;

PYBIND11_MODULE(_thunder_viz, m) {
  m.doc() = "thunder_viz engine bindings (use the package thunder_viz)";
  bind_traces(m);
  bind_execute(m);
  bind_call_guard(m);

  // Module-local: a process-wide translator would also turn other extensions' C++ exceptions
  // (optree's, which Lightning Thunder's pytrees run on) into EngineError.
  auto base = py::register_local_exception<std::runtime_error>(m, "EngineError", PyExc_RuntimeError);
  py::register_local_exception<OpError>(m, "OpError", base.ptr());
  py::register_local_exception<exec::ExecError>(m, "ExecError", base.ptr());
  py::register_local_exception<CaptureError>(m, "CaptureError", base.ptr());
  // A build that stopped on the state a transform read (pipeline.h): Thunder raised a ValueError.
  py::register_local_exception<PipelineFailure>(m, "PipelineFailure", PyExc_ValueError);
  py::register_local_exception<dist::DistError>(m, "DistError", base.ptr());
  py::register_local_exception<IllegalOrder>(m, "IllegalOrder", PyExc_ValueError);

  py::class_<Saved, std::shared_ptr<Saved>>(m, "SavedForBackward")
      .def("take_outputs", &Saved::take_outputs, "moves out the saved tensors that are among the outputs (for ctx.save_for_backward)")
      .def("put_tensors", &Saved::put_tensors, "puts back the tensors take_outputs gave, in order");

  py::class_<Entry, std::shared_ptr<Entry>>(m, "Entry", "One cache entry: the pipeline built for one input metadata.")
      .def("forward", &Entry::forward, "inputs -> ([output tensors], SavedForBackward)")
      .def("backward", [](Entry& e, std::shared_ptr<Saved> saved, const std::vector<std::optional<at::Tensor>>& cot) {
             return e.backward(*saved, cot);
           },
           py::arg("saved"), py::arg("cotangents"),
           "gradients per bridge tensor, from the cotangents (None: an output the loss did not use); the saved "
           "values are kept for another backward where autograd keeps the graph (retain_graph=True)")
      .def("backward_differentiable", [](Entry& e, const std::vector<at::Tensor>& tensors, int64_t inputs,
                                          const std::vector<uint32_t>& versions, std::shared_ptr<Saved> saved,
                                          const std::vector<std::optional<at::Tensor>>& cot) {
             CallInputs call(tensors, inputs, versions);
             std::vector<at::Tensor> c = defined_or_empty(cot);
             py::gil_scoped_release release;
             return optional_tensors(e.run_backward_differentiable(call, *saved, std::move(c)));
           },
           py::arg("tensors"), py::arg("inputs"), py::arg("versions"), py::arg("saved"), py::arg("cotangents"),
           "as backward, differentiable (for create_graph=True): runs the forward again on the call's tensors "
           "(its `inputs` first inputs, then the parameters; their versions at the forward) with autograd recording")
      .def_property_readonly("stages", [](const Entry& e) { return stages_dict(e.built().stages); })
      .def_property_readonly("collective_calls", &Entry::collective_calls,
                             "the collectives of the built forward and backward, in order (\"symbol dtype[shape]\")")
      .def_property_readonly("has_backward", [](const Entry& e) { return bool(e.built().stages.last(TraceKind::backward)); })
      .def("apply", [](const std::shared_ptr<Entry>& e, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& parameters) {
        auto call = c10::make_intrusive<EngineCall>();
        call->entry = e;
        std::vector<at::Tensor> tensors = inputs;
        tensors.insert(tensors.end(), parameters.begin(), parameters.end());
        py::gil_scoped_release release;
        return EngineNode::apply(call, at::TensorList(tensors), static_cast<int64_t>(inputs.size()));
      }, py::arg("inputs"), py::arg("parameters"),
           "[output tensors] of the forward, under one autograd node whose backward runs the engine's backward "
           "(a call with no per-symbol timing and no backward listener, whose order distributes no parameters)")
      .def_property("timed", &Entry::timed, &Entry::set_timed, "time every bound symbol of the next runs (off by default)")
      .def("forward_timings", [](const Entry& e) { return timing_tuples(e.forward_timings()); },
           "per-bound-symbol times of the last forward (prologue and forward traces)")
      .def("backward_timings", [](const Entry& e) { return timing_tuples(e.backward_timings()); },
           "per-bound-symbol times of the last backward")
      .def_property_readonly("saved_bytes", [](const Entry& e) { return e.built().saved_bytes; })
      .def("set_written_inputs", &Entry::set_written_inputs, py::arg("names"),
           "the inputs the forward writes into in place (a backward with create_graph=True refuses them)")
      .def("set_output_reach", &Entry::set_output_reach, py::arg("reach"),
           "[[bridge index, ...] per output]: the tensors eager autograd reaches from each output")
      .def("set_zero_gradients", &Entry::set_zero_gradients, py::arg("like"),
           "[(bridge index, a tensor of its shape and options)]: zeros where the backward gives that one no gradient");

  py::class_<JitCore, std::shared_ptr<JitCore>>(m, "JitCore")
      .def(py::init<std::string, const std::vector<std::pair<std::string, at::Tensor>>&,
                    const std::vector<std::pair<std::string, at::Tensor>>&>())
      .def("set_attribute", &JitCore::set_attribute)
      .def("build", &JitCore::build, py::arg("program"), py::arg("inputs"), py::arg("order"),
           py::arg("semantics") = "lazy", py::arg("workaround") = "", py::arg("module_class") = "torch.nn.modules.module.Module");

  // Orders as the engine validates them (transforms/order.h): the Python door checks each order once.
  m.attr("SECOND_BACKWARD") = kSecondBackward;
  m.def("transform_names", &transform_names, "every transform name the engine knows, jit first");
  m.def("symbol_names", &symbol_names, "every engine symbol a recorded program can call (ltorch.*, prims.*)");
  m.def("validate_order", [](const std::vector<std::string>& order, const std::string& semantics,
                             const std::string& module_class) {
    return ValidatedOrder(order, find_semantics(semantics), module_class).label();
  }, py::arg("order"), py::arg("semantics") = "lazy", py::arg("module_class") = "torch.nn.modules.module.Module",
     "the order's label; raises IllegalOrder (a ValueError) naming the rule and the fix, ValueError for an unknown semantics");
  m.def("semantics_names", &semantics_names, "the semantics modes, lazy first");
  m.def("check_workaround", [](const std::string& semantics, const std::string& workaround) {
    check_workaround(find_semantics(semantics), workaround);
  }, "raises ValueError for an unknown mode, or a workaround the mode has nothing for");
  m.def("order_facts", [](const std::vector<std::string>& order) {
    ValidatedOrder v(order);
    auto lowered = v.computes_in(TransformContext{});
    return py::make_tuple(lowered ? tolerance(*lowered) : 0.0, v.parameter_distributor() != nullptr);
  }, py::arg("order"),
     "(minimum relative tolerance, distributes parameters): what the replay reads of an order's transforms");
  m.def("tolerance", [](const std::string& dtype) {
    auto d = dtype_from_short(dtype);
    if (!d) throw py::value_error("unknown dtype " + dtype);
    return tolerance(*d);
  }, "The replay's relative tolerance for a dtype (f32 1e-5, bf16 2e-2, ...).");
  m.def("check_against_reference", [](const std::string& name, const at::Tensor& got, const std::optional<at::Tensor>& want,
                                      double min_tolerance) {
    return check_against_reference(name, got, want ? *want : at::Tensor(), min_tolerance);
  }, py::arg("name"), py::arg("got"), py::arg("want"), py::arg("min_tolerance") = 0.0,
     "A TensorCheck of `got` against the reference `want` (None: no reference, a failure), as replay checks.");

  m.def("make_cotangents", [](const std::vector<at::Tensor>& outputs, uint64_t seed) {
    return optional_tensors(make_cotangents(outputs, seed));
  }, py::arg("outputs"), py::arg("seed"),
     "The cotangents a replay draws for these outputs from `seed` (None for a non-floating output).");

  m.def("prepare_cpu_products", &tv::exec::prepare_cpu_gemm, py::call_guard<py::gil_scoped_release>(),
        "oneDNN's one-time setup for the CPU's float32 products (runtime/cpu_gemm.h), done now; once per process");
  m.def("transform_names", &transform_names);
  m.def("world_info", [] {
    auto r = current_rank();
    return py::make_tuple(r.rank, r.world, r.comm != nullptr);
  }, "(rank, world size, has a communicator) of the calling thread");
  m.def("world_kind", [] {
    return std::string(tl_rank.comm ? "threads" : process_rank().comm ? "processes" : "single");
  }, "'threads' inside run_world, 'processes' after join_process_group, else 'single'");

  m.def("join_process_group", [](int rank, int world_size, int local_rank, const std::string& master_addr,
                                 int master_port, const std::string& backend, const std::string& prefix,
                                 int timeout_seconds) {
    auto& p = process_rank();
    if (p.comm) return;
    dist::LaunchEnv env;
    env.rank = rank;
    env.world_size = world_size;
    env.local_rank = local_rank;
    env.master_addr = master_addr;
    env.master_port = master_port;
    env.source = "torch.distributed";
    dist::CommOptions options;
    options.timeout = std::chrono::seconds(timeout_seconds);
    py::gil_scoped_release release;
    auto launch = std::make_unique<dist::Launch>(env, options.timeout, /*host_store=*/false, prefix);
    auto comm = launch->communicator(dist::parse_backend(backend), options);
    p.rank = RankContext{comm.get(), rank, world_size};
    p.comm = std::move(comm);
    p.launch = std::move(launch);
  }, py::arg("rank"), py::arg("world_size"), py::arg("local_rank"), py::arg("master_addr"), py::arg("master_port"),
     py::arg("backend") = "gloo", py::arg("prefix") = "thunder-viz/python", py::arg("timeout_seconds") = 60);
  m.def("leave_process_group", [] {
    auto& p = process_rank();
    py::gil_scoped_release release;
    p.rank = RankContext{};
    try {
      p.comm.reset();
      p.launch.reset();
    } catch (...) {
    }
  });
  m.def("nccl_available", &dist::nccl_available);
  // Every rank's capture (JSON; None for a rank that sent none) merged into rank 0's (capture/gather.h).
  m.def("merge_rank_captures", [](const std::vector<std::optional<std::string>>& texts) {
    std::vector<std::optional<Capture>> per_rank;
    for (size_t r = 0; r < texts.size(); ++r)
      per_rank.push_back(texts[r] ? std::optional<Capture>(capture_from_json(*texts[r], "rank " + std::to_string(r) +
                                                                                            "'s capture"))
                                  : std::nullopt);
    return PyCapture{merge_rank_captures(std::move(per_rank))};
  }, py::arg("texts"));

  // Runs fn(rank) on `size` threads, one gloo rank each; raises DistError naming the failed rank.
  // A rank still running timeout_seconds after another one ended is reported and abandoned, so
  // what its thread uses is owned by the rank function (Python objects released under the GIL).
  m.def("run_world", [](int size, const py::function& fn, int timeout_seconds) {
    if (size < 1) throw py::value_error("run_world: size must be at least 1, got " + std::to_string(size));
    if (timeout_seconds < 1)
      throw py::value_error("run_world: timeout_seconds must be at least 1, got " + std::to_string(timeout_seconds));
    struct PyState {
      py::function fn;
      std::vector<py::object> results;
    };
    std::shared_ptr<PyState> state(new PyState{fn, std::vector<py::object>(size)}, [](PyState* p) {
      py::gil_scoped_acquire acquire;
      delete p;
    });
    dist::CommOptions options;
    options.timeout = std::chrono::seconds(timeout_seconds);
    dist::World world(size, dist::Backend::gloo, options);
    world.abandon_hung_ranks();
    {
      py::gil_scoped_release release;
      world.run([state, size](int rank, dist::Communicator& comm) {
        tl_rank = RankContext{&comm, rank, size};
        py::gil_scoped_acquire acquire;
        try {
          py::object result = state->fn(rank);
          state->results[rank] = std::move(result);
        } catch (py::error_already_set& e) {
          std::string what = e.what();
          tl_rank = RankContext{};
          throw std::runtime_error(what);
        }
        tl_rank = RankContext{};
      });
    }
    py::list out;
    for (auto& r : state->results) out.append(r ? r : py::none());
    return out;
  }, py::arg("size"), py::arg("fn"), py::arg("timeout_seconds") = 60);
}
