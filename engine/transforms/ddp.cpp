#include "transforms/ddp.h"

#include <ATen/ATen.h>

#include <chrono>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "jit/module.h"
#include "ops/ltorch.h"
#include "passes/sort_collectives.h"
#include "ops/collectives.h"
#include "transforms/distributed_state.h"

namespace tv {
namespace {

std::string mb_text(double mb) {
  std::ostringstream s;
  s << mb;
  return s.str();
}

// Index of the trailing return statement.
size_t return_index(const Trace& t) {
  if (auto at = t.return_index()) return *at;
  throw std::runtime_error("trace '" + t.function_name + "' has no return statement");
}

// One all-reduce of the gradients of a bucket; returns the averaged tensor of each. A bucket of one
// gradient is Thunder's plain form (the all-reduce clones the quotient). A bucket of several
// reduces its packed quotient in place (skip_clone): it is made here for the all-reduce alone.
std::vector<ProxyPtr> reduce_bucket(TraceBuilder& b, const std::vector<ProxyPtr>& grads, int world, const Value& group) {
  auto average = [&](const ProxyPtr& g, bool skip_clone) {
    ProxyPtr d = ltorch::true_divide(b, Value::of(g), Value::integer(world));
    return collectives::wait(b, collectives::all_reduce(b, d, group, skip_clone));
  };
  if (grads.size() == 1) return {average(grads[0], false)};
  std::vector<ProxyPtr> flats;
  for (const auto& g : grads) flats.push_back(ltorch::reshape(b, g, {g->numel()}));
  ProxyPtr packed = average(ltorch::cat(b, flats, 0), true);
  std::vector<ProxyPtr> out;
  int64_t offset = 0;
  for (const auto& g : grads) {
    int64_t n = g->numel();
    Value piece = b.call("prims.slice", {Value::of(packed), Value::ints({offset}), Value::ints({offset + n}), Value::none()});
    offset += n;
    out.push_back(ltorch::reshape(b, piece.proxy, g->shape));
  }
  return out;
}

class Ddp : public Transform {
 public:
  std::string name() const override { return "ddp"; }
  std::vector<std::string> claims() const override { return {kParameterDistribution}; }

  void transform_module(jit::Module& m, const TransformContext& c) const override {
    m.set_attribute("use_ddp", true);
    m.set_attribute("bucket_size_in_mb", c.bucket_size_mb);
    if (c.broadcast_from_rank0) broadcast_module(m, c.broadcast_from_rank0);
  }

  void post_optimization(StageHistory& h, const TransformContext& c) const override {
    auto bwd = h.last(TraceKind::backward);
    if (!bwd || h.forward.empty()) return;
    auto slots = parameter_gradient_slots(h);
    int world = std::max(c.world_size, 1);
    const ReservedNames names = collectives::names_of(*bwd);  // both stages add to this backward
    // The plain all-reduces are the gradient of the forward's synchronize, which reads the group
    // at the call; the bucketing replaces them with its own, reading the group where the semantics
    // mode says (Thunder's optimize_allreduce_in_ddp_backward read CompileData's copy).
    run_stage(h, c, StateConsumer::ddp_forward_synchronize, "ddp pass", [&](const Value& group) {
      return ddp_backward(*bwd, slots, world, 0, "ddp pass", group, &names);
    });
    std::string pass = "ddp bucketing (" + mb_text(c.bucket_size_mb) + " MB)";
    auto bytes = static_cast<int64_t>(c.bucket_size_mb * 1024.0 * 1024.0);
    auto bucketed = run_stage(h, c, StateConsumer::ddp_backward_bucketing, pass, [&](const Value& group) {
      return ddp_backward(*bwd, slots, world, std::max<int64_t>(bytes, 1), pass, group, &names);
    });
    h.record_timed(TraceKind::backward, "Sort Collectives", [&] { return passes::sort_collectives(*bucketed); });
  }

