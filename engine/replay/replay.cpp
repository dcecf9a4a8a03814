#include "replay/replay.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "exec/device_check.h"
#include "exec/executor.h"
#include "replay/cuda_graph.h"
#include "replay/eager.h"
#include "replay/module_view.h"
#include "replay/step.h"

namespace tv {

TensorStats tensor_stats(const at::Tensor& t) {
  TensorStats s;
  s.shape = t.sizes().vec();
  s.dtype = jit::TensorMeta::of(t).dtype;
  if (t.numel() == 0) return s;
  // Computed where the tensor lives (on the GPU for CUDA runs), without a full-size copy unless
  // there are NaN/Inf to leave out: statistics must not be what runs a big replay out of memory.
  at::Tensor f = t.detach();
  if (t.is_floating_point()) {
    s.nan_count = f.isnan().sum().item<int64_t>();
    s.inf_count = f.isinf().sum().item<int64_t>();
    if (s.nan_count + s.inf_count > 0) f = f.masked_select(f.isfinite());
    if (f.numel() == 0) return s;
  } else {
    f = f.to(at::kDouble);
  }
  s.min = f.min().item<double>();
  s.max = f.max().item<double>();
  s.mean = f.sum(at::kDouble).item<double>() / static_cast<double>(f.numel());
  return s;
}

TensorCheck check_against_reference(const std::string& name, const at::Tensor& got, const at::Tensor& want, double min_tolerance,
                                    int64_t summed_terms) {
  TensorCheck c;
  c.name = name;
  c.stats = tensor_stats(got);
  c.tolerance = std::max(tolerance(c.stats.dtype, summed_terms), min_tolerance);
  if (!want.defined()) {
    c.pass = false;
    c.max_abs = c.max_rel = INFINITY;
    return c;
  }
  c.reference = tensor_stats(want);
  if (got.sizes() != want.sizes()) {
    c.pass = false;
    c.max_abs = c.max_rel = INFINITY;
    return c;
  }
  auto g = got.detach().to(at::kDouble), w = want.detach().to(got.device(), at::kDouble);
  at::Tensor difference = (g - w).abs();
  c.max_abs = g.numel() ? difference.max().item<double>() : 0.0;
  double scale = w.numel() ? w.abs().max().item<double>() : 0.0;
  if (!std::isfinite(c.max_abs) || !std::isfinite(scale)) {
    // NaN where the reference has NaN, and the reference's own infinities, are the same result
    at::Tensor same = (g.isnan() & w.isnan()) | (at::isinf(g) & g.eq(w));
    c.max_abs = difference.masked_fill(same, 0.0).max().item<double>();
    scale = w.abs().masked_fill(same, 0.0).max().item<double>();
  }
  c.max_rel = c.max_abs / std::max(scale, 1e-30);
  // Relative to the reference's largest magnitude, with an absolute floor of tolerance/10 for
  // references that vanish mathematically (a key-bias gradient is ~1e-7 noise, its shard too).
  c.pass = std::isfinite(c.max_abs) && (c.max_rel <= c.tolerance || c.max_abs <= c.tolerance * 0.1);
  return c;
}

namespace {

// The final trace's returned tensor values under `key` of its first item (the augmented forward's
// 'output'), or all of them, as "kind:name"; "" where the item is not a value of the trace.
std::vector<std::string> returned_values(const StageHistory& stages, TraceKind kind, bool items) {
  std::vector<std::string> out;
  TracePtr trace = stages.last(kind);
  if (!trace) return out;
  Value returned = trace->returned();
  const std::string prefix = std::string(trace_kind_name(kind)) + ":";
  auto name_of = [&](const ProxyPtr& p) {
    if (p->is_tensor()) out.push_back(prefix + p->name);
  };
  if (items) {  // the backward: one gradient (or None) per computation argument
    if (!returned.is_sequence()) return out;
    for (const auto& item : returned.items) out.push_back(item.is_proxy() ? prefix + item.proxy->name : "");
    return out;
  }
  if (stages.last(TraceKind::backward) && returned.is_sequence() && !returned.items.empty()) {
    for (const auto& [k, v] : returned.items[0].entries)
      if (k.kind == Value::Kind::string && k.s == "output") for_each_proxy(v, name_of);
    return out;
  }
  for_each_proxy(returned, name_of);
  return out;
}

}  // namespace

RankResult replay_rank(const jit::Module& module, const BuiltPipeline& built, int rank, const ReplayOptions& options) {
  RankResult result;
  result.rank = rank;
  try {
    JitModuleView view(module);
    exec::ExecOptions eo;
    eo.device = options.device;
    eo.module = &view;
    eo.detect_non_finite = true;
    eo.generated_kernels = options.generated_kernels;
    if (options.prepare_executor) options.prepare_executor(eo.user);
    std::string current_trace;
    if (options.record_timings) eo.on_timing = timing_recorder(result.timings, current_trace);
    if (options.record_proxy_stats)
      eo.on_output = [&](const BoundSymbol&, const ProxyPtr& p, const at::Tensor& t) {
        result.proxies[current_trace + ":" + p->name] = tensor_stats(t);
      };
    exec::Executor executor(eo);
    auto label = [&](TraceKind k) { current_trace = std::string(trace_kind_name(k)); };

    std::vector<at::Tensor> inputs;
    for (const auto& i : module.inputs) inputs.push_back(*i.value);
    auto fwd = step_forward(executor, built.stages, inputs, label);
    // -inf from a causal mask is intended; NaN is what we report.
    auto nan_report = [&](const char* trace) {
      const auto& r = executor.first_non_finite();
      if (r && r->nan_count > 0 && result.first_non_finite.empty()) result.first_non_finite = trace + (": " + r->describe());
    };
    nan_report("forward");
    const auto& outputs = fwd.outputs;
    auto cotangents = make_cotangents(outputs, options.reference.cotangent_seed ? *options.reference.cotangent_seed
                                                                                : options.cotangent_seed + rank);
    const jit::Module& reference_module = options.reference_module ? *options.reference_module : module;
    auto eager = options.reference.compute ? options.reference.compute(reference_module, inputs, cotangents)
                                           : eager_reference(reference_module, inputs, cotangents);
    auto output_values = returned_values(built.stages, TraceKind::forward, false);
    for (size_t i = 0; i < outputs.size(); ++i) {
      result.outputs.push_back(check_against_reference("output[" + std::to_string(i) + "]", outputs[i],
                                                       i < eager.outputs.size() ? eager.outputs[i] : at::Tensor(),
                                                       options.min_tolerance));
      if (output_values.size() == outputs.size()) result.outputs.back().proxy = output_values[i];
    }
    bool has_backward = static_cast<bool>(built.stages.last(TraceKind::backward));
    auto run_as_cuda_graph = [&] {
      if (options.cuda_graph_steps <= 0) return;
      // A plain executor: the timing and statistics hooks synchronise with the host, which a
      // capture forbids.
      exec::ExecOptions graph_options;
      graph_options.device = options.device;
      graph_options.module = &view;
      graph_options.user = eo.user;
      graph_options.generated_kernels = options.generated_kernels;
      exec::Executor plain(graph_options);
      result.cuda_graph = run_step_as_cuda_graph(
          [&] {
            auto f = step_forward(plain, built.stages, inputs);
            StepTensors out{f.outputs, {}};
            if (has_backward) out.gradients = step_gradients(plain, built.stages, f.saved, cotangents);
            return out;
          },
          options.device, options.cuda_graph_steps);
    };
    if (!has_backward) {
      run_as_cuda_graph();
      return result;
    }

    auto grads = step_backward(executor, module, built.stages, fwd.saved, cotangents, label);
    nan_report("backward");
    auto gradient_values = returned_values(built.stages, TraceKind::backward, true);
    for (size_t i = 0; i < grads.size(); ++i) {
      const auto& [name, got] = grads[i];
      if (!got.defined()) continue;
      at::Tensor want;
      for (const auto& [n, g] : eager.parameter_grads)
        if (n == name) want = g;
      for (const auto& [n, g] : eager.input_grads)
        if (n == name) want = g;
      if (options.expected_grad && want.defined()) want = options.expected_grad(name, want);
      result.gradients.push_back(
          check_against_reference("grad[" + name + "]", got, want, options.min_tolerance, options.summed_ranks));
      if (i < gradient_values.size()) result.gradients.back().proxy = gradient_values[i];
    }
    run_as_cuda_graph();
  } catch (const c10::Error& e) {
    result.error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  if (exec::is_out_of_memory(result.error))
    result.error = "GPU out of memory on rank " + std::to_string(rank) + " (" + options.device.str() + "): " + result.error +
                   " Make the model smaller (--param batch=, seq=, layers=) or spread it over more ranks with fsdp.";
  return result;
}

}  // namespace tv
