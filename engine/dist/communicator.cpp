// DistError helpers, CommBase (arrival marks, abort, bounded waits) and make_communicator.
#include "dist/communicator.h"

#include <ATen/ATen.h>

#include <csignal>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <thread>

#include "dist/detail.h"

namespace tv::dist {

const char* backend_name(Backend b) { return b == Backend::gloo ? "gloo" : "nccl"; }

Backend parse_backend(const std::string& name) {
  if (name == "gloo") return Backend::gloo;
  if (name == "nccl") return Backend::nccl;
  throw DistError(DistError::Kind::usage, "tv.dist: unknown backend '" + name + "' (expected gloo or nccl)");
}

bool nccl_available() {
#ifdef TV_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void ProcessGroups::form(const std::string& name, const std::vector<int>& ranks) {
  if (!world) throw DistError(DistError::Kind::usage, "tv.dist: subgroup '" + name + "' needs a world to form it from");
  std::string tag = name;
  for (int r : ranks) tag += "-" + std::to_string(r);
  named.emplace_back(name, world->subgroup(ranks, tag));
}

Communicator* ProcessGroups::find(const std::string& name) const {
  for (const auto& [n, c] : named)
    if (n == name) return c.get();
  return nullptr;
}

void Communicator::all_reduce(at::Tensor& tensor) { all_reduce_async(tensor)->wait(); }
at::Tensor Communicator::all_gather(const at::Tensor& input) { return all_gather_async(input)->result(); }
at::Tensor Communicator::reduce_scatter(const at::Tensor& input) { return reduce_scatter_async(input)->result(); }
void Communicator::broadcast(at::Tensor& tensor, int root) { broadcast_async(tensor, root)->wait(); }
void Communicator::barrier() { barrier_async()->wait(); }

namespace {

// A rank that dies closes its sockets, and a write to one raises SIGPIPE, whose default action ends
// the whole process (seen on the GPU machine with LibTorch's bundled gloo) instead of failing the
// write with EPIPE so that the collective reports the dead rank. Ignored unless the program
// installed a handler of its own; Python does the same at startup.
void ignore_broken_pipes() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
  });
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(Backend backend, std::shared_ptr<Store> store, int rank, int size,
                                                const CommOptions& options) {
  ignore_broken_pipes();
  if (!store) throw DistError(DistError::Kind::usage, "tv.dist: make_communicator needs a store");
  if (size < 1 || rank < 0 || rank >= size)
    throw DistError(DistError::Kind::usage, "tv.dist: bad rank " + std::to_string(rank) + " for world size " +
                                                std::to_string(size));
  if (options.timeout.count() <= 0) throw DistError(DistError::Kind::usage, "tv.dist: the timeout must be positive");
  // The k-th communicator made on each rank over this store forms one group: keys under "tv/c<k>/".
  int64_t gen = 0;
  try {
    gen = store->add("tv/gen/" + std::to_string(rank), 1);
  } catch (const DistError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistError(DistError::Kind::init, std::string("tv.dist: init on rank ") + std::to_string(rank) +
                                               ": the store is unreachable: " + e.what(),
                    "init", options.timeout);
  }
  auto scoped = store->prefixed("tv/c" + std::to_string(gen));
  switch (backend) {
    case Backend::gloo: return detail::make_gloo(std::move(scoped), rank, size, options);
    case Backend::nccl:
#ifdef TV_HAVE_CUDA
      return detail::make_nccl(std::move(scoped), rank, size, options);
#else
      throw DistError(DistError::Kind::usage,
                      "tv.dist: the nccl backend is not in this build (built without CUDA/NCCL, TV_HAVE_CUDA "
                      "undefined); use gloo",
                      "init");
#endif
  }
  throw DistError(DistError::Kind::usage, "tv.dist: unknown backend");
}

namespace detail {

std::string message_of(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

CommBase::CommBase(std::shared_ptr<Store> store, int rank, int size, const CommOptions& options, std::string backend)
    : store_(std::move(store)), options_(options), rank_(rank), size_(size), backend_(std::move(backend)),
      timeout_ms_(options.timeout.count()) {}

CommBase::~CommBase() = default;

std::chrono::milliseconds CommBase::timeout() const { return std::chrono::milliseconds(timeout_ms_.load()); }

void CommBase::set_timeout(std::chrono::milliseconds t) {
  if (t.count() <= 0) usage("set_timeout", "the timeout must be positive");
  timeout_ms_ = t.count();
}

bool CommBase::broken() const { return broken_ || aborted_; }

std::string CommBase::abort_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abort_reason_;
}

void CommBase::set_broken(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_) broken_reason_ = why;
  broken_ = true;
}

