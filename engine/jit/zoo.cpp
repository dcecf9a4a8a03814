#include "jit/zoo.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "ops/ltorch.h"

namespace tv::jit {
namespace {

namespace lt = tv::ltorch;

// The parameters a model was asked for, with its defaults filled in. `on_meta`: the model is built
// on the meta device whatever `device` says (still checked), to check a request without memory.
class Params {
 public:
  Params(const ModelInfo& info, const std::map<std::string, std::string>& given, bool on_meta = false)
      : info_(info), on_meta_(on_meta) {
    for (const auto& p : info.params) values_[p.name] = p.default_value;
    for (const auto& [k, v] : given) {
      if (!values_.count(k)) {
        std::string valid;
        for (const auto& p : info.params) valid += (valid.empty() ? "" : ", ") + p.name;
        throw std::invalid_argument("model '" + info.name + "' has no parameter '" + k + "'; valid parameters: " + valid);
      }
      values_[k] = v;
    }
  }

  int64_t positive(const std::string& k) const {
    const auto& v = values_.at(k);
    size_t used = 0;
    int64_t x = 0;
    try {
      x = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || v.empty() || x <= 0) bad(k, "a positive integer");
    return x;
  }
  uint64_t seed() const {
    const auto& v = values_.at("seed");
    size_t used = 0;
    uint64_t x = 0;
    try {
      x = std::stoull(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || v.empty() || v[0] == '-') bad("seed", "a non-negative integer");
    return x;
  }
  bool boolean(const std::string& k) const {
    const auto& v = values_.at(k);
    if (v == "true" || v == "True" || v == "1") return true;
    if (v == "false" || v == "False" || v == "0") return false;
    bad(k, "true or false");
    return false;
  }
  at::Device device() const {
    auto d = Device::parse(values_.at("device"));
    if (!d) bad("device", "cpu or cuda:N");
    if (d->kind == Device::Kind::cuda && !at::hasCUDA())
      throw std::invalid_argument("model '" + info_.name + "': parameter 'device' is '" + values_.at("device") +
                                  "', but this build's LibTorch has no CUDA (or no GPU is visible); use device=cpu");
    if (on_meta_) return at::Device(at::kMeta);
    return d->kind == Device::Kind::cpu ? at::Device(at::kCPU) : at::Device(at::kCUDA, static_cast<int8_t>(d->index));
  }
  [[noreturn]] void bad(const std::string& k, const std::string& expected) const {
    throw std::invalid_argument("model '" + info_.name + "': bad value '" + values_.at(k) + "' for parameter '" + k +
                                "' (expected " + expected + ")");
  }

 private:
  const ModelInfo& info_;
  bool on_meta_;
  std::map<std::string, std::string> values_;
};

// Deterministic tensors: one private generator per model, drawn in a fixed order.
class Init {
 public:
  Init(uint64_t seed, at::Device device) : gen_(at::detail::createCPUGenerator(seed)), device_(device) {}

  at::Tensor param(at::Tensor cpu) const { return place(cpu).set_requires_grad(true); }
  // nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  at::Tensor uniform(at::IntArrayRef shape, int64_t fan_in) {
    check_size(shape);
    if (meta()) return param(on_meta(shape));
    double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return param((at::rand(shape, gen_) * 2 - 1) * bound);
  }
  at::Tensor normal(at::IntArrayRef shape, double std) {
    check_size(shape);
    return param(meta() ? on_meta(shape) : at::randn(shape, gen_) * std);
  }
  at::Tensor filled(at::IntArrayRef shape, double v) {
    check_size(shape);
    return param(meta() ? on_meta(shape) : at::full(shape, v));
  }
  at::Tensor input(at::IntArrayRef shape) {
    check_size(shape);
    return meta() ? on_meta(shape) : place(at::randn(shape, gen_));
  }
  at::Tensor indices(at::IntArrayRef shape, int64_t high) {
    check_size(shape);
    if (meta()) return on_meta(shape, at::kLong);
    return place(at::randint(high, shape, gen_, at::TensorOptions().dtype(at::kLong)));
  }
  // Refuses at once `count` repeated blocks of `each` tensors that would pass the limit: counting
  // them as they are made would first make a quarter of a million.
  void expect_blocks(int64_t count, int64_t each) const {
    if (count > kMaxTensors / each) refuse_size();
  }

