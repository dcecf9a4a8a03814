// Gloo backend: c10d::ProcessGroupGloo over a c10d store. Uses only the ProcessGroupGloo API that
// LibTorch 1.13 and 2.x share (Options::create(timeout), createDeviceForHostname/-Interface,
// createDefaultDevice, allreduce, allgather into per-rank views of one output tensor, broadcast,
// barrier, per-op timeouts). reduce_scatter is all_reduce of a copy + this rank's slice, because
// 1.13's ProcessGroupGloo has no reduce_scatter (W times the traffic of a real reduce-scatter;
// fine for the small tensors replays use).
// LibTorch wheels ship no gloo headers: then put engine/dist/gloo_shim on the include path (see
// gloo_shim/gloo/README.txt); without any gloo headers make_gloo throws DistError at run time.
#if __has_include(<gloo/algorithm.h>)
#define TV_GLOO_HEADERS 1
#endif

#ifdef TV_GLOO_HEADERS
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1  // the header is empty without it; LibTorch builds ship gloo
#endif
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/version.h>

#include <cstdlib>
#include <mutex>
#endif

#include <system_error>

#include "dist/detail.h"

#ifdef TV_GLOO_HEADERS
namespace tv::dist::detail {
namespace {

class GlooComm;

class GlooWork : public Work {
 public:
  GlooWork(GlooComm* comm, Op op, c10::intrusive_ptr<c10d::Work> work, std::function<at::Tensor()> finish);
  void wait() override;
  bool done() override { return state_ != 0 || work_->isCompleted(); }
  at::Tensor result() override {
    wait();
    return result_;
  }

