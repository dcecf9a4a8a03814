#include "passes/sort_collectives.h"

#include <algorithm>
#include <functional>
#include <set>

#include "passes/pass_util.h"
#include "ops/collectives.h"

namespace tv::passes {
namespace {

bool is_wait(const BoundSymbol& b) { return b.name() == collectives::kWait; }

bool starts_collective(const BoundSymbol& b) { return has_trait(b, Trait::collective) && !is_wait(b); }

bool packs(const BoundSymbol& b) {
  if (is_structural(b) || b.outputs.empty()) return false;
  if (has_trait(b, Trait::random) || has_trait(b, Trait::check) || has_trait(b, Trait::collective)) return false;
  return has_trait(b, Trait::elementwise) || has_trait(b, Trait::shape);
}

// Which statements each statement reads from, as indices: traces are SSA by name, so a name read
// is a statement read (its only definition), and the pass's tables are arrays over the body
// instead of tables keyed by name. of(i) are the statements i reads, each once, in increasing
// order; readers(j) the statements that read j, each once, in increasing order. Names read that no
// statement defines (the parameters) are left out.
class Dependencies {
 public:
  explicit Dependencies(const std::vector<BoundSymbol>& body) {
    NameMap<size_t> producer;
    for (size_t i = 0; i < body.size(); ++i)
      for (const auto& o : body[i].outputs) producer[o->name] = i;
    reads_.first.assign(body.size() + 1, 0);
    for (size_t i = 0; i < body.size(); ++i) {
      const size_t begin = reads_.items.size();
      for (const auto& p : body[i].inputs()) {
        if (const size_t* j = producer.find(p->name)) reads_.items.push_back(*j);
      }
      std::sort(reads_.items.begin() + begin, reads_.items.end());
      reads_.items.erase(std::unique(reads_.items.begin() + begin, reads_.items.end()), reads_.items.end());
      reads_.first[i + 1] = reads_.items.size();
    }
    // The transpose, filled in increasing reader order.
    readers_.first.assign(body.size() + 1, 0);
    for (size_t j : reads_.items) ++readers_.first[j + 1];
    for (size_t j = 0; j < body.size(); ++j) readers_.first[j + 1] += readers_.first[j];
    readers_.items.resize(reads_.items.size());
    std::vector<size_t> filled(readers_.first.begin(), readers_.first.end() - 1);
    for (size_t i = 0; i < body.size(); ++i)
      for (size_t j : of(i)) readers_.items[filled[j]++] = i;
  }

  struct Range {
    const size_t *begin_, *end_;
    const size_t* begin() const { return begin_; }
    const size_t* end() const { return end_; }
    bool empty() const { return begin_ == end_; }
    size_t size() const { return static_cast<size_t>(end_ - begin_); }
  };
  Range of(size_t i) const { return reads_.range(i); }
  Range readers(size_t j) const { return readers_.range(j); }

 private:
  struct Lists {  // list k is items[first[k], first[k + 1])
    std::vector<size_t> first, items;
    Range range(size_t k) const { return {items.data() + first[k], items.data() + first[k + 1]}; }
  };
  Lists reads_, readers_;
};

// movable[i] per the contract; decided back to front (a statement's readers come after it).
std::vector<bool> movable_statements(const Trace& t, const Dependencies& deps) {
  const NameSet returned = returned_names(t);
  std::vector<bool> movable(t.body.size(), false);
  for (size_t i = t.body.size(); i-- > 0;) {
    const BoundSymbol& b = t.body[i];
    if (starts_collective(b)) {
      movable[i] = true;
      continue;
    }
    if (!packs(b)) continue;
    bool all_movable = !deps.readers(i).empty();
    for (const auto& o : b.outputs) all_movable = all_movable && !returned.contains(o->name);
    for (size_t r : deps.readers(i)) all_movable = all_movable && movable[r];
    movable[i] = all_movable;
  }
  return movable;
}

}  // namespace

TracePtr sort_collectives(const Trace& t) {
  PassTimer timer;
  const auto& body = t.body;
  const Dependencies deps(body);
  std::vector<bool> movable = movable_statements(t, deps);

  // What each movable statement still waits for: how many of the statements it reads are not out yet.
  std::vector<size_t> missing(body.size(), 0);
  for (size_t i = 0; i < body.size(); ++i)
    if (movable[i]) missing[i] = deps.of(i).size();

  auto out = derive_without_body(t, "Sort Collectives");
  out->body.reserve(body.size());
  std::vector<bool> emitted(body.size(), false);
  std::set<size_t> ready;  // movable statements whose inputs are all defined, by original index
  auto emit = [&](size_t i) {
    emitted[i] = true;
    out->body.push_back(body[i]);
    for (size_t m : deps.readers(i))
      if (movable[m] && --missing[m] == 0) ready.insert(m);
  };
  auto emit_ready = [&] {
    while (!ready.empty()) {
      size_t m = *ready.begin();
      ready.erase(ready.begin());
      if (!emitted[m]) emit(m);
    }
  };
  // Statement i after whatever it reads that is not out yet (a wait whose collective waits for
  // another wait's result, in a trace that has such chains).
  std::function<void(size_t)> emit_with_inputs = [&](size_t i) {
    for (size_t j : deps.of(i))
      if (!emitted[j]) emit_with_inputs(j);
    if (!emitted[i]) emit(i);
  };
  for (size_t i = 0; i < body.size(); ++i)
    if (movable[i] && missing[i] == 0) ready.insert(i);
  emit_ready();

  size_t ret = body.size();
  for (size_t i = 0; i < body.size(); ++i) {
    const BoundSymbol& b = body[i];
    if (b.symbol->form == PrintForm::ret) {
      ret = i;
      break;
    }
    if (movable[i] || is_wait(b) || is_del(b)) continue;
    emit_with_inputs(i);
    emit_ready();
  }
  // What is left (movable statements behind a wait, the waits nothing read before the return) in
  // original order, which is topological; then the return.
  for (size_t i = 0; i < ret; ++i)
    if (!emitted[i] && !is_del(body[i])) emit(i);
  emit_ready();
  for (size_t i = ret; i < body.size(); ++i)
    if (!is_del(body[i])) out->body.push_back(body[i]);
  return timer.finish(out, "Sort Collectives");
}

}  // namespace tv::passes
