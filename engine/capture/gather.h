// Gathering the results of a one-rank-per-process launch into one capture on rank 0.
// Contract:
//  - merge_rank_captures(per_rank, timeout_ms): per_rank[r] is rank r's capture of the same
//    pipelines (each holding its own rank's replay results), nullopt for a rank that sent none.
//    Returns rank 0's capture with every rank's results in each pipeline's replay, in rank order,
//    as a World of threads records them: a rank that sent nothing gets an error naming it (it died
//    or never joined within the timeout), a rank that ran other pipelines than rank 0 an error
//    saying so. Outcomes and comparisons are computed again (session/assess.h).
//  - gather_ranks(capture, launch): every rank calls it with its capture; the captures travel to
//    rank 0 through the launch's store (capture_to_json), where `capture` becomes the merged one.
//    The other ranks' captures are left as they are. run_pipelines calls it through
//    RunRequest::gather_ranks.
#pragma once
#include <optional>
#include <vector>

#include "capture/capture.h"

namespace tv {
namespace dist {
class Launch;
}

Capture merge_rank_captures(std::vector<std::optional<Capture>> per_rank, long long timeout_ms = 0);
void gather_ranks(Capture& capture, dist::Launch& launch);

}  // namespace tv
