#include "exec/gradient_batches.h"

#include <map>
#include <string>
#include <unordered_map>

#include "ops/grad_rules.h"

namespace tv::exec {

namespace {

using grad::tensor_at;

std::string operand_key(const Proxy& p) {
  return shape_text(p.shape) + " " + std::string(short_name(p.dtype)) + " " + p.device.str();
}

int64_t bytes_of(const Proxy& p) { return p.numel() * element_size(p.dtype); }

// The batch key of a statement that can join a batch ("" when it cannot), with its operands' bytes.
std::string batch_key(const BoundSymbol& b, int64_t* bytes) {
  const std::string& name = b.name();
  if ((name == "ltorch.matmul" || name == "prims.matmul") && b.args.size() == 2 && b.kwargs.empty()) {
    ProxyPtr x = tensor_at(b, 0), y = tensor_at(b, 1);
    if (!x || !y || x->shape.size() != 2 || y->shape.size() != 2 || !is_floating(x->dtype)) return "";
    *bytes = bytes_of(*x) + bytes_of(*y);
    return "matmul " + operand_key(*x) + " @ " + operand_key(*y);
  }
  if (name == "ltorch.sum" && b.args.size() >= 2) {
    ProxyPtr x = tensor_at(b, 0);
    const Value& dims = b.args[1];
    bool keepdim = b.args.size() > 2 && b.args[2].kind == Value::Kind::boolean && b.args[2].b;
    bool constant_dims = dims.kind == Value::Kind::tuple || dims.kind == Value::Kind::list;
    if (!x || !is_floating(x->dtype) || keepdim || !constant_dims) return "";
    for (const auto& d : dims.items)
      if (d.kind != Value::Kind::integer) return "";
    for (const auto& [k, v] : b.kwargs)
      if (k != "dtype" || v.kind != Value::Kind::none) return "";
    *bytes = bytes_of(*x);
    return "sum " + operand_key(*x) + " dims " + shape_text(dims.as_ints());
  }
  return "";
}

}  // namespace

GradientBatches plan_gradient_batches(const Trace& trace, const std::vector<std::vector<uint32_t>>& reads,
                                      const std::vector<std::vector<uint32_t>>& writes, int64_t max_bytes) {
  GradientBatches plan;
  plan.batch_of.assign(trace.body.size(), -1);
  size_t ret = trace.body.size();
  for (size_t i = 0; i < trace.body.size() && ret == trace.body.size(); ++i)
    if (trace.body[i].symbol->form == PrintForm::ret) ret = i;
  if (ret == trace.body.size()) return plan;
  std::unordered_map<uint32_t, int> readers;  // by statements other than `del` and the return
  for (size_t i = 0; i < trace.body.size(); ++i)
    if (i != ret && trace.body[i].symbol->form != PrintForm::del)
      for (uint32_t id : reads[i]) ++readers[id];
  std::map<std::string, std::pair<std::vector<size_t>, int64_t>> groups;
  for (size_t i = 0; i < ret; ++i) {
    int64_t bytes = 0;
    std::string key = batch_key(trace.body[i], &bytes);
    if (key.empty() || writes[i].size() != 1 || readers.count(writes[i][0])) continue;
    auto& [members, total] = groups[key];
    members.push_back(i);
    total += bytes;
  }
  for (auto& [key, group] : groups) {
    auto& [members, total] = group;
    if (members.size() < 2 || total > max_bytes) continue;
    GradientBatches::Batch batch;
    const BoundSymbol& first = trace.body[members.front()];
    batch.matmul = first.name() != "ltorch.sum";
    if (!batch.matmul) batch.sum_dims = first.args[1].as_ints();
    batch.members = members;
    for (size_t i : members) plan.batch_of[i] = static_cast<int>(plan.batches.size());
    plan.batches.push_back(std::move(batch));
  }
  return plan;
}

void PendingGradients::defer(int batch, uint32_t output, std::vector<at::Tensor> operands) {
  pending_.at(static_cast<size_t>(batch)).push_back({output, std::move(operands)});
  any_ = true;
}

void PendingGradients::run(const std::function<void(uint32_t, at::Tensor)>& set) {
  for (size_t b = 0; b < pending_.size(); ++b) {
    auto& members = pending_[b];
    if (members.empty()) continue;
    const auto& batch = plan_.batches[b];
    std::vector<at::Tensor> first, second;
    for (const auto& m : members) {
      first.push_back(m.operands.at(0));
      if (batch.matmul) second.push_back(m.operands.at(1));
    }
    at::Tensor out;
    if (batch.matmul) {
      out = at::bmm(at::stack(first), at::stack(second));
    } else {
      at::Tensor stacked = at::stack(first);
      std::vector<int64_t> dims;
      for (int64_t d : batch.sum_dims) dims.push_back((d < 0 ? d + stacked.dim() - 1 : d) + 1);
      out = at::sum(stacked, dims);
    }
    for (size_t k = 0; k < members.size(); ++k) set(members[k].output, out.select(0, static_cast<int64_t>(k)));
    members.clear();
  }
  any_ = false;
}

}  // namespace tv::exec
