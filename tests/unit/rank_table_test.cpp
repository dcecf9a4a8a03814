// Ranks side by side (record/rank_table.h) on real replays over gloo: which values every rank must
// share, that they agree, and where a rank that does not (its statistics edited) parts first.
#include <gtest/gtest.h>

#include <filesystem>

#include "capture/capture.h"
#include "record/rank_table.h"
#include "session/run.h"

using namespace tv;

namespace {

Capture replayed(const std::vector<std::string>& order, int world = 2) {
  RunRequest r;
  r.model = "mlp";
  PipelineSpec spec;
  spec.order = order;
  spec.world_size = world;
  r.pipelines.push_back(spec);
  return run_pipelines(r);
}

const RankRow* row_of(const RankTable& t, TraceKind kind, const std::string& proxy) {
  for (const auto& row : t.rows)
    if (row.kind == kind && row.proxy == proxy) return &row;
  return nullptr;
}

// The backward's returned gradients, by parameter: the values the checks name.
std::vector<const RankRow*> gradient_rows(const RankTable& t) {
  std::vector<const RankRow*> out;
  for (const auto& row : t.rows)
    if (row.kind == TraceKind::backward && !row.eager.empty()) out.push_back(&row);
  return out;
}

}  // namespace

TEST(RankTable, DdpRanksShareTheWeightsAndTheReducedGradients) {
  Capture c = replayed({"jit", "ddp"});
  const auto& p = c.pipelines.at(0);
  ASSERT_TRUE(p.replay);
  RankTable t = rank_table(p.stages, *p.replay);
  EXPECT_EQ(t.ranks, 2);
  EXPECT_TRUE(t.unreadable.empty());
  EXPECT_FALSE(t.first_ranks_part) << t.describe_ranks();
  EXPECT_FALSE(t.first_eager_part) << t.describe_eager();
  EXPECT_TRUE(t.has_eager);
  // The first linear reads the rank's own input: not shared, and its statistics differ by rank.
  const Trace& forward = *p.stages.last(TraceKind::forward);
  std::string first;
  for (const auto& b : forward.body)
    if (b.name() == "ltorch.linear") {
      first = b.output()->name;
      break;
    }
  const RankRow* h = row_of(t, TraceKind::forward, first);
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->invariant);
  ASSERT_TRUE(h->stats[0] && h->stats[1]);
  EXPECT_NE(h->stats[0]->mean, h->stats[1]->mean);
  // Every parameter's gradient is all-reduced: shared, checked against eager on both ranks.
  auto grads = gradient_rows(t);
  ASSERT_EQ(grads.size(), 4u);
  for (const RankRow* g : grads) {
    EXPECT_TRUE(g->invariant) << g->proxy;
    EXPECT_FALSE(g->ranks_part) << g->proxy;
    ASSERT_EQ(g->eager.size(), 2u);
    for (const auto& check : g->eager) {
      ASSERT_TRUE(check);
      EXPECT_TRUE(check->pass);
      EXPECT_TRUE(check->reference);
      EXPECT_EQ(check->name.rfind("grad[", 0), 0u);
    }
  }
  // The output is the rank's own, checked against the rank's own eager run.
  size_t outputs = 0;
  for (const auto& row : t.rows) outputs += row.kind == TraceKind::forward && !row.eager.empty();
  EXPECT_EQ(outputs, 1u);
  EXPECT_GE(t.invariant_rows, 4u);
  EXPECT_NE(t.describe_ranks().find("agree"), std::string::npos) << t.describe_ranks();
}

TEST(RankTable, WithoutDdpNothingIsShared) {
  Capture c = replayed({"jit"});
  const auto& p = c.pipelines.at(0);
  RankTable t = rank_table(p.stages, *p.replay);
  EXPECT_EQ(t.invariant_rows, 0u);
  EXPECT_FALSE(t.first_ranks_part);
  EXPECT_NE(t.describe_ranks().find("found no value every rank must hold alike"), std::string::npos) << t.describe_ranks();
}

