// Generated elementwise kernels (codegen/elementwise.h): which members of the fusion regions of
// real pipelines become one kernel, what the kernel reads, stores and computes (everywhere), that
// the CPU's evaluator (exec/pointwise_cpu.h) gives the members' numbers op by op and on a gpt step,
// and, on a GPU, that the executor's generated kernels give the members' numbers in f32 and bf16.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <limits>

#include "codegen/elementwise.h"
#include "exec/device_check.h"
#include "exec/executor.h"
#include "format/parser.h"
#include "format/printer.h"
#include "jit/zoo.h"
#include "ops/ltorch.h"
#include "passes/fusion.h"
#include "pipeline/pipeline.h"
#include "record/results.h"
#include "replay/eager.h"
#include "replay/module_view.h"
#include "replay/step.h"

namespace tv {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Built {
  jit::Module module;
  BuiltPipeline pipeline;
};

Built build_gpt(std::map<std::string, std::string> params, std::vector<std::string> order = {"jit"}) {
  Built b{jit::make_model("gpt", params), {}};
  PipelineSpec spec;
  spec.order = std::move(order);
  spec.device = params.count("device") ? params["device"] : "cpu";
  TransformContext context;
  context.device = *Device::parse(spec.device);
  b.pipeline = build_pipeline(b.module, ValidatedOrder(spec.order), context);
  return b;
}

// The fusion regions of a trace, with their plans.
std::vector<std::pair<const BoundSymbol*, codegen::RegionPlan>> plans_of(const Trace& trace) {
  std::vector<std::pair<const BoundSymbol*, codegen::RegionPlan>> out;
  for (const auto& b : trace.body)
    if (b.symbol->has(Trait::fusion)) out.emplace_back(&b, codegen::plan_region(b));
  return out;
}

bool has_member(const BoundSymbol& region, const std::string& name) {
  for (const auto& m : region.subsymbols)
    if (m.name() == name) return true;
  return false;
}

// gelu's backward as Thunder writes it (ten pointwise ops, then a reshape): one kernel reading the
// four tensors it needs and storing only the gradient; the reshape runs as itself.
TEST(Codegen, GeluBackwardBecomesOneKernelThatStoresOnlyTheGradient) {
  auto b = build_gpt({{"layers", "1"}});
  auto backward = b.pipeline.stages.last(TraceKind::backward);
  ASSERT_TRUE(backward);
  const codegen::RegionPlan* gelu = nullptr;
  const BoundSymbol* region = nullptr;
  auto plans = plans_of(*backward);
  for (const auto& [r, plan] : plans)
    if (has_member(*r, "ltorch.exp") && has_member(*r, "ltorch.pow")) {
      gelu = &plan;
      region = r;
    }
  ASSERT_TRUE(gelu) << "no region holds gelu's backward";
  ASSERT_EQ(gelu->kernels(), 1u);
  const auto& first = gelu->steps.front();
  ASSERT_TRUE(first.is_kernel);
  const auto& k = first.kernel;
  EXPECT_EQ(k.members, 10u);
  EXPECT_EQ(k.inputs.size(), 4u);
  ASSERT_EQ(k.outputs.size(), 1u);  // the nine intermediates are never stored
  EXPECT_EQ(k.outputs[0], region->subsymbols[9].outputs[0]->name);
  EXPECT_EQ(k.dtype, DType::f32);
  EXPECT_TRUE(contains(k.source, "template <typename T> void " + k.name + "(T in0, T in1, T in2, T in3, T& out0)"))
      << k.source;
  EXPECT_TRUE(contains(k.source, "= in3 * in3;")) << k.source;  // x ** 2, as ATen squares
  EXPECT_TRUE(contains(k.source, "T(0.5) * ")) << k.source;    // 0.5 * x
  EXPECT_TRUE(contains(k.source, "T(1.4142135623730951)")) << k.source;
  ASSERT_EQ(gelu->steps.size(), 2u);
  EXPECT_FALSE(gelu->steps[1].is_kernel);
  EXPECT_EQ(region->subsymbols[gelu->steps[1].member].name(), "ltorch.reshape");
}

// Every layer's regions give the same sources, so a model compiles each kernel once.
TEST(Codegen, EveryLayerSharesTheSameKernels) {
  auto b = build_gpt({{"layers", "3"}});
  std::map<std::string, int> uses;
  for (auto kind : {TraceKind::forward, TraceKind::backward})
    for (const auto& [r, plan] : plans_of(*b.pipeline.stages.last(kind)))
      for (const auto& s : plan.steps)
        if (s.is_kernel) uses[s.kernel.name]++;
  ASSERT_FALSE(uses.empty());
  int per_layer = 0;
  for (const auto& [name, n] : uses) per_layer += n >= 3;
  EXPECT_GE(per_layer, 2) << "the per-layer kernels (gelu forward and backward at least) should repeat";
}

// Runs stop at a member that is not pointwise or has another shape; a member alone stays itself.
TEST(Codegen, RunsStopAtOtherOpsAndShapes) {
  auto b = build_gpt({{"layers", "1"}});
  for (auto kind : {TraceKind::forward, TraceKind::backward})
    for (const auto& [r, plan] : plans_of(*b.pipeline.stages.last(kind))) {
      size_t covered = 0;
      for (const auto& s : plan.steps) {
        if (!s.is_kernel) {
          ++covered;
          continue;
        }
        const auto& k = s.kernel;
        EXPECT_GE(k.members, 2u);
        EXPECT_LE(k.inputs.size(), 8u);
        EXPECT_LE(k.outputs.size(), 8u);
        const auto& shape = r->subsymbols[k.first_member].outputs[0]->shape;
        for (size_t m = k.first_member; m < k.first_member + k.members; ++m) {
          EXPECT_TRUE(codegen::is_generated_pointwise(r->subsymbols[m].name())) << r->subsymbols[m].name();
          EXPECT_EQ(r->subsymbols[m].outputs[0]->shape, shape);
        }
        covered += k.members;
      }
      EXPECT_EQ(covered, r->subsymbols.size()) << "every member runs once";
    }
}

// A `where` reads its bool condition as such: attention's masked scores, as its decomposition
// writes them, become one kernel.
TEST(Codegen, WhereReadsItsBoolCondition) {
  ltorch::register_ops();
  TraceBuilder b;
  auto keep = b.input(make_tensor("keep", {16, 16}, DType::b8, Device{}));
  auto scores = b.input(make_tensor("scores", {2, 4, 16, 16}, DType::f32, Device{}));
  auto masked = ltorch::where(b, keep, Value::of(scores), Value::floating(-std::numeric_limits<double>::infinity()));
  auto scaled = ltorch::mul(b, Value::of(masked), Value::floating(0.25));
  auto fused = passes::fusion_grouping(*b.finish(Value::of(scaled)));
  auto plans = plans_of(*fused);
  ASSERT_EQ(plans.size(), 1u);
  const auto& plan = plans.front().second;
  ASSERT_EQ(plan.kernels(), 1u);
  const auto& k = plan.steps.front().kernel;
  EXPECT_EQ(k.members, 2u);
  ASSERT_FALSE(k.bool_inputs.empty());
  EXPECT_TRUE(k.bool_inputs[0]);
  EXPECT_TRUE(contains(k.source, "in0 != T(0) ?")) << k.source;
}

// Every op the generator knows, in one region whose inputs the CPU evaluator reads (full-shape,
// one element, a bool condition; 2 100 elements: several blocks and a short last one), then a
// region reading a broadcast vector, which runs member by member.
constexpr const char* kEveryPointwiseOp = R"(import torch
import thunder.torch as ltorch
from thunder.executors.torchex import no_autocast

@torch.no_grad()
@no_autocast
def computation(a, b, c, s, v):
  # a: "cpu f32[3, 700]"
  # b: "cpu f32[3, 700]"
  # c: "cpu b8[3, 700]"
  # s: "cpu f32[]"
  # v: "cpu f32[700]"
  t0 = ltorch.add(a, b, alpha=2)  # t0: "cpu f32[3, 700]"
  t1 = ltorch.sub(t0, s, alpha=0.5)  # t1: "cpu f32[3, 700]"
  t2 = ltorch.mul(0.3, t1)  # t2: "cpu f32[3, 700]"
  t3 = ltorch.true_divide(t2, 1.4142135623730951)  # t3: "cpu f32[3, 700]"
  t4 = ltorch.neg(t3)  # t4: "cpu f32[3, 700]"
  t5 = ltorch.exp(t4)  # t5: "cpu f32[3, 700]"
  t6 = ltorch.log(t5)  # t6: "cpu f32[3, 700]"
  t7 = ltorch.erf(t6)  # t7: "cpu f32[3, 700]"
  t8 = ltorch.tanh(t7)  # t8: "cpu f32[3, 700]"
  t9 = ltorch.sqrt(t5)  # t9: "cpu f32[3, 700]"
  t10 = ltorch.rsqrt(t5)  # t10: "cpu f32[3, 700]"
  t11 = ltorch.sigmoid(t6)  # t11: "cpu f32[3, 700]"
  t12 = ltorch.pow(t9, 2.0)  # t12: "cpu f32[3, 700]"
  t13 = ltorch.pow(t9, 0.5)  # t13: "cpu f32[3, 700]"
  t14 = ltorch.pow(t9, 3.0)  # t14: "cpu f32[3, 700]"
  t15 = ltorch.pow(t10, -1)  # t15: "cpu f32[3, 700]"
  t16 = ltorch.pow(t5, t11)  # t16: "cpu f32[3, 700]"
  t17 = ltorch.where(c, t16, 0.0)  # t17: "cpu f32[3, 700]"
  t18 = ltorch.add(t17, t8)  # t18: "cpu f32[3, 700]"
  t19 = ltorch.add(t18, t12)  # t19: "cpu f32[3, 700]"
  t20 = ltorch.add(t19, t13)  # t20: "cpu f32[3, 700]"
  t21 = ltorch.add(t20, t14)  # t21: "cpu f32[3, 700]"
  t22 = ltorch.add(t21, t15)  # t22: "cpu f32[3, 700]"
  t23 = ltorch.sum(t22, None)  # t23: "cpu f32[]"
  t24 = ltorch.mul(t22, v)  # t24: "cpu f32[3, 700]"
  t25 = ltorch.exp(t24)  # t25: "cpu f32[3, 700]"
  return (t1, t22, t23, t25)
)";