void CommBase::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    abort_reason_ = reason;
    aborted_ = true;
  }
  // tell the other ranks (other processes poll "abort" while they wait)
  announce_abort("rank " + std::to_string(rank_) + " aborted: " + reason);
}

void CommBase::announce_abort(const std::string& message) {
  for (const auto& store : {store_, parent_store_}) {
    if (!store) continue;
    try {
      if (!store->check("abort")) store->set("abort", message);
    } catch (...) {
    }
  }
}

std::optional<std::string> CommBase::remote_abort() {
  for (const auto& store : {store_, parent_store_}) {
    if (!store) continue;
    try {
      if (auto v = store->try_get("abort")) return v;
    } catch (...) {
    }
  }
  return std::nullopt;
}

std::unique_ptr<Communicator> CommBase::subgroup(const std::vector<int>& ranks, const std::string& tag) {
  auto self = std::find(ranks.begin(), ranks.end(), rank_);
  if (self == ranks.end())
    usage("subgroup", "rank " + std::to_string(rank_) + " is not among the subgroup's ranks " + join_ranks(ranks) +
                          " (only members call subgroup)");
  for (int r : ranks)
    if (r < 0 || r >= size_ || std::count(ranks.begin(), ranks.end(), r) > 1)
      usage("subgroup", "the subgroup's ranks " + join_ranks(ranks) + " must be distinct ranks below " +
                            std::to_string(size_));
  if (tag.empty() || tag.find('/') != std::string::npos) usage("subgroup", "the tag must be a non-empty name without '/'");
  CommOptions o = options_;
  o.timeout = timeout();
  auto sub = make_communicator(parse_backend(backend_), store_->prefixed("sub/" + tag), static_cast<int>(self - ranks.begin()),
                               static_cast<int>(ranks.size()), o);
  static_cast<CommBase&>(*sub).parent_store_ = store_;
  return sub;
}

std::string CommBase::where(const Op& op) const {
  std::ostringstream s;
  s << "on rank " << rank_ << " of " << size_ << " (" << backend_;
  if (op.seq) s << ", collective #" << op.seq;
  s << ", timeout " << op.timeout.count() << " ms)";
  return s.str();
}

std::vector<int> CommBase::missing_ranks(const Op& op, bool* known) const {
  std::vector<int> missing;
  *known = true;
  try {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      auto v = store_->try_get("arr/" + std::to_string(r));
      if (!v || std::stoull(*v) < op.seq) missing.push_back(r);
    }
  } catch (...) {
    *known = false;
    missing.clear();
  }
  return missing;
}

void CommBase::mark_init_arrival() {
  try {
    store_->set("arr/" + std::to_string(rank_), "0");
  } catch (...) {
  }
}

void CommBase::usage(const std::string& op, const std::string& what) const {
  throw DistError(DistError::Kind::usage, "tv.dist: " + op + " on rank " + std::to_string(rank_) + ": " + what, op,
                  timeout());
}

void CommBase::fail(const Op& op, const std::string& what, DistError::Kind kind) {
  std::string lower = what;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (kind == DistError::Kind::failed && lower.find("timed out") != std::string::npos) kind = DistError::Kind::timeout;
  std::string detail = what;
  if (aborted_ && kind != DistError::Kind::aborted) {  // failed because another rank aborted the group
    detail = abort_reason() + (what.empty() ? "" : " (" + what + ")");
    kind = DistError::Kind::aborted;
  }
  bool known = false;
  std::vector<int> missing = missing_ranks(op, &known);
  std::ostringstream m;
  m << "tv.dist: " << op.name << ' ';
  if (kind == DistError::Kind::timeout)
    m << "timed out after " << op.timeout.count() << " ms ";
  else if (kind == DistError::Kind::aborted)
    m << "was aborted ";
  else
    m << "failed ";
  m << where(op);
  if (!detail.empty()) m << ": " << detail;
  m << ". ";
  if (!known)
    m << "Which ranks are missing could not be determined (the store is unreachable).";
  else if (!missing.empty())
    m << "Rank(s) " << join_ranks(missing) << " never reached this " << op.name
      << " (dead, stuck, or calling a different sequence of collectives).";
  else if (op.seq == 0)
    m << "Every rank reached init; connecting failed.";
  else
    m << "Every rank reached this " << op.name << "; a peer failed during it or its connection broke.";
  std::string msg = m.str();
  set_broken(msg);
  if (kind != DistError::Kind::aborted)
    announce_abort("rank " + std::to_string(rank_) + ": " + op.name + " " +
                   (kind == DistError::Kind::timeout ? "timed out" : "failed"));
  throw DistError(kind, msg, op.name, op.timeout, known ? missing : std::vector<int>{});
}