 private:
  bool meta() const { return device_.is_meta(); }
  at::Tensor on_meta(at::IntArrayRef shape, at::ScalarType dtype = at::kFloat) const {
    count_one();
    return at::empty(shape, at::TensorOptions().device(at::kMeta).dtype(dtype));
  }

  // A size parameter far beyond any model (layers=42949672981) is refused before it exhausts memory,
  // even on the meta device, where each tensor still costs its header.
  static constexpr int64_t kMaxTensors = 250000;
  void count_one() const {
    if (++made_ > kMaxTensors) refuse_size();
  }
  // A tensor whose bytes do not fit in an int64 (d_model=99000000000000000) is refused with its
  // shape, before LibTorch's own overflow error (a failed run, not bad input) can be raised.
  static void check_size(at::IntArrayRef shape) {
    int64_t bytes = 8;
    for (int64_t n : shape) {
      if (n <= 0 || bytes <= std::numeric_limits<int64_t>::max() / n) {
        bytes *= std::max<int64_t>(n, 0);
        continue;
      }
      std::string text;
      for (int64_t m : shape) text += (text.empty() ? "" : ", ") + std::to_string(m);
      throw std::invalid_argument("the model would hold a tensor of shape [" + text +
                                  "], larger than any memory: lower its d_model, vocab or other size parameters");
    }
  }
  [[noreturn]] static void refuse_size() {
    throw std::invalid_argument("the model would hold more than " + std::to_string(kMaxTensors) +
                                " tensors (parameters, buffers and inputs): lower its layers or other size parameters");
  }

