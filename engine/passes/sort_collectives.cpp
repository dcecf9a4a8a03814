#include "passes/sort_collectives.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "passes/pass_util.h"
#include "ops/collectives.h"

namespace tv::passes {
namespace {

bool is_wait(const BoundSymbol& b) { return b.name() == collectives::kWait; }

bool starts_collective(const BoundSymbol& b) { return has_trait(b, "collective") && !is_wait(b); }

bool packs(const BoundSymbol& b) {
  if (is_structural(b) || b.outputs.empty()) return false;
  if (has_trait(b, "random") || has_trait(b, "check") || has_trait(b, "collective")) return false;
  return has_trait(b, "elementwise") || has_trait(b, "shape");
}

// The names each statement of a body reads, gathered in one walk over its arguments, which the
// pass then consults three times: of(i) are statement i's, left to right. Views of the proxies'
// own names, which the body keeps alive.
class ReadNames {
 public:
  explicit ReadNames(const std::vector<BoundSymbol>& body) : first_(body.size() + 1, 0) {
    for (size_t i = 0; i < body.size(); ++i) {
      for (const auto& p : body[i].inputs()) names_.emplace_back(p->name);
      first_[i + 1] = names_.size();
    }
  }
  struct Range {
    const std::string_view *begin_, *end_;
    const std::string_view* begin() const { return begin_; }
    const std::string_view* end() const { return end_; }
  };
  Range of(size_t i) const { return {names_.data() + first_[i], names_.data() + first_[i + 1]}; }

 private:
  std::vector<std::string_view> names_;
  std::vector<size_t> first_;
};

// movable[i] per the contract; decided back to front (a statement's readers come after it).
std::vector<bool> movable_statements(const Trace& t, const ReadNames& read_names) {
  std::unordered_map<std::string_view, std::vector<size_t>> readers;
  for (size_t i = 0; i < t.body.size(); ++i)
    for (const auto& name : read_names.of(i)) readers[name].push_back(i);
  const std::unordered_set<std::string_view> returned = returned_names(t);
  std::vector<bool> movable(t.body.size(), false);
  for (size_t i = t.body.size(); i-- > 0;) {
    const BoundSymbol& b = t.body[i];
    if (starts_collective(b)) {
      movable[i] = true;
      continue;
    }
    if (!packs(b)) continue;
    bool all_movable = true, read = false;
    for (const auto& o : b.outputs) {
      all_movable = all_movable && !returned.count(o->name);
      auto it = readers.find(o->name);
      if (it == readers.end()) continue;
      for (size_t r : it->second) {
        read = true;
        all_movable = all_movable && movable[r];
      }
    }
    movable[i] = all_movable && read;
  }
  return movable;
}

}  // namespace

TracePtr sort_collectives(const Trace& t) {
  PassTimer timer;
  const auto& body = t.body;
  const ReadNames read_names(body);
  std::vector<bool> movable = movable_statements(t, read_names);

  // What each statement still waits for: the names it reads that a statement of the body defines.
  std::unordered_map<std::string_view, size_t> producer;
  for (size_t i = 0; i < body.size(); ++i)
    for (const auto& o : body[i].outputs) producer[o->name] = i;
  std::vector<size_t> missing(body.size(), 0);
  std::unordered_map<std::string_view, std::vector<size_t>> blocked;  // name -> movable statements waiting for it
  std::vector<std::string_view> names;
  for (size_t i = 0; i < body.size(); ++i) {
    if (!movable[i]) continue;
    names.clear();
    for (const auto& name : read_names.of(i))
      if (producer.count(name)) names.push_back(name);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    missing[i] = names.size();
    for (const auto& n : names) blocked[n].push_back(i);
  }

  auto out = derive_without_body(t, "Sort Collectives");
  std::vector<bool> emitted(body.size(), false);
  std::set<size_t> ready;  // movable statements whose inputs are all defined, by original index
  auto emit = [&](size_t i) {
    emitted[i] = true;
    out->body.push_back(body[i]);
    for (const auto& o : body[i].outputs) {
      auto it = blocked.find(o->name);
      if (it == blocked.end()) continue;
      for (size_t m : it->second)
        if (--missing[m] == 0) ready.insert(m);
    }
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
    for (const auto& name : read_names.of(i)) {
      auto it = producer.find(name);
      if (it != producer.end() && !emitted[it->second]) emit_with_inputs(it->second);
    }
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
