// One rank per process (dist/launch.h, capture/gather.h): the environment (torchrun's and SLURM's
// names), the join over a real TCP store on 127.0.0.1 (ranks as threads here; tests/scripts/launch_test.py
// runs real processes), its faults, the gather and the merge of every rank's capture.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "capture/gather.h"
#include "dist/launch.h"
#include "dist/store.h"

namespace tv {
namespace {

using namespace std::chrono_literals;

// Sets the given variables and unsets every other launch variable for the test's lifetime.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                             "SLURM_NTASKS", "SLURM_LOCALID"}) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      ::unsetenv(name);
    }
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                             "SLURM_NTASKS", "SLURM_LOCALID"})
      ::unsetenv(name);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

dist::LaunchEnv env_of(int rank, int world, int port) {
  dist::LaunchEnv e;
  e.rank = rank;
  e.world_size = world;
  e.local_rank = rank;
  e.master_addr = "127.0.0.1";
  e.master_port = port;
  return e;
}

TEST(LaunchEnv, ReadsTorchrunVariables) {
  ScopedEnv env({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "10.0.0.1"},
                 {"MASTER_PORT", "29511"}});
  auto e = dist::LaunchEnv::from_env();
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 29511);
  EXPECT_EQ(e.source, "torchrun");
}

TEST(LaunchEnv, MapsSlurmVariablesWhenRankIsAbsent) {
  ScopedEnv env({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"MASTER_ADDR", "node1"},
                 {"MASTER_PORT", "29500"}});
  auto e = dist::LaunchEnv::from_env();
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.source, "SLURM");
}

TEST(LaunchEnv, NamesTheMissingOrBadVariable) {
  auto error_of = [](const std::map<std::string, std::string>& vars) {
    ScopedEnv env(vars);
    try {
      dist::LaunchEnv::from_env();
    } catch (const dist::DistError& e) {
      EXPECT_EQ(e.kind(), dist::DistError::Kind::usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_TRUE(contains(error_of({{"RANK", "0"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}), "WORLD_SIZE is not set"));
  EXPECT_TRUE(contains(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}), "MASTER_ADDR is not set"));
  EXPECT_TRUE(contains(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}), "MASTER_PORT is not set"));
  EXPECT_TRUE(contains(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}),
                       "RANK=2 is not below WORLD_SIZE=2"));
  EXPECT_TRUE(contains(error_of({{"SLURM_PROCID", "0"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}),
                       "SLURM_NTASKS is not set"));
}

TEST(Launch, TwoRanksJoinGatherAndReduce) {
  const int port = dist::pick_free_port();
  auto rank_fn = [port](int rank) {
    dist::Launch launch(env_of(rank, 2, port), 20s);
    auto comm = launch.communicator(dist::Backend::gloo);
    at::Tensor t = at::full({3}, double(rank + 1));
    comm->all_reduce(t);
    auto got = launch.gather("x", "from " + std::to_string(rank));
    return std::make_pair(t, got);
  };
  auto one = std::async(std::launch::async, rank_fn, 1);
  auto [t0, got0] = rank_fn(0);
  auto [t1, got1] = one.get();
  EXPECT_TRUE(at::equal(t0, at::full({3}, 3.0)));
  EXPECT_TRUE(at::equal(t1, at::full({3}, 3.0)));
  ASSERT_EQ(got0.size(), 2u);
  EXPECT_EQ(got0[0], "from 0");
  EXPECT_EQ(got0[1], "from 1");
  EXPECT_TRUE(got1.empty());
}

TEST(Launch, MismatchedWorldSizeNamesIt) {
  const int port = dist::pick_free_port();
  auto rank_fn = [port](int rank, int world) -> std::string {
    try {
      dist::Launch launch(env_of(rank, world, port), 10s);
    } catch (const dist::DistError& e) {
      EXPECT_EQ(e.kind(), dist::DistError::Kind::usage) << e.what();
      return e.what();
    }
    return "joined";
  };
  auto one = std::async(std::launch::async, rank_fn, 1, 3);
  auto e0 = rank_fn(0, 2);
  auto e1 = one.get();
  EXPECT_TRUE(contains(e0, "rank 1 has WORLD_SIZE=3 but rank 0 has WORLD_SIZE=2")) << e0;
  EXPECT_TRUE(contains(e1, "rank 1 has WORLD_SIZE=3 but rank 0 has WORLD_SIZE=2")) << e1;
}

TEST(Launch, ARankThatNeverJoinsIsNamedWithinTheTimeout) {
  auto start = std::chrono::steady_clock::now();
  try {
    dist::Launch launch(env_of(0, 3, dist::pick_free_port()), 1s);
    ADD_FAILURE() << "joined without ranks 1 and 2";
  } catch (const dist::DistError& e) {
    EXPECT_EQ(e.kind(), dist::DistError::Kind::timeout);
    EXPECT_TRUE(contains(e.what(), "rank(s) 1, 2 of 3 never joined")) << e.what();
    EXPECT_EQ(e.missing_ranks(), (std::vector<int>{1, 2}));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(GatherCapture, MergesEveryRanksResultsAndNamesAMissingRank) {
  auto capture_of_rank = [](int rank, int world) {
    Capture c;
    PipelineRecord p;
    p.spec.order = {"jit", "ddp"};
    p.spec.world_size = world;
    Replay r;
    r.ranks.resize(world);
    for (int k = 0; k < world; ++k) r.ranks[k].rank = k;
    r.ranks[rank].outputs.push_back(TensorCheck{"output[0]", {}, 0, 0, 1e-5, true});
    p.replay = r;
    c.pipelines.push_back(p);
    return c;
  };
  std::vector<std::optional<Capture>> per_rank = {capture_of_rank(0, 3), capture_of_rank(1, 3), std::nullopt};
  auto merged = merge_rank_captures(per_rank, 5000);
  const auto& ranks = merged.pipelines[0].replay->ranks;
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[1].rank, 1);
  ASSERT_EQ(ranks[1].outputs.size(), 1u);
  EXPECT_TRUE(ranks[1].error.empty());
  EXPECT_TRUE(contains(ranks[2].error, "rank 2 sent no results within 5000 ms")) << ranks[2].error;
  EXPECT_EQ(merged.pipelines[0].outcome.kind, Outcome::failed);
}

}  // namespace
}  // namespace tv
