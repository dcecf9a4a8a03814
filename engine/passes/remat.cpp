#include "passes/remat.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "passes/delete_last_used.h"
#include "passes/pass_util.h"

namespace tv::passes {
namespace {

constexpr const char* kPass = "Rematerialization";
constexpr int kMaxChainDepth = 32;

// The tuple of saved values inside the forward's return value, or nullptr.
Value* saved_slot(Value& returned) {
  if (returned.kind != Value::Kind::tuple || returned.items.size() != 2) return nullptr;
  Value& residuals = returned.items[1];
  if (!residuals.is_sequence() || residuals.items.empty() || !residuals.items[0].is_sequence()) return nullptr;
  return &residuals.items[0];
}

int64_t bytes_of(const std::vector<ProxyPtr>& ps) {
  std::set<std::string> seen;
  int64_t n = 0;
  for (const auto& p : ps)
    if (seen.insert(p->name).second) n += tensor_bytes(*p);
  return n;
}

// What the forward computes and where.
struct ForwardGraph {
  const Trace& t;
  std::map<std::string, size_t> producer;  // top-level index of the statement defining a name
  std::map<std::string, ProxyPtr> proxy;
  std::map<std::string, std::optional<std::vector<ProxyPtr>>> leaves_memo;

  explicit ForwardGraph(const Trace& trace) : t(trace) {
    for (size_t i = 0; i < t.body.size(); ++i) {
      const auto& b = t.body[i];
      for (const auto& o : b.outputs) {
        proxy.emplace(o->name, o);
        if (b.symbol->form != PrintForm::unpack_trivial) producer.emplace(o->name, i);
      }
    }
    for (const auto& p : t.params) proxy.emplace(p.proxy->name, p.proxy);
  }

  const BoundSymbol* producer_of(const std::string& name) const {
    auto it = producer.find(name);
    return it == producer.end() ? nullptr : &t.body[it->second];
  }

  bool cheap(const BoundSymbol& b) const {
    return b.symbol->form == PrintForm::call && b.outputs.size() == 1 && has_trait(b, Trait::elementwise) &&
           !has_trait(b, Trait::random) && !has_trait(b, Trait::collective) && !has_trait(b, Trait::check) &&
           !b.symbol->has(Trait::fusion);
  }

