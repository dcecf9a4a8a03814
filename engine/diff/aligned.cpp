#include "diff/aligned.h"

#include <algorithm>
#include <map>

namespace tv {

AlignedTraces align_traces(const Trace& base, const std::vector<const Trace*>& others, const PrintOptions& options) {
  AlignedTraces out;
  const size_t n = others.size();
  // Per other trace: the rows added before each base statement (key: the base index that follows;
  // the base's size for the end) and the row aligned with each base statement.
  std::vector<std::map<int, std::vector<DiffRow>>> added(n);
  std::vector<std::map<int, DiffRow>> aligned(n);
  std::map<int, std::string> base_text;
  int base_end = 0;
  for (size_t k = 0; k < n; ++k) {
    out.pairs.push_back(diff_traces(base, *others[k], options));
    const auto& rows = out.pairs.back().statements;
    // Added rows wait for the next row with a base statement; those at the end follow the last one.
    std::vector<DiffRow> waiting;
    for (const auto& r : rows) {
      if (r.left < 0) {
        waiting.push_back(r);
        continue;
      }
      if (!waiting.empty()) added[k][r.left] = std::move(waiting), waiting.clear();
      aligned[k][r.left] = r;
      base_text.emplace(r.left, r.left_text);
      base_end = std::max(base_end, r.left + 1);
    }
    if (!waiting.empty()) added[k][-1] = std::move(waiting);  // after the last base statement
  }
  auto emit_added = [&](int key) {
    size_t height = 0;
    for (size_t k = 0; k < n; ++k)
      if (auto it = added[k].find(key); it != added[k].end()) height = std::max(height, it->second.size());
    for (size_t i = 0; i < height; ++i) {
      AlignedRow row;
      row.cells.resize(n);
      for (size_t k = 0; k < n; ++k)
        if (auto it = added[k].find(key); it != added[k].end() && i < it->second.size()) row.cells[k] = it->second[i];
      out.rows.push_back(std::move(row));
    }
  };
  for (int b = 0; b < base_end; ++b) {
    emit_added(b);
    if (!base_text.count(b)) continue;
    AlignedRow row;
    row.base = b;
    row.base_text = base_text[b];
    row.cells.resize(n);
    for (size_t k = 0; k < n; ++k)
      if (auto it = aligned[k].find(b); it != aligned[k].end()) row.cells[k] = it->second;
    out.rows.push_back(std::move(row));
  }
  emit_added(-1);
  return out;
}

}  // namespace tv
