// Executor: interprets a Trace on runtime values with the rules of its bound symbols
// (exec/exec_rules.h: the op families', the prologue's and the collectives').
// Contract: `run(trace, inputs, kwargs)` binds one runtime value per positional parameter (in
// order), the rest of `inputs` to a *args parameter as a tuple and `kwargs` to a **kwargs
// parameter as a dict, executes the body top to bottom and returns the `return` statement's value
// with every proxy replaced by its runtime value (None when there is no return). A bound symbol
// runs its rule when there is one (unless `decompose` asks for subsymbols first); otherwise its
// subsymbols in order (fused regions, composites without a rule); otherwise it is refused with an
// ExecError naming the symbol. `del` frees values; unpack_sequence unpacks tuples and lists.
// Trace devices are mapped to `options.device` (a cuda:0 printout runs on CPU); input tensors are
// moved there. Hooks: per top-level bound symbol timing (CUDA events on a CUDA device, the host
// clock elsewhere: exec/symbol_timer.h), reported once the run has finished so that timing does not
// synchronise the device mid-run; a per output tensor observer; and first_non_finite() after a run
// with `detect_non_finite`. Runs under no-grad by default, and then below LibTorch's autograd
// dispatch keys (the traces are already differentiated). A fusion region's runs of pointwise
// members execute as generated kernels (codegen/elementwise.h, exec/generated_kernels.h: compiled
// for CUDA, evaluated block by block on the CPU; `generated_kernels` turns it off), each planned
// once per region and reused by later runs; members whose inputs the kernel cannot take (another
// device or dtype, a broadcast the CPU evaluator does not read) run one by one.
// For a trace owned by a shared pointer, each statement's constant arguments are evaluated once,
// an output that a later batched matmul reads is made contiguous once when its batch dims do not
// flatten (the same values; the matmuls then copy nothing). What runs is what the trace says:
// batching same-shaped gradients is a pass of the pipeline (passes/batch_gradients.h), and what a
// forward kernel keeps for its backward is a saved value (ops/grad_rules.h, with_residues).
// An Executor is not thread-safe; use one per thread (rank).
#pragma once
#include <any>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/symbol_timer.h"
#include "ir/trace.h"
#include "runtime/rules.h"
#include "runtime/value.h"

namespace tv::exec {

struct ExecOptions {
  Device device;                  // where tensors live during the run (default cpu)
  bool map_devices = true;        // trace devices (cuda:0 in a printout) mean `device`
  bool move_inputs = true;        // move input tensors and module parameters to `device`
  bool no_grad = true;            // run under c10::NoGradGuard, as Thunder's traces do (and below autograd)
  bool decompose = false;         // prefer subsymbols over a composite's rule (tests decompositions)
  // Fusion regions run by their plans (codegen/elementwise.h): pointwise runs as one generated
  // kernel each, and on CUDA a linear with the add it feeds as one product; else member by member.
  bool generated_kernels = true;
  const ModuleView* module = nullptr;  // what globals()['__function_obj'] resolves to
  // Entries of thunder._get_cache_info() that differ from the defaults (default_dtype float32,
  // default_device cpu, is_autocast_enabled False, alias_tensor_indices '', is_grad_enabled True,
  // no_grad_sync False).
  std::vector<std::pair<std::string, RValue>> cache_info;

  // Called at the end of a run for each top-level bound symbol executed (structural ones
  // included), in order, with its index in the body, start and duration.
  std::function<void(const BoundSymbol&, const SymbolTime&)> on_timing;
  // Called after each top-level bound symbol for each output proxy holding a tensor.
  std::function<void(const BoundSymbol&, const ProxyPtr&, const at::Tensor&)> on_output;
  // Record the first top-level bound symbol with a NaN or Inf in a floating output.
  bool detect_non_finite = false;

  std::any user;  // for rules registered by other modules (e.g. a communicator)

  // CUDA device 0 when compiled with TV_HAVE_CUDA and a GPU is present, else cpu.
  static Device default_device();
};

// Where the first NaN/Inf appeared.
struct NonFiniteReport {
  std::string symbol;     // "prims.div"
  std::string proxy;      // "t5"
  std::string statement;  // "t5 = prims.div(a, b)  # t5: ..."
  size_t index = 0;       // index of the bound symbol in the trace body
  int line = 0;           // 1-based line of the statement in print_trace(trace)
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  std::string describe() const;  // "t5 = prims.div(...) (line 12): 3 NaN, 0 Inf in t5"
};

class Executor {
 public:
  explicit Executor(ExecOptions options = {});

  // The inputs are moved into the run: a value the caller does not keep is freed at the trace's
  // `del` of it, not when the run ends (a backward frees its saved values as it goes).
  RValue run(const Trace& trace, std::vector<RValue> inputs, const RKwargs& kwargs = {});
  // Convenience: tensors as the positional inputs.
  RValue run(const Trace& trace, const std::vector<at::Tensor>& inputs);

  const ExecOptions& options() const { return options_; }
  ExecOptions& options() { return options_; }
  // Set by the last run when options().detect_non_finite.
  const std::optional<NonFiniteReport>& first_non_finite() const { return first_non_finite_; }
  // Generated kernels launched by this executor's runs so far.
  size_t generated_kernel_launches() const;
  // Pairs of fusion regions run as one kernel with the add in its epilogue so far (a linear's
  // product, a layer norm's backward: passes/residual_epilogues.h).
  size_t residual_epilogues() const;

  // Each fusion region's plan, made on its first run (keyed by the bound symbol, checked against
  // its shape so that a trace freed and another allocated at the same address is planned anew).
  struct RegionPlans;
  // Each trace's name ids and value slots (see executor.cpp).
  struct NameTables;

 private:
  ExecOptions options_;
  std::optional<NonFiniteReport> first_non_finite_;
  std::unique_ptr<SymbolTimer> timer_;  // made on the first timed run, reused after
  std::shared_ptr<RegionPlans> plans_;
  std::shared_ptr<NameTables> names_;
};

// Wraps a tensor list into runtime values (positional inputs).
std::vector<RValue> tensor_values(const std::vector<at::Tensor>& tensors);

}  // namespace tv::exec
