#include "diff/diff.h"

#include <dtl/dtl.hpp>

#include <unordered_map>

#include "canonical/canonical.h"

namespace tv {
namespace {

// A row without its texts (align's caller fills them).
DiffRow row_of(DiffKind kind, int left, int right) {
  DiffRow row;
  row.kind = kind;
  row.left = left;
  row.right = right;
  return row;
}

// The statement with every proxy name blanked: aligns values computed the same way.
std::string blind_key(const BoundSymbol& b) {
  BoundSymbol blind = b;
  auto blank = [](const ProxyPtr& p) { return renamed(*p, "_"); };
  for (auto& a : blind.args) a = map_proxies(a, blank);
  for (auto& [k, v] : blind.kwargs) v = map_proxies(v, blank);
  for (auto& o : blind.outputs) o = blank(o);
  blind.subsymbols.clear();
  return print_statement(blind);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Runs the LCS on `a` and `b`. A run of deletions and additions between common elements is
// aligned once more on the coarse keys (`coarse_a`, `coarse_b`: the statement's symbol): an
// element removed and one added with the same coarse key, in order, are one "changed" row; the
// others stay removed or added. So 160 removed and 164 added statements of other symbols read as
// such, not as 160 changed.
template <typename Fill>
std::vector<DiffRow> align(const std::vector<std::string>& a, const std::vector<std::string>& b,
                           const std::vector<std::string>& coarse_a, const std::vector<std::string>& coarse_b, Fill fill) {
  dtl::Diff<std::string, std::vector<std::string>> d(a, b);
  d.compose();
  std::vector<DiffRow> rows, removed, added;
  auto flush = [&] {
    if (removed.empty() || added.empty()) {
      rows.insert(rows.end(), removed.begin(), removed.end());
      rows.insert(rows.end(), added.begin(), added.end());
    } else {
      std::vector<std::string> ra, rb;
      for (const auto& r : removed) ra.push_back(coarse_a[r.left]);
      for (const auto& r : added) rb.push_back(coarse_b[r.right]);
      dtl::Diff<std::string, std::vector<std::string>> run(ra, rb);
      run.compose();
      for (const auto& [elem, info] : run.getSes().getSequence()) {
        if (info.type == dtl::SES_COMMON)
          rows.push_back(row_of(DiffKind::changed, removed[info.beforeIdx - 1].left, added[info.afterIdx - 1].right));
        else if (info.type == dtl::SES_DELETE)
          rows.push_back(removed[info.beforeIdx - 1]);
        else
          rows.push_back(added[info.afterIdx - 1]);
      }
    }
    removed.clear();
    added.clear();
  };
  for (const auto& [elem, info] : d.getSes().getSequence()) {
    if (info.type == dtl::SES_COMMON) {
      flush();
      rows.push_back(row_of(DiffKind::same, static_cast<int>(info.beforeIdx - 1), static_cast<int>(info.afterIdx - 1)));
    } else if (info.type == dtl::SES_DELETE) {
      removed.push_back(row_of(DiffKind::removed, static_cast<int>(info.beforeIdx - 1), -1));
    } else {
      added.push_back(row_of(DiffKind::added, -1, static_cast<int>(info.afterIdx - 1)));
    }
  }
  flush();
  for (auto& r : rows) fill(r);
  return rows;
}

}  // namespace

int TraceDiff::count(DiffKind k) const {
  int n = 0;
  for (const auto& r : statements) n += r.kind == k;
  return n;
}

std::string_view diff_kind_name(DiffKind k) {
  switch (k) {
    case DiffKind::same: return "same";
    case DiffKind::renamed: return "renamed";
    case DiffKind::changed: return "changed";
    case DiffKind::added: return "added";
    case DiffKind::removed: return "removed";
  }
  return "same";
}

TraceDiff diff_traces(const Trace& left, const Trace& right, const PrintOptions& options) {
  TraceDiff out;
  auto left_text = print_trace(left, options), right_text = print_trace(right, options);
  out.same_text = left_text == right_text;
  out.same_program = canonically_equal(left, right);

  std::vector<std::string> lk, rk, lsym, rsym;
  for (const auto& b : left.body) {
    lk.push_back(blind_key(b));
    lsym.push_back(b.name());
  }
  for (const auto& b : right.body) {
    rk.push_back(blind_key(b));
    rsym.push_back(b.name());
  }
  // Names of the left trace mapped to the right one, learnt from aligned statements in order.
  std::unordered_map<std::string, ProxyPtr> to_right;
  for (size_t i = 0; i < left.params.size() && i < right.params.size(); ++i)
    to_right[left.params[i].proxy->name] = right.params[i].proxy;
  out.statements = align(lk, rk, lsym, rsym, [&](DiffRow& r) {
    if (r.left >= 0) r.left_text = print_bound_symbol(left.body[r.left], options.depth);
    if (r.right >= 0) r.right_text = print_bound_symbol(right.body[r.right], options.depth);
    if (r.kind != DiffKind::same) return;
    const auto& lb = left.body[r.left];
    const auto& rb = right.body[r.right];
    for (size_t i = 0; i < lb.outputs.size() && i < rb.outputs.size(); ++i) to_right[lb.outputs[i]->name] = rb.outputs[i];
    if (r.left_text == r.right_text) return;
    BoundSymbol mapped = lb;
    auto map = [&](const ProxyPtr& p) {
      auto it = to_right.find(p->name);
      return it == to_right.end() ? p : it->second;
    };
    for (auto& a : mapped.args) a = map_proxies(a, map);
    for (auto& [k, v] : mapped.kwargs) v = map_proxies(v, map);
    for (auto& o : mapped.outputs) o = map(o);
    bool equal = print_bound_symbol(mapped, 0) == print_bound_symbol(rb, 0);
    r.kind = equal ? DiffKind::renamed : DiffKind::changed;
  });
  auto rename = [&](const ProxyPtr& l, const ProxyPtr& r) {
    if (l->name != r->name) out.renames.emplace_back(l->name, r->name);
  };
  for (size_t i = 0; i < left.params.size() && i < right.params.size(); ++i)
    rename(left.params[i].proxy, right.params[i].proxy);
  for (const auto& r : out.statements)
    if (r.kind == DiffKind::same || r.kind == DiffKind::renamed) {
      const auto& lo = left.body[r.left].outputs;
      const auto& ro = right.body[r.right].outputs;
      for (size_t i = 0; i < lo.size() && i < ro.size(); ++i) rename(lo[i], ro[i]);
    }
  auto ll = split_lines(left_text), rl = split_lines(right_text);
  // Lines pair up in order within a run (any removed line with the next added one).
  out.lines = align(ll, rl, std::vector<std::string>(ll.size()), std::vector<std::string>(rl.size()), [&](DiffRow& r) {
    if (r.left >= 0) r.left_text = ll[r.left];
    if (r.right >= 0) r.right_text = rl[r.right];
  });
  return out;
}

std::string unified_text(const TraceDiff& d) {
  std::string out;
  auto prefixed = [&](char mark, const std::string& text) {
    size_t start = 0;
    while (start <= text.size()) {
      auto end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      out += mark;
      out += ' ';
      out += text.substr(start, end - start);
      out += '\n';
      start = end + 1;
    }
  };
  for (const auto& r : d.statements) {
    switch (r.kind) {
      case DiffKind::same: prefixed(' ', r.left_text); break;
      case DiffKind::renamed: prefixed('=', r.right_text); break;
      case DiffKind::changed:
        prefixed('-', r.left_text);
        prefixed('+', r.right_text);
        break;
      case DiffKind::removed: prefixed('-', r.left_text); break;
      case DiffKind::added: prefixed('+', r.right_text); break;
    }
  }
  return out;
}

}  // namespace tv
