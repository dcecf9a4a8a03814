#include "replay/eager.h"

#include <c10/core/GradMode.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <variant>

#include "jit/acquire.h"

namespace tv {
namespace {

// The leaves of one reference run, by qualified name (parameters and buffers) and argument name.
class Leaves {
 public:
  Leaves(const jit::Module& m, const std::vector<at::Tensor>& inputs) : module_(m) {
    if (inputs.size() != m.inputs.size()) {
      std::string names;
      for (const auto& in : m.inputs) names += (names.empty() ? "" : ", ") + in.name;
      throw std::invalid_argument("eager reference of '" + m.name + "': expected " + std::to_string(m.inputs.size()) +
                                  " inputs (" + names + "), got " + std::to_string(inputs.size()));
    }
    for (const auto& p : m.parameters) params_.emplace(p.name, leaf(*p.value, p.value->requires_grad()));
    for (const auto& b : m.buffers) params_.emplace(b.name, leaf(*b.value, false));
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined())
        throw std::invalid_argument("eager reference of '" + m.name + "': input '" + m.inputs[i].name + "' is undefined");
      inputs_.emplace(m.inputs[i].name, leaf(inputs[i], inputs[i].requires_grad()));
    }
  }

  const at::Tensor& param(const std::string& name) const {
    auto it = params_.find(name);
    if (it == params_.end())
      throw std::invalid_argument("eager reference of '" + module_.name + "': the module has no parameter '" + name + "'");
    return it->second;
  }
  at::Tensor optional_param(const std::string& name) const {
    auto it = params_.find(name);
    return it == params_.end() ? at::Tensor() : it->second;
  }
  bool has(const std::string& name) const { return params_.count(name) != 0; }
  const at::Tensor& input(const std::string& name) const {
    auto it = inputs_.find(name);
    if (it == inputs_.end())
      throw std::invalid_argument("eager reference of '" + module_.name + "': the module has no input '" + name + "'");
    return it->second;
  }
  const std::map<std::string, at::Tensor>& params() const { return params_; }
  const std::map<std::string, at::Tensor>& inputs() const { return inputs_; }

 private:
  // A fresh leaf: its own storage, no history, requires_grad only where autograd can follow it.
  static at::Tensor leaf(const at::Tensor& t, bool requires_grad) {
    at::Tensor c = t.detach().clone();
    if (requires_grad && c.is_floating_point()) c.set_requires_grad(true);
    return c;
  }
  const jit::Module& module_;
  std::map<std::string, at::Tensor> params_;
  std::map<std::string, at::Tensor> inputs_;
};

using Outputs = std::vector<at::Tensor>;

Outputs linear_forward(const jit::Module&, const Leaves& l) {
  return {at::linear(l.input("input"), l.param("weight"), l.optional_param("bias"))};
}

Outputs mlp_forward(const jit::Module&, const Leaves& l) {
  at::Tensor h = at::linear(l.input("x"), l.param("fc1.weight"), l.param("fc1.bias"));
  h = at::gelu(h, "none");
  return {at::linear(h, l.param("fc2.weight"), l.param("fc2.bias"))};
}

Outputs llama_mlp_forward(const jit::Module&, const Leaves& l) {
  const at::Tensor& x = l.input("x");
  at::Tensor gate = at::silu(at::linear(x, l.param("gate_proj.weight")));
  at::Tensor up = at::linear(x, l.param("up_proj.weight"));
  return {at::linear(gate * up, l.param("down_proj.weight"))};
}

std::optional<int64_t> int_attribute(const jit::Module& m, const std::string& name) {
  const jit::AttrValue* v = m.find_attribute(name);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  return std::nullopt;
}

// gpt's head count: an attribute when the module states it, else what its own trace reshapes to.
int64_t gpt_heads(const jit::Module& m, const std::vector<at::Tensor>& inputs) {
  for (const char* name : {"heads", "n_head", "transformer.h.0.attn.n_head", "config.n_head"})
    if (auto h = int_attribute(m, name)) return *h;
  std::vector<jit::TensorMeta> metas;
  for (const auto& t : inputs) metas.push_back(jit::TensorMeta::of(t));
  jit::Acquired acquired = jit::acquire(m, metas);
  int64_t heads = 0;
  walk(acquired.computation->body, [&](const BoundSymbol& bsym, int) {
    if (heads != 0 || bsym.name() != "ltorch.scaled_dot_product_attention" || bsym.args.empty()) return;
    const Value& q = bsym.args.front();
    if (q.is_proxy() && q.proxy && q.proxy->shape.size() == 4) heads = q.proxy->shape[1];
  });
  if (heads <= 0)
    throw std::invalid_argument("eager reference of 'gpt': cannot tell the number of heads (no 'heads' attribute and "
                                "no 4-d scaled_dot_product_attention in its trace)");
  return heads;
}