 private:
  // Records the backward `make` builds with the group `consumer` finds; when its all-reduce
  // refuses a None group, records the partial trace as the failed stage and throws why.
  template <typename Make>
  TracePtr run_stage(StageHistory& h, const TransformContext& c, StateConsumer consumer, const std::string& pass,
                     Make make) const {
    Value group = collectives::group_argument(c.finds_process_group(consumer));
    auto start = std::chrono::steady_clock::now();
    try {
      return h.record_timed(TraceKind::backward, pass, [&] { return make(group); });
    } catch (const PartialTraceError& e) {
      h.record(TraceKind::backward, pass, e.partial(), milliseconds_since(start));
      h.backward.back().failed_at = e.failed_at();
      throw explain_missing_group(e.what(), name(), consumer, pass, *e.partial(), e.failed_at(), c);
    }
  }
};

}  // namespace

std::unique_ptr<Transform> make_ddp_transform() {
  collectives::register_collective_symbols();
  return std::make_unique<Ddp>();
}

std::vector<std::string> parameter_proxies(const Trace& prologue) {
  std::vector<std::string> out;
  for (const auto& b : prologue.body)
    if (b.symbol == &structural::get_parameter() && b.output()) out.push_back(b.output()->name);
  return out;
}

std::vector<size_t> parameter_gradient_slots(const StageHistory& h) {
  std::vector<size_t> slots;
  if (h.forward.empty()) return slots;
  const Trace& computation = *h.forward.front().trace;
  std::unordered_set<std::string> params;
  if (auto prologue = h.last(TraceKind::prologue))
    for (auto& name : parameter_proxies(*prologue)) params.insert(std::move(name));
  for (size_t i = 0; i < computation.params.size(); ++i)
    if (params.count(computation.params[i].proxy->name)) slots.push_back(i);
  return slots;
}

TracePtr ddp_backward(const Trace& backward, const std::vector<size_t>& slots, int world, int64_t bucket_bytes,
                      const std::string& pass) {
  return ddp_backward(backward, slots, world, bucket_bytes, pass, collectives::group_argument(true));
}

TracePtr ddp_backward(const Trace& backward, const std::vector<size_t>& slots, int world, int64_t bucket_bytes,
                      const std::string& pass, const Value& group, const ReservedNames* names) {
  size_t ret = return_index(backward);
  const Value& returned = backward.body[ret].args.at(0);
  if (!returned.is_sequence()) return derive(backward, pass);

  // The gradients, in reverse parameter order (as torch DDP fills its buckets).
  std::vector<ProxyPtr> grads;
  std::unordered_set<std::string_view> seen;
  for (auto it = slots.rbegin(); it != slots.rend(); ++it) {
    if (*it >= returned.items.size() || !returned.items[*it].is_proxy()) continue;
    const ProxyPtr& g = returned.items[*it].proxy;
    if (g->kind == ProxyKind::tensor && seen.insert(g->name).second) grads.push_back(g);
  }
  if (grads.empty()) return derive(backward, pass);
  auto out = derive_without_body(backward, pass);

  std::vector<std::vector<ProxyPtr>> buckets;
  int64_t filled = 0;
  for (const auto& g : grads) {
    int64_t bytes = g->numel() * static_cast<int64_t>(element_size(g->dtype));
    bool fits = bucket_bytes > 0 && !buckets.empty() && filled + bytes <= bucket_bytes &&
                buckets.back().front()->dtype == g->dtype;
    if (!fits) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(g);
    filled += bytes;
  }

  // What reduce_bucket writes: at most 3 statements per gradient and 4 per bucket.
  const size_t added = 4 * (grads.size() + buckets.size());
  TraceBuilder b(backward.function_name);
  b.trace().body.reserve(added);
  if (names) b.reserve_names(*names);
  else collectives::reserve_names(b, backward);
  std::unordered_map<std::string_view, ProxyPtr> reduced;
  // Sized for all of it at once: pushing onto a copy of the statements before the return would move
  // every one of them into a buffer twice as large.
  std::vector<BoundSymbol> body;
  body.reserve(backward.body.size() + added);
  body.insert(body.end(), backward.body.begin(), backward.body.begin() + static_cast<std::ptrdiff_t>(ret));
  try {
    for (const auto& bucket : buckets) {
      auto r = reduce_bucket(b, bucket, world, group);
      for (size_t i = 0; i < bucket.size(); ++i) reduced[bucket[i]->name] = r[i];
    }
  } catch (const collectives::CollectiveTypeError& e) {
    // The builder ends with the all-reduce whose meta check failed: keep the trace up to it, closed
    // by the backward's own return so that it stays a program (it prints and parses back).
    for (auto& s : b.trace().body) body.push_back(std::move(s));
    int failed_at = static_cast<int>(body.size()) - 1;
    body.insert(body.end(), backward.body.begin() + static_cast<std::ptrdiff_t>(ret), backward.body.end());
    out->body = std::move(body);
    throw PartialTraceError(e.what(), out, failed_at);
  }
  BoundSymbol ret_stmt = backward.body[ret];
  Value mapped = returned;
  for (size_t s : slots)
    if (s < mapped.items.size() && mapped.items[s].is_proxy()) {
      auto it = reduced.find(mapped.items[s].proxy->name);
      if (it != reduced.end()) mapped.items[s] = Value::of(it->second);
    }
  ret_stmt.args[0] = mapped;
  for (auto& s : b.trace().body) body.push_back(std::move(s));
  body.push_back(std::move(ret_stmt));
  body.insert(body.end(), backward.body.begin() + static_cast<std::ptrdiff_t>(ret) + 1, backward.body.end());
  out->body = std::move(body);
  return out;
}

}  // namespace tv