  at::Tensor place(const at::Tensor& t) const {
    if (meta()) return t;  // counted when made
    count_one();
    if (device_.is_cpu()) return t;
    try {
      return t.to(device_);
    } catch (const c10::Error& e) {
      throw std::invalid_argument("cannot place model on " + device_.str() + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw std::invalid_argument("cannot place model on " + device_.str() + ": " + e.what());
    }
  }
  at::Generator gen_;
  at::Device device_;
  mutable int64_t made_ = 0;
};

void add_linear(Module& m, Init& init, const std::string& name, int64_t in, int64_t out, bool bias) {
  std::string prefix = name.empty() ? "" : name + ".";
  m.add_parameter(prefix + "weight", init.uniform({out, in}, in));
  if (bias) m.add_parameter(prefix + "bias", init.uniform({out}, in));
}

void add_layer_norm(Module& m, Init& init, const std::string& name, int64_t dim) {
  m.add_parameter(name + ".weight", init.filled({dim}, 1.0));
  m.add_parameter(name + ".bias", init.filled({dim}, 0.0));
}

// Linear submodule attributes as Thunder's prologue checks them.
void linear_attributes(Module& m, const std::string& name, int64_t in, int64_t out) {
  m.set_attribute(name + ".training", true);
  m.set_attribute(name + ".in_features", in);
  m.set_attribute(name + ".out_features", out);
}

const ModelParam kSeed{"seed", "0", "seed of the weights and example inputs"};
const ModelParam kDevice{"device", "cpu", "device of the weights and inputs (cpu, cuda:N)"};

Module make_linear(const Params& p) {
  int64_t batch = p.positive("batch"), in = p.positive("in_features"), out = p.positive("out_features");
  bool bias = p.boolean("bias");
  Init init(p.seed(), p.device());
  Module m;
  m.name = "linear";
  add_linear(m, init, "", in, out, bias);
  m.add_input("input", init.input({batch, in}));
  m.set_attribute("training", true);
  m.set_attribute("in_features", in);
  m.set_attribute("out_features", out);
  m.forward = [bias](ForwardContext& ctx) -> std::vector<ProxyPtr> {
    auto b = bias ? ctx.param("bias") : nullptr;
    return {lt::linear(ctx.here(), ctx.input("input"), ctx.param("weight"), b)};
  };
  return m;
}

Module make_mlp(const Params& p) {
  int64_t batch = p.positive("batch"), d = p.positive("d_model"), hidden = p.positive("hidden");
  Init init(p.seed(), p.device());
  Module m;
  m.name = "mlp";
  add_linear(m, init, "fc1", d, hidden, true);
  add_linear(m, init, "fc2", hidden, d, true);
  m.add_input("x", init.input({batch, d}));
  m.set_attribute("training", true);
  linear_attributes(m, "fc1", d, hidden);
  m.set_attribute("act.approximate", std::string("none"));
  linear_attributes(m, "fc2", hidden, d);
  m.forward = [](ForwardContext& ctx) -> std::vector<ProxyPtr> {
    auto h = lt::linear(ctx.here(), ctx.input("x"), ctx.param("fc1.weight"), ctx.param("fc1.bias"));
    h = lt::gelu(ctx.here(), h, "none");
    return {lt::linear(ctx.here(), h, ctx.param("fc2.weight"), ctx.param("fc2.bias"))};
  };
  return m;
}

Module make_llama_mlp(const Params& p) {
  int64_t batch = p.positive("batch"), seq = p.positive("seq"), d = p.positive("d_model"),
          hidden = p.positive("hidden");
  Init init(p.seed(), p.device());
  Module m;
  m.name = "llama_mlp";
  add_linear(m, init, "gate_proj", d, hidden, false);
  add_linear(m, init, "up_proj", d, hidden, false);
  add_linear(m, init, "down_proj", hidden, d, false);
  m.add_input("x", init.input({batch, seq, d}));
  m.set_attribute("training", true);
  m.forward = [](ForwardContext& ctx) -> std::vector<ProxyPtr> {
    auto x = ctx.input("x");
    auto gate = lt::silu(ctx.here(), lt::linear(ctx.here(), x, ctx.param("gate_proj.weight"), nullptr));
    auto up = lt::linear(ctx.here(), x, ctx.param("up_proj.weight"), nullptr);
    auto h = lt::mul(ctx.here(), Value::of(gate), Value::of(up));
    return {lt::linear(ctx.here(), h, ctx.param("down_proj.weight"), nullptr)};
  };
  return m;
}

Module make_gpt(const Params& p) {
  int64_t layers = p.positive("layers"), d = p.positive("d_model"), heads = p.positive("heads"),
          seq = p.positive("seq"), batch = p.positive("batch"), vocab = p.positive("vocab");
  if (d % heads != 0)
    p.bad("heads", "a divisor of d_model (" + std::to_string(d) + ")");
  Init init(p.seed(), p.device());
  init.expect_blocks(layers, 12);  // a block: two layer norms and four linears, a weight and a bias each
  Module m;
  m.name = "gpt";
  m.add_parameter("transformer.wte.weight", init.normal({vocab, d}, 0.02));
  m.add_parameter("transformer.wpe.weight", init.normal({seq, d}, 0.02));
  for (int64_t l = 0; l < layers; ++l) {
    std::string h = "transformer.h." + std::to_string(l) + ".";
    add_layer_norm(m, init, h + "ln_1", d);
    add_linear(m, init, h + "attn.c_attn", d, 3 * d, true);
    add_linear(m, init, h + "attn.c_proj", d, d, true);
    add_layer_norm(m, init, h + "ln_2", d);
    add_linear(m, init, h + "mlp.c_fc", d, 4 * d, true);
    add_linear(m, init, h + "mlp.c_proj", 4 * d, d, true);
  }
  add_layer_norm(m, init, "transformer.ln_f", d);
  add_linear(m, init, "lm_head", d, vocab, false);
  m.add_input("idx", init.indices({batch, seq}, vocab));
  m.add_input("targets", init.indices({batch, seq}, vocab));
  m.set_attribute("training", true);
  m.forward = [layers, d, heads](ForwardContext& ctx) -> std::vector<ProxyPtr> {
    auto idx = ctx.input("idx");
    int64_t B = idx->shape.at(0), T = idx->shape.at(1), hd = d / heads;
    auto P = [&](const std::string& n) { return ctx.param(n); };
    // x = tok_emb + pos_emb (the position table has one row per position of the block)
    auto x = lt::embedding(ctx.here(), idx, P("transformer.wte.weight"));
    x = lt::add(ctx.here(), Value::of(x), Value::of(P("transformer.wpe.weight")));
    for (int64_t l = 0; l < layers; ++l) {
      std::string h = "transformer.h." + std::to_string(l) + ".";
      // causal self-attention
      auto a = lt::layer_norm(ctx.here(), x, {d}, P(h + "ln_1.weight"), P(h + "ln_1.bias"));
      auto qkv = lt::linear(ctx.here(), a, P(h + "attn.c_attn.weight"), P(h + "attn.c_attn.bias"));
      auto parts = lt::split(ctx.here(), qkv, d, 2);
      auto heads_of = [&](const ProxyPtr& t) {
        return lt::transpose(ctx.here(), lt::reshape(ctx.here(), t, {B, T, heads, hd}), 1, 2);
      };
      auto q = heads_of(parts.at(0)), k = heads_of(parts.at(1)), v = heads_of(parts.at(2));
      auto y = lt::scaled_dot_product_attention(ctx.here(), q, k, v, nullptr, true);
      y = lt::reshape(ctx.here(), lt::transpose(ctx.here(), y, 1, 2), {B, T, d});
      y = lt::linear(ctx.here(), y, P(h + "attn.c_proj.weight"), P(h + "attn.c_proj.bias"));
      x = lt::add(ctx.here(), Value::of(x), Value::of(y));
      // mlp
      auto f = lt::layer_norm(ctx.here(), x, {d}, P(h + "ln_2.weight"), P(h + "ln_2.bias"));
      f = lt::linear(ctx.here(), f, P(h + "mlp.c_fc.weight"), P(h + "mlp.c_fc.bias"));
      f = lt::gelu(ctx.here(), f, "none");
      f = lt::linear(ctx.here(), f, P(h + "mlp.c_proj.weight"), P(h + "mlp.c_proj.bias"));
      x = lt::add(ctx.here(), Value::of(x), Value::of(f));
    }
    x = lt::layer_norm(ctx.here(), x, {d}, P("transformer.ln_f.weight"), P("transformer.ln_f.bias"));
    auto logits = lt::linear(ctx.here(), x, P("lm_head.weight"), nullptr);
    auto vocab_size = logits->shape.back();
    auto flat_logits = lt::reshape(ctx.here(), logits, {-1, vocab_size});
    auto flat_targets = lt::reshape(ctx.here(), ctx.input("targets"), {-1});
    auto loss = lt::cross_entropy(ctx.here(), flat_logits, flat_targets);
    return {logits, loss};
  };
  return m;
}

struct Entry {
  ModelInfo info;
  std::function<Module(const Params&)> make;
};

const std::vector<Entry>& zoo() {
  static const std::vector<Entry> entries = {
      {{"linear",
        "the seed: Linear(5, 10, bias=False) on input[2, 5]",
        {{"batch", "2", "rows of the input"},
         {"in_features", "5", "input features"},
         {"out_features", "10", "output features"},
         {"bias", "false", "add a bias parameter"},
         kSeed,
         kDevice}},
       make_linear},
      {{"mlp",
        "fc1: Linear(64, 256) -> gelu -> fc2: Linear(256, 64) on x[2, 64]",
        {{"batch", "2", "rows of the input"},
         {"d_model", "64", "input and output features"},
         {"hidden", "256", "hidden features"},
         kSeed,
         kDevice}},
       make_mlp},
      {{"llama_mlp",
        "LLaMA feed-forward: down(silu(gate(x)) * up(x)) on x[batch, seq, d_model], no biases",
        {{"batch", "2", "batch size"},
         {"seq", "8", "sequence length"},
         {"d_model", "64", "model width"},
         {"hidden", "172", "hidden width"},
         kSeed,
         kDevice}},
       make_llama_mlp},
      {{"gpt",
        "nanoGPT: embeddings, `layers` pre-norm blocks (causal attention, gelu mlp), ln_f, lm_head, "
        "cross-entropy loss; returns (logits, loss)",
        {{"layers", "2", "transformer blocks"},
         {"d_model", "64", "model width"},
         {"heads", "4", "attention heads (divides d_model)"},
         {"seq", "16", "sequence length (block size)"},
         {"batch", "2", "batch size"},
         {"vocab", "128", "vocabulary size"},
         kSeed,
         kDevice}},
       make_gpt},
  };
  return entries;
}

}  // namespace

std::vector<ModelInfo> list_models() {
  std::vector<ModelInfo> out;
  for (const auto& e : zoo()) out.push_back(e.info);
  return out;
}

Module make_model(const std::string& name, const std::map<std::string, std::string>& params) {
  std::string valid;
  for (const auto& e : zoo()) {
    if (e.info.name == name) return e.make(Params(e.info, params));
    valid += (valid.empty() ? "" : ", ") + e.info.name;
  }
  throw std::invalid_argument("unknown model '" + name + "'; valid models: " + valid);
}

void check_model(const std::string& name, const std::map<std::string, std::string>& params) {
  for (const auto& e : zoo())
    if (e.info.name == name) {
      e.make(Params(e.info, params, /*on_meta=*/true));
      return;
    }
  make_model(name, params);  // throws: unknown model
}

std::string python_class(const std::string& model) {
  return model == "linear" ? "torch.nn.modules.linear.Linear" : "torch.nn.modules.module.Module";
}

}  // namespace tv::jit
