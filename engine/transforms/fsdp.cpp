#include "transforms/fsdp.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "jit/module.h"
#include "ops/ltorch.h"
#include "ops/collectives.h"
#include "passes/sort_collectives.h"
#include "transforms/ddp.h"
#include "transforms/hsdp.h"

namespace tv {
namespace {

// Calls `fn` on each proxy the statement or its subsymbols read.
void for_each_read(const BoundSymbol& b, const std::function<void(const ProxyPtr&)>& fn) {
  for (const auto& a : b.args) for_each_proxy(a, fn);
  for (const auto& [k, v] : b.kwargs) for_each_proxy(v, fn);
  for (const auto& s : b.subsymbols) for_each_read(s, fn);
}

struct Gather {
  ProxyPtr shard;
  ProxyPtr full;
  std::vector<BoundSymbol> chain;  // all_gather, wait, split, reshape: defines `full`
};

// The ranks a rank shards its parameters over: the world (fsdp) or its mesh's shard group (hsdp).
struct ShardGroup {
  int size = 1;
  int index = 0;  // this rank's shard
  Value name;     // the collectives' group argument
};

class Fsdp : public Transform {
 public:
  explicit Fsdp(bool hybrid) : hybrid_(hybrid) {}
  std::string name() const override { return hybrid_ ? "hsdp" : "fsdp"; }
  std::vector<std::string> claims() const override { return {kParameterDistribution}; }
  at::Tensor local_gradient(const at::Tensor& mean, const TransformContext& c) const override {
    auto g = shard_group(c);
    return fsdp_shard(mean, g.index, g.size);
  }
  std::vector<Subgroup> subgroups(const TransformContext& c) const override {
    if (!hybrid_) return {};
    auto mesh = hybrid_mesh(c.world_size, c.shard_group_size);
    return {{collectives::group_name(kShardGroup), mesh.shard_group(c.rank)},
            {collectives::group_name(kReplicateGroup), mesh.replicate_group(c.rank)}};
  }

  void transform_module(jit::Module& m, const TransformContext& c) const override {
    if (c.broadcast_from_rank0) broadcast_module(m, c.broadcast_from_rank0);
    auto group = shard_group(c);
    std::vector<std::pair<std::string, std::vector<int64_t>>> full;  // qualified name, full shape
    for (auto& p : m.parameters) {
      const at::Tensor& t = *p.value;
      full.emplace_back(p.name, t.sizes().vec());
      at::Tensor shard = fsdp_shard(t.detach(), group.index, group.size);
      shard.set_requires_grad(t.requires_grad());
      p.value = std::make_shared<at::Tensor>(shard);
    }
    m.set_attribute("use_fsdp", true);
    // The model's forward is written for full parameters: it sees the gathered ones. The prologue
    // and the computation's signature keep the shards.
    m.forward = [inner = m.forward, full, group](jit::ForwardContext& ctx) {
      const jit::Module& mod = ctx.module();
      std::map<std::string, ProxyPtr, std::less<>> inputs, tensors;
      for (const auto& i : mod.inputs) inputs[i.name] = ctx.input(i.name);
      for (const auto& list : {&mod.parameters, &mod.buffers})
        for (const auto& p : *list) tensors[p.name] = ctx.param(p.name);
      for (const auto& [name, shape] : full) tensors[name] = gather(ctx.builder(), tensors[name], shape, group).full;
      jit::ForwardContext gathered(ctx.builder(), mod, inputs, tensors);
      return inner(gathered);
    };
  }

