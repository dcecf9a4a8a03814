// Ranks side by side: for every value of a pipeline's final forward and backward traces, each
// rank's statistics and, where the value is an output or a gradient, the eager reference's; and the
// first statement where the ranks, or a rank and eager, part.
// Contract: rows follow the top-level statements in order, forward then backward, one per tensor
// output that some rank recorded statistics for (RankResult::proxies, "kind:name").
// A value is rank-invariant when every rank must hold the same one: a parameter the transforms
// replicate (Distribution::replicated: ddp broadcasts rank 0's weights), the result of an
// all-reduce or all-gather over the world's group and of waiting on it, and what a statement
// computes from rank-invariant arguments only; a backward's saved value is what it was in the
// forward, its cotangents are the rank's own. Everything else differs between ranks by design
// (each rank has its own inputs) and is shown, not compared; so are values shared only within a
// subgroup (hsdp's collectives over a mesh's groups).
// The ranks part at an invariant row where some rank's minimum, maximum or mean differs from rank
// 0's by more than the dtype's tolerance (results.h) times the value's largest magnitude. Statistics
// can prove two values different, never equal: a row that does not part is "equal as far as the
// statistics show". A rank parts from eager at a row whose check against the reference failed
// (TensorCheck::proxy names the row; captures older than that field have no eager column).
// A stored trace that does not parse leaves the table empty with `unreadable` saying why.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "history/stages.h"
#include "record/results.h"

namespace tv {

struct RankRow {
  TraceKind kind = TraceKind::forward;
  int statement = 0;                             // top-level index in the final trace of `kind`
  std::string symbol;                            // "ltorch.linear"
  std::string proxy;                             // "t6"
  bool invariant = false;                        // every rank must hold the same value
  std::vector<std::optional<TensorStats>> stats;  // per rank (index = position in Replay::ranks)
  std::vector<std::optional<TensorCheck>> eager;  // per rank: the check against eager, for outputs and gradients
  double spread = 0;      // invariant rows: the largest difference of a statistic from rank 0's, relative
  int spread_rank = -1;   // the rank it was largest on
  bool ranks_part = false;   // invariant, and spread beyond the tolerance
  bool eager_parts = false;  // some rank's check against eager failed
};

struct RankTable {
  int ranks = 0;
  std::vector<RankRow> rows;
  std::optional<size_t> first_ranks_part;  // index into rows
  std::optional<size_t> first_eager_part;
  size_t invariant_rows = 0;
  bool has_eager = false;                  // some check names its proxy
  std::string unreadable;                  // a stored final trace that does not parse: why (no rows then)
  // One line each: "ranks agree on the 12 values they must share (as far as statistics show)" or
  // "rank 1 parts from rank 0 at forward statement 7, ltorch.add -> t9: ...".
  std::string describe_ranks() const;
  std::string describe_eager() const;
};

RankTable rank_table(const StageHistory& stages, const Replay& replay);

}  // namespace tv
