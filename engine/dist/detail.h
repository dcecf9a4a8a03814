// Internal to engine/dist: what both backends share. CommBase keeps rank/size/timeout, the
// arrival marks ("arr/<rank>" = sequence number of the last collective this rank started) used
// to name missing ranks, the abort flag (local, and "abort" in the store for the other ranks),
// the broken state, and the bounded wait loop every Work goes through.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/store.h"

namespace tv::dist::detail {

using Clock = std::chrono::steady_clock;

struct Op {
  std::string name;  // "all_reduce", ...
  uint64_t seq = 0;  // 0 = init
  std::chrono::milliseconds timeout{0};
  Clock::time_point start;
};

class CommBase : public Communicator {
 public:
  CommBase(std::shared_ptr<Store> store, int rank, int size, const CommOptions& options, std::string backend);
  ~CommBase() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return backend_; }
  std::chrono::milliseconds timeout() const override;
  void set_timeout(std::chrono::milliseconds t) override;
  void abort(const std::string& reason) override;
  bool broken() const override;
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& ranks, const std::string& tag) override;

  // Starts a collective: throws if broken/aborted, marks arrival in the store.
  Op begin(const std::string& name);
  // Waits until poll() is true. On deadline or abort calls cancel() (if any), marks the
  // communicator broken and throws DistError. An exception from poll() is a backend failure.
  void await(const Op& op, const std::function<bool()>& poll, const std::function<void()>& cancel = {});
  // Writes this rank's arrival mark for `op` to the store (DistError when the store is unreachable).
  void mark_arrival(const Op& op);
  // Converts a backend failure into DistError (kind failed, or timeout when `what` says so).
  [[noreturn]] void fail(const Op& op, const std::string& what, DistError::Kind kind = DistError::Kind::failed);
  [[noreturn]] void usage(const std::string& op, const std::string& what) const;

  // Ranks whose arrival mark is below op.seq; nullopt-like empty + ok=false when the store is unreachable.
  std::vector<int> missing_ranks(const Op& op, bool* known) const;
  void mark_init_arrival();  // seq 0
  // Call at the start of a derived destructor: exit handshake (TCP server waits for the others).
  void shutdown();

 protected:
  std::string where(const Op& op) const;  // "on rank 0 of 3 (gloo, collective #5, timeout 2000 ms)"
  std::string abort_reason() const;
  std::optional<std::string> remote_abort();
  void announce_abort(const std::string& message);  // sets "abort" in the store(s) unless set
  void set_broken(const std::string& why);

  std::shared_ptr<Store> store_;
  std::shared_ptr<Store> parent_store_;  // a subgroup's parent's store: aborts are read and written there too
  CommOptions options_;                  // what subgroups are made with (a backend sets the device it uses)
  int rank_;
  int size_;
  std::string backend_;
  std::atomic<int64_t> timeout_ms_;
  uint64_t seq_ = 0;
  std::atomic<uint64_t> marked_seq_{0};  // the highest arrival mark written

  mutable std::mutex mu_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> broken_{false};
  std::string abort_reason_;
  std::string broken_reason_;
  bool shut_down_ = false;
};

std::string join_ranks(const std::vector<int>& ranks);  // "1, 2"
std::string message_of(const std::exception& e);        // what(), without LibTorch's backtrace

#ifdef TV_HAVE_CUDA
std::unique_ptr<Communicator> make_nccl(std::shared_ptr<Store> store, int rank, int size, const CommOptions& options);
#endif
std::unique_ptr<Communicator> make_gloo(std::shared_ptr<Store> store, int rank, int size, const CommOptions& options);

}  // namespace tv::dist::detail
