// Distributed and autocast transforms: ddp's backward matches Thunder's printout of the seed, both
// orders give the same traces (lazy application), thunder-2024-03 semantics fail ddp after jit the
// seed's way (the all-reduce's meta check on a None group, the partial backward kept) while fsdp
// after jit works, thunder-2026-01 refuses ddp before jit, and the numbers over real gloo ranks equal the mean of LibTorch eager
// gradients (fsdp: this rank's shard of it). No mocks: dist::World runs W gloo ranks as threads.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "replay/module_view.h"
#include "canonical/canonical.h"
#include "dist/world.h"
#include "exec/collective_rules.h"
#include "exec/executor.h"
#include "format/parser.h"
#include "format/printer.h"
#include "jit/zoo.h"
#include "passes/pass_util.h"
#include "pipeline/pipeline.h"
#include "record/results.h"
#include "replay/eager.h"
#include "replay/step.h"
#include "test_util.h"
#include "trace_invariants.h"
#include "transforms/autocast.h"
#include "ops/collectives.h"
#include "transforms/distributed_state.h"
#include "transforms/fsdp.h"
#include "transforms/hsdp.h"
#include "transforms/names.h"

using namespace tv;

namespace {

struct Registered : ::testing::Environment {
  void SetUp() override { transform_names(); }  // registers the built-in transforms
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new Registered);

TracePtr fixture(const std::string& name) {
  auto r = parse_trace(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name));
  EXPECT_TRUE(r) << name << ": " << (r.error ? r.error->message : "");
  return r.trace;
}

// A proxy moved to the CPU (Thunder's printouts ran on cuda:0; our traces are built on cpu).
ProxyPtr on_cpu(const ProxyPtr& p) {
  if (!p->is_tensor()) return p;
  auto q = std::make_shared<Proxy>(*p);
  q->device = Device{};
  return q;
}

void to_cpu(BoundSymbol& b) {
  for (auto& a : b.args) a = map_proxies(a, on_cpu);
  for (auto& [k, v] : b.kwargs) v = map_proxies(v, on_cpu);
  for (auto& o : b.outputs) o = on_cpu(o);
  for (auto& s : b.subsymbols) to_cpu(s);
}

// What we compare of a final backward, Thunder's or ours (documented normalisation):
//  - Thunder's executor spellings (`torch.reshape(...)` whose one subsymbol is `ltorch.reshape`)
//    are replaced by that subsymbol, so both sides name ltorch ops (the collectives keep their
//    names: Thunder prints them without subsymbols, as we do);
//  - `del` and `clear_mutable_collection` (memory management, placed by Delete Last Used) are
//    dropped, and our fusion regions are replaced by their members (Thunder's torch executor ran
//    these shape ops unfused); devices are mapped to cpu;
//  - proxy names are then made canonical (canonical_text).
TracePtr normalised(const Trace& t) {
  auto out = derive(t, "normalised");
  out->body.clear();
  for (auto& p : out->params) p.proxy = on_cpu(p.proxy);
  for (const auto& b : t.body) {
    if (b.symbol->form == PrintForm::del || b.name() == "clear_mutable_collection") continue;
    if (b.symbol->has(Trait::fusion) || b.name().rfind("fusion", 0) == 0) {
      for (auto c : b.subsymbols) {
        to_cpu(c);
        out->body.push_back(std::move(c));
      }
      continue;
    }
    bool executor_call = b.symbol->form == PrintForm::call && b.name().rfind("ltorch.", 0) != 0 &&
                         b.name().rfind("prims.", 0) != 0 && b.subsymbols.size() == 1;
    BoundSymbol c = executor_call ? b.subsymbols[0] : b;
    to_cpu(c);
    out->body.push_back(std::move(c));
  }
  return out;
}

size_t count_calls(const Trace& t, const std::string& name) {
  size_t n = 0;
  for (const auto& b : t.body) walk({b}, [&](const BoundSymbol& s, int) { n += s.name() == name; });
  return n;
}

PipelineSpec spec_of(std::vector<std::string> order, int world, std::string semantics = "lazy",
                     std::string workaround = "") {
  PipelineSpec s;
  s.order = std::move(order);
  s.world_size = world;
  s.semantics = std::move(semantics);
  s.workaround = std::move(workaround);
  return s;
}

// What a run does: the order validated once in its semantics mode, then the build.
BuiltPipeline build(jit::Module& m, const PipelineSpec& spec, TransformContext c) {
  const SemanticsMode& mode = find_semantics(spec.semantics);
  check_workaround(mode, spec.workaround);
  ValidatedOrder order(spec.order, mode, jit::python_class(m.name));
  c.semantics = &mode;
  c.workaround = spec.workaround;
  return build_pipeline(m, order, c);
}

