// Jit: acquisition of the built-in models, Thunder-shaped prologue/computation/epilogue, the cache,
// deterministic weights, errors that name the op, the shapes and the model line.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "format/parser.h"
#include "format/printer.h"
#include "jit/acquire.h"
#include "jit/cache.h"
#include "jit/zoo.h"
#include "ops/ltorch.h"
#include "test_util.h"

using namespace tv;
using namespace tv::jit;

namespace {

std::string fixture(const std::string& name) {
  return tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name);
}

void expect_round_trip(const Trace& t, const std::string& what) {
  auto text = print_trace(t);
  auto r = parse_trace(text);
  ASSERT_TRUE(r) << what << ": " << r.error->describe(what) << "\n" << text;
  EXPECT_EQ(print_trace(*r.trace), text) << what;
  auto py = print_trace(t, {.depth = 0});
  auto r0 = parse_trace(py);
  ASSERT_TRUE(r0) << what << " (depth 0): " << r0.error->describe(what);
  EXPECT_EQ(print_trace(*r0.trace, {.depth = 0}), py) << what;
}

// Lines without source-location headers (and the blank line above each), with `cuda:0` read as
// `cpu` and proxies named t<N> renamed in order of first appearance.
std::vector<std::string> normalized(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  static const std::regex header(R"(^  # \S+:\d+(: .*)?$)");
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, header)) {
      if (!lines.empty() && lines.back().empty()) lines.pop_back();
      continue;
    }
    lines.push_back(line);
  }
  std::map<std::string, std::string> names;
  static const std::regex tname(R"(\bt\d+\b)");
  for (auto& line : lines) {
    line = std::regex_replace(line, std::regex("cuda:0"), "cpu");
    std::string out;
    auto begin = std::sregex_iterator(line.begin(), line.end(), tname);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      auto& n = names[it->str()];
      if (n.empty()) n = "T" + std::to_string(names.size() - 1);
      out += line.substr(last, it->position() - last) + n;
      last = it->position() + it->length();
    }
    line = out + line.substr(last);
  }
  return lines;
}

std::vector<std::string> param_names(const Trace& t) {
  std::vector<std::string> out;
  for (const auto& p : t.params) out.push_back(p.proxy->name);
  return out;
}

bool has_symbol(const Trace& t, const std::string& name) {
  for (const auto& b : t.body)
    if (b.name() == name) return true;
  return false;
}

}  // namespace