TEST(CpuCodegen, EveryPointwiseOpGivesTheMembersNumbers) {
  auto parsed = parse_trace(kEveryPointwiseOp);
  ASSERT_TRUE(parsed) << (parsed.error ? parsed.error->message : "");
  auto fused = passes::fusion_grouping(*parsed.trace);
  auto plans = plans_of(*fused);
  ASSERT_EQ(plans.size(), 2u) << print_trace(*fused);
  ASSERT_EQ(plans[0].second.kernels(), 1u);
  ASSERT_EQ(plans[0].second.steps.front().kernel.members, 23u);
  at::manual_seed(3);
  std::vector<at::Tensor> inputs{at::randn({3, 700}), at::randn({3, 700}), at::rand({3, 700}) > 0.3,
                                 at::randn({}), at::randn({700})};
  auto run = [&](bool generated, size_t* launches) {
    exec::ExecOptions o;
    o.generated_kernels = generated;
    exec::Executor e(o);
    auto out = exec::tensors_of(e.run(*fused, inputs));
    *launches = e.generated_kernel_launches();
    return out;
  };
  size_t with = 0, without = 0;
  auto generated = run(true, &with);
  auto members = run(false, &without);
  EXPECT_EQ(with, 1u);  // the second region reads a broadcast vector: its members run one by one
  EXPECT_EQ(without, 0u);
  ASSERT_EQ(generated.size(), 4u);
  ASSERT_EQ(members.size(), 4u);
  for (size_t i = 0; i < generated.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_EQ(generated[i].sizes(), members[i].sizes());
    EXPECT_EQ(generated[i].scalar_type(), at::kFloat);
    EXPECT_TRUE(generated[i].is_contiguous());
    EXPECT_TRUE(at::allclose(generated[i], members[i], 1e-5, 1e-6)) << (generated[i] - members[i]).abs().max();
  }
  // Arithmetic that rounds like ATen's is exact; the C library's transcendental functions are
  // within an ulp or two of ATen's.
  EXPECT_TRUE(at::equal(generated[0], members[0]));
}

