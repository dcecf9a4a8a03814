#include "passes/residual_epilogues.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "passes/delete_last_used.h"
#include "passes/fusion.h"
#include "passes/pass_util.h"

namespace tv::passes {
namespace {

constexpr const char* kPassName = "Residual Epilogues";

bool is_proxy(const Value& v) { return v.kind == Value::Kind::proxy; }

bool alpha_is_one(const BoundSymbol& add) {
  for (const auto& [key, v] : add.kwargs) {
    bool one = (v.kind == Value::Kind::integer && v.i == 1) || (v.kind == Value::Kind::floating && v.f == 1);
    if (key != "alpha" || !one) return false;
  }
  return true;
}

}  // namespace

bool linear_feeds_add(const BoundSymbol& linear, const BoundSymbol& add, size_t* residual_arg) {
  static const std::unordered_set<std::string> linears{"ltorch.linear", "prims.linear", "torch.nn.functional.linear"};
  static const std::unordered_set<std::string> adds{"ltorch.add", "prims.add", "torch.add"};
  if (!linears.count(linear.name()) || linear.symbol->form != PrintForm::call || !linear.kwargs.empty() ||
      linear.args.size() < 2 || linear.args.size() > 3 || !is_proxy(linear.args[0]) || !is_proxy(linear.args[1]) ||
      (linear.args.size() == 3 && !is_proxy(linear.args[2]) && linear.args[2].kind != Value::Kind::none) ||
      linear.outputs.size() != 1 || !linear.outputs[0]->is_tensor())
    return false;
  if (!adds.count(add.name()) || add.symbol->form != PrintForm::call || add.args.size() != 2 ||
      !is_proxy(add.args[0]) || !is_proxy(add.args[1]) || add.outputs.size() != 1 || !alpha_is_one(add))
    return false;
  const std::string& y = linear.outputs[0]->name;
  const std::string &a = add.args[0].proxy->name, &b = add.args[1].proxy->name;
  if (a == b || (a != y && b != y)) return false;
  *residual_arg = a == y ? 1 : 0;
  return true;
}

TracePtr residual_epilogues(const Trace& t) {
  PassTimer timer;
  auto result = derive_regrouped(t, kPassName, [](std::vector<BoundSymbol> body) {
    int next = next_fusion_index(body);
    auto read_last = last_reads(body);
    std::vector<BoundSymbol> out;
    out.reserve(body.size());
    for (size_t i = 0; i < body.size();) {
      size_t residual_arg = 0;
      if (i + 1 < body.size() && linear_feeds_add(body[i], body[i + 1], &residual_arg)) {
        auto last = read_last.find(body[i].outputs[0]->name);
        if (last != read_last.end() && last->second == i + 1) {
          out.push_back(make_fusion_region({body[i], body[i + 1]}, read_last, i + 2, next++));
          i += 2;
          continue;
        }
      }
      out.push_back(body[i++]);
    }
    return out;
  });
  return timer.finish(result, kPassName);
}

}  // namespace tv::passes