  // Moves each gather (recorded at the top of the computation by the forward above) right before
  // the first use of the parameter it gathers.
  void pre_prologue(StageHistory& h, const TransformContext& c) const override {
    auto computation = h.last(TraceKind::forward);
    if (!computation) return;
    auto start = std::chrono::steady_clock::now();
    gathers_.clear();
    std::set<std::string> params;
    for (const auto& p : computation->params) params.insert(p.proxy->name);
    const auto& body = computation->body;
    std::vector<bool> in_chain(body.size(), false);
    for (size_t i = 0; i < body.size(); ++i) {
      const auto& s = body[i];
      if (s.name() != collectives::kAllGather || s.args.empty() || !s.args[0].is_proxy() ||
          !params.count(s.args[0].proxy->name))
        continue;
      Gather g;
      g.shard = s.args[0].proxy;
      g.chain.push_back(s);
      in_chain[i] = true;
      ProxyPtr last = s.output();
      for (size_t k = i + 1; k < body.size(); ++k) {
        const auto& n = body[k];
        bool reads_last = !n.args.empty() && n.args[0].is_proxy() && n.args[0].proxy->name == last->name;
        bool step = reads_last && (n.name() == collectives::kWait || n.name() == "ltorch.split" || n.name() == "ltorch.reshape");
        if (!step) break;
        g.chain.push_back(n);
        in_chain[k] = true;
        last = n.outputs.front();
      }
      g.full = last;
      gathers_.push_back(std::move(g));
    }
    auto out = derive_without_body(*computation, "fsdp pass");
    std::unordered_map<std::string_view, size_t> gather_of;  // a gathered parameter's name -> its gather
    for (size_t k = 0; k < gathers_.size(); ++k) gather_of.emplace(gathers_[k].full->name, k);
    std::vector<bool> placed(gathers_.size(), false);
    std::vector<size_t> read;  // the gathers a statement reads that are not placed yet
    for (size_t i = 0; i < body.size(); ++i) {
      if (in_chain[i]) continue;
      const auto& s = body[i];
      if (s.symbol->form != PrintForm::unpack_trivial) {
        read.clear();
        for_each_read(s, [&](const ProxyPtr& p) {
          auto it = gather_of.find(p->name);
          if (it != gather_of.end() && !placed[it->second]) {
            placed[it->second] = true;
            read.push_back(it->second);
          }
        });
        std::sort(read.begin(), read.end());  // in the order of the gathers, as recorded
        for (size_t k : read)
          for (const auto& x : gathers_[k].chain) out->body.push_back(x);
      }
      if (s.symbol->form == PrintForm::ret)  // gathers nothing reads stay (collectives are kept)
        for (size_t k = 0; k < gathers_.size(); ++k)
          if (!placed[k]) {
            placed[k] = true;
            out->body.insert(out->body.end(), gathers_[k].chain.begin(), gathers_[k].chain.end());
          }
      out->body.push_back(s);
    }
    h.record(TraceKind::forward, "fsdp pass", out, milliseconds_since(start));
  }

  void post_optimization(StageHistory& h, const TransformContext& c) const override {
    auto fwd = h.last(TraceKind::forward), bwd = h.last(TraceKind::backward);
    if (!fwd || !bwd) return;
    auto start = std::chrono::steady_clock::now();
    std::string pass = std::string("fsdp backward (") + (c.zero3 ? "zero3" : "zero2") + ")";
    if (!c.zero3) {  // the gathered parameters stay saved for backward
      h.record_timed(TraceKind::backward, pass, [&] { return derive(*bwd, pass); });
    } else {
      auto f = derive(*fwd, pass), bw = derive(*bwd, pass);
      rematerialize_gathers(*f, *bw);
      double ms = milliseconds_since(start);  // one pass made both
      h.record(TraceKind::forward, pass, f, ms);
      h.record(TraceKind::backward, pass, bw, ms);
    }
    if (hybrid_) average_across_replicas(h, c);
  }

 private:
  static constexpr int kShardGroup = 2, kReplicateGroup = 3;  // the subgroups' numbers (collectives::group_name)

  ShardGroup shard_group(const TransformContext& c) const {
    if (!hybrid_) return {std::max(c.world_size, 1), c.rank, Value::name(collectives::kGroup)};
    auto mesh = hybrid_mesh(c.world_size, c.shard_group_size);
    return {mesh.shards, mesh.shard_index(c.rank), Value::name(collectives::group_name(kShardGroup))};
  }

  // hsdp: the gradient shards, each the mean over its shard group, averaged across the replicas.
  void average_across_replicas(StageHistory& h, const TransformContext& c) const {
    auto bwd = h.last(TraceKind::backward);
    auto mesh = hybrid_mesh(c.world_size, c.shard_group_size);
    std::string pass = "hsdp replicate (" + std::to_string(mesh.replicas) + " ranks)";
    Value group = Value::name(collectives::group_name(kReplicateGroup));
    auto averaged = h.record_timed(TraceKind::backward, pass, [&] {
      return ddp_backward(*bwd, parameter_gradient_slots(h), mesh.replicas, 0, pass, group);
    });
    h.record_timed(TraceKind::backward, "Sort Collectives", [&] { return passes::sort_collectives(*averaged); });
  }

  static Gather gather(TraceBuilder& b, const ProxyPtr& shard, const std::vector<int64_t>& full_shape,
                       const ShardGroup& group) {
    size_t mark = b.trace().body.size();
    Gather g;
    g.shard = shard;
    ProxyPtr t = collectives::wait(b, collectives::all_gather(b, shard, group.size, group.name));
    int64_t rows = full_shape.empty() ? 1 : full_shape[0];
    if (t->shape[0] != rows) t = ltorch::split(b, t, rows, 0).front();
    if (t->shape != full_shape) t = ltorch::reshape(b, t, full_shape);
    g.full = t;
    auto& body = b.trace().body;
    g.chain.assign(body.begin() + static_cast<std::ptrdiff_t>(mark), body.end());
    return g;
  }