  // The frontier values `name` is an elementwise function of; nullopt when it is not recomputable
  // (not produced by a cheap op, too deep, or depending on a non-tensor frontier value).
  std::optional<std::vector<ProxyPtr>> leaves(const std::string& name, int depth = 0) {
    auto memo = leaves_memo.find(name);
    if (memo != leaves_memo.end()) return memo->second;
    std::optional<std::vector<ProxyPtr>> result;
    const BoundSymbol* p = producer_of(name);
    if (p && cheap(*p) && depth < kMaxChainDepth) {
      std::vector<ProxyPtr> out;
      bool ok = true;
      for (const auto& in : p->inputs()) {
        const BoundSymbol* q = producer_of(in->name);
        if (q && cheap(*q)) {
          auto sub = leaves(in->name, depth + 1);
          if (!sub) { ok = false; break; }
          out.insert(out.end(), sub->begin(), sub->end());
        } else if (in->is_tensor()) {
          out.push_back(in);
        } else {
          ok = false;
          break;
        }
      }
      if (ok) result = out;
    }
    leaves_memo[name] = result;
    return result;
  }
};

// Renames outputs and reads of `b` and its subsymbols through `m` (names not in m stay).
void rename(BoundSymbol& b, const std::map<std::string, ProxyPtr>& m) {
  auto fn = [&](const ProxyPtr& p) {
    auto it = m.find(p->name);
    return it == m.end() ? p : it->second;
  };
  for (auto& a : b.args) a = map_proxies(a, fn);
  for (auto& [k, v] : b.kwargs) v = map_proxies(v, fn);
  for (auto& o : b.outputs) o = fn(o);
  for (auto& s : b.subsymbols) rename(s, m);
}

const BoundSymbol* unpack_of(const std::vector<BoundSymbol>& body, const std::string& source, size_t* index) {
  for (size_t i = 0; i < body.size(); ++i) {
    const auto& b = body[i];
    if (b.symbol->form == PrintForm::unpack_sequence && !b.args.empty() && b.args[0].is_proxy() &&
        b.args[0].proxy->name == source) {
      if (index) *index = i;
      return &b;
    }
  }
  return nullptr;
}

RematResult unchanged(const Trace& fw, const Trace& bw, long long ms) {
  RematResult r;
  auto f = derive(fw, kPass), b = derive(bw, kPass);
  f->provenance->milliseconds = ms;
  b->provenance->milliseconds = ms;
  r.forward = f;
  r.backward = b;
  r.saved_bytes_before = r.saved_bytes_after = saved_bytes(fw);
  return r;
}

}  // namespace

std::vector<ProxyPtr> saved_for_backward(const Trace& forward) {
  Value returned = forward.returned();
  Value* slot = saved_slot(returned);
  return slot ? proxies_of(*slot) : std::vector<ProxyPtr>{};
}

int64_t saved_bytes(const Trace& forward) { return bytes_of(saved_for_backward(forward)); }

RematResult rematerialize(const Trace& forward, const Trace& backward) {
  PassTimer timer;
  const std::vector<ProxyPtr> saved = saved_for_backward(forward);
  if (saved.empty() || backward.params.empty()) return unchanged(forward, backward, timer.elapsed_ms());

  // The backward's view of the saved values: `C0, C1, = saved_for_backward`, then `..., = C0`.
  const bool bw_dels = has_deletions(backward), bw_clears = has_collection_clears(backward);
  std::vector<BoundSymbol> bw_body = bw_dels ? strip_deletions(backward.body, bw_clears) : backward.body;
  size_t outer_at = 0, inner_at = 0;
  const BoundSymbol* outer = unpack_of(bw_body, backward.params[0].proxy->name, &outer_at);
  const BoundSymbol* inner = outer && !outer->outputs.empty() ? unpack_of(bw_body, outer->outputs[0]->name, &inner_at)
                                                              : nullptr;
  if (!inner || inner->outputs.size() != saved.size()) return unchanged(forward, backward, timer.elapsed_ms());

  // Choose what to recompute.
  ForwardGraph g(forward);
  std::vector<std::string> candidates;
  for (const auto& s : saved)
    if (s->is_tensor() && g.leaves(s->name)) candidates.push_back(s->name);
  const int64_t before = bytes_of(saved);

  auto plan_bytes = [&](const std::set<std::string>& dropped, std::vector<ProxyPtr>* result) {
    std::vector<ProxyPtr> out;
    std::set<std::string> names;
    for (const auto& s : saved)
      if (!dropped.count(s->name) && names.insert(s->name).second) out.push_back(s);
    std::vector<ProxyPtr> extra;
    for (const auto& d : dropped) {
      const std::vector<ProxyPtr> leaves = g.leaves(d).value();
      for (const auto& l : leaves)
        if (names.insert(l->name).second) extra.push_back(l);
    }
    std::sort(extra.begin(), extra.end(), [&](const ProxyPtr& a, const ProxyPtr& b) {
      auto ia = g.producer.count(a->name) ? g.producer.at(a->name) + 1 : 0;
      auto ib = g.producer.count(b->name) ? g.producer.at(b->name) + 1 : 0;
      return ia != ib ? ia < ib : a->name < b->name;
    });
    out.insert(out.end(), extra.begin(), extra.end());
    if (result) *result = out;
    return bytes_of(out);
  };
  // Greedy, one candidate at a time; and all candidates at once (shared frontier values).
  std::set<std::string> greedy;
  int64_t greedy_bytes = before;
  for (const auto& c : candidates) {
    auto trial = greedy;
    trial.insert(c);
    int64_t b = plan_bytes(trial, nullptr);
    if (b < greedy_bytes) greedy = trial, greedy_bytes = b;
  }
  std::set<std::string> all(candidates.begin(), candidates.end());
  int64_t all_bytes = plan_bytes(all, nullptr);
  const std::set<std::string>& dropped = all_bytes < greedy_bytes ? all : greedy;
  if (dropped.empty()) return unchanged(forward, backward, timer.elapsed_ms());
  std::vector<ProxyPtr> new_saved;
  const int64_t after = plan_bytes(dropped, &new_saved);

  // Forward: the new saved tuple.
  auto fw = derive_without_body(forward, kPass);
  {
    std::vector<BoundSymbol> body = has_deletions(forward) ? strip_deletions(forward.body, false) : forward.body;
    for (auto& b : body)
      if (b.symbol->form == PrintForm::ret && !b.args.empty()) {
        Value* slot = saved_slot(b.args[0]);
        std::vector<Value> items;
        for (const auto& p : new_saved) items.push_back(Value::of(p));
        slot->items = std::move(items);
      }
    fw->body = std::move(body);
    if (has_deletions(forward)) {
      const Value returned = fw->returned();
      fw->body = insert_deletions(std::move(fw->body), returned, has_collection_clears(forward));
    }
  }

  // Backward names: forward name -> backward proxy.
  std::map<std::string, ProxyPtr> to_bw;
  for (size_t k = 0; k < saved.size(); ++k) to_bw[saved[k]->name] = inner->outputs[k];
  std::set<std::string> bw_names;
  for (const auto& p : backward.params) bw_names.insert(p.proxy->name);
  for (const auto& b : bw_body) {
    for (const auto& o : b.outputs) bw_names.insert(o->name);
    for (const auto& p : b.inputs()) bw_names.insert(p->name);
  }
  auto bw_proxy = [&](const ProxyPtr& fwd) {
    auto it = to_bw.find(fwd->name);
    if (it != to_bw.end()) return it->second;
    std::string name = fwd->name;
    for (int k = 0; bw_names.count(name); ++k) name = fwd->name + "_r" + std::to_string(k);
    bw_names.insert(name);
    auto p = name == fwd->name ? fwd : renamed(*fwd, name);
    to_bw[fwd->name] = p;
    return p;
  };

  // The statements to copy: the chains of the dropped values the backward reads.
  std::set<std::string> new_saved_names;
  for (const auto& p : new_saved) new_saved_names.insert(p->name);
  std::set<std::string> bw_reads;
  for (size_t i = inner_at + 1; i < bw_body.size(); ++i)
    for (const auto& p : bw_body[i].inputs()) bw_reads.insert(p->name);
  std::set<size_t> chain;
  std::set<std::string> bw_dropped;  // backward names of dropped values
  std::function<void(const std::string&)> need = [&](const std::string& name) {
    if (new_saved_names.count(name)) return;
    size_t at = g.producer.at(name);
    if (!chain.insert(at).second) return;
    for (const auto& in : forward.body[at].inputs()) need(in->name);
  };
  for (const auto& d : dropped) {
    bw_dropped.insert(to_bw[d]->name);
    if (bw_reads.count(to_bw[d]->name)) need(d);
  }

  // Backward: new unpack of C0, then the copied chain before the first read of a dropped value.
  auto bw = derive_without_body(backward, kPass);
  std::vector<BoundSymbol> body;
  std::vector<BoundSymbol> copies;
  for (size_t at : chain) {  // std::set iterates in forward order
    BoundSymbol c = forward.body[at];
    c.header = nullptr;
    std::map<std::string, ProxyPtr> m;
    for (const auto& p : c.inputs()) m[p->name] = bw_proxy(p);
    for (const auto& o : c.outputs) m[o->name] = bw_proxy(o);
    rename(c, m);
    copies.push_back(std::move(c));
  }
  bool inserted = copies.empty();
  for (size_t i = 0; i < bw_body.size(); ++i) {
    BoundSymbol b = bw_body[i];
    if (i == inner_at) {
      b.outputs.clear();
      for (const auto& p : new_saved) b.outputs.push_back(bw_proxy(p));
    }
    if (!inserted && i > inner_at) {
      bool reads_dropped = false;
      for (const auto& p : b.inputs()) reads_dropped = reads_dropped || bw_dropped.count(p->name);
      if (reads_dropped) {
        for (auto& c : copies) body.push_back(std::move(c));
        inserted = true;
      }
    }
    body.push_back(std::move(b));
  }
  bw->body = std::move(body);
  if (bw_dels) {
    const Value returned = bw->returned();
    bw->body = insert_deletions(std::move(bw->body), returned, bw_clears);
  }

  RematResult r;
  fw->provenance->milliseconds = timer.elapsed_ms();
  bw->provenance->milliseconds = timer.elapsed_ms();
  r.forward = fw;
  r.backward = bw;
  r.saved_bytes_before = before;
  r.saved_bytes_after = after;
  for (const auto& s : saved)
    if (dropped.count(s->name) && std::find(r.recomputed.begin(), r.recomputed.end(), s->name) == r.recomputed.end())
      r.recomputed.push_back(s->name);
  for (const auto& p : new_saved) {
    bool was_saved = std::any_of(saved.begin(), saved.end(), [&](const ProxyPtr& s) { return s->name == p->name; });
    if (!was_saved) r.added.push_back(p->name);
  }
  r.changed = true;
  return r;
}

}  // namespace tv::passes
