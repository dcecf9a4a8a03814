// Launch: this process as one rank of a group started one rank per process (torchrun, SLURM, or
// plain environment variables), and what its ranks exchange besides collectives.
// Contract:
//  - LaunchEnv::from_env() reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. When
//    RANK is not set, SLURM's SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID stand for RANK,
//    WORLD_SIZE and LOCAL_RANK (MASTER_ADDR and MASTER_PORT are still needed). A missing or bad
//    variable throws DistError(usage) naming it.
//  - Launch(env, timeout, host_store): connects to the TCP store on MASTER_ADDR:MASTER_PORT (rank 0
//    hosts it when host_store; otherwise it is already hosted, as under an initialised
//    torch.distributed group) under `prefix`, and joins: every rank announces its rank and world
//    size. Two processes with the same rank, or a world size that differs from rank 0's, throw
//    DistError(usage) naming both; a rank that does not join within the timeout throws
//    DistError(timeout) naming the missing ranks; a port in use throws DistError(init).
//  - communicator(backend): the next group over the launch's store (every rank calls it the same
//    number of times in the same order). After a communicator failed to form, later calls throw the
//    same error at once (a rank that never joined does not cost one timeout per pipeline).
//  - gather(name, bytes): every rank calls it, in the same order, with the same name; rank 0 gets every rank's bytes in
//    rank order (nullopt for a rank that sent nothing within the timeout: it died or is stuck),
//    the other ranks an empty vector at once. A rank found missing once is not waited for again,
//    and no communicator is formed after that (it throws at once, naming the rank).
//  - Every rank beats a counter in the store (a thread, every 200 ms) from the join on;
//    silent_ranks() names the ranks whose counter did not move within a second (dead or stuck), so
//    that a failure that cannot tell which peer went away (a broken connection) can say it; once
//    no group forms any more, it names the ranks found then, at once.
//  - The destructor keeps rank 0's store up until every rank has left (bounded by the timeout).
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <optional>
#include <string>
#include <vector>

#include "dist/communicator.h"

namespace tv::dist {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  std::string source;  // "torchrun" (RANK, WORLD_SIZE, ...) or "SLURM" (SLURM_PROCID, ...)
  static LaunchEnv from_env();
};

class Launch {
 public:
  Launch(const LaunchEnv& env, std::chrono::milliseconds timeout, bool host_store = true,
         const std::string& prefix = "thunder-viz");
  ~Launch();
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  int rank() const { return env_.rank; }
  int size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  const LaunchEnv& env() const { return env_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  std::unique_ptr<Communicator> communicator(Backend backend, CommOptions options = {});
  std::vector<std::optional<std::string>> gather(const std::string& name, const std::string& bytes);
  std::vector<int> silent_ranks();

 private:
  void join();

  LaunchEnv env_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<Store> root_;   // the TCP store itself
  std::shared_ptr<Store> store_;  // the launch's keys: prefix/...
  std::optional<DistError> broken_error_;  // the first failure of a communicator to form
  int gathers_ = 0;
  std::vector<int> gone_;  // ranks that sent nothing to a gather within the timeout
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

}  // namespace tv::dist