  // Zero-3: the forward saves the shards instead of the gathered parameters; the backward
  // gathers them again right after unpacking what was saved.
  void rematerialize_gathers(Trace& f, Trace& bw) const {
    if (f.body.empty() || bw.params.empty()) return;
    Value& ret = f.body.back().args.at(0);
    if (f.body.back().symbol->form != PrintForm::ret || ret.kind != Value::Kind::tuple || ret.items.size() != 2 ||
        !ret.items[1].is_sequence() || ret.items[1].items.empty())
      return;
    Value& saved = ret.items[1].items[0];
    // The backward's unpack of C0 (the saved tensors).
    BoundSymbol* unpack_c0 = nullptr;
    size_t at = 0;
    ProxyPtr c0;
    for (size_t i = 0; i < bw.body.size(); ++i) {
      auto& s = bw.body[i];
      if (s.symbol->form != PrintForm::unpack_sequence || s.args.empty() || !s.args[0].is_proxy()) continue;
      if (!c0 && s.args[0].proxy->name == bw.params[0].proxy->name && !s.outputs.empty()) {
        c0 = s.outputs[0];
      } else if (c0 && s.args[0].proxy->name == c0->name) {
        unpack_c0 = &s;
        at = i;
        break;
      }
    }
    if (!unpack_c0 || unpack_c0->outputs.size() != saved.items.size()) return;
    std::unordered_set<std::string_view> backward_names;
    walk(bw.body, [&](const BoundSymbol& s, int) {
      for (const auto& o : s.outputs) backward_names.insert(o->name);
    });
    std::unordered_map<std::string_view, const Gather*> gather_of;  // the last gather of a name wins
    for (const auto& x : gathers_) gather_of[x.full->name] = &x;

    std::vector<Value> items;
    std::vector<ProxyPtr> outputs;
    std::vector<BoundSymbol> regather;
    std::unordered_set<std::string_view> kept;  // names of `items`
    for (size_t i = 0; i < saved.items.size(); ++i) {
      const Value& v = saved.items[i];
      const Gather* g = nullptr;
      if (v.is_proxy()) {
        auto it = gather_of.find(v.proxy->name);
        if (it != gather_of.end()) g = it->second;
      }
      bool clash = false;
      if (g)  // a name of the chain already used by the backward: keep the gathered parameter
        for (const auto& s : g->chain)
          for (const auto& o : s.outputs) clash = clash || (o->name != g->full->name && backward_names.count(o->name));
      if (!g || clash) {
        items.push_back(v);
        if (v.is_proxy()) kept.insert(v.proxy->name);
        outputs.push_back(unpack_c0->outputs[i]);
        continue;
      }
      if (kept.insert(g->shard->name).second) {
        items.push_back(Value::of(g->shard));
        outputs.push_back(g->shard);
      }
      regather.insert(regather.end(), g->chain.begin(), g->chain.end());
    }
    for (auto& s : regather) s.header = nullptr;
    saved.items = std::move(items);
    unpack_c0->outputs = std::move(outputs);
    bw.body.insert(bw.body.begin() + static_cast<std::ptrdiff_t>(at) + 1, regather.begin(), regather.end());
  }

  bool hybrid_;
  mutable std::vector<Gather> gathers_;
};

}  // namespace

std::unique_ptr<Transform> make_fsdp_transform(bool hybrid) {
  collectives::register_collective_symbols();
  return std::make_unique<Fsdp>(hybrid);
}

at::Tensor fsdp_shard(const at::Tensor& full, int rank, int world) {
  at::Tensor t = full.dim() == 0 ? full.reshape({1}) : full;
  int64_t n = t.size(0);
  int64_t rows = (n + world - 1) / world;
  int64_t begin = std::min<int64_t>(rank * rows, n), end = std::min<int64_t>((rank + 1) * rows, n);
  auto sizes = t.sizes().vec();
  sizes[0] = rows;
  at::Tensor shard = at::zeros(sizes, t.options());
  if (end > begin) shard.narrow(0, 0, end - begin).copy_(t.narrow(0, begin, end - begin));
  return shard;
}

std::unique_ptr<Transform> make_hsdp_transform() { return make_fsdp_transform(/*hybrid=*/true); }

}  // namespace tv
