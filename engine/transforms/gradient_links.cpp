#include "transforms/gradient_links.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace tv {
namespace {

bool unpacks_saved(const BoundSymbol& b) {
  if (b.symbol->form != PrintForm::unpack_sequence || b.args.empty() || !b.args[0].is_proxy()) return false;
  const std::string& from = b.args[0].proxy->name;
  return from == "C0" || from == "C1";
}

void set_links(std::vector<BoundSymbol>& body, size_t& index, const std::vector<std::pair<size_t, std::string>>& links,
               size_t& next) {
  for (auto& b : body) {
    if (next < links.size() && links[next].first == index) b.gradient_of = links[next++].second;
    ++index;
    if (!b.subsymbols.empty()) set_links(b.subsymbols.mutable_vec(), index, links, next);
  }
}

}  // namespace

const BoundSymbol* forward_statement(const Trace& forward, const std::string& key) {
  const BoundSymbol* found = nullptr;
  if (key.empty()) return nullptr;
  walk(forward.body, [&](const BoundSymbol& b, int) {
    if (!found && b.gradient_of == key) found = &b;
  });
  return found;
}

std::vector<const BoundSymbol*> backward_statements(const Trace& backward, const std::string& key) {
  std::vector<const BoundSymbol*> out;
  if (key.empty()) return out;
  walk(backward.body, [&](const BoundSymbol& b, int) {
    if (b.gradient_of == key) out.push_back(&b);
  });
  return out;
}

std::vector<std::string> saved_values_read(const Trace& backward, const std::vector<const BoundSymbol*>& statements) {
  std::set<std::string> saved;
  for (const auto& b : backward.body)
    if (unpacks_saved(b))
      for (const auto& o : b.outputs) saved.insert(o->name);
  std::vector<std::string> out;
  for (const BoundSymbol* b : statements)
    for (const auto& p : b->inputs())
      if (saved.count(p->name) && std::find(out.begin(), out.end(), p->name) == out.end()) out.push_back(p->name);
  return out;
}

bool has_gradient_links(const Trace& t) {
  bool any = false;
  walk(t.body, [&](const BoundSymbol& b, int) { any = any || !b.gradient_of.empty(); });
  return any;
}

std::vector<std::pair<size_t, std::string>> gradient_links(const Trace& t) {
  std::vector<std::pair<size_t, std::string>> out;
  size_t index = 0;
  walk(t.body, [&](const BoundSymbol& b, int) {
    if (!b.gradient_of.empty()) out.emplace_back(index, b.gradient_of);
    ++index;
  });
  return out;
}

void set_gradient_links(Trace& t, const std::vector<std::pair<size_t, std::string>>& links) {
  auto sorted = links;
  std::sort(sorted.begin(), sorted.end());
  size_t index = 0, next = 0;
  set_links(t.body, index, sorted, next);
  if (next < sorted.size())
    throw std::out_of_range("a gradient link names statement " + std::to_string(sorted[next].first) +
                            " of a trace with " + std::to_string(index) + " statements");
}

}  // namespace tv
