// NCCL backend with the raw NCCL API: one ncclComm_t per rank (one CUDA device each), the unique id
// passed through the store (rank 0 writes "nccl_id"). Collectives run on a per-rank stream that
// first waits for the caller's current stream; wait() polls the completion event and NCCL's async
// error until done or the deadline; a timeout, an NCCL error or an abort calls ncclCommAbort and
// throws DistError. wait_on_stream() only makes the caller's stream wait for the completion event
// and hands the event to a watchdog thread, which polls it the same way (timeout, NCCL error,
// aborts) and aborts the communicator on failure; that error is thrown by the next blocking wait
// (which first lets the watchdog finish what it watches) or collective. The communicator handle is
// used under one mutex, so that the watchdog's abort never races an enqueue. With NCCL >= 2.14 the
// communicator is non-blocking (init and enqueue can be timed out too) unless TV_NCCL_BLOCKING=1
// asks for the lower per-call latency of a blocking one; older NCCL inits with a blocking
// ncclCommInitRank. Never uses NVLS/multicast (sets NCCL_NVLS_ENABLE=0 unless the environment
// already chose). Built only with TV_HAVE_CUDA.
#ifdef TV_HAVE_CUDA
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "dist/detail.h"

#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
#define TV_NCCL_NONBLOCKING 1
#endif