// The transcendental functions at the edges of their domains (infinities, NaN, signed zeros,
// subnormals, overflow, huge arguments) and across their ranges, in f32 and f64: the evaluator's
// (vectorised through libmvec where the build found it) against ATen's, member by member.
constexpr const char* kTranscendentals = R"(import torch
import thunder.torch as ltorch
from thunder.executors.torchex import no_autocast

@torch.no_grad()
@no_autocast
def computation(a, b):
  # a: "cpu DT[4096]"
  # b: "cpu DT[4096]"
  t0 = ltorch.exp(a)  # t0: "cpu DT[4096]"
  t1 = ltorch.log(a)  # t1: "cpu DT[4096]"
  t2 = ltorch.erf(a)  # t2: "cpu DT[4096]"
  t3 = ltorch.tanh(a)  # t3: "cpu DT[4096]"
  t4 = ltorch.sigmoid(a)  # t4: "cpu DT[4096]"
  t5 = ltorch.pow(a, b)  # t5: "cpu DT[4096]"
  t6 = ltorch.sqrt(a)  # t6: "cpu DT[4096]"
  t7 = ltorch.rsqrt(a)  # t7: "cpu DT[4096]"
  return (t0, t1, t2, t3, t4, t5, t6, t7)
)";

TEST(CpuCodegen, TranscendentalFunctionsAtTheEdgesGiveATensNumbers) {
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const std::string dt = dtype == at::kFloat ? "f32" : "f64";
    SCOPED_TRACE(dt);
    std::string text = kTranscendentals;
    for (size_t at = text.find("DT"); at != std::string::npos; at = text.find("DT", at)) text.replace(at, 2, dt);
    auto parsed = parse_trace(text);
    ASSERT_TRUE(parsed) << (parsed.error ? parsed.error->message : "");
    auto fused = passes::fusion_grouping(*parsed.trace);
    ASSERT_EQ(plans_of(*fused).size(), 1u) << print_trace(*fused);
    double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    double tiny = dtype == at::kFloat ? 1e-40 : 1e-310;  // subnormal
    std::vector<double> edges{0.0, -0.0, inf, -inf, nan, tiny, -tiny, 1.0, -1.0, 0.5, 2.0, 88.7, 89.0, -87.0,
                              -104.0, 709.0, 710.0, -745.0, 1e30, -1e30, 3.9, -3.9, 6.0, 10.0, 1e-8, -1e-8};
    auto opts = at::TensorOptions().dtype(at::kDouble);
    at::manual_seed(5);
    at::Tensor a = at::cat({at::tensor(edges, opts), at::randn({4096 - 2 * static_cast<int64_t>(edges.size())}, opts) * 6,
                            at::tensor(edges, opts).flip(0)}).to(dtype);
    at::Tensor b = at::cat({at::tensor(edges, opts).roll(3), at::randn({4096 - static_cast<int64_t>(edges.size())}, opts) * 3})
                       .to(dtype);
    auto run = [&](bool generated) {
      exec::ExecOptions o;
      o.generated_kernels = generated;
      exec::Executor e(o);
      auto out = exec::tensors_of(e.run(*fused, {a, b}));
      EXPECT_EQ(e.generated_kernel_launches(), generated ? 1u : 0u);
      return out;
    };
    auto generated = run(true), members = run(false);
    ASSERT_EQ(generated.size(), 8u);
    const char* names[] = {"exp", "log", "erf", "tanh", "sigmoid", "pow", "sqrt", "rsqrt"};
    for (size_t i = 0; i < generated.size(); ++i) {
      SCOPED_TRACE(names[i]);
      // equal_nan: NaN where ATen has NaN, the same infinities, and close elsewhere
      at::Tensor close = at::isclose(generated[i], members[i], dtype == at::kFloat ? 4e-6 : 1e-14, 0.0, true);
      at::Tensor bad = close.logical_not().nonzero();
      auto first_difference = [&] {
        if (bad.size(0) == 0) return std::string();
        int64_t k = bad[0][0].item<int64_t>();
        return c10::str("first differing input a=", a[k].item<double>(), " b=", b[k].item<double>(), ": ",
                        generated[i][k].item<double>(), " vs ", members[i][k].item<double>());
      };
      EXPECT_EQ(bad.size(0), 0) << first_difference();
      EXPECT_TRUE(at::equal(at::signbit(generated[i].masked_fill(generated[i].isnan(), 0)),
                            at::signbit(members[i].masked_fill(members[i].isnan(), 0))));
    }
  }
}

