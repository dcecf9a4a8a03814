// GPU tests: what only a CUDA machine can check, compiled everywhere and skipped with the reason
// where no GPU is present (CI). DDP and FSDP orders on two GPUs through NCCL against the eager
// reference, CUDA-event timings in the capture, a replay that runs out of GPU memory (reported,
// capture still written), the step replayed as a CUDA graph, and the device check's messages and
// the CPU answer to a CUDA graph (which run everywhere).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "capture/capture.h"
#include "dist/world.h"
#include "exec/device_check.h"
#include "exec/executor.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "session/run.h"
#include "replay/eager.h"
#include "replay/module_view.h"
#include "replay/step.h"

namespace tv {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

RunRequest two_orders(const std::string& model, const std::string& transform, int world) {
  RunRequest r;
  r.model = model;
  for (auto order : {std::vector<std::string>{"jit", transform}, std::vector<std::string>{transform, "jit"}}) {
    PipelineSpec spec;
    spec.order = order;
    spec.world_size = world;
    spec.device = "cuda:0";
    r.pipelines.push_back(spec);
  }
  return r;
}

TEST(GpuWorld, DdpAndFsdpOrdersAreEquivalentOnTwoGpus) {
  if (auto why = exec::device_unavailable("cuda:0", 2); !why.empty()) GTEST_SKIP() << "needs 2 GPUs: " << why;
  for (std::string model : {"mlp", "gpt"})
    for (std::string transform : {"ddp", "fsdp"}) {
      SCOPED_TRACE(model + " " + transform);
      Capture c = run_pipelines(two_orders(model, transform, 2));
      ASSERT_EQ(c.pipelines.size(), 2u);
      for (const auto& p : c.pipelines) {
        ASSERT_TRUE(p.error.empty()) << p.error;
        ASSERT_TRUE(p.replay);
        ASSERT_EQ(p.replay->ranks.size(), 2u);
        for (const auto& r : p.replay->ranks) {
          EXPECT_TRUE(r.pass()) << p.spec.label() << " rank " << r.rank << ": " << r.error;
          EXPECT_FALSE(r.gradients.empty());
          ASSERT_FALSE(r.timings.empty());
          for (const auto& t : r.timings) {
            EXPECT_TRUE(t.device_timer) << t.symbol;  // CUDA events on a CUDA device
            EXPECT_GE(t.microseconds, 0.0);
          }
        }
      }
      EXPECT_EQ(c.comparisons.front().verdict, Verdict::equivalent) << c.comparisons.front().why;
    }
}

// A rank that fails between its forward and its backward: the other rank's backward leaves its
// all-reduce on the device stream, and settling it reports the failure: no hang, and no gradients
// that were never reduced.
TEST(GpuWorld, RankFailingBeforeItsBackwardIsReportedByTheOther) {
  if (auto why = exec::device_unavailable("cuda:0", 2); !why.empty()) GTEST_SKIP() << "needs 2 GPUs: " << why;
  dist::CommOptions options;
  options.timeout = std::chrono::seconds(20);
  dist::World world(2, dist::Backend::nccl, options);
  auto start = std::chrono::steady_clock::now();
  auto results = world.run_all([](int rank, dist::Communicator& comm) {
    std::string device = "cuda:" + std::to_string(rank);
    auto module = jit::make_model("mlp", {{"device", device}});
    PipelineSpec spec;
    spec.order = {"jit", "ddp"};
    spec.world_size = 2;
    spec.device = device;
    TransformContext context;
    context.world_size = 2;
    context.rank = rank;
    context.broadcast_from_rank0 = [&comm](at::Tensor& t) { comm.broadcast(t, 0); };
    context.device = *Device::parse(device);
    auto built = build_pipeline(module, ValidatedOrder(spec.order), context);
    JitModuleView view(module);
    exec::ExecOptions o;
    o.device = context.device;
    o.module = &view;
    o.user = &comm;
    exec::Executor executor(o);
    std::vector<at::Tensor> inputs;
    for (const auto& i : module.inputs) inputs.push_back(*i.value);
    auto f = step_forward(executor, built.stages, inputs);
    if (rank == 1) throw std::runtime_error("rank 1 gives up before its backward");
    step_backward(executor, module, built.stages, f.saved, make_cotangents(f.outputs, 1));
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[1].ok);
  EXPECT_TRUE(contains(results[1].error, "gives up")) << results[1].error;
  EXPECT_FALSE(results[0].ok) << "rank 0's backward returned gradients that were never reduced";
  EXPECT_TRUE(results[0].consequence) << results[0].error;
}

// A gpt whose logits alone take about 137 GB (batch 64 x seq 8192 x vocab 65536 floats): the replay
// runs out of memory; the error says so and the capture of what ran (the stages) is still written.
TEST(GpuReplay, OutOfMemoryIsReportedAndTheCaptureIsWritten) {
  if (auto why = exec::device_unavailable("cuda:0", 1); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  RunRequest r;
  r.model = "gpt";
  r.params = {{"layers", "1"}, {"batch", "64"}, {"seq", "8192"}, {"vocab", "65536"}};
  PipelineSpec spec;
  spec.order = {"jit"};
  spec.device = "cuda:0";
  r.pipelines = {spec};
  Capture c = run_pipelines(r);
  const auto& p = c.pipelines.front();
  ASSERT_TRUE(p.error.empty()) << p.error;  // the pipeline was built; the replay failed
  ASSERT_TRUE(p.replay);
  const auto& rank = p.replay->ranks.front();
  EXPECT_FALSE(rank.pass());
  EXPECT_TRUE(contains(rank.error, "GPU out of memory")) << rank.error;
  EXPECT_TRUE(contains(rank.error, "--param")) << rank.error;  // how to fix it
  EXPECT_TRUE(p.stages.last(TraceKind::backward));
  auto path = std::filesystem::temp_directory_path() / "tv_gpu_oom.tvz.json";
  save_capture(c, path.string());
  Capture back = load_capture(path.string());
  EXPECT_EQ(back.pipelines.front().replay->ranks.front().error, rank.error);
  std::filesystem::remove(path);
}

RunRequest gpt_with_cuda_graph(const std::string& device) {
  RunRequest r;
  r.model = "gpt";
  r.params = {{"layers", "4"}};
  PipelineSpec spec;
  spec.order = {"jit"};
  spec.device = device;
  r.pipelines = {spec};
  r.cuda_graph_steps = 3;
  return r;
}

TEST(GpuReplay, CudaGraphReplaysTheStepWithTheSameNumbers) {
  if (auto why = exec::device_unavailable("cuda:0", 1); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  Capture c = run_pipelines(gpt_with_cuda_graph("cuda:0"));
  const auto& p = c.pipelines.front();
  ASSERT_TRUE(p.error.empty()) << p.error;
  const auto& rank = p.replay->ranks.front();
  ASSERT_TRUE(rank.pass()) << rank.error;
  ASSERT_TRUE(rank.cuda_graph);
  const auto& g = *rank.cuda_graph;
  ASSERT_TRUE(g.ran) << g.error;
  EXPECT_GT(g.step_ms, 0);
  EXPECT_GT(g.graph_ms, 0);
  EXPECT_LE(g.max_abs_difference, 1e-4);  // the same kernels, replayed
  EXPECT_TRUE(g.matches()) << g.describe();
  auto path = std::filesystem::temp_directory_path() / "tv_gpu_graph.tvz.json";
  save_capture(c, path.string());
  auto back = load_capture(path.string()).pipelines.front().replay->ranks.front().cuda_graph;
  ASSERT_TRUE(back);
  EXPECT_EQ(back->graph_ms, g.graph_ms);
  std::filesystem::remove(path);
}

// Runs everywhere: on the CPU the replay still passes and says why there is no graph.
TEST(GpuReplay, CudaGraphOnCpuSaysWhyNot) {
  Capture c = run_pipelines(gpt_with_cuda_graph("cpu"));
  const auto& rank = c.pipelines.front().replay->ranks.front();
  EXPECT_TRUE(rank.pass()) << rank.error;
  ASSERT_TRUE(rank.cuda_graph);
  EXPECT_FALSE(rank.cuda_graph->ran);
  EXPECT_TRUE(contains(rank.cuda_graph->error, "--device cuda")) << rank.cuda_graph->error;
}

// Runs everywhere: without a GPU the message names the missing CUDA; with GPUs, asking for one
// rank more than there are GPUs names both numbers. Either way the capture holds the error.
TEST(GpuDevices, UnavailableDeviceIsAClearErrorBeforeAnyWork) {
  int gpus = exec::visible_gpus();
  RunRequest r = two_orders("linear", "ddp", gpus + 1);
  Capture c = run_pipelines(r);
  for (const auto& p : c.pipelines) {
    EXPECT_FALSE(p.replay);
    if (gpus == 0)
      EXPECT_TRUE(contains(p.error, "--device cuda:0") && contains(p.error, "--device cpu")) << p.error;
    else
      EXPECT_TRUE(contains(p.error, "needs one GPU per rank (" + std::to_string(gpus + 1) + ")") &&
                  contains(p.error, std::to_string(gpus) + " GPU"))
          << p.error;
  }
  EXPECT_EQ(c.comparisons.front().verdict, Verdict::not_comparable);
  EXPECT_EQ(exec::device_unavailable("cpu", 8), "");
  EXPECT_TRUE(contains(exec::device_unavailable("tpu", 1), "use cpu or cuda"));
  EXPECT_TRUE(exec::is_out_of_memory("CUDA out of memory. Tried to allocate 2.00 GiB"));
  EXPECT_FALSE(exec::is_out_of_memory("shape mismatch"));
}

}  // namespace
}  // namespace tv
