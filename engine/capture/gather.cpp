// Rank 0's capture with every rank's results: merged from each rank's capture.
#include "capture/gather.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "dist/launch.h"
#include "session/assess.h"

namespace tv {
namespace {

RankResult missing_rank(int rank, long long timeout_ms) {
  RankResult r;
  r.rank = rank;
  r.error = "rank " + std::to_string(rank) + " sent no results" +
            (timeout_ms > 0 ? " within " + std::to_string(timeout_ms) + " ms" : std::string()) +
            ": it died, or never joined";
  return r;
}

// Rank `rank`'s own result in `theirs`, or why there is none.
RankResult result_of(int rank, const PipelineRecord& mine, const Capture& theirs, size_t index) {
  RankResult r;
  r.rank = rank;
  if (index >= theirs.pipelines.size() || theirs.pipelines[index].spec.label() != mine.spec.label()) {
    r.error = "rank " + std::to_string(rank) + " ran other pipelines than rank 0 (every process must be given the same "
              "command line)";
    return r;
  }
  const auto& p = theirs.pipelines[index];
  if (p.replay)
    for (const auto& candidate : p.replay->ranks)
      if (candidate.rank == rank) return candidate;
  r.error = !p.error.empty() ? p.error : "rank " + std::to_string(rank) + " has no replay of this pipeline";
  return r;
}

}  // namespace

Capture merge_rank_captures(std::vector<std::optional<Capture>> per_rank, long long timeout_ms) {
  if (per_rank.empty() || !per_rank[0]) throw std::invalid_argument("merge_rank_captures: rank 0's capture is missing");
  Capture merged = std::move(*per_rank[0]);
  const int world = static_cast<int>(per_rank.size());
  for (size_t i = 0; i < merged.pipelines.size(); ++i) {
    auto& p = merged.pipelines[i];
    if (!p.replay) continue;
    p.replay->ranks.resize(std::max<size_t>(p.replay->ranks.size(), world));
    for (int r = 1; r < world; ++r)
      p.replay->ranks[r] = per_rank[r] ? result_of(r, p, *per_rank[r], i) : missing_rank(r, timeout_ms);
  }
  assess(merged);
  return merged;
}

void gather_ranks(Capture& capture, dist::Launch& launch) {
  auto texts = launch.gather("capture", capture_to_json(capture));
  if (launch.rank() != 0) return;
  std::vector<std::optional<Capture>> per_rank(texts.size());
  per_rank[0] = std::move(capture);
  for (size_t r = 1; r < texts.size(); ++r)
    if (texts[r]) per_rank[r] = capture_from_json(*texts[r], "rank " + std::to_string(r) + "'s capture");
  capture = merge_rank_captures(std::move(per_rank), launch.timeout().count());
}

}  // namespace tv