namespace tv::dist::detail {
namespace {

std::string cuda_msg(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cuda_msg(e));
}

// TV_NCCL_BLOCKING=1: a blocking communicator. Each collective then costs about 90 us less (33.7
// against 124 us for 1 MiB on two H200s: NCCL hands a non-blocking communicator's launches to a
// thread of its own), but joining the group and a collective's first connection can no longer
// be timed out: a rank that never comes hangs the others there.
bool blocking_requested() {
  const char* v = std::getenv("TV_NCCL_BLOCKING");
  return v && *v && std::string(v) != "0";
}

bool in_progress(ncclResult_t r) {
#ifdef TV_NCCL_NONBLOCKING
  return r == ncclInProgress;
#else
  (void)r;
  return false;
#endif
}

bool nccl_type(at::ScalarType t, ncclDataType_t* out) {
  switch (t) {
    case at::kFloat: *out = ncclFloat32; return true;
    case at::kDouble: *out = ncclFloat64; return true;
    case at::kHalf: *out = ncclFloat16; return true;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case at::kBFloat16: *out = ncclBfloat16; return true;
#endif
    case at::kInt: *out = ncclInt32; return true;
    case at::kLong: *out = ncclInt64; return true;
    case at::kChar: *out = ncclInt8; return true;
    case at::kByte: *out = ncclUint8; return true;
    case at::kBool: *out = ncclUint8; return true;  // not for sums (checked by the caller)
    default: return false;
  }
}

std::string shape(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

class NcclComm;

class NcclWork : public Work {
 public:
  NcclWork(NcclComm* comm, Op op, cudaEvent_t done, std::vector<at::Tensor> keep, std::function<at::Tensor()> finish)
      : comm_(comm), op_(std::move(op)), done_(done), keep_(std::move(keep)), finish_(std::move(finish)) {}
  ~NcclWork() override;
  void wait() override;
  void wait_on_stream() override;
  bool done() override {
    if (state_ != 0) return true;
    return cudaEventQuery(done_) != cudaErrorNotReady;
  }
  at::Tensor result() override {
    wait();
    return result_;
  }

 private:
  NcclComm* comm_;
  Op op_;
  cudaEvent_t done_;
  std::vector<at::Tensor> keep_;  // alive until the collective finished on the device
  std::function<at::Tensor()> finish_;
  at::Tensor result_;
  int state_ = 0;  // 0 pending, 1 done, 2 failed
  std::exception_ptr error_;
};

class NcclComm : public CommBase {
 public:
  NcclComm(std::shared_ptr<Store> store, int rank, int size, const CommOptions& o)
      : CommBase(std::move(store), rank, size, o, "nccl") {
    static std::once_flag nvls_once;
    std::call_once(nvls_once, [] { ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); });
    Op op{"init", 0, o.timeout, Clock::now()};
    store_->set_timeout(o.timeout);
    mark_init_arrival();
    try {
      int count = 0;
      cudaError_t ce = cudaGetDeviceCount(&count);
      if (ce != cudaSuccess || count == 0)
        fail(op, "no CUDA device is visible" + (ce != cudaSuccess ? ": " + cuda_msg(ce) : std::string()),
             DistError::Kind::init);
      device_ = o.device >= 0 ? o.device : rank;
      options_.device = device_;  // subgroups on the same device
      if (device_ >= count)
        fail(op,
             "rank " + std::to_string(rank) + " needs CUDA device " + std::to_string(device_) + " but only " +
                 std::to_string(count) + " are visible (one device per rank)",
             DistError::Kind::init);
      cuda_check(cudaSetDevice(device_), "cudaSetDevice");

      ncclUniqueId id;
      if (rank == 0) {
        check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        store_->set("nccl_id", std::string(reinterpret_cast<const char*>(&id), sizeof id));
      } else {
        std::string s = store_->get("nccl_id");  // DistError after the store timeout
        if (s.size() != sizeof id) throw std::runtime_error("the NCCL unique id in the store has a bad size");
        std::memcpy(&id, s.data(), sizeof id);
      }
#ifdef TV_NCCL_NONBLOCKING
      if (blocking_requested()) {
        check_nccl(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");  // no timeout
      } else {
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.blocking = 0;
        ncclResult_t r = ncclCommInitRankConfig(&comm_, size, id, rank, &cfg);
        if (r != ncclSuccess && !in_progress(r)) throw std::runtime_error("ncclCommInitRankConfig: " + nccl_msg(r));
        await(op, [this] { return ready(); }, [this] { abort_comm(); });
      }
#else
      check_nccl(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");  // blocking, no timeout
#endif
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      cuda_check(cudaMalloc(&scratch_, sizeof(float)), "cudaMalloc");
      cuda_check(cudaMemset(scratch_, 0, sizeof(float)), "cudaMemset");
    } catch (const DistError& e) {
      abort_comm();
      release();
      if (e.collective() == "init") throw;
      fail(op, e.what(), DistError::Kind::init);  // e.g. the id never appeared: names rank 0
    } catch (const std::exception& e) {
      abort_comm();
      release();
      fail(op, e.what(), DistError::Kind::init);
    }
  }

  ~NcclComm() override {
    shutdown();
    release();
  }

  WorkPtr all_reduce_async(at::Tensor& tensor) override {
    ncclDataType_t type = check(tensor, "all_reduce", /*sum=*/true);
    Op op = begin("all_reduce");
    at::Tensor buf = tensor.contiguous();
    at::Tensor target = tensor;
    return launch(
        op, {buf},
        [&] { return ncclAllReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, ncclSum, comm_, stream_); },
        [target, buf]() mutable {
          if (!buf.is_same(target)) target.copy_(buf);
          return target;
        });
  }

  WorkPtr all_gather_async(const at::Tensor& input) override {
    ncclDataType_t type = check(input, "all_gather", false);
    Op op = begin("all_gather");
    at::Tensor src = (input.dim() == 0 ? input.reshape({1}) : input).contiguous();
    auto sizes = src.sizes().vec();
    sizes[0] *= size_;
    at::Tensor out = at::empty(sizes, src.options());
    return launch(
        op, {src, out}, [&] { return ncclAllGather(src.data_ptr(), out.data_ptr(), src.numel(), type, comm_, stream_); },
        [out]() { return out; });
  }

  WorkPtr reduce_scatter_async(const at::Tensor& input) override {
    ncclDataType_t type = check(input, "reduce_scatter", true);
    if (input.dim() == 0 || input.size(0) % size_ != 0)
      usage("reduce_scatter", "dim 0 of the input " + shape(input) + " must be divisible by the world size " +
                                  std::to_string(size_) + " (pad the input on the caller)");
    Op op = begin("reduce_scatter");
    at::Tensor src = input.contiguous();
    auto sizes = src.sizes().vec();
    sizes[0] /= size_;
    at::Tensor out = at::empty(sizes, src.options());
    return launch(
        op, {src, out},
        [&] { return ncclReduceScatter(src.data_ptr(), out.data_ptr(), out.numel(), type, ncclSum, comm_, stream_); },
        [out]() { return out; });
  }

  WorkPtr broadcast_async(at::Tensor& tensor, int root) override {
    ncclDataType_t type = check(tensor, "broadcast", false);
    if (root < 0 || root >= size_)
      usage("broadcast", "root " + std::to_string(root) + " is not a rank of a world of " + std::to_string(size_));
    Op op = begin("broadcast");
    at::Tensor buf = tensor.contiguous();
    at::Tensor target = tensor;
    return launch(
        op, {buf},
        [&] { return ncclBroadcast(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, root, comm_, stream_); },
        [target, buf]() mutable {
          if (!buf.is_same(target)) target.copy_(buf);
          return target;
        });
  }

  void settle() override { drain_watchdog(); }

  WorkPtr barrier_async() override {
    Op op = begin("barrier");
    return launch(
        op, {}, [&] { return ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_); },
        [] { return at::Tensor(); });
  }

  // True when the communicator has no operation in progress; throws on an NCCL error.
  bool ready() {
    std::lock_guard lock(comm_mu_);
    if (!comm_) throw std::runtime_error("the NCCL communicator was aborted");
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) throw std::runtime_error("ncclCommGetAsyncError: " + nccl_msg(r));
    if (in_progress(state)) return false;
    if (state != ncclSuccess) throw std::runtime_error("NCCL error: " + nccl_msg(state));
    return true;
  }