// A where alone is a kernel too (a relu's backward, where(a <= 0, 0, g)): on the CPU a select of
// bits, with either side a tensor or a number, infinities and NaN passed through as they are.
constexpr const char* kWhereAlone = R"(import torch
import thunder.torch as ltorch
from thunder.executors.torchex import no_autocast

@torch.no_grad()
@no_autocast
def computation(a, g, h):
  # a: "cpu DT[3, 700]"
  # g: "cpu DT[3, 700]"
  # h: "cpu DT[3, 700]"
  t0 = ltorch.le(a, 0.0)  # t0: "cpu b8[3, 700]"
  t1 = ltorch.where(t0, 0.0, g)  # t1: "cpu DT[3, 700]"
  t2 = ltorch.where(t0, g, -1.5)  # t2: "cpu DT[3, 700]"
  t3 = ltorch.le(g, 0.0)  # t3: "cpu b8[3, 700]"
  t4 = ltorch.where(t3, g, h)  # t4: "cpu DT[3, 700]"
  return (t1, t2, t4)
)";

TEST(CpuCodegen, AWhereAloneIsAKernelThatSelectsAsATen) {
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const std::string dt = dtype == at::kFloat ? "f32" : "f64";
    SCOPED_TRACE(dt);
    std::string text = kWhereAlone;
    for (size_t at = text.find("DT"); at != std::string::npos; at = text.find("DT", at)) text.replace(at, 2, dt);
    auto parsed = parse_trace(text);
    ASSERT_TRUE(parsed) << (parsed.error ? parsed.error->message : "");
    auto fused = passes::fusion_grouping(*parsed.trace);
    at::manual_seed(7);
    double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    at::Tensor a = at::randn({3, 700}, at::TensorOptions().dtype(dtype));
    at::Tensor g = at::randn({3, 700}, at::TensorOptions().dtype(dtype));
    g.view(-1).slice(0, 0, 4).copy_(at::tensor({inf, -inf, nan, -0.0}).to(dtype));
    at::Tensor h = at::randn({3, 700}, at::TensorOptions().dtype(dtype));
    auto run = [&](bool generated) {
      exec::ExecOptions o;
      o.generated_kernels = generated;
      exec::Executor e(o);
      auto out = exec::tensors_of(e.run(*fused, {a, g, h}));
      // (t1 and t2 side by side are one kernel; t4 after the comparison is one alone)
      EXPECT_EQ(e.generated_kernel_launches(), generated ? 2u : 0u) << print_trace(*fused);
      return out;
    };
    auto generated = run(true), members = run(false);
    ASSERT_EQ(generated.size(), 3u);
    for (size_t i = 0; i < generated.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      EXPECT_TRUE(at::equal(generated[i].isnan(), members[i].isnan()));
      EXPECT_TRUE(at::equal(generated[i].nan_to_num(0, 0, 0), members[i].nan_to_num(0, 0, 0)));
      EXPECT_TRUE(at::equal(at::signbit(generated[i].nan_to_num(0)), at::signbit(members[i].nan_to_num(0))));
    }
  }
}