Op CommBase::begin(const std::string& name) {
  Op op{name, seq_ + 1, timeout(), Clock::now()};
  if (aborted_) fail(op, "this communicator was aborted: " + abort_reason(), DistError::Kind::aborted);
  if (broken_) {
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      why = broken_reason_;
    }
    throw DistError(DistError::Kind::broken,
                    "tv.dist: " + name + " refused on rank " + std::to_string(rank_) +
                        ": the communicator is broken by an earlier error: " + why,
                    name, op.timeout);
  }
  // The store is not touched here: a collective that completes quickly costs no round trip. The
  // arrival mark and the remote-abort check happen in await() once the wait is not quick.
  ++seq_;
  op.start = Clock::now();
  return op;
}

void CommBase::mark_arrival(const Op& op) {
  // Marks only move forward: a watchdog thread marks collectives older than the caller's latest.
  uint64_t seq = marked_seq_.load();
  while (seq < op.seq && !marked_seq_.compare_exchange_weak(seq, op.seq)) {
  }
  if (seq > op.seq) return;
  try {
    store_->set("arr/" + std::to_string(rank_), std::to_string(op.seq));
  } catch (const std::exception& e) {
    set_broken(e.what());
    throw DistError(DistError::Kind::failed,
                    "tv.dist: " + op.name + " " + where(op) + ": the store is unreachable: " + e.what(), op.name,
                    op.timeout);
  }
}

void CommBase::await(const Op& op, const std::function<bool()>& poll, const std::function<void()>& cancel) {
  const auto deadline = op.start + op.timeout;
  // A rank still waiting after the grace period marks its arrival (so that a timeout elsewhere can
  // name the ranks that never came) and starts looking for aborts announced by other ranks.
  const auto grace = std::chrono::milliseconds(2);
  bool marked = false;
  auto next_remote = op.start + grace;
  auto nap = std::chrono::microseconds(20);
  int spins = 0;
  auto cancel_quietly = [&] {
    if (!cancel) return;
    try {
      cancel();
    } catch (...) {
    }
  };
  for (;;) {
    bool ok = false;
    try {
      ok = poll();
    } catch (const DistError&) {
      cancel_quietly();
      throw;
    } catch (const std::exception& e) {
      cancel_quietly();
      fail(op, e.what());
    }
    if (ok) return;
    if (aborted_) {
      cancel_quietly();
      fail(op, abort_reason(), DistError::Kind::aborted);
    }
    auto now = Clock::now();
    if (!marked && (now >= op.start + grace || now >= deadline)) {
      marked = true;
      try {
        mark_arrival(op);
      } catch (...) {
        cancel_quietly();
        throw;
      }
    }
    if (now >= deadline) {
      cancel_quietly();
      fail(op, "", DistError::Kind::timeout);
    }
    if (now >= next_remote) {
      next_remote = now + std::chrono::milliseconds(200);
      if (auto remote = remote_abort()) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (!aborted_) abort_reason_ = *remote;
          aborted_ = true;
        }
        cancel_quietly();
        fail(op, *remote, DistError::Kind::aborted);
      }
    }
    if (spins < 100 || now - op.start < std::chrono::microseconds(500)) {  // most collectives end here
      ++spins;
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(50));  // a longer nap is latency on every collective
    }
  }
}

void CommBase::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (!store_->is_tcp()) return;
  try {
    store_->add("exit", 1);
    if (!store_->is_server() || broken()) return;
    // The store lives in this process: keep it up until every rank is done with it.
    auto deadline = Clock::now() + std::min(timeout(), std::chrono::milliseconds(10000));
    while (store_->add("exit", 0) < size_ && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } catch (...) {
  }
}

}  // namespace detail
}  // namespace tv::dist
