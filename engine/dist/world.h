// World: W ranks as threads of this process (one device each; CPU ranks share the CPU). One rank per
// process (torchrun, SLURM) is dist/launch.h.
// Contract:
//  - World(W, backend, options).run(fn) makes a fresh in-process store, starts W threads, and on
//    each joins the group and calls fn(rank, comm). It returns when every thread has ended (no
//    thread is left behind; a thread stuck in user code outside collectives is the one thing
//    that can delay it). If a rank throws, every other rank's communicator is aborted (pending and
//    later collectives throw DistError kind aborted) and run() throws WorldError naming the rank
//    that failed first with its message, then every other rank's error. run_all() returns each
//    rank's outcome instead of throwing; run_collect() returns each rank's fn result.
//  - Every rank thread is started before any rank joins the group. When one cannot start (the
//    process's thread limit, memory for its stack), the started ones end without running fn and
//    every rank's outcome is that error, naming the rank and what ran out: never an abort. A rank
//    that runs out of memory fails with "out of memory"; LibTorch errors come without backtrace.
//  - abandon_hung_ranks(): for callers whose fn owns everything it uses (no references to the
//    caller's stack). Once one rank has ended, a rank still running options.timeout later is
//    reported as hung (its outcome says so), its communicator is aborted and its thread detached:
//    run_all returns instead of waiting for it. The thread ends on its own later, safely.
//  - NCCL worlds bind rank r's thread to CUDA device r (options.device is ignored).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "dist/communicator.h"

namespace tv::dist {

struct RankResult {
  int rank = 0;
  bool ok = true;
  std::string error;          // what() of the exception, when !ok
  bool consequence = false;   // the error was caused by another rank's failure (aborted)
};

class WorldError : public DistError {
 public:
  WorldError(const std::string& message, int failed_rank, std::vector<RankResult> results)
      : DistError(Kind::failed, message), failed_rank_(failed_rank), results_(std::move(results)) {}
  int failed_rank() const { return failed_rank_; }  // the rank that failed first (the cause)
  const std::vector<RankResult>& results() const { return results_; }

 private:
  int failed_rank_;
  std::vector<RankResult> results_;
};

class World {
 public:
  using RankFn = std::function<void(int rank, Communicator& comm)>;

  explicit World(int size, Backend backend = Backend::gloo, CommOptions options = {});
  int size() const { return size_; }
  Backend backend() const { return backend_; }

  void abandon_hung_ranks(bool on = true) { abandon_hung_ = on; }

  std::vector<RankResult> run_all(const RankFn& fn);
  void run(const RankFn& fn);

  template <class F>
  auto run_collect(F&& fn) {
    using R = std::invoke_result_t<F&, int, Communicator&>;
    std::vector<std::optional<R>> slots(size_);
    run([&](int rank, Communicator& comm) { slots[rank].emplace(fn(rank, comm)); });
    std::vector<R> out;
    out.reserve(size_);
    for (auto& s : slots) out.push_back(std::move(*s));
    return out;
  }

 private:
  int size_;
  Backend backend_;
  CommOptions options_;
  bool abandon_hung_ = false;
};

}  // namespace tv::dist