TEST(Jit, EveryBuiltInModelAcquiresAndRoundTrips) {
  auto models = list_models();
  ASSERT_EQ(models.size(), 4u);
  for (const auto& info : models) {
    SCOPED_TRACE(info.name);
    auto m = make_model(info.name);
    Acquired a;
    ASSERT_NO_THROW(a = acquire(m)) << info.name;

    // prologue: prologue(*args, **kwargs), checks, returns ((inputs, sorted params), ())
    const auto& pro = *a.prologue;
    EXPECT_EQ(pro.function_name, "prologue");
    ASSERT_EQ(pro.params.size(), 2u);
    EXPECT_EQ(pro.params[0].kind, ParamKind::varargs);
    EXPECT_EQ(pro.params[1].kind, ParamKind::varkw);
    EXPECT_EQ(pro.body.at(1).name(), "prims.check_len");
    EXPECT_TRUE(has_symbol(pro, "prims.check_tensor_shape_and_metadata"));
    EXPECT_TRUE(has_symbol(pro, "prims.check_number_type_and_value"));
    EXPECT_TRUE(has_symbol(pro, "thunder.core.module.get_thunder_module"));
    int param_checks = 0;
    for (const auto& b : pro.body)
      if (b.name() == "prims.check_tensor_shape_and_metadata") ++param_checks;
    EXPECT_EQ(param_checks, static_cast<int>(m.inputs.size() + m.parameters.size() + m.buffers.size()));

    // computation: inputs, then parameters sorted by proxy name
    const auto& comp = *a.computation;
    EXPECT_EQ(comp.function_name, "computation");
    auto names = param_names(comp);
    ASSERT_EQ(names.size(), m.inputs.size() + m.parameters.size());
    for (size_t i = 0; i < m.inputs.size(); ++i) EXPECT_EQ(names[i], m.inputs[i].name);
    EXPECT_TRUE(std::is_sorted(names.begin() + m.inputs.size(), names.end()));
    auto ret = comp.returned();
    ASSERT_EQ(ret.kind, Value::Kind::tuple);
    ASSERT_GE(ret.items.size(), 1u);

    auto pro_ret = pro.returned();
    ASSERT_EQ(pro_ret.kind, Value::Kind::tuple);
    ASSERT_EQ(pro_ret.items.size(), 2u);
    ASSERT_EQ(pro_ret.items[0].items.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(pro_ret.items[0].items[i].proxy->name, names[i]);
    EXPECT_TRUE(pro_ret.items[1].items.empty());

    // every op has a header naming the model source line
    for (const auto& b : comp.body)
      if (b.symbol->form == PrintForm::call && b.name().rfind("ltorch.", 0) == 0 && b.header)
        EXPECT_NE(b.header->find("engine/jit/zoo.cpp:"), std::string::npos) << *b.header;
    EXPECT_TRUE(comp.body.at(names.size()).header);

    // epilogue: takes the outputs, returns them
    const auto& epi = *a.epilogue;
    EXPECT_EQ(epi.function_name, "epilogue");
    ASSERT_EQ(epi.params.size(), ret.items.size());
    for (size_t i = 0; i < ret.items.size(); ++i) EXPECT_EQ(epi.params[i].proxy, ret.items[i].proxy);

    expect_round_trip(pro, info.name + " prologue");
    expect_round_trip(comp, info.name + " computation");
    expect_round_trip(epi, info.name + " epilogue");
  }
}

TEST(Jit, CheckingAModelRequestNeedsNoMemory) {
  // 10^4 layers of width 8192 would be 8 TB of weights: checked on the meta device, at once.
  EXPECT_NO_THROW(check_model("gpt", {{"layers", "10000"}, {"d_model", "8192"}, {"vocab", "50304"}}));
  EXPECT_THROW(check_model("gpt", {{"d_model", "65"}}), std::invalid_argument);  // heads must divide it
  EXPECT_THROW(check_model("gpt", {{"layers", "0"}}), std::invalid_argument);
  // Billions of layers are refused by their count of tensors, before memory runs out on meta headers.
  EXPECT_THROW(check_model("gpt", {{"layers", "42949672981"}}), std::invalid_argument);
  // A width whose tensors' bytes overflow is bad input naming the shape, not LibTorch's overflow error.
  try {
    check_model("gpt", {{"layers", "8"}, {"d_model", "99000000000000000"}, {"heads", "1"}});
    ADD_FAILURE() << "a d_model of 9.9e16 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[128, 99000000000000000]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_model("mlp", {{"depth", "2"}}), std::invalid_argument);
  EXPECT_THROW(check_model("resnet", {}), std::invalid_argument);
  EXPECT_THROW(check_model("linear", {{"device", "tpu"}}), std::invalid_argument);
}

TEST(Jit, LinearPrologueMatchesThunder) {
  auto a = acquire(make_model("linear"));
  auto expected = normalized(fixture("linear__prologue__00.python.txt"));
  EXPECT_EQ(normalized(print_trace(*a.prologue)), expected) << print_trace(*a.prologue);
}

TEST(Jit, MlpPrologueMatchesThunderModuloCounters) {
  auto a = acquire(make_model("mlp"));
  auto unnumber = [](std::vector<std::string> lines) {
    for (auto& l : lines) l = std::regex_replace(l, std::regex(R"(\b([imsf])\d+\b)"), "$1#");
    return lines;
  };
  EXPECT_EQ(unnumber(normalized(print_trace(*a.prologue))),
            unnumber(normalized(fixture("mlp__prologue__00.python.txt"))))
      << print_trace(*a.prologue);
}

TEST(Jit, LinearComputationAndEpilogueMatchThunder) {
  auto a = acquire(make_model("linear"));
  EXPECT_EQ(normalized(print_trace(*a.computation, {.depth = 0})), normalized(fixture("linear__fwd__00.python.txt")))
      << print_trace(*a.computation, {.depth = 0});
  EXPECT_EQ(normalized(print_trace(*a.epilogue)), normalized(fixture("linear__epilogue__00.txt")))
      << print_trace(*a.epilogue);
  // The computation's only op carries this model's source line.
  const auto& op = a.computation->body.at(2);
  EXPECT_EQ(op.name(), "ltorch.linear");
  ASSERT_TRUE(op.header);
  EXPECT_NE(op.header->find("engine/jit/zoo.cpp:"), std::string::npos) << *op.header;
  EXPECT_EQ(op.header.get(), op.source.get()) << "the header shares the source's text, not a copy";
}

TEST(Jit, MlpComputationSignature) {
  auto a = acquire(make_model("mlp"));
  EXPECT_EQ(param_names(*a.computation),
            (std::vector<std::string>{"x", "t_fc1_bias", "t_fc1_weight", "t_fc2_bias", "t_fc2_weight"}));
  std::vector<std::string> ops;
  for (const auto& b : a.computation->body)
    if (b.symbol->form == PrintForm::call) ops.push_back(b.name());
  EXPECT_EQ(ops, (std::vector<std::string>{"ltorch.linear", "ltorch.gelu", "ltorch.linear"}));
  auto out = a.computation->returned().items.at(0).proxy;
  EXPECT_EQ(out->shape, (std::vector<int64_t>{2, 64}));
}

TEST(Jit, GptReturnsLogitsAndLoss) {
  auto m = make_model("gpt", {{"layers", "1"}, {"seq", "8"}});
  auto a = acquire(m);
  auto ret = a.computation->returned();
  ASSERT_EQ(ret.items.size(), 2u);
  EXPECT_EQ(ret.items[0].proxy->shape, (std::vector<int64_t>{2, 8, 128}));
  EXPECT_TRUE(ret.items[1].proxy->shape.empty());
  EXPECT_TRUE(has_symbol(*a.computation, "ltorch.scaled_dot_product_attention"));
  EXPECT_TRUE(has_symbol(*a.computation, "ltorch.cross_entropy"));
  EXPECT_EQ(a.epilogue->returned().kind, Value::Kind::tuple);
  EXPECT_EQ(m.parameters.size(), 2u + 12u + 2u + 1u);
}

TEST(Jit, CacheHitsOnSameMetadataAndMissesOnNewShape) {
  auto j = tv::jit::jit(make_model("linear"));
  auto first = j->call_traces();
  EXPECT_EQ(j->misses(), 1);
  EXPECT_EQ(j->hits(), 0);
  EXPECT_FALSE(j->last_was_hit());
  auto again = j->call_traces({at::randn({2, 5})});
  EXPECT_EQ(j->hits(), 1);
  EXPECT_TRUE(j->last_was_hit());
  EXPECT_EQ(first, again);

  auto wider = j->acquire_for({TensorMeta{{3, 5}, DType::f32, Device{}, false}});
  EXPECT_EQ(j->misses(), 2);
  EXPECT_NE(wider, first);
  EXPECT_EQ(wider->computation->params[0].proxy->shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(wider->computation->returned().items[0].proxy->shape, (std::vector<int64_t>{3, 10}));

  // Another dtype is another key; f64 against the f32 weight is refused, as torch refuses it, and
  // nothing is cached for it.
  EXPECT_THROW(j->acquire_for({TensorMeta{{2, 5}, DType::f64, Device{}, false}}), OpError);
  EXPECT_EQ(j->call_traces(), first);
  EXPECT_EQ(j->hits(), 2);
  EXPECT_EQ(j->cache_size(), 2u);

  // A module attribute is part of the key and becomes a prologue check.
  j->module().set_attribute("training", false);
  const auto misses = j->misses();
  auto eval = j->call_traces();
  EXPECT_EQ(j->misses(), misses + 1);
  EXPECT_NE(print_trace(*eval->prologue).find("prims.check_number_type_and_value(i0, False)"), std::string::npos);
}

TEST(Jit, SameSeedSameWeights) {
  auto a = make_model("mlp", {{"seed", "7"}});
  auto b = make_model("mlp", {{"seed", "7"}});
  auto c = make_model("mlp", {{"seed", "8"}});
  ASSERT_EQ(a.parameters.size(), 4u);
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    EXPECT_TRUE(at::equal(*a.parameters[i].value, *b.parameters[i].value)) << a.parameters[i].name;
    EXPECT_FALSE(at::equal(*a.parameters[i].value, *c.parameters[i].value)) << a.parameters[i].name;
    EXPECT_TRUE(a.parameters[i].value->requires_grad());
  }
  EXPECT_TRUE(at::equal(*a.inputs[0].value, *b.inputs[0].value));
  auto g1 = make_model("gpt"), g2 = make_model("gpt");
  for (size_t i = 0; i < g1.parameters.size(); ++i)
    EXPECT_TRUE(at::equal(*g1.parameters[i].value, *g2.parameters[i].value)) << g1.parameters[i].name;
  EXPECT_TRUE(at::equal(*g1.inputs[0].value, *g2.inputs[0].value));
}

TEST(Jit, ShapeMismatchNamesOpShapesAndModelLine) {
  Module m;
  m.name = "broken";
  m.add_parameter("weight", at::randn({10, 6}).set_requires_grad(true));
  m.add_input("x", at::randn({2, 5}));
  int line = __LINE__ + 2;
  m.forward = [](ForwardContext& ctx) -> std::vector<ProxyPtr> {
    return {ltorch::linear(ctx.here(), ctx.input("x"), ctx.param("weight"), nullptr)};
  };
  try {
    acquire(m);
    FAIL() << "expected an OpError";
  } catch (const OpError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[10, 6]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("jit_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
  }
  // The same from a zoo model given an input of the wrong width.
  try {
    acquire(make_model("linear"), {TensorMeta{{2, 7}, DType::f32, Device{}, false}});
    FAIL() << "expected an OpError";
  } catch (const OpError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 7]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[10, 5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("engine/jit/zoo.cpp:"), std::string::npos) << msg;
  }
}

TEST(Jit, BuffersAreUnpackedAndPassed) {
  Module m;
  m.name = "scaled";
  m.add_parameter("weight", at::randn({4, 3}).set_requires_grad(true));
  m.add_buffer("scale", at::ones({4}));
  m.add_input("x", at::randn({2, 3}));
  m.set_attribute("training", true);
  m.forward = [](ForwardContext& ctx) -> std::vector<ProxyPtr> {
    auto y = ltorch::linear(ctx.here(), ctx.input("x"), ctx.param("weight"), nullptr);
    return {ltorch::mul(ctx.here(), Value::of(y), Value::of(ctx.param("scale")))};
  };
  auto a = acquire(m);
  auto text = print_trace(*a.prologue);
  EXPECT_NE(text.find("t_scale: \"cpu f32[4]\" = module.get_buffer('scale')"), std::string::npos) << text;
  EXPECT_EQ(param_names(*a.computation), (std::vector<std::string>{"x", "t_scale", "t_weight"}));
  expect_round_trip(*a.prologue, "buffer prologue");
  expect_round_trip(*a.computation, "buffer computation");
}

TEST(Jit, RegistryErrorsListValidNames) {
  try {
    make_model("resnet");
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("resnet"), std::string::npos);
    for (const char* n : {"linear", "mlp", "llama_mlp", "gpt"}) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  try {
    make_model("gpt", {{"depth", "3"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("depth"), std::string::npos);
    for (const char* n : {"layers", "d_model", "heads", "seq", "batch", "vocab", "seed"})
      EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  try {
    make_model("gpt", {{"layers", "two"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("layers"), std::string::npos) << msg;
    EXPECT_NE(msg.find("two"), std::string::npos) << msg;
  }
  EXPECT_THROW(make_model("gpt", {{"heads", "5"}}), std::invalid_argument);
  for (const auto& info : list_models()) {
    EXPECT_FALSE(info.description.empty());
    for (const auto& p : info.params) EXPECT_FALSE(p.description.empty()) << info.name << "." << p.name;
  }
}