// nanoGPT's causal self-attention, spelled out: softmax(q k^T / sqrt(hd), causal) v.
at::Tensor causal_self_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  int64_t T = q.size(-2), hd = q.size(-1);
  at::Tensor att = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  at::Tensor future = at::triu(at::ones({T, T}, q.options().dtype(at::kBool)), /*diagonal=*/1);
  att = att.masked_fill(future, -std::numeric_limits<double>::infinity());
  att = at::softmax(att, -1);
  return at::matmul(att, v);
}

Outputs gpt_forward(const jit::Module& m, const Leaves& l, const std::vector<at::Tensor>& inputs) {
  const at::Tensor& wte = l.param("transformer.wte.weight");
  int64_t d = wte.size(1);
  int64_t layers = 0;
  while (l.has("transformer.h." + std::to_string(layers) + ".ln_1.weight")) ++layers;
  int64_t heads = gpt_heads(m, inputs);
  if (heads <= 0 || d % heads != 0)
    throw std::invalid_argument("eager reference of 'gpt': " + std::to_string(heads) + " heads do not divide d_model " +
                                std::to_string(d));
  int64_t hd = d / heads;

  const at::Tensor& idx = l.input("idx");
  int64_t B = idx.size(0), T = idx.size(1);
  // token embedding + the position table broadcast over the batch (one row per position)
  at::Tensor x = at::embedding(wte, idx) + l.param("transformer.wpe.weight");
  for (int64_t i = 0; i < layers; ++i) {
    std::string h = "transformer.h." + std::to_string(i) + ".";
    at::Tensor a = at::layer_norm(x, {d}, l.param(h + "ln_1.weight"), l.param(h + "ln_1.bias"), 1e-5);
    at::Tensor qkv = at::linear(a, l.param(h + "attn.c_attn.weight"), l.param(h + "attn.c_attn.bias"));
    std::vector<at::Tensor> parts = qkv.split(d, 2);
    auto heads_of = [&](const at::Tensor& t) { return t.view({B, T, heads, hd}).transpose(1, 2); };
    at::Tensor y = causal_self_attention(heads_of(parts.at(0)), heads_of(parts.at(1)), heads_of(parts.at(2)));
    y = y.transpose(1, 2).contiguous().view({B, T, d});
    y = at::linear(y, l.param(h + "attn.c_proj.weight"), l.param(h + "attn.c_proj.bias"));
    x = x + y;
    at::Tensor f = at::layer_norm(x, {d}, l.param(h + "ln_2.weight"), l.param(h + "ln_2.bias"), 1e-5);
    f = at::linear(f, l.param(h + "mlp.c_fc.weight"), l.param(h + "mlp.c_fc.bias"));
    f = at::gelu(f, "none");
    f = at::linear(f, l.param(h + "mlp.c_proj.weight"), l.param(h + "mlp.c_proj.bias"));
    x = x + f;
  }
  x = at::layer_norm(x, {d}, l.param("transformer.ln_f.weight"), l.param("transformer.ln_f.bias"), 1e-5);
  at::Tensor logits = at::linear(x, l.param("lm_head.weight"));
  at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), l.input("targets").reshape({-1}));
  return {logits, loss};
}

using ForwardFn = std::function<Outputs(const jit::Module&, const Leaves&, const std::vector<at::Tensor>&)>;

const std::vector<std::pair<std::string, ForwardFn>>& registry() {
  auto plain = [](Outputs (*f)(const jit::Module&, const Leaves&)) -> ForwardFn {
    return [f](const jit::Module& m, const Leaves& l, const std::vector<at::Tensor>&) { return f(m, l); };
  };
  static const std::vector<std::pair<std::string, ForwardFn>> models = {
      {"linear", plain(linear_forward)},
      {"mlp", plain(mlp_forward)},
      {"llama_mlp", plain(llama_mlp_forward)},
      {"gpt", gpt_forward},
  };
  return models;
}

}  // namespace

const at::Tensor* EagerResult::grad(std::string_view name) const {
  for (const auto& [n, g] : parameter_grads)
    if (n == name) return &g;
  for (const auto& [n, g] : input_grads)
    if (n == name) return &g;
  return nullptr;
}

std::vector<std::string> eager_models() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : registry()) out.push_back(name);
  return out;
}

