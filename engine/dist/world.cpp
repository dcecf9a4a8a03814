// World (ranks as threads over an in-process store) and launch_from_env (TCPStore, one rank per process).
#include "dist/world.h"

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

#include "dist/store.h"

namespace tv::dist {

World::World(int size, Backend backend, CommOptions options)
    : size_(size), backend_(backend), options_(std::move(options)) {
  if (size < 1) throw DistError(DistError::Kind::usage, "tv.dist: a World needs at least one rank");
}

std::vector<RankResult> World::run_all(const RankFn& fn) {
  auto store = Store::in_process(options_.timeout);
  std::mutex mu;
  std::vector<Communicator*> comms(size_, nullptr);
  std::vector<RankResult> results(size_);
  for (int r = 0; r < size_; ++r) results[r].rank = r;
  std::string first_reason;  // set when the first rank failed

  // Records rank r's failure and aborts every other live communicator (under the lock, so none
  // is destroyed meanwhile).
  auto on_fail = [&](int r, const std::string& what, bool consequence) {
    std::lock_guard<std::mutex> lock(mu);
    results[r].ok = false;
    results[r].error = what;
    results[r].consequence = consequence;
    std::string reason = "rank " + std::to_string(r) + " failed: " + what;
    if (first_reason.empty()) first_reason = reason;
    for (int i = 0; i < size_; ++i)
      if (i != r && comms[i]) comms[i]->abort(reason);
  };

  // Whether a rank's communicator was broken by another rank's failure before its own.
  auto aborted_by_another = [&](const Communicator* comm) {
    std::lock_guard<std::mutex> lock(mu);
    return comm && comm->broken() && !first_reason.empty();
  };

  std::vector<std::thread> threads;
  threads.reserve(size_);
  for (int r = 0; r < size_; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Communicator> comm;
      try {
        CommOptions o = options_;
        if (backend_ == Backend::nccl) o.device = r;
        comm = make_communicator(backend_, store, r, size_, o);
        {
          std::lock_guard<std::mutex> lock(mu);
          comms[r] = comm.get();
          if (!first_reason.empty()) comm->abort(first_reason);
        }
        fn(r, *comm);
      } catch (const DistError& e) {
        on_fail(r, e.what(), e.kind() == DistError::Kind::aborted || e.kind() == DistError::Kind::broken);
      } catch (const std::exception& e) {
        // Another error type can still be the abort's consequence: an executor rule's ExecError
        // that wraps the DistError of a collective run after another rank failed.
        on_fail(r, e.what(), aborted_by_another(comm.get()));
      } catch (...) {
        on_fail(r, "unknown exception", aborted_by_another(comm.get()));
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        comms[r] = nullptr;
      }
      try {
        comm.reset();
      } catch (...) {
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

void World::run(const RankFn& fn) {
  auto results = run_all(fn);
  // The cause: the first rank whose error is not a consequence of another's failure; ties go
  // to the lowest rank (errors of ranks that failed on their own are reported too).
  int cause = -1;
  for (const auto& r : results)
    if (!r.ok && !r.consequence) {
      cause = r.rank;
      break;
    }
  if (cause < 0)
    for (const auto& r : results)
      if (!r.ok) {
        cause = r.rank;
        break;
      }
  if (cause < 0) return;
  std::ostringstream m;
  m << "tv.dist: World(" << size_ << " ranks, " << backend_name(backend_) << "): rank " << cause
    << " failed: " << results[cause].error;
  for (const auto& r : results)
    if (!r.ok && r.rank != cause) m << "\n  rank " << r.rank << (r.consequence ? " (as a consequence)" : "") << ": " << r.error;
  throw WorldError(m.str(), cause, std::move(results));
}

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

const char* kEnvHelp =
    " (a torchrun-style launch sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for every process)";

int parse_int(const char* name, const std::string& v, int lo, int hi) {
  try {
    size_t used = 0;
    long x = std::stol(v, &used);
    if (used == v.size() && x >= lo && x <= hi) return static_cast<int>(x);
  } catch (...) {
  }
  throw DistError(DistError::Kind::usage, std::string("tv.dist: ") + name + "='" + v + "' is not an integer in [" +
                                              std::to_string(lo) + ", " + std::to_string(hi) + "]" + kEnvHelp);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

EnvLaunch EnvLaunch::from_env() {
  EnvLaunch e;
  auto ws = env("WORLD_SIZE");
  auto rk = env("RANK");
  if (!ws) throw DistError(DistError::Kind::usage, std::string("tv.dist: WORLD_SIZE is not set") + kEnvHelp);
  if (!rk) throw DistError(DistError::Kind::usage, std::string("tv.dist: RANK is not set") + kEnvHelp);
  e.world_size = parse_int("WORLD_SIZE", *ws, 1, 1 << 20);
  e.rank = parse_int("RANK", *rk, 0, e.world_size - 1);
  e.local_rank = env("LOCAL_RANK") ? parse_int("LOCAL_RANK", *env("LOCAL_RANK"), 0, 1 << 20) : e.rank;
  if (auto a = env("MASTER_ADDR")) e.master_addr = *a;
  if (auto p = env("MASTER_PORT")) e.master_port = parse_int("MASTER_PORT", *p, 1, 65535);
  return e;
}

std::unique_ptr<Communicator> launch_from_env(Backend backend, CommOptions options) {
  EnvLaunch e = EnvLaunch::from_env();
  auto store = Store::tcp(e.master_addr, e.master_port, e.rank == 0, e.world_size, options.timeout);
  if (backend == Backend::nccl && options.device < 0) options.device = e.local_rank;
  if (backend == Backend::gloo && options.gloo_host.empty() && is_loopback(e.master_addr))
    options.gloo_host = "127.0.0.1";
  return make_communicator(backend, std::move(store), e.rank, e.world_size, options);
}

}  // namespace tv::dist
