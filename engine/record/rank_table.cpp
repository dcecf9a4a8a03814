#include "record/rank_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "ops/collectives.h"

namespace tv {
namespace {

bool gathers_over_world(const BoundSymbol& b) {
  const std::string name = b.name();
  if (name != collectives::kAllReduce && name != collectives::kAllGather) return false;
  for (const auto& a : b.args)
    if (a.kind == Value::Kind::name && a.s == collectives::kGroup) return true;
  return false;
}

// The names of a final trace's rank-invariant values; `saved` holds the forward's, for the backward.
std::set<std::string> invariant_values(const Trace& trace, const std::set<std::string>* saved) {
  std::set<std::string> invariant;
  for (const auto& p : trace.params)
    if (p.proxy->distribution == Distribution::replicated) invariant.insert(p.proxy->name);
  for (const auto& b : trace.body) {
    if (is_structural(b)) {
      // Unpacking: a saved value keeps the forward's verdict, a cotangent is the rank's own.
      for (const auto& o : b.outputs)
        if ((saved && saved->count(o->name)) || (!saved && o->distribution == Distribution::replicated))
          invariant.insert(o->name);
      continue;
    }
    bool from_invariant = true;
    auto read = [&](const ProxyPtr& p) {
      if (!invariant.count(p->name)) from_invariant = false;
    };
    for (const auto& a : b.args) for_each_proxy(a, read);
    for (const auto& [k, v] : b.kwargs) for_each_proxy(v, read);
    if (from_invariant || gathers_over_world(b))
      for (const auto& o : b.outputs) invariant.insert(o->name);
  }
  return invariant;
}

double largest_magnitude(const TensorStats& s) { return std::max(std::fabs(s.min), std::fabs(s.max)); }

// How far `s` is from `base`: the largest difference of min, max or mean, over base's magnitude.
double relative_difference(const TensorStats& base, const TensorStats& s) {
  if (base.shape != s.shape || base.nan_count != s.nan_count || base.inf_count != s.inf_count) return INFINITY;
  double d = std::max({std::fabs(base.min - s.min), std::fabs(base.max - s.max), std::fabs(base.mean - s.mean)});
  return d / std::max(largest_magnitude(base), 1e-30);
}

void compare_ranks(RankRow& row) {
  const auto& base = row.stats.front();
  if (!base) return;
  for (size_t r = 1; r < row.stats.size(); ++r) {
    if (!row.stats[r]) continue;
    double d = relative_difference(*base, *row.stats[r]);
    if (d > row.spread) row.spread = d, row.spread_rank = static_cast<int>(r);
  }
  // An absolute floor for values that vanish up to rounding, as the checks against eager have; a
  // difference of shape or of NaN/Inf counts (an infinite spread) always parts.
  double tol = tolerance(base->dtype);
  double magnitude = largest_magnitude(*base);
  row.ranks_part = row.spread_rank >= 0 && row.spread > tol && (std::isinf(row.spread) || row.spread * magnitude > tol * 0.1);
}

std::string where(const RankRow& row) {
  return std::string(trace_kind_name(row.kind)) + " statement " + std::to_string(row.statement) + ", " + row.symbol +
         " -> " + row.proxy;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

RankTable rank_table(const StageHistory& stages, const Replay& replay) {
  RankTable table;
  table.ranks = static_cast<int>(replay.ranks.size());
  std::map<std::string, std::vector<std::optional<TensorCheck>>> checks;  // "kind:proxy" -> per rank
  for (size_t r = 0; r < replay.ranks.size(); ++r) {
    auto note = [&](const TensorCheck& c) {
      if (c.proxy.empty()) return;
      auto& slot = checks[c.proxy];
      slot.resize(replay.ranks.size());
      slot[r] = c;
    };
    for (const auto& c : replay.ranks[r].outputs) note(c);
    for (const auto& c : replay.ranks[r].gradients) note(c);
  }
  table.has_eager = !checks.empty();

  std::set<std::string> forward_invariant;
  for (TraceKind kind : {TraceKind::forward, TraceKind::backward}) {
    TracePtr trace;
    try {
      trace = stages.last(kind);
    } catch (const std::exception& e) {
      table = RankTable{};
      table.ranks = static_cast<int>(replay.ranks.size());
      table.unreadable = e.what();
      return table;
    }
    if (!trace) continue;
    auto invariant = invariant_values(*trace, kind == TraceKind::backward ? &forward_invariant : nullptr);
    const std::string prefix = std::string(trace_kind_name(kind)) + ":";
    for (size_t i = 0; i < trace->body.size(); ++i) {
      const BoundSymbol& b = trace->body[i];
      if (is_structural(b)) continue;
      for (const auto& o : b.outputs) {
        if (!o->is_tensor()) continue;
        RankRow row;
        row.kind = kind;
        row.statement = static_cast<int>(i);
        row.symbol = b.name();
        row.proxy = o->name;
        row.stats.resize(replay.ranks.size());
        bool seen = false;
        for (size_t r = 0; r < replay.ranks.size(); ++r) {
          const auto& proxies = replay.ranks[r].proxies;
          auto it = proxies.find(prefix + o->name);
          if (it == proxies.end()) continue;
          row.stats[r] = it->second;
          seen = true;
        }
        if (!seen) continue;
        row.invariant = replay.ranks.size() > 1 && invariant.count(o->name);
        if (row.invariant) compare_ranks(row), ++table.invariant_rows;
        if (auto c = checks.find(prefix + o->name); c != checks.end()) {
          row.eager = c->second;
          for (const auto& check : row.eager) row.eager_parts |= check && !check->pass;
        }
        if (row.ranks_part && !table.first_ranks_part) table.first_ranks_part = table.rows.size();
        if (row.eager_parts && !table.first_eager_part) table.first_eager_part = table.rows.size();
        table.rows.push_back(std::move(row));
      }
    }
    if (kind == TraceKind::forward) forward_invariant = std::move(invariant);
  }
  return table;
}

std::string RankTable::describe_ranks() const {
  if (!unreadable.empty()) return "the final trace does not parse: " + unreadable;
  if (ranks < 2) return "one rank: nothing to compare between ranks";
  if (invariant_rows == 0)
    return "found no value every rank must hold alike (without ddp or fsdp each rank has its own weights; values "
           "shared only within a subgroup, as hsdp's, are not compared)";
  if (!first_ranks_part)
    return "the ranks agree on the " + std::to_string(invariant_rows) +
           " values they must share, as far as their statistics show";
  const RankRow& row = rows[*first_ranks_part];
  return "rank " + std::to_string(row.spread_rank) + " parts from rank 0 at " + where(row) + ": its statistics differ by " +
         number(row.spread) + " of the value's magnitude (tolerance " + number(tolerance(row.stats.front()->dtype)) + ")";
}

std::string RankTable::describe_eager() const {
  if (!has_eager) return "no check names its value (a capture older than that): no eager column";
  if (!first_eager_part) return "every rank's outputs and gradients match eager";
  const RankRow& row = rows[*first_eager_part];
  for (size_t r = 0; r < row.eager.size(); ++r)
    if (row.eager[r] && !row.eager[r]->pass)
      return "rank " + std::to_string(r) + " parts from eager at " + where(row) + " (" + row.eager[r]->name +
             "): max rel " + number(row.eager[r]->max_rel) + " > tolerance " + number(row.eager[r]->tolerance);
  return "";
}

}  // namespace tv