TEST(RankTable, FsdpGatheredParametersAreShared) {
  Capture c = replayed({"jit", "fsdp"});
  const auto& p = c.pipelines.at(0);
  RankTable t = rank_table(p.stages, *p.replay);
  EXPECT_FALSE(t.first_ranks_part) << t.describe_ranks();
  size_t gathered = 0;
  for (const auto& row : t.rows) gathered += row.symbol == "torch_wait_prim_impl" && row.invariant;
  EXPECT_GE(gathered, 4u);
  // A shard's gradient is the rank's own shard (reduce-scattered): not shared.
  for (const RankRow* g : gradient_rows(t)) EXPECT_FALSE(g->invariant) << g->proxy;
}

TEST(RankTable, TheFirstSharedValueThatDiffersIsWhereTheRanksPart) {
  Capture c = replayed({"jit", "ddp"});
  auto& p = c.pipelines.at(0);
  auto grads = gradient_rows(rank_table(p.stages, *p.replay));
  ASSERT_GE(grads.size(), 2u);
  // Rank 1 holds other numbers for two reduced gradients: the table names the earlier statement.
  const std::string early = grads[0]->proxy, late = grads[1]->proxy;
  ASSERT_LT(grads[0]->statement, grads[1]->statement + 1);
  for (const std::string& name : {late, early}) p.replay->ranks[1].proxies.at("backward:" + name).mean += 1.0;
  RankTable t = rank_table(p.stages, *p.replay);
  ASSERT_TRUE(t.first_ranks_part) << t.describe_ranks();
  const RankRow& first = t.rows[*t.first_ranks_part];
  EXPECT_EQ(first.proxy, early);
  EXPECT_EQ(first.spread_rank, 1);
  EXPECT_NE(t.describe_ranks().find("rank 1 parts from rank 0 at backward statement"), std::string::npos)
      << t.describe_ranks();
  // A NaN on one rank only parts there too, even where the value is zero everywhere else.
  {
    Capture z = replayed({"jit", "ddp"});
    auto& q = z.pipelines.at(0);
    auto& base = q.replay->ranks[0].proxies.at("backward:" + early);
    base.min = base.max = base.mean = 0;
    auto& other = q.replay->ranks[1].proxies.at("backward:" + early);
    other = base;
    other.nan_count = 1;
    RankTable n = rank_table(q.stages, *q.replay);
    ASSERT_TRUE(n.first_ranks_part);
    EXPECT_EQ(n.rows[*n.first_ranks_part].proxy, early);
  }
  // A failed check is where that rank parts from eager.
  for (auto& check : p.replay->ranks[0].gradients)
    if (check.proxy == "backward:" + late) check.pass = false;
  t = rank_table(p.stages, *p.replay);
  ASSERT_TRUE(t.first_eager_part);
  EXPECT_EQ(t.rows[*t.first_eager_part].proxy, late);
  EXPECT_NE(t.describe_eager().find("rank 0 parts from eager"), std::string::npos) << t.describe_eager();
}

TEST(RankTable, ChecksKeepTheirValueAndReferenceThroughACapture) {
  Capture c = replayed({"jit", "ddp"});
  auto path = std::filesystem::temp_directory_path() / "tv_rank_table_test.tvz.json";
  save_capture(c, path.string());
  Capture loaded = load_capture(path.string());
  std::filesystem::remove(path);
  const auto& before = c.pipelines[0].replay->ranks[1].gradients;
  const auto& after = loaded.pipelines[0].replay->ranks[1].gradients;
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].proxy, after[i].proxy);
    ASSERT_TRUE(after[i].reference);
    EXPECT_EQ(before[i].reference->mean, after[i].reference->mean);
  }
  RankTable t = rank_table(loaded.pipelines[0].stages, *loaded.pipelines[0].replay);
  EXPECT_GE(t.invariant_rows, 4u);
  EXPECT_FALSE(t.first_ranks_part);
}