// On the CPU: one gpt step with the evaluator against the same step member by member.
TEST(CpuCodegen, GeneratedKernelsGiveTheMembersNumbersOnAGptStep) {
  auto b = build_gpt({{"layers", "2"}});
  JitModuleView view(b.module);
  std::vector<at::Tensor> inputs;
  for (const auto& i : b.module.inputs) inputs.push_back(*i.value);
  auto step = [&](bool generated, size_t* launches) {
    exec::ExecOptions o;
    o.module = &view;
    o.generated_kernels = generated;
    exec::Executor e(o);
    auto f = step_forward(e, b.pipeline.stages, inputs);
    auto cot = make_cotangents(f.outputs, 7);
    auto grads = step_backward(e, b.module, b.pipeline.stages, f.saved, cot);
    *launches = e.generated_kernel_launches();
    std::vector<at::Tensor> all = f.outputs;
    for (const auto& [name, g] : grads)
      if (g.defined()) all.push_back(g);
    return all;
  };
  size_t with = 0, without = 0;
  auto generated = step(true, &with);
  auto members = step(false, &without);
  EXPECT_GT(with, 0u);
  EXPECT_EQ(without, 0u);
  ASSERT_EQ(generated.size(), members.size());
  for (size_t i = 0; i < generated.size(); ++i) {
    auto a = generated[i].to(at::kDouble), m = members[i].to(at::kDouble);
    double scale = std::max(1.0, m.abs().max().item<double>());
    EXPECT_LE((a - m).abs().max().item<double>(), 1e-5 * scale) << "tensor " << i;
  }
}

