// Every real Thunder printout (tests/fixtures/thunder and thunder_cpu) parses, reprints to the same
// text, and what the parser read matches.
#include <gtest/gtest.h>

#include "format/parser.h"
#include "format/printer.h"
#include "test_util.h"
#include "trace_invariants.h"

using namespace tv;
using tv::testing::fixture_files;
using tv::testing::read_file;

namespace {

TracePtr parse_fixture(const std::string& name) {
  auto r = parse_trace(read_file(std::string(TV_FIXTURES_DIR) + "/" + name));
  if (!r) ADD_FAILURE() << name << ": " << r.error->describe(name);
  return r.trace;
}

const BoundSymbol* find_output(const Trace& t, const std::string& name) {
  for (const auto& b : t.body)
    for (const auto& o : b.outputs)
      if (o->name == name) return &b;
  return nullptr;
}

}  // namespace

TEST(Fixtures, EveryFixtureParsesAndReprintsIdentically) {
  ASSERT_EQ(fixture_files(TV_FIXTURES_DIR).size(), 74u);       // 37 traces, each as str() and as python()
  ASSERT_EQ(fixture_files(TV_CPU_FIXTURES_DIR).size(), 90u);   // 45 traces of the CPU model blocks
  for (const auto& f : tv::testing::all_fixture_files()) {
    auto text = read_file(f);
    auto r = parse_trace(text);
    ASSERT_TRUE(r) << r.error->describe(f.string());
    PrintOptions options;
    if (tv::testing::is_python_print(f)) options.depth = 0;
    EXPECT_EQ(print_trace(*r.trace, options), text) << f;
  }
}

// What the passes rely on holds in Thunder's own traces: every proxy read is defined, and a
// decomposition reads only what its statement reads or defines below itself.
TEST(Fixtures, EveryNameReadIsDefinedAndDecompositionsReadOnlyTheirStatementsReads) {
  for (const auto& f : tv::testing::all_fixture_files()) {
    auto r = parse_trace(read_file(f));
    ASSERT_TRUE(r) << r.error->describe(f.string());
    EXPECT_EQ(tv::testing::names_read_but_never_defined(*r.trace), std::vector<std::string>{}) << f;
    EXPECT_EQ(tv::testing::decompositions_reading_outside(*r.trace), std::vector<std::string>{}) << f;
  }
}

TEST(Fixtures, TheInvariantChecksReportABreach) {
  auto parsed = parse_fixture("mlp__fwd__01.txt");
  ASSERT_TRUE(parsed);
  Trace t = *parsed;
  BoundSymbol* gelu = nullptr;
  for (auto& b : t.body)
    if (!b.outputs.empty() && b.outputs[0]->name == "t10") gelu = &b;
  ASSERT_TRUE(gelu);
  // gelu's first subsymbol made to read x, which gelu itself does not read (and so its own
  // decomposition now reads what it no longer does)
  gelu->subsymbols[0].args[0] = Value::of(t.params[0].proxy);
  EXPECT_EQ(tv::testing::decompositions_reading_outside(t),
            (std::vector<std::string>{"ltorch.true_divide under ltorch.gelu (t10) reads x",
                                      "prims.div under ltorch.true_divide (t6) reads input"}));
  gelu->args[0] = Value::of(make_tensor("t_nowhere", {2}, DType::f32, Device{}));
  EXPECT_EQ(tv::testing::names_read_but_never_defined(t), std::vector<std::string>{"ltorch.gelu reads t_nowhere"});
}

