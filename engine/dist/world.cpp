// World: ranks as threads over an in-process store.
#include "dist/world.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <sstream>
#include <system_error>
#include <thread>

#include "dist/detail.h"
#include "dist/store.h"

namespace tv::dist {

World::World(int size, Backend backend, CommOptions options)
    : size_(size), backend_(backend), options_(std::move(options)) {
  if (size < 1) throw DistError(DistError::Kind::usage, "tv.dist: a World needs at least one rank");
}

namespace {

// One line naming what ran out, for the errors that mean the machine's limits were reached.
std::string exhaustion_message(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory (std::bad_alloc)";
  if (auto* s = dynamic_cast<const std::system_error*>(&e); s && s->code() == std::errc::resource_unavailable_try_again)
    return std::string("could not start a thread (") + s->what() +
           "): the process reached its limit of threads (ulimit -u) or of memory for thread stacks";
  return detail::message_of(e);
}

// What the rank threads share. It is owned jointly by run_all and the threads, so a rank that
// was abandoned (hung) can still end safely after run_all (and the World) are gone.
struct Shared {
  int size = 0;
  Backend backend = Backend::gloo;
  CommOptions options;
  std::shared_ptr<Store> store;
  std::mutex mu;
  std::condition_variable changed;
  std::vector<Communicator*> comms;
  std::vector<RankResult> results;
  std::vector<bool> ended;
  int ended_count = 0;
  std::optional<std::chrono::steady_clock::time_point> first_end;
  enum class Gate { closed, open, cancelled } gate = Gate::closed;
  std::string first_reason;  // set when the first rank failed

  // Records rank r's failure and aborts every other live communicator (under the lock, so none
  // is destroyed meanwhile).
  void fail(int r, const std::string& what, bool consequence) {
    std::lock_guard<std::mutex> lock(mu);
    results[r].ok = false;
    results[r].error = what;
    results[r].consequence = consequence;
    std::string reason = "rank " + std::to_string(r) + " failed: " + what;
    if (first_reason.empty()) first_reason = reason;
    for (size_t i = 0; i < comms.size(); ++i)
      if (static_cast<int>(i) != r && comms[i]) comms[i]->abort(reason);
    store->abort(reason);  // ranks still joining the group stop waiting for this one
  }

  // Whether a rank's communicator was broken by another rank's failure before its own.
  bool aborted_by_another(const Communicator* comm) {
    std::lock_guard<std::mutex> lock(mu);
    return comm && comm->broken() && !first_reason.empty();
  }
};

void rank_main(Shared* s, const World::RankFn& fn, int r) {
  {
    std::unique_lock<std::mutex> lock(s->mu);
    s->changed.wait(lock, [&] { return s->gate != Shared::Gate::closed; });
    if (s->gate == Shared::Gate::cancelled) return;
  }
  std::unique_ptr<Communicator> comm;
  try {
    CommOptions o = s->options;
    if (s->backend == Backend::nccl) o.device = r;
    comm = make_communicator(s->backend, s->store, r, s->size, o);
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->comms[r] = comm.get();
      if (!s->first_reason.empty()) comm->abort(s->first_reason);
    }
    fn(r, *comm);
  } catch (const DistError& e) {
    // Joining the group fails as a consequence when another rank failed first (the store was aborted).
    s->fail(r, e.what(),
            e.kind() == DistError::Kind::aborted || e.kind() == DistError::Kind::broken ||
                (!comm && s->store->aborted()));
  } catch (const std::exception& e) {
    // Another error type can still be the abort's consequence: an executor rule's ExecError
    // that wraps the DistError of a collective run after another rank failed.
    s->fail(r, exhaustion_message(e), s->aborted_by_another(comm.get()));
  } catch (...) {
    s->fail(r, "unknown exception", s->aborted_by_another(comm.get()));
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->comms[r] = nullptr;
  }
  try {
    comm.reset();
  } catch (...) {
  }
}

}  // namespace

std::vector<RankResult> World::run_all(const RankFn& fn) {
  auto s = std::make_shared<Shared>();
  s->size = size_;
  s->backend = backend_;
  s->options = options_;
  s->store = Store::in_process(options_.timeout);
  s->comms.assign(size_, nullptr);
  s->results.resize(size_);
  s->ended.assign(size_, false);
  for (int r = 0; r < size_; ++r) s->results[r].rank = r;

  // Every thread is started before any rank joins the group: a thread that cannot start (thread
  // or memory limit) then cancels the others before they wait for it.
  auto shared_fn = std::make_shared<const RankFn>(fn);
  std::vector<std::thread> threads;
  threads.reserve(size_);
  std::string not_started;
  for (int r = 0; r < size_ && not_started.empty(); ++r) {
    try {
      threads.emplace_back([s, shared_fn, r] {
        rank_main(s.get(), *shared_fn, r);
        std::lock_guard<std::mutex> lock(s->mu);
        s->ended[r] = true;
        if (++s->ended_count == 1) s->first_end = std::chrono::steady_clock::now();
        s->changed.notify_all();
      });
    } catch (const std::exception& e) {
      not_started = "tv.dist: World(" + std::to_string(size_) + " ranks, " + backend_name(backend_) +
                    "): the thread of rank " + std::to_string(r) + " could not start: " + exhaustion_message(e) +
                    "; run fewer ranks or raise the limit";
    }
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->gate = not_started.empty() ? Shared::Gate::open : Shared::Gate::cancelled;
  }
  s->changed.notify_all();
  if (!not_started.empty()) {
    for (auto& t : threads) t.join();
    for (auto& r : s->results) {
      r.ok = false;
      r.error = not_started;
      r.consequence = r.rank != static_cast<int>(threads.size());
    }
    return s->results;
  }

  // Waits for every rank; with abandon_hung_ranks, only up to the timeout after the first one ended.
  {
    std::unique_lock<std::mutex> lock(s->mu);
    auto all_ended = [&] { return s->ended_count == size_; };
    if (!abandon_hung_) {
      s->changed.wait(lock, all_ended);
    } else {
      s->changed.wait(lock, [&] { return all_ended() || s->first_end.has_value(); });
      s->changed.wait_until(lock, *s->first_end + options_.timeout, all_ended);
      for (int r = 0; r < size_; ++r) {
        if (s->ended[r]) continue;
        auto& res = s->results[r];
        res.ok = false;
        res.consequence = false;
        res.error = "tv.dist: rank " + std::to_string(r) + " did not finish within " +
                    std::to_string(options_.timeout.count()) +
                    " ms after another rank ended (hung outside collectives); it was abandoned and runs on detached";
        if (s->first_reason.empty()) s->first_reason = "rank " + std::to_string(r) + " hung";
        if (s->comms[r]) s->comms[r]->abort(res.error);
      }
    }
  }
  std::vector<RankResult> results;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    results = s->results;
    for (int r = 0; r < size_; ++r) {
      if (s->ended[r])
        threads[r].join();  // ended: the join returns at once
      else
        threads[r].detach();
    }
  }
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

}  // namespace tv::dist
