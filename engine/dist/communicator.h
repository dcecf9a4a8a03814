// Communicator: the collectives of one rank in a group of W ranks (gloo on CPU, NCCL on CUDA).
// Contract:
//  - all_reduce: in place, elementwise SUM over ranks (callers divide for an average).
//    all_gather: returns the ranks' inputs concatenated along dim 0 in rank order ([W*N, ...];
//    a 0-dim input counts as [1]). reduce_scatter: input [N, ...] with N divisible by W (callers
//    pad), returns this rank's shard [N/W, ...] of the SUM. broadcast: in place, from `root`.
//    barrier: returns when every rank reached it. Every rank calls the same collectives in the
//    same order with tensors of the same shape and dtype. Tensors: CPU for gloo, the rank's CUDA
//    device for NCCL; non-contiguous tensors are handled (copied).
//  - Each collective has an async form returning a Work; `wait()` blocks, `done()` polls,
//    `wait_on_stream()` makes the caller's CUDA stream wait instead of the host (NCCL), and the
//    communicator's `settle()` later waits on the host for all of those and throws their failure.
//    The blocking form is `*_async(...)->wait()`. A Work must be waited (or dropped) before its
//    Communicator is destroyed; a Work is used by one thread.
//  - Timeouts: every collective must finish within `timeout()` (default 60 s, settable) of its
//    start. A rank that dies, throws or never arrives gives every other rank a DistError naming
//    the collective, the timeout and, when they can be known (from arrival marks in the store),
//    the missing ranks; never a hang. After a failure the communicator is broken: later calls
//    throw at once. `abort(reason)` (any thread) makes pending and later waits on this rank and,
//    through the store, on every rank throw DistError(kind aborted) promptly.
//  - make_communicator() ignores SIGPIPE for the process unless a handler is installed (a dead
//    peer's closed socket must fail a write, not end the process).
//  - make_communicator() joins a group through a Store (store.h); every rank calls it with the
//    same store contents, its own rank and the same size. It blocks until all ranks joined
//    (bounded by the timeout). The NCCL backend exists only when built with TV_HAVE_CUDA.
//  - subgroup(ranks, tag): a communicator over some ranks of this one (a mesh's row or column),
//    on the same backend, store (keys under "sub/<tag>/") and device. Every listed rank calls it
//    with the same ranks and tag; ranks of the parent that are not listed do not. The subgroup's
//    rank is this rank's index in `ranks`. It must be destroyed before its parent. An abort of the
//    parent, on any rank, aborts the subgroup's waits too, and a subgroup's failure is announced
//    to the whole parent group.
#pragma once
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace tv::dist {

class Store;

class DistError : public std::runtime_error {
 public:
  enum class Kind {
    usage,    // bad arguments (shape, dtype, device, root), unknown backend, bad environment
    init,     // joining the group failed (rendezvous, connect, port in use)
    timeout,  // the collective did not finish within the timeout
    failed,   // the backend reported an error (a peer closed its connection, NCCL error)
    aborted,  // this rank or another one aborted (World: a rank failed)
    broken,   // the communicator was already broken by an earlier error
  };
  DistError(Kind kind, const std::string& message, std::string collective = {},
            std::chrono::milliseconds timeout = {}, std::vector<int> missing_ranks = {})
      : std::runtime_error(message), kind_(kind), collective_(std::move(collective)), timeout_(timeout),
        missing_(std::move(missing_ranks)) {}
  Kind kind() const { return kind_; }
  const std::string& collective() const { return collective_; }  // "all_reduce", "init", ...
  std::chrono::milliseconds timeout() const { return timeout_; }
  const std::vector<int>& missing_ranks() const { return missing_; }  // empty when unknown

 private:
  Kind kind_;
  std::string collective_;
  std::chrono::milliseconds timeout_;
  std::vector<int> missing_;
};

enum class Backend { gloo, nccl };
const char* backend_name(Backend);
Backend parse_backend(const std::string& name);  // "gloo" | "nccl"; DistError(usage) otherwise
bool nccl_available();                           // built with TV_HAVE_CUDA

struct CommOptions {
  std::chrono::milliseconds timeout{60000};
  // gloo: address (host name or IP) this rank's gloo device binds to. Empty: 127.0.0.1 for an
  // in-process store; otherwise GLOO_SOCKET_IFNAME's interface if set, else this host's name.
  std::string gloo_host;
  // nccl: CUDA device of this rank; -1 = rank (World) or LOCAL_RANK (Launch).
  int device = -1;
};

class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;          // blocks (bounded by the timeout); DistError on failure; idempotent
  virtual bool done() = 0;          // finished (successfully or not); never blocks
  virtual at::Tensor result() = 0;  // waits, then the output (all_reduce/broadcast: the tensor itself)
  // Orders the caller's current CUDA stream after the collective and returns without blocking the
  // host where the backend can (NCCL); elsewhere it is wait(). The output is then valid for work
  // queued on that stream. The timeout still holds: a watchdog aborts the communicator when the
  // collective does not finish in time (the stream then moves on), and the error is thrown by the
  // next blocking wait or collective of this communicator.
  virtual void wait_on_stream() { wait(); }
};
using WorkPtr = std::unique_ptr<Work>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "gloo" | "nccl"
  virtual std::chrono::milliseconds timeout() const = 0;
  virtual void set_timeout(std::chrono::milliseconds) = 0;  // applies to collectives started later

  virtual WorkPtr all_reduce_async(at::Tensor& tensor) = 0;
  virtual WorkPtr all_gather_async(const at::Tensor& input) = 0;
  virtual WorkPtr reduce_scatter_async(const at::Tensor& input) = 0;
  virtual WorkPtr broadcast_async(at::Tensor& tensor, int root) = 0;
  virtual WorkPtr barrier_async() = 0;
  // Blocks until every collective whose wait went to the stream has finished and throws the first
  // failure among them (bounded by the timeout). gloo's waits block already: it returns at once.
  virtual void settle() {}

  void all_reduce(at::Tensor& tensor);
  at::Tensor all_gather(const at::Tensor& input);
  at::Tensor reduce_scatter(const at::Tensor& input);
  void broadcast(at::Tensor& tensor, int root = 0);
  void barrier();

  virtual std::unique_ptr<Communicator> subgroup(const std::vector<int>& ranks, const std::string& tag) = 0;

  virtual void abort(const std::string& reason) = 0;
  virtual bool broken() const = 0;  // an earlier collective failed or abort() was called
};

// The communicators one rank's collectives run on, by the group names traces give them: the
// world's group (not owned) and the subgroups formed from it (hybrid sharding's shard and
// replicate groups), owned and destroyed before the world.
struct ProcessGroups {
  explicit ProcessGroups(Communicator* world) : world(world) {}
  Communicator* world = nullptr;
  std::vector<std::pair<std::string, std::unique_ptr<Communicator>>> named;  // group name -> subgroup
  // Forms the subgroup `name` of `ranks` from the world (world->subgroup, tagged by the name and
  // the ranks); every listed rank calls it, in the same order as every other rank.
  void form(const std::string& name, const std::vector<int>& ranks);
  Communicator* find(const std::string& name) const;  // null when not named
};

std::unique_ptr<Communicator> make_communicator(Backend backend, std::shared_ptr<Store> store, int rank, int size,
                                                const CommOptions& options = {});

}  // namespace tv::dist
