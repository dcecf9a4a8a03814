#include "replay/replay.h"

#include <ATen/ATen.h>

#include <cmath>

#include "exec/executor.h"
#include "replay/eager.h"
#include "replay/module_view.h"

namespace tv {

double tolerance(DType d) {
  switch (d) {
    case DType::f64: return 1e-10;
    case DType::f16: return 1e-2;
    case DType::bf16: return 2e-2;
    default: return 1e-5;
  }
}

namespace {

TensorStats stats_of(const at::Tensor& t) {
  TensorStats s;
  s.shape = t.sizes().vec();
  s.dtype = jit::TensorMeta::of(t).dtype;
  if (t.numel() == 0) return s;
  auto f = t.detach().to(at::kDouble);  // computed where the tensor lives (on the GPU for CUDA runs)
  if (t.is_floating_point()) {
    s.nan_count = f.isnan().sum().item<int64_t>();
    s.inf_count = f.isinf().sum().item<int64_t>();
    auto finite = f.masked_select(f.isfinite());
    if (finite.numel() == 0) return s;
    f = finite;
  }
  s.min = f.min().item<double>();
  s.max = f.max().item<double>();
  s.mean = f.mean().item<double>();
  return s;
}

TensorCheck check(const std::string& name, const at::Tensor& got, const at::Tensor& want, double min_tolerance) {
  TensorCheck c;
  c.name = name;
  c.stats = stats_of(got);
  c.tolerance = std::max(tolerance(c.stats.dtype), min_tolerance);
  if (!want.defined()) {
    c.pass = false;
    c.max_abs = c.max_rel = INFINITY;
    return c;
  }
  if (got.sizes() != want.sizes()) {
    c.pass = false;
    c.max_abs = c.max_rel = INFINITY;
    return c;
  }
  auto g = got.detach().to(at::kDouble).cpu(), w = want.detach().to(at::kDouble).cpu();
  c.max_abs = g.numel() ? (g - w).abs().max().item<double>() : 0.0;
  double scale = w.numel() ? w.abs().max().item<double>() : 0.0;
  c.max_rel = c.max_abs / std::max(scale, 1e-30);
  // Relative to the reference's largest magnitude, with an absolute floor of tolerance/10 for
  // references that vanish mathematically (a key-bias gradient is ~1e-7 noise, its shard too).
  c.pass = std::isfinite(c.max_abs) && (c.max_rel <= c.tolerance || c.max_abs <= c.tolerance * 0.1);
  return c;
}

const exec::RValue* dict_entry(const exec::RValue& d, const std::string& key) {
  for (const auto& [k, v] : d.entries)
    if (k.s == key) return &v;
  return nullptr;
}

// The qualified name of each computation parameter ("input", "fc1.weight").
std::vector<std::string> parameter_names(const jit::Module& m, const Trace& computation) {
  std::vector<std::string> out;
  for (const auto& p : computation.params) {
    std::string name = p.proxy->name;
    for (const auto& param : m.parameters)
      if (jit::parameter_proxy_name(param.name) == p.proxy->name) name = param.name;
    out.push_back(name);
  }
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
    if (options.prepare_executor) options.prepare_executor(eo.user);
    std::string current_trace;
    if (options.record_timings)
      eo.on_timing = [&](const BoundSymbol& b, size_t index, double seconds) {
        if (b.symbol->form != PrintForm::call && b.symbol->form != PrintForm::annotated_call) return;
        result.timings.push_back({current_trace, static_cast<int>(index), b.name(), b.output() ? b.output()->name : "",
                                  seconds * 1e6, false});
      };
    if (options.record_proxy_stats)
      eo.on_output = [&](const BoundSymbol&, const ProxyPtr& p, const at::Tensor& t) {
        result.proxies[current_trace + ":" + p->name] = stats_of(t);
      };
    exec::Executor executor(eo);

    std::vector<at::Tensor> inputs;
    for (const auto& i : module.inputs) inputs.push_back(*i.value);
    current_trace = "prologue";
    auto unpacked = executor.run(*built.stages.last(TraceKind::prologue), inputs);
    auto flat = unpacked.items.at(0).items;

    const auto& forward = *built.stages.last(TraceKind::forward);
    current_trace = "forward";
    auto fwd = executor.run(forward, flat);
    // -inf from a causal mask is intended; NaN is what we report.
    auto nan_report = [&](const char* trace) {
      const auto& r = executor.first_non_finite();
      if (r && r->nan_count > 0 && result.first_non_finite.empty()) result.first_non_finite = trace + (": " + r->describe());
    };
    nan_report("forward");
    auto backward = built.stages.last(TraceKind::backward);
    exec::RValue outputs_value = fwd, saved;
    if (backward) {  // augmented forward: ({'output': ...}, saved_for_backward)
      outputs_value = *dict_entry(fwd.items.at(0), "output");
      saved = fwd.items.at(1);
    }
    auto outputs = exec::tensors_of(outputs_value);
    auto cotangents = make_cotangents(outputs, options.cotangent_seed + rank);
    auto eager = eager_reference(options.reference_module ? *options.reference_module : module, inputs, cotangents);
    for (size_t i = 0; i < outputs.size(); ++i)
      result.outputs.push_back(check("output[" + std::to_string(i) + "]", outputs[i],
                                     i < eager.outputs.size() ? eager.outputs[i] : at::Tensor(), options.min_tolerance));
    if (!backward) return result;

    std::vector<exec::RValue> cot;
    for (const auto& c : cotangents) cot.push_back(c.defined() ? exec::RValue::of(c) : exec::RValue::none());
    current_trace = "backward";
    auto grads = executor.run(*backward, {saved, exec::RValue::tuple(cot)});
    nan_report("backward");
    auto names = parameter_names(module, *built.stages.forward.front().trace);
    for (size_t i = 0; i < names.size() && i < grads.items.size(); ++i) {
      if (!grads.items[i].is_tensor()) continue;
      at::Tensor want;
      for (const auto& [n, g] : eager.parameter_grads)
        if (n == names[i]) want = g;
      for (const auto& [n, g] : eager.input_grads)
        if (n == names[i]) want = g;
      if (options.expected_grad && want.defined()) want = options.expected_grad(names[i], want);
      result.gradients.push_back(check("grad[" + names[i] + "]", grads.items[i].t, want, options.min_tolerance));
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace tv
