#include "passes/delete_last_used.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "passes/pass_util.h"

namespace tv::passes {

std::vector<BoundSymbol> insert_deletions(const std::vector<BoundSymbol>& body, const Value& returned,
                                          bool clear_mutable_collections) {
  // Names are views of the proxies' own, which `body` and `returned` keep alive.
  std::unordered_set<std::string_view> handled;
  auto returned_proxies = proxies_of(returned);
  for (const auto& p : returned_proxies) handled.insert(p->name);

  std::vector<BoundSymbol> out;  // back to front, reversed at the end
  out.reserve(body.size() * 2);
  for (auto it = body.rbegin(); it != body.rend(); ++it) {
    const BoundSymbol& b = *it;
    if (b.symbol->form == PrintForm::unpack_trivial) {
      out.push_back(b);
      continue;
    }
    if (is_del(b)) continue;
    if (clear_mutable_collections && is_clear_collection(b)) continue;

    std::vector<ProxyPtr> to_del;
    auto consider = [&](const ProxyPtr& p) {
      if (handled.insert(p->name).second) to_del.push_back(p);
    };
    for (const auto& p : b.outputs) consider(p);
    for (const auto& p : reads(b)) consider(p);

    if (!to_del.empty() && b.symbol->form != PrintForm::ret) {
      BoundSymbol d;
      d.symbol = &structural::del();
      for (const auto& p : to_del) d.args.push_back(Value::of(p));
      out.push_back(std::move(d));
      if (clear_mutable_collections)
        for (const auto& p : to_del) {
          if (p->kind != ProxyKind::collection) continue;
          BoundSymbol c;
          c.symbol = &clear_collection_symbol();
          c.args.push_back(Value::of(p));
          out.push_back(std::move(c));
        }
    }
    out.push_back(b);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<BoundSymbol> strip_deletions(const std::vector<BoundSymbol>& body, bool clears) {
  std::vector<BoundSymbol> out;
  for (const auto& b : body)
    if (!is_del(b) && !(clears && is_clear_collection(b))) out.push_back(b);
  return out;
}

bool has_deletions(const Trace& t) { return std::any_of(t.body.begin(), t.body.end(), is_del); }

bool has_collection_clears(const Trace& t) {
  return std::any_of(t.body.begin(), t.body.end(), is_clear_collection);
}

std::shared_ptr<Trace> derive_regrouped(const Trace& t, std::string pass_name,
                                        const std::function<std::vector<BoundSymbol>(std::vector<BoundSymbol>)>& regroup) {
  const bool had_dels = has_deletions(t);
  const bool clears = has_collection_clears(t);
  auto result = derive_without_body(t, std::move(pass_name));
  result->body = regroup(had_dels ? strip_deletions(t.body, clears) : t.body);
  if (had_dels) result->body = insert_deletions(result->body, result->returned(), clears);
  return result;
}

TracePtr delete_last_used(const Trace& t, bool clear_mutable_collections) {
  PassTimer timer;
  auto out = derive_without_body(t, "Delete Last Used");
  out->body = insert_deletions(t.body, t.returned(), clear_mutable_collections);
  return timer.finish(out, "Delete Last Used");
}

TracePtr delete_last_used(const Trace& t) { return delete_last_used(t, t.function_name == "backward_fn"); }

}  // namespace tv::passes
