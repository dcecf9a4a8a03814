// Smoke driver for engine/dist outside GoogleTest (used to check the GPU machine's LibTorch 2.x +
// NCCL build): gloo worlds of 2 and 3 ranks, a missing-rank timeout, and (with TV_HAVE_CUDA) an
// NCCL world over min(GPUs, 4) devices. Exit code 0 when every check passed.
#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "dist/world.h"

using namespace tv::dist;

static int failures = 0;
#define SMOKE_CHECK(c)                                                  \
  do {                                                            \
    if (!(c)) {                                                   \
      std::fprintf(stderr, "CHECK failed line %d: %s\n", __LINE__, #c); \
      ++failures;                                                 \
    }                                                             \
  } while (0)

static void collectives(Backend b, int W) {
  CommOptions o;
  o.timeout = std::chrono::seconds(30);
  World world(W, b, o);
  world.run([W, b](int rank, Communicator& comm) {
    auto opts = at::TensorOptions().dtype(at::kFloat);
    if (b == Backend::nccl) opts = opts.device(at::Device(at::kCUDA, rank));
    at::Tensor t = at::full({1000}, double(rank + 1), opts);
    comm.all_reduce(t);
    SMOKE_CHECK(at::equal(t.cpu(), at::full({1000}, W * (W + 1) / 2.0)));
    at::Tensor g = comm.all_gather(at::full({2, 3}, double(rank), opts));
    SMOKE_CHECK(g.size(0) == 2 * W && at::equal(g.cpu().select(1, 0), at::arange(W, at::kFloat).repeat_interleave(2)));
    at::Tensor rs = comm.reduce_scatter(at::ones({2 * W, 5}, opts));
    SMOKE_CHECK(at::equal(rs.cpu(), at::full({2, 5}, double(W))));
    at::Tensor x = at::full({7}, double(rank), opts);
    comm.broadcast(x, W - 1);
    SMOKE_CHECK(at::equal(x.cpu(), at::full({7}, double(W - 1))));
    auto w = comm.all_reduce_async(t);
    comm.barrier_async()->wait();
    w->wait();
  });
  std::printf("%s W=%d collectives ok\n", backend_name(b), W);
}

static void missing_rank(Backend b, int W) {
  CommOptions o;
  o.timeout = std::chrono::seconds(2);
  std::atomic<int> reported{0};
  World world(W, b, o);
  auto results = world.run_all([&](int rank, Communicator& comm) {
    if (rank == W - 1) {
      while (reported.load() < W - 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    auto opts = at::TensorOptions();
    if (b == Backend::nccl) opts = opts.device(at::Device(at::kCUDA, rank));
    at::Tensor t = at::ones({16}, opts);
    try {
      comm.all_reduce(t);
      SMOKE_CHECK(false);
    } catch (const DistError& e) {
      std::printf("rank %d: %s\n", rank, e.what());
      SMOKE_CHECK(e.missing_ranks() == std::vector<int>{W - 1});
    }
    reported++;
  });
  for (auto& r : results) SMOKE_CHECK(r.ok);
}

int main() {
  collectives(Backend::gloo, 2);
  collectives(Backend::gloo, 3);
  missing_rank(Backend::gloo, 3);
#ifdef TV_HAVE_CUDA
  int gpus = static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
  std::printf("GPUs: %d\n", gpus);
  for (int W = 1; W <= std::min(gpus, 4); W *= 2) collectives(Backend::nccl, W);
  if (gpus >= 2) missing_rank(Backend::nccl, 2);
#endif
  std::printf(failures ? "FAILED (%d)\n" : "ALL OK\n", failures);
  return failures ? 1 : 0;
}
