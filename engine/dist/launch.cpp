// Launch: the environment of a one-rank-per-process launch, the join over the TCP store, the
// communicators and the gather of bytes to rank 0.
#include "dist/launch.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "dist/detail.h"
#include "dist/store.h"

namespace tv::dist {
namespace {

using Clock = std::chrono::steady_clock;

const char* kHelp =
    " (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for every process; under SLURM set "
    "MASTER_ADDR to the first node's address and MASTER_PORT to a free port, SLURM_PROCID and SLURM_NTASKS are read "
    "for RANK and WORLD_SIZE)";

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string require(const char* name) {
  auto v = env(name);
  if (!v) throw DistError(DistError::Kind::usage, std::string("tv.dist: ") + name + " is not set" + kHelp, "init");
  return *v;
}

int parse_int(const char* name, const std::string& v, int lo, int hi) {
  try {
    size_t used = 0;
    long x = std::stol(v, &used);
    if (used == v.size() && x >= lo && x <= hi) return static_cast<int>(x);
  } catch (...) {
  }
  throw DistError(DistError::Kind::usage, std::string("tv.dist: ") + name + "='" + v + "' is not an integer in [" +
                                              std::to_string(lo) + ", " + std::to_string(hi) + "]" + kHelp,
                  "init");
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void nap() { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }

}  // namespace

LaunchEnv LaunchEnv::from_env() {
  LaunchEnv e;
  bool slurm = !env("RANK") && env("SLURM_PROCID");
  const char* rank = slurm ? "SLURM_PROCID" : "RANK";
  const char* size = slurm ? "SLURM_NTASKS" : "WORLD_SIZE";
  const char* local = slurm ? "SLURM_LOCALID" : "LOCAL_RANK";
  e.source = slurm ? "SLURM" : "torchrun";
  e.world_size = parse_int(size, require(size), 1, 1 << 20);
  e.rank = parse_int(rank, require(rank), 0, 1 << 20);
  if (e.rank >= e.world_size)
    throw DistError(DistError::Kind::usage,
                    std::string("tv.dist: ") + rank + "=" + std::to_string(e.rank) + " is not below " + size + "=" +
                        std::to_string(e.world_size) + kHelp,
                    "init");
  auto l = env(local);
  e.local_rank = l ? parse_int(local, *l, 0, 1 << 20) : e.rank;
  e.master_addr = require("MASTER_ADDR");
  e.master_port = parse_int("MASTER_PORT", require("MASTER_PORT"), 1, 65535);
  return e;
}

Launch::Launch(const LaunchEnv& env, std::chrono::milliseconds timeout, bool host_store, const std::string& prefix)
    : env_(env), timeout_(timeout) {
  if (timeout.count() <= 0) throw DistError(DistError::Kind::usage, "tv.dist: the timeout must be positive", "init");
  root_ = Store::tcp(env.master_addr, env.master_port, host_store && env.rank == 0, env.world_size, timeout);
  store_ = root_->prefixed(prefix);
  join();
  heartbeat_ = std::thread([this] {
    const std::string key = "beat/" + std::to_string(env_.rank);
    try {
      while (!stop_) {
        store_->add(key, 1);
        for (int i = 0; i < 20 && !stop_; ++i) nap();
      }
    } catch (...) {  // the store went away (rank 0 ended): nothing left to beat for
    }
  });
}

std::vector<int> Launch::silent_ranks() {
  // Once no group forms, the ranks found silent then are the answer: a dead rank stays dead, and
  // every later failure would otherwise wait a second to find it again.
  if (broken_error_ && !broken_error_->missing_ranks().empty()) return broken_error_->missing_ranks();
  if (!gone_.empty()) return gone_;
  std::vector<int> silent;
  try {
    auto beats = [&] {
      std::vector<int64_t> b(env_.world_size);
      for (int k = 0; k < env_.world_size; ++k) b[k] = store_->add("beat/" + std::to_string(k), 0);
      return b;
    };
    auto before = beats();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    auto after = beats();
    for (int k = 0; k < env_.world_size; ++k)
      if (k != env_.rank && after[k] == before[k]) silent.push_back(k);
  } catch (...) {  // the store is gone: rank 0 (which hosts it) is silent
    if (env_.rank != 0) silent.push_back(0);
  }
  return silent;
}

void Launch::join() {
  const int W = env_.world_size, r = env_.rank;
  auto fail = [&](const std::string& why) {
    try {
      if (!store_->check("bad")) store_->set("bad", why);
    } catch (...) {
    }
    throw DistError(DistError::Kind::usage, "tv.dist: " + why, "init", timeout_);
  };
  if (store_->add("rank/" + std::to_string(r), 1) > 1)
    fail("two processes have rank " + std::to_string(r) + " (RANK or SLURM_PROCID must differ on every process)");
  const auto deadline = Clock::now() + timeout_;
  if (r == 0) store_->set("world_size", std::to_string(W));
  std::optional<std::string> w0;
  while (!(w0 = store_->try_get("world_size"))) {
    if (auto bad = store_->try_get("bad")) throw DistError(DistError::Kind::usage, "tv.dist: " + *bad, "init", timeout_);
    if (Clock::now() >= deadline)
      throw DistError(DistError::Kind::timeout,
                      "tv.dist: rank 0 never joined within " + std::to_string(timeout_.count()) + " ms (rank " +
                          std::to_string(r) + " reached the store at " + env_.master_addr + ":" +
                          std::to_string(env_.master_port) + ")",
                      "init", timeout_, {0});
    nap();
  }
  if (*w0 != std::to_string(W))
    fail("rank " + std::to_string(r) + " has WORLD_SIZE=" + std::to_string(W) + " but rank 0 has WORLD_SIZE=" + *w0 +
         " (every process must be given the same world size)");
  store_->set("joined/" + std::to_string(r), "1");
  for (;;) {
    if (auto bad = store_->try_get("bad")) throw DistError(DistError::Kind::usage, "tv.dist: " + *bad, "init", timeout_);
    std::vector<int> missing;
    for (int k = 0; k < W; ++k)
      if (!store_->check("joined/" + std::to_string(k))) missing.push_back(k);
    if (missing.empty()) return;
    if (Clock::now() >= deadline)
      throw DistError(DistError::Kind::timeout,
                      "tv.dist: rank(s) " + detail::join_ranks(missing) + " of " + std::to_string(W) +
                          " never joined within " + std::to_string(timeout_.count()) + " ms (seen from rank " +
                          std::to_string(r) + ")",
                      "init", timeout_, missing);
    nap();
  }
}

Launch::~Launch() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  try {
    store_->add("left", 1);
    if (!root_->is_server()) return;
    // The store lives in this process: keep it up until every rank is done with it.
    auto deadline = Clock::now() + std::min(timeout_, std::chrono::milliseconds(10000));
    while (store_->add("left", 0) < env_.world_size && Clock::now() < deadline) nap();
  } catch (...) {
  }
}

std::unique_ptr<Communicator> Launch::communicator(Backend backend, CommOptions options) {
  if (broken_error_) throw *broken_error_;
  if (!gone_.empty())
    throw DistError(DistError::Kind::failed,
                    "tv.dist: rank(s) " + detail::join_ranks(gone_) +
                        " sent no results earlier (dead or stuck): no group forms without them",
                    "init", timeout_, gone_);
  options.timeout = std::min(options.timeout, timeout_);
  if (backend == Backend::nccl && options.device < 0) options.device = env_.local_rank;
  if (backend == Backend::gloo && options.gloo_host.empty() && is_loopback(env_.master_addr))
    options.gloo_host = "127.0.0.1";
  try {
    return make_communicator(backend, store_->prefixed("comm"), env_.rank, env_.world_size, options);
  } catch (const DistError& e) {
    auto silent = silent_ranks();
    broken_error_ = silent.empty() ? e
                                   : DistError(e.kind(),
                                               std::string(e.what()) + " Rank(s) " + detail::join_ranks(silent) +
                                                   " stopped answering the launch's store (dead or stuck).",
                                               e.collective(), e.timeout(), silent);
    throw *broken_error_;
  }
}

std::vector<std::optional<std::string>> Launch::gather(const std::string& name, const std::string& bytes) {
  const std::string key = "gather/" + std::to_string(gathers_++) + "/" + name + "/";
  store_->set(key + std::to_string(env_.rank), bytes);
  if (env_.rank != 0) return {};
  std::vector<std::optional<std::string>> out(env_.world_size);
  out[0] = bytes;
  const auto deadline = Clock::now() + timeout_;
  auto gone = [&](int k) { return std::find(gone_.begin(), gone_.end(), k) != gone_.end(); };
  for (;;) {
    bool all = true;
    for (int k = 1; k < env_.world_size; ++k)
      if (!out[k] && !(out[k] = store_->try_get(key + std::to_string(k))) && !gone(k)) all = false;
    if (all) return out;
    if (Clock::now() >= deadline) {
      for (int k = 1; k < env_.world_size; ++k)
        if (!out[k] && !gone(k)) gone_.push_back(k);
      return out;
    }
    nap();
  }
}

}  // namespace tv::dist