EagerResult eager_reference(const jit::Module& module, const std::vector<at::Tensor>& inputs,
                            const std::vector<at::Tensor>& output_cotangents) {
  const ForwardFn* forward = nullptr;
  std::string supported;
  for (const auto& [name, fn] : registry()) {
    if (name == module.name) forward = &fn;
    supported += (supported.empty() ? "" : ", ") + name;
  }
  if (forward == nullptr)
    throw std::invalid_argument("no eager reference for model '" + module.name + "'; supported models: " + supported +
                                " (models captured from Python get their reference in Python)");

  c10::AutoGradMode grad_mode(true);
  Leaves leaves(module, inputs);
  Outputs outputs = (*forward)(module, leaves, inputs);

  if (!output_cotangents.empty() && output_cotangents.size() != outputs.size())
    throw std::invalid_argument("eager reference of '" + module.name + "': " + std::to_string(outputs.size()) +
                                " outputs but " + std::to_string(output_cotangents.size()) + " cotangents");
  // One scalar whose gradient with respect to output i is cotangent i: a single backward pass.
  at::Tensor objective;
  for (size_t i = 0; i < output_cotangents.size(); ++i) {
    const at::Tensor& out = outputs[i];
    const at::Tensor& cot = output_cotangents[i];
    if (!cot.defined() || !out.is_floating_point() || !out.requires_grad()) continue;
    if (cot.sizes() != out.sizes())
      throw std::invalid_argument("eager reference of '" + module.name + "': cotangent " + std::to_string(i) +
                                  " has shape " + c10::str(cot.sizes()) + ", output has " + c10::str(out.sizes()));
    at::Tensor term = at::sum(out * cot.to(out.options()));
    objective = objective.defined() ? objective + term : term;
  }
  if (objective.defined()) objective.backward();

  EagerResult result;
  for (const auto& out : outputs) result.outputs.push_back(out.detach());
  for (const auto& p : module.parameters) {
    const at::Tensor& leaf = leaves.param(p.name);
    result.parameter_grads.emplace_back(p.name, leaf.requires_grad() ? leaf.grad() : at::Tensor());
  }
  for (const auto& in : module.inputs) {
    const at::Tensor& leaf = leaves.input(in.name);
    result.input_grads.emplace_back(in.name, leaf.requires_grad() ? leaf.grad() : at::Tensor());
  }
  return result;
}

std::vector<at::Tensor> make_cotangents(const std::vector<at::Tensor>& outputs, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<at::Tensor> out;
  for (const auto& o : outputs) {
    if (!o.defined() || !o.is_floating_point()) {
      out.emplace_back();
      continue;
    }
    if (o.dim() == 0) {
      out.push_back(at::ones({}, o.options()));
      continue;
    }
    at::Tensor r = at::randn(o.sizes(), gen, at::TensorOptions().dtype(at::kDouble));
    out.push_back(r.to(o.options()));
  }
  return out;
}

Reference stored_reference(std::shared_ptr<const StoredReference> stored) {
  Reference r;
  r.cotangent_seed = stored->cotangent_seed;
  r.compute = [stored](const jit::Module& module, const std::vector<at::Tensor>&,
                       const std::vector<at::Tensor>& cotangents) {
    at::Device device = at::kCPU;
    if (!module.parameters.empty()) device = module.parameters.front().value->device();
    else if (!module.inputs.empty()) device = module.inputs.front().value->device();
    EagerResult out;
    for (const auto& o : stored->outputs) out.outputs.push_back(o.to(device));
    for (const auto& i : module.inputs) out.input_grads.emplace_back(i.name, at::Tensor());
    if (cotangents.empty()) {
      for (const auto& p : module.parameters) out.parameter_grads.emplace_back(p.name, at::Tensor());
      return out;
    }
    if (stored->gradients.empty())
      throw std::invalid_argument("the capture's stored eager numbers hold no gradients (the model was saved in "
                                  "no-grad mode): its outputs can be checked, its gradients cannot");
    auto expected = make_cotangents(stored->outputs, stored->cotangent_seed);
    bool same = expected.size() == cotangents.size();
    for (size_t i = 0; same && i < expected.size(); ++i)
      same = expected[i].defined() == cotangents[i].defined() &&
             (!expected[i].defined() || at::equal(expected[i], cotangents[i].to(at::kCPU)));
    if (!same)
      throw std::invalid_argument("the capture's stored eager gradients hold for the cotangents of seed " +
                                  std::to_string(stored->cotangent_seed) +
                                  " only, and this replay drew others (outputs of another shape or dtype?)");
    for (const auto& p : module.parameters) {
      auto it = stored->gradients.find(p.name);
      out.parameter_grads.emplace_back(p.name, it == stored->gradients.end() ? at::Tensor() : it->second.to(device));
    }
    return out;
  };
  return r;
}

}  // namespace tv