BuiltPipeline trace_only(const std::string& model, std::vector<std::string> order, int world,
                         std::map<std::string, std::string> params = {}, double bucket_mb = 25.0, bool zero3 = true) {
  auto m = jit::make_model(model, params);
  TransformContext c;
  c.world_size = world;
  c.bucket_size_mb = bucket_mb;
  c.zero3 = zero3;
  return build(m, spec_of(std::move(order), world), c);
}

// The prologue's view finds each parameter and buffer whatever order they are asked in, and says
// when there is none (it searches from the one it found last).
TEST(JitModuleView, FindsParametersAndBuffersAskedInAnyOrder) {
  jit::Module m;
  for (const char* name : {"a.weight", "a.bias", "b.weight"}) m.add_parameter(name, at::randn({2}));
  m.add_buffer("b.running_mean", at::randn({2}));
  JitModuleView view(m);
  auto same = [&](const std::string& name, const at::Tensor& want) {
    auto got = view.parameter(name);
    ASSERT_TRUE(got) << name;
    EXPECT_TRUE(got->is_same(want)) << name;
  };
  for (int pass = 0; pass < 2; ++pass) {
    same("b.weight", *m.parameters[2].value);
    same("a.weight", *m.parameters[0].value);
    same("b.running_mean", *m.buffers[0].value);
    same("a.bias", *m.parameters[1].value);
    same("a.bias", *m.parameters[1].value);
    EXPECT_FALSE(view.parameter("c.weight"));
    EXPECT_FALSE(view.parameter("a"));
  }
}

// A step's gradients come in the computation's argument order, and argument_names names them as
// step_backward does: the parameter's qualified name, else the argument's own.
TEST(Step, GradientsInArgumentOrderAsStepBackwardNamesThem) {
  auto m = jit::make_model("mlp");
  auto built = build(m, spec_of({"jit"}, 1), TransformContext{});
  JitModuleView view(m);
  exec::ExecOptions eo;
  eo.module = &view;
  exec::Executor ex(eo);
  std::vector<at::Tensor> inputs;
  for (const auto& i : m.inputs) inputs.push_back(*i.value);
  auto f = step_forward(ex, built.stages, inputs);
  auto cot = make_cotangents(f.outputs, 3);
  auto named = step_backward(ex, m, built.stages, f.saved, cot);
  auto g = step_forward(ex, built.stages, inputs);
  auto grads = step_gradients(ex, built.stages, g.saved, cot);
  auto names = argument_names(m, built.stages);
  const auto& params = built.stages.forward.front().trace->params;
  ASSERT_EQ(names.size(), params.size());
  ASSERT_EQ(grads.size(), params.size());
  ASSERT_EQ(named.size(), params.size());
  size_t parameters = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(named[i].first, names[i]);
    ASSERT_EQ(named[i].second.defined(), grads[i].defined()) << names[i];
    if (grads[i].defined()) EXPECT_TRUE(at::equal(named[i].second, grads[i])) << names[i];
    if (const auto* p = m.find_parameter(names[i])) {
      ++parameters;
      EXPECT_EQ(params[i].proxy->name, jit::parameter_proxy_name(p->name));
    } else {
      EXPECT_EQ(names[i], params[i].proxy->name);
    }
  }
  EXPECT_EQ(parameters, m.parameters.size());
}

// Over every pair of stages of one trace kind in the zoo's pipelines of two ranks, what the walk side
// by side says of two stages' canonical texts (without printing them) is what the texts say.
TEST(StageHistory, MatchUpToNamesAgreesWithTheTextOverThePipelines) {
  std::map<NameMatch, size_t> told;
  for (const auto& order : std::vector<std::vector<std::string>>{{"jit"}, {"jit", "ddp"}, {"ddp", "jit"}, {"jit", "fsdp"}, {"fsdp", "jit"}}) {
    for (const std::string model : {"mlp", "gpt"}) {
      SCOPED_TRACE(model + " " + order[0] + (order.size() > 1 ? "," + order[1] : ""));
      auto built = trace_only(model, order, 2, model == "gpt" ? std::map<std::string, std::string>{{"layers", "2"}}
                                                               : std::map<std::string, std::string>{});
      for (auto kind : kTraceKinds) {
        const auto& stages = built.stages.of(kind);
        for (size_t i = 0; i < stages.size(); ++i)
          for (size_t j = i + 1; j < stages.size(); ++j) {
            const Trace &x = *stages[i].trace, &y = *stages[j].trace;
            if (!same_shape(x, y) || same_objects(x, y)) continue;  // what the history decides before the walk
            const NameMatch m = match_up_to_names(x, y);
            ++told[m];
            if (m == NameMatch::unknown) continue;
            EXPECT_EQ(canonical_text(x) == canonical_text(y), m == NameMatch::renamed)
                << stages[i].pass << " and " << stages[j].pass;
          }
      }
    }
  }
  EXPECT_GT(told[NameMatch::different], 0u);  // fsdp's zero-3 forward
}