// A CUDA pipeline's forward pairs each block's two residual additions with the linear before
// them (passes/residual_epilogues.h), its backward the two additions of the skip connection's
// gradient with the layer norm backward before them, and the plans run each pair as one step.
TEST(GpuCodegen, ResidualAdditionsOfACudaGptPairWithTheirLinears) {
  if (auto why = exec::device_unavailable("cuda:0"); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  auto b = build_gpt({{"layers", "2"}, {"device", "cuda:0"}});
  std::vector<std::string> passes;
  for (const auto& stage : b.pipeline.stages.forward) passes.push_back(stage.pass);
  EXPECT_NE(std::find(passes.begin(), passes.end(), "Residual Epilogues"), passes.end());
  auto forward = b.pipeline.stages.last(TraceKind::forward);
  size_t pairs = 0;
  for (const auto& [region, plan] : plans_of(*forward))
    for (const auto& step : plan.steps) pairs += step.residual_epilogue;
  EXPECT_EQ(pairs, 4u) << print_trace(*forward);
  auto backward = b.pipeline.stages.last(TraceKind::backward);
  size_t norm_pairs = 0;
  for (const auto& [region, plan] : plans_of(*backward))
    for (const auto& step : plan.steps)
      norm_pairs += step.residual_epilogue && region->subsymbols[step.member].name() == "ltorch.layer_norm_backward";
  EXPECT_EQ(norm_pairs, 4u) << print_trace(*backward);
  auto cpu = build_gpt({{"layers", "2"}});
  for (const auto& stage : cpu.pipeline.stages.forward) EXPECT_NE(stage.pass, "Residual Epilogues") << "a CPU pipeline";
  for (const auto& stage : cpu.pipeline.stages.backward) EXPECT_NE(stage.pass, "Residual Epilogues") << "a CPU pipeline";
}

// On a GPU: one step with generated kernels against the same step member by member, f32 and bf16.
void expect_generated_kernels_match(DType dtype, double tolerance) {
  std::map<std::string, std::string> params{{"layers", "2"}, {"device", "cuda:0"}};
  std::vector<std::string> order{"jit"};
  if (dtype == DType::bf16) order = {"autocast", "jit"};
  auto b = build_gpt(params, order);
  JitModuleView view(b.module);
  std::vector<at::Tensor> inputs;
  for (const auto& i : b.module.inputs) inputs.push_back(*i.value);
  auto step = [&](bool generated, size_t* launches) {
    exec::ExecOptions o;
    o.device = *Device::parse("cuda:0");
    o.module = &view;
    o.generated_kernels = generated;
    exec::Executor e(o);
    auto f = step_forward(e, b.pipeline.stages, inputs);
    auto cot = make_cotangents(f.outputs, 7);
    auto grads = step_backward(e, b.module, b.pipeline.stages, f.saved, cot);
    *launches = e.generated_kernel_launches();
    if (generated && dtype == DType::f32)
      EXPECT_EQ(e.residual_epilogues(), 8u) << "two residual additions a layer and two in its backward, two layers";
    std::vector<at::Tensor> all = f.outputs;
    for (const auto& [name, g] : grads)
      if (g.defined()) all.push_back(g);
    return all;
  };
  size_t with = 0, without = 0;
  auto generated = step(true, &with);
  auto members = step(false, &without);
  EXPECT_GT(with, 0u);
  EXPECT_EQ(without, 0u);
  ASSERT_EQ(generated.size(), members.size());
  for (size_t i = 0; i < generated.size(); ++i) {
    auto a = generated[i].to(at::kDouble), m = members[i].to(at::kDouble);
    double scale = std::max(1.0, m.abs().max().item<double>());
    EXPECT_LE((a - m).abs().max().item<double>(), tolerance * scale) << "tensor " << i;
  }
}

TEST(GpuCodegen, GeneratedKernelsGiveTheMembersNumbersF32) {
  if (auto why = exec::device_unavailable("cuda:0", 1); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  expect_generated_kernels_match(DType::f32, 1e-5);
}

TEST(GpuCodegen, GeneratedKernelsGiveTheMembersNumbersBf16) {
  if (auto why = exec::device_unavailable("cuda:0", 1); !why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  // The kernel keeps its intermediates in float where the members round each one to bf16.
  expect_generated_kernels_match(DType::bf16, 5e-2);
}

}  // namespace
}  // namespace tv
