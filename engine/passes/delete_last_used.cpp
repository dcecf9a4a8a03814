#include "passes/delete_last_used.h"

#include <algorithm>

#include "passes/pass_util.h"

namespace tv::passes {

std::vector<BoundSymbol> insert_deletions(std::vector<BoundSymbol> body, const Value& returned,
                                          bool clear_mutable_collections) {
  // Back to front, the values each statement is the last to use, flat: statement `at` deletes
  // dying[begin, end). Names are views of the proxies' own, which `body` and `returned` keep alive.
  struct Deletions {
    size_t at, begin, end;
  };
  std::vector<Deletions> deletions;  // by decreasing `at`
  std::vector<ProxyPtr> dying;
  NameSet handled;
  for (const auto& p : proxies_of(returned)) handled.insert(p->name);
  auto dropped = [&](const BoundSymbol& b) {
    return is_del(b) || (clear_mutable_collections && is_clear_collection(b));
  };
  for (size_t i = body.size(); i-- > 0;) {
    const BoundSymbol& b = body[i];
    if (b.symbol->form == PrintForm::unpack_trivial || dropped(b)) continue;
    const size_t begin = dying.size();
    auto consider = [&](const ProxyPtr& p) {
      if (handled.insert(p->name)) dying.push_back(p);
    };
    for (const auto& p : b.outputs) consider(p);
    for (const auto& p : b.inputs()) consider(p);
    if (dying.size() > begin && b.symbol->form != PrintForm::ret) deletions.push_back({i, begin, dying.size()});
  }

  // Front to back, each statement moved once, its deletions after it: the clears in reverse
  // order of the values, then the del (the order Thunder's backward prints).
  std::vector<BoundSymbol> out;
  out.reserve(body.size() + deletions.size() * (clear_mutable_collections ? 2 : 1));
  auto next = deletions.rbegin();
  for (size_t i = 0; i < body.size(); ++i) {
    if (dropped(body[i])) continue;
    out.push_back(std::move(body[i]));
    if (next == deletions.rend() || next->at != i) continue;
    if (clear_mutable_collections)
      for (size_t k = next->end; k-- > next->begin;) {
        if (dying[k]->kind != ProxyKind::collection) continue;
        BoundSymbol c;
        c.symbol = &clear_collection_symbol();
        c.args.push_back(Value::of(dying[k]));
        out.push_back(std::move(c));
      }
    BoundSymbol d;
    d.symbol = &structural::del();
    for (size_t k = next->begin; k < next->end; ++k) d.args.push_back(Value::of(dying[k]));
    out.push_back(std::move(d));
    ++next;
  }
  return out;
}

std::vector<BoundSymbol> strip_deletions(const std::vector<BoundSymbol>& body, bool clears) {
  std::vector<BoundSymbol> out;
  out.reserve(body.size());
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
  if (had_dels) {
    const Value returned = result->returned();
    result->body = insert_deletions(std::move(result->body), returned, clears);
  }
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