 private:
  GlooComm* comm_;
  Op op_;
  c10::intrusive_ptr<c10d::Work> work_;
  std::function<at::Tensor()> finish_;
  at::Tensor result_;
  int state_ = 0;  // 0 pending, 1 done, 2 failed
  std::exception_ptr error_;
};

std::shared_ptr<::gloo::transport::Device> make_device(const std::string& host, bool in_process) {
  if (!host.empty()) return c10d::ProcessGroupGloo::createDeviceForHostname(host);
  if (in_process) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

class GlooComm : public CommBase {
 public:
  GlooComm(std::shared_ptr<Store> store, int rank, int size, const CommOptions& o)
      : CommBase(std::move(store), rank, size, o, "gloo") {
    Op op{"init", 0, o.timeout, Clock::now()};
    store_->set_timeout(o.timeout);  // bounds the rendezvous
    mark_init_arrival();
    try {
      auto opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
      opts->devices.push_back(make_device(o.gloo_host, !store_->is_tcp()));
      // Every rank holds its device (gloo's loop thread) before any rank connects. A rank that
      // cannot start it fails here, where the others' waits end at once (the store's abort), and not
      // inside gloo's full-mesh connect, which waits the whole timeout for each missing peer in turn.
      every_rank_reached("device", rank, size);
      opts->threads = 2;
      const auto& native = *static_cast<const c10::intrusive_ptr<c10d::Store>*>(store_->native());
      pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(native, rank, size, opts);
      // No rank leaves init (and may close its connections, as a rank with no collective to run
      // does at once) before every rank has connected: a peer still connecting would see
      // "Connection closed by peer".
      every_rank_reached("connected", rank, size);
    } catch (const DistError&) {
      throw;
    } catch (const std::bad_alloc&) {
      fail(op, "out of memory while joining the group", DistError::Kind::init);
    } catch (const std::exception& e) {
      auto* s = dynamic_cast<const std::system_error*>(&e);
      if (s && s->code() == std::errc::resource_unavailable_try_again)
        fail(op,
             std::string("could not start gloo's threads (") + e.what() +
                 "): the process reached its limit of threads (ulimit -u) or of memory for thread stacks",
             DistError::Kind::init);
      fail(op, first_line(e.what()), DistError::Kind::init);
    }
  }

  ~GlooComm() override {
    shutdown();
    pg_.reset();  // joins gloo's worker threads (an op in flight ends at gloo's own timeout)
  }

  WorkPtr all_reduce_async(at::Tensor& tensor) override {
    check(tensor, "all_reduce");
    Op op = begin("all_reduce");
    at::Tensor buf = tensor.contiguous();
    std::vector<at::Tensor> v{buf};
    c10d::AllreduceOptions ao;
    ao.timeout = op.timeout;
    auto w = launch(op, [&] { return pg_->allreduce(v, ao); });
    at::Tensor target = tensor;
    return std::make_unique<GlooWork>(this, op, w, [target, buf]() mutable {
      if (!buf.is_same(target)) target.copy_(buf);
      return target;
    });
  }

  WorkPtr all_gather_async(const at::Tensor& input) override {
    check(input, "all_gather");
    Op op = begin("all_gather");
    at::Tensor src = (input.dim() == 0 ? input.reshape({1}) : input).contiguous();
    auto sizes = src.sizes().vec();
    int64_t n = sizes[0];
    sizes[0] = n * size_;
    at::Tensor out = at::empty(sizes, src.options());
    std::vector<at::Tensor> inputs{src};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < size_; ++r) outputs[0].push_back(out.narrow(0, r * n, n));
    c10d::AllgatherOptions go;
    go.timeout = op.timeout;
    auto w = launch(op, [&] { return pg_->allgather(outputs, inputs, go); });
    return std::make_unique<GlooWork>(this, op, w, [out, src]() { return out; });
  }

  WorkPtr reduce_scatter_async(const at::Tensor& input) override {
    check(input, "reduce_scatter");
    if (input.dim() == 0 || input.size(0) % size_ != 0)
      usage("reduce_scatter", "dim 0 of the input " + shape(input) + " must be divisible by the world size " +
                                  std::to_string(size_) + " (pad the input on the caller)");
    Op op = begin("reduce_scatter");
    at::Tensor buf = input.clone(at::MemoryFormat::Contiguous);
    std::vector<at::Tensor> v{buf};
    c10d::AllreduceOptions ao;
    ao.timeout = op.timeout;
    auto w = launch(op, [&] { return pg_->allreduce(v, ao); });
    int64_t n = input.size(0) / size_;
    int64_t at_row = rank_ * n;
    return std::make_unique<GlooWork>(this, op, w, [buf, n, at_row]() { return buf.narrow(0, at_row, n).clone(); });
  }

  WorkPtr broadcast_async(at::Tensor& tensor, int root) override {
    check(tensor, "broadcast");
    if (root < 0 || root >= size_)
      usage("broadcast", "root " + std::to_string(root) + " is not a rank of a world of " + std::to_string(size_));
    Op op = begin("broadcast");
    at::Tensor buf = tensor.contiguous();
    std::vector<at::Tensor> v{buf};
    c10d::BroadcastOptions bo;
    bo.rootRank = root;
    bo.rootTensor = 0;
    bo.timeout = op.timeout;
    auto w = launch(op, [&] { return pg_->broadcast(v, bo); });
    at::Tensor target = tensor;
    return std::make_unique<GlooWork>(this, op, w, [target, buf]() mutable {
      if (!buf.is_same(target)) target.copy_(buf);
      return target;
    });
  }

  WorkPtr barrier_async() override {
    Op op = begin("barrier");
    c10d::BarrierOptions bo;
    bo.timeout = op.timeout;
    auto w = launch(op, [&] { return pg_->barrier(bo); });
    return std::make_unique<GlooWork>(this, op, w, [] { return at::Tensor(); });
  }

 private:
  // Marks this rank at `point` in the store and waits for every rank to be there (the store's abort
  // ends the wait when another rank failed first).
  void every_rank_reached(const std::string& point, int rank, int size) {
    store_->set(point + "/" + std::to_string(rank), "1");
    for (int k = 0; k < size; ++k) store_->get(point + "/" + std::to_string(k));
  }
  static std::string first_line(const std::string& s) {
    auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
  }
  static std::string shape(const at::Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
  }
  void check(const at::Tensor& t, const char* name) const {
    if (!t.defined()) usage(name, "the tensor is undefined");
    if (!t.device().is_cpu()) usage(name, "the gloo backend takes CPU tensors, got one on " + t.device().str());
    if (t.layout() != at::kStrided) usage(name, "only dense (strided) tensors are supported");
  }
  // Collectives are launched one at a time in the process: ranks in threads of one process each
  // hold a ProcessGroupGloo, and LibTorch 2.11's enqueue crashed (a tree insert inside it) when two
  // of them launched at once. Only the launch is serialised; the collectives run concurrently.
  template <class F>
  c10::intrusive_ptr<c10d::Work> launch(const Op& op, F&& f) {
    static std::mutex launching;
    try {
      std::lock_guard<std::mutex> one_at_a_time(launching);
      return f();
    } catch (const std::exception& e) {
      fail(op, first_line(e.what()));
    }
  }

  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  friend class GlooWork;
};

GlooWork::GlooWork(GlooComm* comm, Op op, c10::intrusive_ptr<c10d::Work> work, std::function<at::Tensor()> finish)
    : comm_(comm), op_(std::move(op)), work_(std::move(work)), finish_(std::move(finish)) {}

void GlooWork::wait() {
  if (state_ == 1) return;
  if (state_ == 2) std::rethrow_exception(error_);
  try {
    comm_->await(op_, [this] { return work_->isCompleted(); });
    try {
      work_->wait();
    } catch (const std::exception& e) {
      comm_->fail(op_, GlooComm::first_line(e.what()));
    }
    result_ = finish_();
    finish_ = nullptr;
    state_ = 1;
  } catch (...) {
    error_ = std::current_exception();
    state_ = 2;
    throw;
  }
}

}  // namespace

std::unique_ptr<Communicator> make_gloo(std::shared_ptr<Store> store, int rank, int size, const CommOptions& options) {
  static_assert(TORCH_VERSION_MAJOR >= 1, "LibTorch 1.13 or 2.x");
  return std::make_unique<GlooComm>(std::move(store), rank, size, options);
}

}  // namespace tv::dist::detail
#else  // no gloo headers

namespace tv::dist::detail {
std::unique_ptr<Communicator> make_gloo(std::shared_ptr<Store>, int, int, const CommOptions& options) {
  throw DistError(DistError::Kind::init,
                  "tv.dist: the gloo backend is not in this build: this LibTorch ships no gloo headers; add "
                  "engine/dist/gloo_shim to tv_engine's include directories (see gloo_shim/gloo/README.txt)",
                  "init", options.timeout);
}
}  // namespace tv::dist::detail
#endif  // TV_GLOO_HEADERS