// What the passes rely on holds at every stage of every order: every proxy read is defined
// (collectives::reserve_names reserves parameters and outputs only), and a decomposition reads only
// what its statement reads or defines below itself (CSE rewrites a decomposition only where its
// statement reads a rewritten name).
TEST(StageHistory, EveryStageDefinesWhatItReadsAndItsDecompositionsReadOnlyTheirStatementsReads) {
  for (const auto& order : std::vector<std::vector<std::string>>{
           {"jit"}, {"jit", "ddp"}, {"ddp", "jit"}, {"jit", "fsdp"}, {"fsdp", "jit"}, {"jit", "autocast"}}) {
    for (const std::string model : {"mlp", "llama_mlp", "gpt"}) {
      SCOPED_TRACE(model + " " + order[0] + (order.size() > 1 ? "," + order[1] : ""));
      auto built = trace_only(model, order, 2, model == "gpt" ? std::map<std::string, std::string>{{"layers", "2"}}
                                                               : std::map<std::string, std::string>{});
      for (auto kind : kTraceKinds)
        for (const auto& stage : built.stages.of(kind)) {
          const std::vector<std::string> none;
          EXPECT_EQ(tv::testing::names_read_but_never_defined(*stage.trace), none) << stage.pass;
          EXPECT_EQ(tv::testing::decompositions_reading_outside(*stage.trace), none) << stage.pass;
        }
    }
  }
}

constexpr uint64_t kCotangentSeed = 1234;

struct RankRun {
  std::map<std::string, at::Tensor> grads;    // by parameter name
  std::map<std::string, at::Tensor> weights;  // after transform_module
  size_t all_reduces = 0;
};

// Rank r: the model with seed r (its own inputs and, before the broadcast, its own weights),
// the pipeline built with the communicator, then prologue -> forward -> backward executed.
RankRun run_rank(const std::string& model, const std::vector<std::string>& order, int rank, dist::Communicator& comm,
                 bool zero3 = true, double bucket_mb = 25.0, int shard_group = 0) {
  auto m = jit::make_model(model, {{"seed", std::to_string(rank)}});
  TransformContext c;
  c.world_size = comm.size();
  c.rank = rank;
  c.broadcast_from_rank0 = [&comm](at::Tensor& t) { comm.broadcast(t, 0); };
  c.zero3 = zero3;
  c.bucket_size_mb = bucket_mb;
  c.shard_group_size = shard_group;
  // A mesh's subgroups (hsdp), formed in the transform's order on every rank.
  dist::ProcessGroups groups(&comm);
  ValidatedOrder validated(order);
  if (auto* d = validated.parameter_distributor())
    for (const auto& g : d->subgroups(c)) groups.form(g.name, g.ranks);
  auto built = build(m, spec_of(order, comm.size()), c);
  RankRun out;
  for (const auto& p : m.parameters) out.weights[p.name] = p.value->clone();
  out.all_reduces = count_calls(*built.stages.last(TraceKind::backward), collectives::kAllReduce);

  JitModuleView view(m);
  exec::ExecOptions eo;
  eo.module = &view;
  if (groups.named.empty())
    eo.user = &comm;
  else
    eo.user = static_cast<const dist::ProcessGroups*>(&groups);
  exec::Executor ex(eo);
  std::vector<at::Tensor> inputs;
  for (const auto& i : m.inputs) inputs.push_back(*i.value);
  auto unpacked = ex.run(*built.stages.last(TraceKind::prologue), inputs);
  auto fwd = ex.run(*built.stages.last(TraceKind::forward), unpacked.items.at(0).items);
  const exec::RValue* output = fwd.items.at(0).find("output");
  EXPECT_TRUE(output);
  auto outputs = exec::tensors_of(*output);
  std::vector<exec::RValue> cts;
  for (const auto& t : make_cotangents(outputs, kCotangentSeed + rank)) cts.push_back(exec::RValue::of(t));
  auto grads = ex.run(*built.stages.last(TraceKind::backward), {fwd.items.at(1), exec::RValue::tuple(cts)});
  const auto& params = built.stages.forward.front().trace->params;
  for (size_t i = 0; i < params.size(); ++i)
    for (const auto& p : m.parameters)
      if (jit::parameter_proxy_name(p.name) == params[i].proxy->name && grads.items.at(i).is_tensor())
        out.grads[p.name] = grads.items[i].t;
  return out;
}

// The mean over ranks of the eager gradients: rank 0's weights, rank r's inputs and cotangents.
std::map<std::string, at::Tensor> mean_eager_grads(const std::string& model, int world) {
  auto weights = jit::make_model(model, {{"seed", "0"}});
  std::map<std::string, at::Tensor> sum;
  for (int r = 0; r < world; ++r) {
    auto m = jit::make_model(model, {{"seed", std::to_string(r)}});
    std::vector<at::Tensor> inputs;
    for (const auto& i : m.inputs) inputs.push_back(*i.value);
    auto outputs = eager_reference(weights, inputs, {}).outputs;
    auto e = eager_reference(weights, inputs, make_cotangents(outputs, kCotangentSeed + r));
    for (const auto& [name, g] : e.parameter_grads) sum[name] = sum.count(name) ? sum[name] + g : g.clone();
  }
  for (auto& [name, g] : sum) g = g / world;
  return sum;
}

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what, double rel = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  double scale = std::max(want.abs().max().item<double>(), 1e-30);
  double err = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  EXPECT_LE(err / scale, rel) << what << ": max abs " << err << " scale " << scale;
}

}  // namespace

