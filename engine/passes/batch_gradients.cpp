#include "passes/batch_gradients.h"

#include <map>
#include <unordered_map>

#include "ops/collectives.h"
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "passes/pass_util.h"

namespace tv::passes {
namespace {

ProxyPtr tensor_arg(const BoundSymbol& b, size_t i) {
  if (i >= b.args.size() || !b.args[i].is_proxy() || !b.args[i].proxy->is_tensor()) return nullptr;
  return b.args[i].proxy;
}

std::string operand_key(const Proxy& p) {
  return shape_text(p.shape) + " " + std::string(short_name(p.dtype)) + " " + p.device.str();
}

// The batch key of a statement that can join a batch ("" when it cannot), with its operands' bytes.
std::string batch_key(const BoundSymbol& b, int64_t* bytes) {
  const std::string& name = b.name();
  if ((name == "ltorch.matmul" || name == "prims.matmul") && b.args.size() == 2 && b.kwargs.empty()) {
    ProxyPtr x = tensor_arg(b, 0), y = tensor_arg(b, 1);
    if (!x || !y || x->shape.size() != 2 || y->shape.size() != 2 || !is_floating(x->dtype)) return "";
    *bytes = tensor_bytes(*x) + tensor_bytes(*y);
    return "matmul " + operand_key(*x) + " @ " + operand_key(*y);
  }
  if (name == "ltorch.sum" && b.args.size() >= 2) {
    ProxyPtr x = tensor_arg(b, 0);
    const Value& dims = b.args[1];
    bool keepdim = b.args.size() > 2 && b.args[2].kind == Value::Kind::boolean && b.args[2].b;
    if (!x || !is_floating(x->dtype) || keepdim || b.args.size() > 3 || !dims.is_sequence()) return "";
    for (const auto& d : dims.items)
      if (d.kind != Value::Kind::integer) return "";
    for (const auto& [k, v] : b.kwargs)
      if (k != "dtype" || !v.is_none()) return "";
    *bytes = tensor_bytes(*x);
    return "sum " + operand_key(*x) + " dims " + shape_text(dims.as_ints());
  }
  return "";
}

// The batched form of `members` (statements of one key), recorded on `b`: the pieces, in order.
std::vector<ProxyPtr> batched(TraceBuilder& b, const std::vector<const BoundSymbol*>& members) {
  const BoundSymbol& first = *members.front();
  std::vector<ProxyPtr> lhs, rhs;
  for (const auto* m : members) {
    lhs.push_back(m->args[0].proxy);
    if (first.name() != "ltorch.sum") rhs.push_back(m->args[1].proxy);
  }
  ProxyPtr out;
  if (first.name() != "ltorch.sum") {
    out = ltorch::matmul(b, ltorch::stack(b, lhs, 0), ltorch::stack(b, rhs, 0));
  } else {
    const auto member_rank = static_cast<int64_t>(lhs.front()->shape.size());
    std::vector<int64_t> dims;  // the members' dims, one further in along the stacked dim 0
    for (int64_t d : first.args[1].as_ints()) dims.push_back(meta::normalize_dim(d, member_rank) + 1);
    out = ltorch::sum(b, ltorch::stack(b, lhs, 0), dims, false);
  }
  return ltorch::unbind(b, out, 0);
}

}  // namespace

TracePtr batch_gradients(const Trace& t, int64_t max_bytes) {
  PassTimer timer;
  const std::string pass = "Batch Gradients";
  const auto return_at = t.return_index();
  if (!return_at) return timer.finish(derive(t, pass), pass);
  const size_t ret = *return_at;

  std::unordered_map<std::string, int> readers;  // by statements other than `del` and the return
  for (size_t i = 0; i < t.body.size(); ++i)
    if (i != ret && !is_del(t.body[i]))
      for (const auto& p : t.body[i].inputs()) ++readers[p->name];
  std::map<std::string, std::pair<std::vector<size_t>, int64_t>> groups;
  for (size_t i = 0; i < ret; ++i) {
    int64_t bytes = 0;
    std::string key = batch_key(t.body[i], &bytes);
    if (key.empty() || t.body[i].outputs.size() != 1 || readers.count(t.body[i].outputs[0]->name)) continue;
    auto& [members, total] = groups[key];
    members.push_back(i);
    total += bytes;
  }
  std::vector<bool> batched_away(t.body.size(), false);
  std::vector<std::vector<const BoundSymbol*>> batches;
  for (auto& [key, group] : groups) {
    auto& [members, total] = group;
    if (members.size() < 2 || total > max_bytes) continue;
    batches.emplace_back();
    for (size_t i : members) {
      batched_away[i] = true;
      batches.back().push_back(&t.body[i]);
    }
  }
  if (batches.empty()) return timer.finish(derive(t, pass), pass);

  TraceBuilder b(t.function_name);
  collectives::reserve_names(b, t);
  std::map<std::string, ProxyPtr> piece_of;  // a batched statement's output -> its piece
  for (const auto& members : batches) {
    auto pieces = batched(b, members);
    for (size_t k = 0; k < members.size(); ++k) piece_of[members[k]->outputs[0]->name] = pieces[k];
  }
  auto out = derive_without_body(t, pass);
  for (size_t i = 0; i < ret; ++i)
    if (!batched_away[i]) out->body.push_back(t.body[i]);
  for (auto& s : b.trace().body) out->body.push_back(std::move(s));
  BoundSymbol ret_stmt = t.body[ret];
  for (auto& a : ret_stmt.args) a = map_proxies(a, [&](const ProxyPtr& p) {
    auto it = piece_of.find(p->name);
    return it == piece_of.end() ? p : it->second;
  });
  out->body.push_back(std::move(ret_stmt));
  out->body.insert(out->body.end(), t.body.begin() + static_cast<std::ptrdiff_t>(ret) + 1, t.body.end());
  return timer.finish(out, pass);
}

}  // namespace tv::passes