TEST(Fixtures, ComputationSignatureSymbolsAndTypes) {
  auto t = parse_fixture("mlp__fwd__01.txt");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function_name, "computation");
  ASSERT_EQ(t->params.size(), 5u);
  EXPECT_EQ(t->params[0].proxy->name, "x");
  EXPECT_EQ(t->params[2].proxy->name, "t_fc1_weight");
  EXPECT_EQ(t->params[2].proxy->shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(t->params[2].proxy->device.str(), "cuda:0");
  EXPECT_EQ(t->params[2].proxy->dtype, DType::f32);
  ASSERT_TRUE(t->provenance);
  EXPECT_EQ(t->provenance->pass, "Return arguments to track copies onto them");
  EXPECT_FALSE(t->provenance->milliseconds);

  auto gelu = find_output(*t, "t10");
  ASSERT_TRUE(gelu);
  EXPECT_EQ(gelu->name(), "ltorch.gelu");
  ASSERT_EQ(gelu->kwargs.size(), 1u);
  EXPECT_EQ(gelu->kwargs[0].first, "approximate");
  EXPECT_EQ(gelu->kwargs[0].second.s, "none");
  ASSERT_EQ(gelu->subsymbols.size(), 5u);
  EXPECT_EQ(gelu->subsymbols[0].name(), "ltorch.true_divide");
  EXPECT_EQ(gelu->subsymbols[0].subsymbols.at(0).name(), "prims.div");
  EXPECT_DOUBLE_EQ(gelu->subsymbols[0].args[1].f, 1.4142135623730951);
  // The last subsymbol defines the parent's output: the same proxy, not a copy.
  EXPECT_EQ(gelu->subsymbols[4].output(), gelu->output());
  ASSERT_TRUE(gelu->header);
  EXPECT_NE(gelu->header->find("activation.py:816"), std::string::npos);

  auto ret = t->returned();
  ASSERT_EQ(ret.kind, Value::Kind::dict);
  EXPECT_EQ(ret.entries[0].first.s, "output");
  EXPECT_EQ(ret.entries[1].second.kind, Value::Kind::list);
}

TEST(Fixtures, PrologueUnpacksAndChecks) {
  auto t = parse_fixture("ddp_jit_then_ddp__prologue__00.txt");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function_name, "prologue");
  ASSERT_EQ(t->params.size(), 2u);
  EXPECT_EQ(t->params[0].kind, ParamKind::varargs);
  EXPECT_EQ(t->params[1].kind, ParamKind::varkw);
  EXPECT_EQ(t->params[0].proxy->kind, ProxyKind::any);
  EXPECT_FALSE(t->provenance);

  auto input = find_output(*t, "input");
  ASSERT_TRUE(input);
  EXPECT_EQ(input->symbol->form, PrintForm::subscript);
  EXPECT_EQ(input->args[1].i, 0);
  auto weight = find_output(*t, "t_weight");
  ASSERT_TRUE(weight);
  EXPECT_EQ(weight->symbol->form, PrintForm::method);
  EXPECT_EQ(weight->name(), "get_parameter");
  EXPECT_EQ(weight->args[1].s, "weight");
  auto bucket = find_output(*t, "f4");
  ASSERT_TRUE(bucket);
  EXPECT_EQ(bucket->symbol->form, PrintForm::attribute);
  EXPECT_EQ(bucket->output()->number_type, NumberType::floating);
  EXPECT_DOUBLE_EQ(*bucket->output()->number_value, 25.0);

  bool saw_check = false;
  for (const auto& b : t->body) {
    if (b.name() != "prims.check_tensor_shape_and_metadata") continue;
    saw_check = true;
    EXPECT_EQ(b.args[1].as_ints(), (std::vector<int64_t>{2, 5}));
    EXPECT_EQ(b.args[2].s, "cuda:0");
    EXPECT_EQ(b.args[3].kind, Value::Kind::dtype);
    EXPECT_EQ(b.args[4].kind, Value::Kind::boolean);
    break;
  }
  EXPECT_TRUE(saw_check);
  auto device = find_output(*t, "cache_info_default_device");
  ASSERT_TRUE(device);
  EXPECT_EQ(device->output()->kind, ProxyKind::other);
  EXPECT_EQ(device->output()->other_text, "<class 'torch.device'>");
}