TEST(TransformsDdp, LinearBackwardMatchesThunder) {
  auto built = trace_only("linear", {"jit", "ddp"}, 2);
  auto ours = built.stages.last(TraceKind::backward);
  auto thunder = fixture("ddp_jit_then_ddp__bwd__00.txt");
  ASSERT_TRUE(thunder);
  EXPECT_EQ(canonical_text(*normalised(*ours)), canonical_text(*normalised(*thunder)))
      << print_trace(*ours) << "\n--- Thunder:\n" << print_trace(*thunder);
  std::string text = print_trace(*ours);
  EXPECT_NE(text.find("= torch_all_reduce_prim_impl(t"), std::string::npos) << text;
  EXPECT_NE(text.find(", _DistributedReduceOps_SUM_0, _torch_distributed_distributed_c10d_ProcessGroup_1, True, False)  # ft"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FUTURE thunder.devices.Device(type='cpu') f32[10, 5]"), std::string::npos) << text;
  // stage names
  std::vector<std::string> passes;
  for (const auto& s : built.stages.backward) passes.push_back(s.pass);
  auto at = std::find(passes.begin(), passes.end(), "ddp pass");
  ASSERT_NE(at, passes.end());
  ASSERT_NE(at + 1, passes.end());
  EXPECT_EQ(*(at + 1), "ddp bucketing (25 MB)");
  EXPECT_FALSE(built.stages.backward[at + 1 - passes.begin()].changed);  // one gradient: plain form kept
}

TEST(TransformsDdp, PrologueChecksDdpAttributes) {
  auto built = trace_only("linear", {"jit", "ddp"}, 2);
  std::string text = print_trace(*built.stages.last(TraceKind::prologue));
  EXPECT_NE(text.find("i3: \"bool True\" = module.use_ddp"), std::string::npos) << text;
  EXPECT_NE(text.find("prims.check_number_type_and_value(f4, 25.0)"), std::string::npos) << text;
}

TEST(TransformsDdp, FixtureBackwardRunsOnOneRank) {
  auto bwd = fixture("ddp_jit_then_ddp__bwd__00.txt");
  ASSERT_TRUE(bwd);
  at::Tensor x = at::randn({2, 5}), ct = at::randn({2, 10});
  exec::Executor ex;
  auto saved = exec::RValue::tuple({exec::RValue::tuple({exec::RValue::of(x)}), exec::RValue::tuple({})});
  auto grads = ex.run(*bwd, {saved, exec::RValue::tuple({exec::RValue::of(ct)})});
  ASSERT_EQ(grads.items.size(), 2u);
  EXPECT_TRUE(grads.items[0].is_none());
  expect_close(grads.items[1].tensor(), at::matmul(ct.t(), x) / 2, "weight grad");
  EXPECT_EQ(exec::pending_collectives(), 0u);
}

TEST(TransformsDdp, BucketingReducesAllReduces) {
  // mlp: fc1.weight 64 KiB, fc1.bias 1 KiB, fc2.weight 64 KiB, fc2.bias 256 B
  auto big = trace_only("mlp", {"jit", "ddp"}, 2);
  auto small = trace_only("mlp", {"jit", "ddp"}, 2, {}, 0.1);
  const Trace* plain = nullptr;
  bool named = false;
  for (const auto& s : small.stages.backward) {
    if (s.pass == "ddp pass") plain = s.trace.get();
    named = named || s.pass == "ddp bucketing (0.1 MB)";
  }
  ASSERT_TRUE(plain);
  EXPECT_TRUE(named);
  EXPECT_EQ(count_calls(*plain, collectives::kAllReduce), 4u);  // one per gradient
  // 0.1 MiB: {fc2.bias, fc2.weight, fc1.bias} then {fc1.weight} (reverse parameter order)
  EXPECT_EQ(count_calls(*small.stages.last(TraceKind::backward), collectives::kAllReduce), 2u);
  EXPECT_EQ(count_calls(*big.stages.last(TraceKind::backward), collectives::kAllReduce), 1u);  // 25 MB: one bucket
  EXPECT_GE(count_calls(*small.stages.last(TraceKind::backward), "ltorch.cat"), 1u);
  // A packed bucket is reduced in place (skip_clone True). A bucket of one gradient keeps Thunder's
  // plain form, which clones (LinearBackwardMatchesThunder).
  std::string text = print_trace(*small.stages.last(TraceKind::backward));
  EXPECT_NE(text.find("_torch_distributed_distributed_c10d_ProcessGroup_1, True, True)"), std::string::npos) << text;
}

TEST(TransformsDdp, SkipCloneReducesTheArgumentInPlace) {
  auto run = [](const char* skip_clone) {
    auto t = parse_trace(std::string("def f(x):\n  # x: \"cpu f32[2]\"\n") +
                         "  ft1 = torch_all_reduce_prim_impl(x, _DistributedReduceOps_SUM_0, _pg_1, True, " + skip_clone +
                         ")  # ft1: \"FUTURE thunder.devices.Device(type='cpu') f32[2]\"\n" +
                         "  t2 = torch_wait_prim_impl(ft1)  # t2: \"cpu f32[2]\"\n  return t2");
    if (!t.trace) ADD_FAILURE() << t.error->describe("trace");
    if (!t.trace) return false;
    at::Tensor x = at::ones({2});
    exec::Executor ex;  // no communicator: a group of one rank, the sum is the tensor itself
    at::Tensor out = ex.run(*t.trace, {x}).tensor();
    EXPECT_TRUE(at::equal(out, x));
    return out.data_ptr() == x.data_ptr();
  };
  EXPECT_FALSE(run("False"));
  EXPECT_TRUE(run("True"));
}

TEST(TransformsDdp, AllReducesOverlapTheBackward) {
  // gpt, 2 layers, buckets of 0.01 MiB: several all-reduces, the first one ready long before the end.
  auto built = trace_only("gpt", {"jit", "ddp"}, 2, {{"layers", "2"}}, 0.01);
  const Trace* bucketed = nullptr;
  for (const auto& s : built.stages.backward)
    if (s.pass.rfind("ddp bucketing", 0) == 0) bucketed = s.trace.get();
  ASSERT_TRUE(bucketed);
  auto sorted = built.stages.last(TraceKind::backward);
  ASSERT_EQ(built.stages.backward.back().pass, "Delete Last Used");
  auto position = [](const Trace& t, const std::string& symbol, bool last) {
    long found = -1;
    for (size_t i = 0; i < t.body.size(); ++i) {
      bool hit = t.body[i].name() == symbol;
      for (const auto& sub : t.body[i].subsymbols) hit = hit || sub.name() == symbol;  // inside a fusion
      if (hit && (last || found < 0)) found = static_cast<long>(i);
    }
    return found;
  };
  // Before: every all-reduce after the last matmul. After: the first one before it, every wait after it.
  ASSERT_GT(count_calls(*bucketed, collectives::kAllReduce), 2u);
  EXPECT_GT(position(*bucketed, collectives::kAllReduce, false), position(*bucketed, "ltorch.matmul", true));
  EXPECT_LT(position(*sorted, collectives::kAllReduce, false), position(*sorted, "ltorch.matmul", true))
      << print_trace(*sorted);
  EXPECT_GT(position(*sorted, collectives::kWait, false), position(*sorted, "ltorch.matmul", true))
      << print_trace(*sorted);
  EXPECT_EQ(count_calls(*sorted, collectives::kAllReduce), count_calls(*bucketed, collectives::kAllReduce));
  // Still a program: every name read is defined before.
  std::set<std::string> defined;
  for (const auto& p : sorted->params) defined.insert(p.proxy->name);
  for (const auto& b : sorted->body) {
    if (!passes::is_del(b))
      for (const auto& p : b.inputs()) EXPECT_TRUE(defined.count(p->name)) << p->name << " read before defined";
    for (const auto& o : b.outputs) defined.insert(o->name);
  }
}

TEST(TransformsDistribution, ParameterProxiesSayHowTheyAreLaidOut) {
  // What the GUI's hover shows: ddp replicates the parameters, fsdp shards them, plain jit neither.
  std::map<std::string, Distribution> want = {
      {"jit", Distribution::none}, {"ddp", Distribution::replicated}, {"fsdp", Distribution::fully_sharded}};
  for (const auto& [transform, distribution] : want) {
    std::vector<std::string> order = {"jit"};
    if (transform != "jit") order.push_back(transform);
    auto built = trace_only("mlp", order, 2);
    auto computation = built.stages.forward.front().trace;
    size_t parameters = 0;
    for (const auto& p : computation->params) {
      if (p.proxy->name.rfind("t_", 0) != 0) {
        EXPECT_EQ(p.proxy->distribution, Distribution::none) << transform << " input " << p.proxy->name;
        continue;
      }
      ++parameters;
      EXPECT_EQ(p.proxy->distribution, distribution) << transform << " " << p.proxy->name;
    }
    EXPECT_EQ(parameters, 4u) << transform;
  }
}

TEST(TransformsOrder, LazyOrdersAreCanonicallyEqual) {
  for (const char* t : {"ddp", "fsdp"}) {
    auto a = trace_only("mlp", {"jit", t}, 2), b = trace_only("mlp", {t, "jit"}, 2);
    for (auto kind : kTraceKinds) {
      auto x = a.stages.last(kind), y = b.stages.last(kind);
      ASSERT_EQ(!x, !y);
      if (x) EXPECT_TRUE(canonically_equal(*x, *y)) << t << " " << trace_kind_name(kind);
    }
  }
}

TEST(TransformsSemantics, DdpAfterJitFailsInTheAllReduceMetaCheckAndKeepsThePartialBackward) {
  auto m = jit::make_model("linear");
  TransformContext c;
  c.world_size = 2;
  try {
    build(m, spec_of({"jit", "ddp"}, 2, "thunder-2024-03"), c);
    FAIL() << "jit,ddp in thunder-2024-03 must fail";
  } catch (const PipelineFailure& e) {
    std::string w = e.what();
    EXPECT_EQ(w.rfind("ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
                      "'torch.distributed.distributed_c10d.ProcessGroup'>\n", 0), 0u) << w;
    EXPECT_NE(w.find("Raised by: the meta function of torch_all_reduce_prim_impl (its group argument is None, read by "
                     "ddp backward bucketing)"), std::string::npos) << w;
    EXPECT_NE(w.find("jit() snapshotted process_group_for_ddp before ddp() set it: None"), std::string::npos) << w;
    EXPECT_NE(w.find("ddp forward synchronize reads the module at the first call: the process group"), std::string::npos) << w;
    EXPECT_NE(w.find("--workaround process-group"), std::string::npos) << w;
    EXPECT_EQ(e.rule(), rule::kStateReadAtCall);
    // The stages up to the failure: the plain ddp pass read the group at the call and completed;
    // the bucketing stage is the partial backward ending with the all-reduce given None.
    const auto& bwd = e.stages().backward;
    ASSERT_GE(bwd.size(), 3u);
    EXPECT_FALSE(bwd[bwd.size() - 2].failed());
    EXPECT_EQ(bwd[bwd.size() - 2].pass, "ddp pass");
    const Stage& failed = bwd.back();
    EXPECT_EQ(failed.pass, "ddp bucketing (25 MB)");
    ASSERT_TRUE(failed.failed());
    // The statements up to the failing all-reduce, then the backward's return: still a program.
    ASSERT_EQ(failed.failed_at, static_cast<int>(failed.trace->body.size()) - 2);
    EXPECT_EQ(failed.trace->body.back().symbol->form, PrintForm::ret);
    EXPECT_TRUE(bool(parse_trace(print_trace(*failed.trace))));
    const BoundSymbol& all_reduce = failed.trace->body.at(failed.failed_at);
    EXPECT_EQ(all_reduce.symbol->name, collectives::kAllReduce);
    EXPECT_TRUE(all_reduce.args.at(2).is_none());
    EXPECT_NE(print_trace(*failed.trace).find("torch_all_reduce_prim_impl(t"), std::string::npos);
  }
}

TEST(TransformsSemantics, FsdpAfterJitAndTheWorkaroundWorkInThunder202403) {
  TransformContext c;
  c.world_size = 2;
  for (auto spec : {spec_of({"jit", "fsdp"}, 2, "thunder-2024-03"), spec_of({"ddp", "jit"}, 2, "thunder-2024-03"),
                    spec_of({"jit", "ddp"}, 2, "thunder-2024-03", "process-group")}) {
    auto m = jit::make_model("linear");
    auto built = build(m, spec, c);
    auto lazy_model = jit::make_model("linear");
    auto lazy = build(lazy_model, spec_of(spec.order, 2), c);
    EXPECT_TRUE(canonically_equal(*built.stages.last(TraceKind::backward), *lazy.stages.last(TraceKind::backward)))
        << spec.label();
  }
}

TEST(TransformsSemantics, Thunder202601RefusesDistributedTransformsBeforeJit) {
  auto m = jit::make_model("linear");
  TransformContext c;
  c.world_size = 2;
  try {
    build(m, spec_of({"ddp", "jit"}, 2, "thunder-2026-01"), c);
    FAIL() << "ddp,jit in thunder-2026-01 must be refused";
  } catch (const IllegalOrder& e) {
    EXPECT_EQ(e.rule(), rule::kThunderModuleOnly);
    EXPECT_EQ(std::string(e.what()).rfind("TypeError: Thunder DDP only works on ThunderModule, got <class "
                                          "'torch.nn.modules.linear.Linear'>", 0), 0u) << e.what();
  }
  EXPECT_THROW(ValidatedOrder({"fsdp", "jit"}, find_semantics("thunder-2026-01")), IllegalOrder);
  auto m2 = jit::make_model("linear");
  EXPECT_NO_THROW(build(m2, spec_of({"jit", "ddp"}, 2, "thunder-2026-01"), c));
}

TEST(TransformsSemantics, BadNamesAndPointlessWorkaroundsAreRefused) {
  EXPECT_THROW(find_semantics("thunder-2023"), std::invalid_argument);
  EXPECT_THROW(check_workaround(find_semantics("lazy"), "process-group"), std::invalid_argument);
  EXPECT_THROW(check_workaround(find_semantics("thunder-2026-01"), "process-group"), std::invalid_argument);
  EXPECT_THROW(check_workaround(find_semantics("thunder-2024-03"), "group"), std::invalid_argument);
  EXPECT_NO_THROW(check_workaround(find_semantics("thunder-2024-03"), "process-group"));
}

TEST(TransformsFsdp, ShardPadsDim0) {
  at::Tensor full = at::arange(10, at::kFloat).reshape({5, 2});
  at::Tensor s2 = fsdp_shard(full, 2, 3);  // rows 4..5 of 6 padded rows
  ASSERT_EQ(s2.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(at::equal(s2[0], full[4]));
  EXPECT_EQ(s2[1].abs().sum().item<float>(), 0.f);
}

TEST(TransformsFsdp, TracesGatherAndReduceScatter) {
  for (bool zero3 : {true, false}) {
    auto built = trace_only("mlp", {"jit", "fsdp"}, 3, {}, 25.0, zero3);
    auto fwd = built.stages.last(TraceKind::forward), bwd = built.stages.last(TraceKind::backward);
    if (std::getenv("TV_SHOW_TRACES")) std::cout << print_trace(*fwd) << "\n" << print_trace(*bwd) << "\n";
    EXPECT_EQ(count_calls(*fwd, collectives::kAllGather), 4u);
    EXPECT_EQ(count_calls(*bwd, collectives::kReduceScatter), 4u);
    // zero-3 gathers fc2.weight again in the backward (saved for the input gradient); zero-2 saves it
    EXPECT_EQ(count_calls(*bwd, collectives::kAllGather), zero3 ? 1u : 0u) << print_trace(*bwd);
    std::string prologue = print_trace(*built.stages.last(TraceKind::prologue));
    EXPECT_NE(prologue.find("(86, 64), 'cpu', torch.float32, True)"), std::string::npos) << prologue;
    EXPECT_EQ(built.stages.backward.back().trace != nullptr, true);
    bool named = false;
    for (const auto& s : built.stages.backward)
      named = named || s.pass == std::string("fsdp backward (") + (zero3 ? "zero3" : "zero2") + ")";
    EXPECT_TRUE(named);
  }
  auto z3 = trace_only("mlp", {"jit", "fsdp"}, 3, {}, 25.0, true);
  auto z2 = trace_only("mlp", {"jit", "fsdp"}, 3, {}, 25.0, false);
  EXPECT_LT(z3.saved_bytes, z2.saved_bytes);
}

TEST(TransformsAutocast, ConvertsAroundLinear) {
  auto built = trace_only("mlp", {"jit", "autocast"}, 1);
  bool named = false;
  for (const auto& s : built.stages.forward) named = named || s.pass == "autocast (bf16)";
  EXPECT_TRUE(named);
  const Trace* ac = nullptr;
  for (const auto& s : built.stages.forward)
    if (s.pass == "autocast (bf16)") ac = s.trace.get();
  ASSERT_TRUE(ac);
  std::vector<std::string> ops;
  for (const auto& b : ac->body)
    if (b.symbol->form == PrintForm::call) ops.push_back(b.name());
  // fc1: x, weight, bias converted, linear, back to f32
  ASSERT_GE(ops.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + 5),
            (std::vector<std::string>{"ltorch.convert_element_type", "ltorch.convert_element_type",
                                      "ltorch.convert_element_type", "ltorch.linear", "ltorch.convert_element_type"}));
  std::string text = print_trace(*ac);
  EXPECT_NE(text.find("torch.bfloat16"), std::string::npos) << text;
  EXPECT_NE(text.find("\"cpu bf16[2, 256]\""), std::string::npos) << text;
}

TEST(TransformsAutocast, NumbersWithinBf16Tolerance) {
  auto m = jit::make_model("mlp");
  auto reference = mean_eager_grads("mlp", 1);
  dist::World(1).run([&](int rank, dist::Communicator& comm) {
    auto run = run_rank("mlp", {"jit", "autocast"}, rank, comm);
    for (const auto& [name, g] : reference) {
      ASSERT_TRUE(run.grads.count(name)) << name;
      EXPECT_EQ(run.grads[name].scalar_type(), at::kFloat) << name;
      expect_close(run.grads[name], g, "autocast grad " + name, 2e-2);
    }
  });
}

class TransformsNumerics : public ::testing::TestWithParam<std::tuple<std::string, std::string, int>> {};

TEST_P(TransformsNumerics, GradsEqualMeanOfEager) {
  auto [model, transform, world] = GetParam();
  auto reference = mean_eager_grads(model, world);
  for (bool zero3 : transform == "fsdp" ? std::vector<bool>{true, false} : std::vector<bool>{true}) {
    auto runs = dist::World(world).run_collect([&](int rank, dist::Communicator& comm) {
      return run_rank(model, {"jit", transform}, rank, comm, zero3, transform == "ddp" ? 0.1 : 25.0);
    });
    auto rank0 = jit::make_model(model, {{"seed", "0"}});
    for (int r = 0; r < world; ++r) {
      for (const auto& p : rank0.parameters) {
        at::Tensor w = transform == "fsdp" ? fsdp_shard(*p.value, r, world) : *p.value;
        EXPECT_TRUE(at::equal(runs[r].weights.at(p.name), w)) << "rank " << r << " weight " << p.name;
      }
      for (const auto& [name, g] : reference) {
        ASSERT_TRUE(runs[r].grads.count(name)) << name;
        at::Tensor want = transform == "fsdp" ? fsdp_shard(g, r, world) : g;
        expect_close(runs[r].grads[name], want,
                     model + " " + transform + (zero3 ? "" : " zero2") + " rank " + std::to_string(r) + " " + name);
      }
    }
  }
  EXPECT_EQ(exec::pending_collectives(), 0u);
}

// hsdp on an R x S mesh: rank r holds shard r % S of the gradient averaged over all W ranks (both
// reductions: over the shard group, then across the replicas), from eager autograd alone.
class TransformsHsdp : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

std::string hsdp_case_name(const ::testing::TestParamInfo<TransformsHsdp::ParamType>& info) {
  const auto& [model, world, shards] = info.param;
  return model + "_" + std::to_string(world / shards) + "x" + std::to_string(shards);
}

TEST_P(TransformsHsdp, GradsEqualMeanOfEager) {
  auto [model, world, shards] = GetParam();
  auto reference = mean_eager_grads(model, world);
  auto runs = dist::World(world).run_collect([&, shards = shards](int rank, dist::Communicator& comm) {
    return run_rank(model, {"jit", "hsdp"}, rank, comm, true, 25.0, shards);
  });
  auto rank0 = jit::make_model(model, {{"seed", "0"}});
  for (int r = 0; r < world; ++r) {
    for (const auto& p : rank0.parameters)
      EXPECT_TRUE(at::equal(runs[r].weights.at(p.name), fsdp_shard(*p.value, r % shards, shards)))
          << "rank " << r << " weight " << p.name;
    for (const auto& [name, g] : reference) {
      ASSERT_TRUE(runs[r].grads.count(name)) << name;
      expect_close(runs[r].grads[name], fsdp_shard(g, r % shards, shards),
                   model + " hsdp " + std::to_string(world / shards) + "x" + std::to_string(shards) + " rank " +
                       std::to_string(r) + " " + name);
    }
  }
  EXPECT_EQ(exec::pending_collectives(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Gloo, TransformsHsdp,
                         ::testing::Values(std::make_tuple("mlp", 4, 2), std::make_tuple("linear", 4, 2),
                                           std::make_tuple("mlp", 6, 3), std::make_tuple("mlp", 4, 1),
                                           std::make_tuple("mlp", 4, 4)),
                         hsdp_case_name);

TEST(TransformsHsdp, MeshIsCheckedAgainstTheWorldAndTheOrder) {
  EXPECT_EQ(hybrid_mesh(4, 0).shards, 2);
  EXPECT_EQ(hybrid_mesh(3, 0).shards, 3);
  EXPECT_EQ(hybrid_mesh(4, 2).replicate_group(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(hybrid_mesh(4, 2).shard_group(3), (std::vector<int>{2, 3}));
  EXPECT_THROW(hybrid_mesh(4, 3), std::invalid_argument);
  EXPECT_THROW(hybrid_mesh(4, 8), std::invalid_argument);
  EXPECT_THROW(check_shard_group({"jit", "fsdp"}, 4, 2), std::invalid_argument);
  EXPECT_NO_THROW(check_shard_group({"jit", "fsdp"}, 4, 0));
  try {
    ValidatedOrder({"jit", "fsdp", "ddp"});
    FAIL() << "fsdp with ddp was accepted";
  } catch (const IllegalOrder& e) {
    EXPECT_NE(std::string(e.what()).find("hsdp"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ValidatedOrder({"jit", "hsdp", "ddp"}), IllegalOrder);
}

INSTANTIATE_TEST_SUITE_P(Gloo, TransformsNumerics,
                         ::testing::Combine(::testing::Values("linear", "mlp"), ::testing::Values("ddp", "fsdp"),
                                            ::testing::Values(2, 3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" +
                                  std::to_string(std::get<2>(info.param));
                         });

// A capture's orders are checked against the names of transforms/names.h (a reader links no
// transform): the registry must list the same built-ins, in the same order.
TEST(TransformNames, BuiltinsAreWhatTheRegistryLists) {
  auto names = transform_names();
  ASSERT_GE(names.size(), kBuiltinTransformNames.size());
  for (size_t i = 0; i < kBuiltinTransformNames.size(); ++i) EXPECT_EQ(names[i], kBuiltinTransformNames[i]) << i;
}