  void abort_comm() {
    std::lock_guard lock(comm_mu_);
    if (!comm_) return;
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    ncclCommAbort(comm_);  // stops kernels in flight; the communicator is gone
    comm_ = nullptr;
  }

  int device() const { return device_; }

  // Waits on the host until the collective whose completion event is `done` finished: NCCL's async
  // error and the event polled through await() (timeout, aborts), the communicator aborted on failure.
  void await_event(const Op& op, cudaEvent_t done) {
    await(
        op,
        [&] {
          ready();
          cudaError_t e = cudaEventQuery(done);
          if (e == cudaSuccess) return true;
          if (e == cudaErrorNotReady) return false;
          throw std::runtime_error("CUDA error while waiting: " + cuda_msg(e));
        },
        [this] { abort_comm(); });
  }

  // Makes the caller's current stream on this communicator's device wait for `done`.
  cudaError_t order_current_stream_after(cudaEvent_t done) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    return cudaStreamWaitEvent(c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream(), done, 0);
  }

  // Hands a collective's completion event to the watchdog, which destroys it once the collective
  // finished (or failed: then it keeps the error and aborts the communicator).
  void watch(const Op& op, cudaEvent_t done) {
    std::lock_guard lock(watch_mu_);
    if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch_loop(); });
    watched_.push_back({op, done});
    watch_cv_.notify_all();
  }

  // Waits until the watchdog finished everything handed to it; throws the first error it found.
  void drain_watchdog() {
    std::unique_lock lock(watch_mu_);
    watch_cv_.wait(lock, [this] { return watched_.empty(); });
    if (watch_error_) std::rethrow_exception(watch_error_);
  }

  void rethrow_watchdog_error() {
    std::lock_guard lock(watch_mu_);
    if (watch_error_) std::rethrow_exception(watch_error_);
  }

 private:
  struct Watched {
    Op op;
    cudaEvent_t done;
  };

  void watch_loop() {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    std::unique_lock lock(watch_mu_);
    for (;;) {
      watch_cv_.wait(lock, [this] { return watch_stop_ || !watched_.empty(); });
      if (watched_.empty()) return;  // stopping, nothing left
      Watched w = watched_.front();
      lock.unlock();
      std::exception_ptr error;
      try {
        await_event(w.op, w.done);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      cudaEventDestroy(w.done);
      watched_.pop_front();
      if (error) {
        if (!watch_error_) watch_error_ = error;
        for (auto& rest : watched_) cudaEventDestroy(rest.done);  // the communicator is aborted
        watched_.clear();
      }
      watch_cv_.notify_all();
    }
  }

  void stop_watchdog() {
    {
      std::lock_guard lock(watch_mu_);
      watch_stop_ = true;
      watch_cv_.notify_all();
    }
    if (watchdog_.joinable()) watchdog_.join();
  }

  std::string nccl_msg(ncclResult_t r) const {
    std::string s = ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
    if (comm_) {
      const char* last = ncclGetLastError(comm_);
      if (last && *last) s += std::string(": ") + last;
    }
#endif
    return s;
  }
  void check_nccl(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + nccl_msg(r));
  }

  ncclDataType_t check(const at::Tensor& t, const char* name, bool sum) const {
    if (!t.defined()) usage(name, "the tensor is undefined");
    if (!t.is_cuda() || t.get_device() != device_)
      usage(name, "the nccl backend on rank " + std::to_string(rank_) + " takes tensors on cuda:" +
                      std::to_string(device_) + ", got one on " + t.device().str());
    if (t.layout() != at::kStrided) usage(name, "only dense (strided) tensors are supported");
    ncclDataType_t type;
    if (!nccl_type(t.scalar_type(), &type) || (sum && t.scalar_type() == at::kBool))
      usage(name, std::string("dtype ") + c10::toString(t.scalar_type()) + " is not supported by nccl " +
                      (sum ? "sums" : "collectives"));
    return type;
  }

  // Enqueues `call` on the communicator's stream after the caller's stream. A failure after an
  // earlier collective failed in the watchdog is reported as that collective's (the cause).
  template <class F>
  WorkPtr launch(const Op& op, std::vector<at::Tensor> keep, F&& call, std::function<at::Tensor()> finish) {
    try {
      return enqueue(op, std::move(keep), std::forward<F>(call), std::move(finish));
    } catch (...) {
      auto own = std::current_exception();
      drain_watchdog();
      std::rethrow_exception(own);
    }
  }

  template <class F>
  WorkPtr enqueue(const Op& op, std::vector<at::Tensor> keep, F&& call, std::function<at::Tensor()> finish) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    cudaEvent_t done = nullptr;
    bool pending = false;
    try {
      cudaStream_t current = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
      cudaEvent_t ready_ev = nullptr;
      cuda_check(cudaEventCreateWithFlags(&ready_ev, cudaEventDisableTiming), "cudaEventCreate");
      cudaError_t e1 = cudaEventRecord(ready_ev, current);
      cudaError_t e2 = e1 == cudaSuccess ? cudaStreamWaitEvent(stream_, ready_ev, 0) : e1;
      cudaEventDestroy(ready_ev);
      cuda_check(e2, "ordering the collective after the current stream");
      rethrow_watchdog_error();
      std::lock_guard lock(comm_mu_);
      if (!comm_) throw std::runtime_error("the NCCL communicator was aborted");
      ncclResult_t r = call();
      if (r != ncclSuccess && !in_progress(r)) throw std::runtime_error(nccl_msg(r));
      pending = in_progress(r);
    } catch (const DistError&) {
      abort_comm();
      throw;
    } catch (const std::exception& e) {
      abort_comm();
      fail(op, e.what());
    }
    if (pending) await(op, [this] { return ready(); }, [this] { abort_comm(); });  // enqueue finishing
    try {
      cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
      cuda_check(cudaEventRecord(done, stream_), "cudaEventRecord");
    } catch (const std::exception& e) {
      if (done) cudaEventDestroy(done);
      abort_comm();
      fail(op, e.what());
    }
    return std::make_unique<NcclWork>(this, op, done, std::move(keep), std::move(finish));
  }

  void release() {
    stop_watchdog();
    if (device_ < 0) return;  // nothing was created
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    if (comm_) {
      bool clean = !broken();
      auto deadline = Clock::now() + timeout();
      if (clean && stream_) {
        while (cudaStreamQuery(stream_) == cudaErrorNotReady && Clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        clean = cudaStreamQuery(stream_) == cudaSuccess;
      }
#ifdef TV_NCCL_NONBLOCKING
      if (clean) {
        ncclResult_t r = ncclCommFinalize(comm_);
        clean = r == ncclSuccess || in_progress(r);
        ncclResult_t state = ncclInProgress;
        while (clean && Clock::now() < deadline) {
          if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) {
            clean = false;
            break;
          }
          if (!in_progress(state)) break;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        clean = clean && state == ncclSuccess;
      }
#endif
      if (clean)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    if (scratch_) cudaFree(scratch_);
    scratch_ = nullptr;
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  int device_ = -1;
  std::mutex comm_mu_;  // guards the use of comm_ (enqueue, error query, abort)
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float* scratch_ = nullptr;

  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  std::deque<Watched> watched_;
  std::exception_ptr watch_error_;
  bool watch_stop_ = false;
  std::thread watchdog_;
  friend class NcclWork;
};

NcclWork::~NcclWork() {
  if (state_ == 0) {
    try {
      wait();
    } catch (...) {
    }
  }
  if (done_) cudaEventDestroy(done_);
}

void NcclWork::wait() {
  if (state_ == 1) return;
  if (state_ == 2) std::rethrow_exception(error_);
  try {
    comm_->drain_watchdog();  // an earlier collective's failure is reported as itself
    comm_->await_event(op_, done_);
    comm_->order_current_stream_after(done_);  // the event has completed: this cannot hold the stream
    result_ = finish_();
    finish_ = nullptr;
    keep_.clear();
    state_ = 1;
  } catch (...) {
    error_ = std::current_exception();
    state_ = 2;
    throw;
  }
}

void NcclWork::wait_on_stream() {
  if (state_ != 0) return wait();
  try {
    comm_->rethrow_watchdog_error();
    cudaError_t e = comm_->order_current_stream_after(done_);
    if (e != cudaSuccess) {
      comm_->abort_comm();
      comm_->fail(op_, "making the stream wait for the collective: " + cuda_msg(e));
    }
    // The tensors were allocated on the caller's stream, which now runs after the collective: the
    // allocator may reuse them for later work on it.
    result_ = finish_();
    finish_ = nullptr;
    keep_.clear();
    comm_->watch(op_, done_);
    done_ = nullptr;
    state_ = 1;
  } catch (...) {
    error_ = std::current_exception();
    state_ = 2;
    throw;
  }
}

}  // namespace

std::unique_ptr<Communicator> make_nccl(std::shared_ptr<Store> store, int rank, int size, const CommOptions& options) {
  return std::make_unique<NcclComm>(std::move(store), rank, size, options);
}

}  // namespace tv::dist::detail

#endif  // TV_HAVE_CUDA