TEST(Fixtures, BackwardUnpacksFuturesAndCollectives) {
  auto t = parse_fixture("ddp_jit_then_ddp__bwd__00.txt");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function_name, "backward_fn");
  const auto& unpack = t->body.at(2);
  EXPECT_EQ(unpack.symbol->form, PrintForm::unpack_sequence);
  ASSERT_EQ(unpack.outputs.size(), 2u);
  EXPECT_EQ(unpack.outputs[0]->kind, ProxyKind::collection);

  auto future = find_output(*t, "ft25");
  ASSERT_TRUE(future);
  EXPECT_EQ(future->name(), "torch_all_reduce_prim_impl");
  EXPECT_EQ(future->output()->kind, ProxyKind::future_tensor);
  EXPECT_EQ(future->output()->shape, (std::vector<int64_t>{10, 5}));
  EXPECT_EQ(future->args[1].kind, Value::Kind::name);
  EXPECT_EQ(future->args[1].s, "_DistributedReduceOps_SUM_0");
  auto wait = find_output(*t, "t26");
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait->args[0].proxy, future->output());

  size_t dels = 0;
  for (const auto& b : t->body) dels += b.symbol->form == PrintForm::del;
  EXPECT_EQ(dels, 10u);
  auto ret = t->returned();
  ASSERT_EQ(ret.kind, Value::Kind::tuple);
  EXPECT_TRUE(ret.items[0].is_none());
  EXPECT_EQ(ret.items[1].proxy->name, "t26");
}

TEST(Fixtures, PythonPrintHasNoSubsymbols) {
  auto t = parse_fixture("mlp__bwd__00.python.txt");
  ASSERT_TRUE(t);
  for (const auto& b : t->body) EXPECT_TRUE(b.subsymbols.empty()) << b.name();
  auto full = parse_fixture("mlp__bwd__00.txt");
  ASSERT_TRUE(full);
  PrintOptions top;
  top.depth = 0;
  EXPECT_EQ(print_trace(*full, top), read_file(std::string(TV_FIXTURES_DIR) + "/mlp__bwd__00.python.txt"));
}

TEST(Fixtures, CpuBlocksTargetsContinuationsAndOpaqueSymbols) {
  auto read = [](const std::string& name) {
    auto r = parse_trace(read_file(std::string(TV_CPU_FIXTURES_DIR) + "/" + name));
    if (!r) ADD_FAILURE() << r.error->describe(name);
    return r.trace;
  };
  auto gpt = read("gpt_block__fwd__00.python.txt");
  ASSERT_TRUE(gpt);
  auto split = find_output(*gpt, "q");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->name(), "ltorch.split");
  ASSERT_EQ(split->outputs.size(), 3u);
  EXPECT_EQ(split->outputs[2]->name, "v");
  ASSERT_TRUE(split->output_target);
  EXPECT_EQ(split->output_target->kind, Value::Kind::list);

  auto backward = read("gpt_block__bwd__00.python.txt");
  ASSERT_TRUE(backward);
  auto unpack = find_output(*backward, "t_fc2_weight");  // written over three lines with '\'
  ASSERT_TRUE(unpack);
  EXPECT_EQ(unpack->symbol->form, PrintForm::unpack_sequence);
  EXPECT_EQ(unpack->outputs.size(), 27u);
  EXPECT_EQ(unpack->outputs[0]->shape, (std::vector<int64_t>{64, 256}));

  auto convnet = read("convnet__fwd__03.python.txt");
  ASSERT_TRUE(convnet);
  auto aliases = find_output(*convnet, "t125");
  ASSERT_TRUE(aliases);
  EXPECT_EQ(aliases->outputs.size(), 1u);
  EXPECT_EQ(python_text(*aliases->output_target), "(t125,)");

  auto losses = read("losses__bwd__00.python.txt");
  ASSERT_TRUE(losses);
  auto vjp = find_output(*losses, "t455");
  ASSERT_TRUE(vjp);
  EXPECT_TRUE(vjp->symbol->opaque);
  EXPECT_EQ(vjp->name(), "smooth_l1_loss_vjp");
  EXPECT_EQ(vjp->outputs.size(), 2u);
  EXPECT_EQ(python_text(vjp->args[0]), "((t383, y), {})");
}
