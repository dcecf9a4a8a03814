// A model rebuilt from a capture's acquired traces (jit/captured.h) is the same program: under any
// order its traces are canonically equal to those of the model it was captured from; what cannot be
// rebuilt says which statement and why.
#include <gtest/gtest.h>

#include "canonical/canonical.h"
#include "format/parser.h"
#include "format/printer.h"
#include "session/run.h"

using namespace tv;

namespace {

Capture run(const std::string& model, jit::ModelFactory factory, std::vector<PipelineSpec> specs) {
  RunRequest r;
  r.model = model;
  r.replay = false;
  r.model_factory = std::move(factory);
  r.pipelines = std::move(specs);
  return run_pipelines(r);
}

PipelineSpec spec(std::vector<std::string> order, int world = 1) {
  PipelineSpec s;
  s.order = std::move(order);
  s.world_size = world;
  return s;
}

}  // namespace

TEST(CapturedModel, RebuiltProgramTracesLikeTheOriginalUnderEveryOrder) {
  for (const std::string model : {"mlp", "gpt"}) {
    Capture original = run(model, {}, {spec({"jit"})});
    ASSERT_TRUE(original.pipelines[0].error.empty()) << original.pipelines[0].error;
    const auto& stages = original.pipelines[0].stages;
    auto factory = jit::captured_model({model + "_captured", stages.prologue.front().trace.shared(),
                                        stages.forward.front().trace.shared()});
    std::vector<PipelineSpec> specs{spec({"jit"}), spec({"jit", "ddp"}, 2), spec({"fsdp", "jit"}, 2), spec({"jit", "remat"})};
    Capture again = run(model, {}, specs);
    Capture rebuilt = run(model + "_captured", factory, specs);
    ASSERT_EQ(rebuilt.pipelines.size(), specs.size());
    for (size_t p = 0; p < specs.size(); ++p) {
      ASSERT_TRUE(rebuilt.pipelines[p].error.empty()) << specs[p].label() << ": " << rebuilt.pipelines[p].error;
      for (auto k : kTraceKinds) {
        const auto& want = again.pipelines[p].stages.of(k);
        const auto& got = rebuilt.pipelines[p].stages.of(k);
        ASSERT_EQ(got.size(), want.size()) << model << " " << specs[p].label() << " " << trace_kind_name(k);
        EXPECT_TRUE(canonically_equal(*got.back().trace, *want.back().trace))
            << model << " " << specs[p].label() << " " << trace_kind_name(k) << "\n"
            << print_trace(*got.back().trace) << "\n----\n" << print_trace(*want.back().trace);
      }
    }
    EXPECT_EQ(rebuilt.model.name, model + "_captured");
    EXPECT_EQ(rebuilt.model.parameters.size(), original.model.parameters.size());
  }
}

TEST(CapturedModel, WhatCannotBeRebuiltSaysWhy) {
  Capture original = run("mlp", {}, {spec({"jit"})});
  const auto& stages = original.pipelines[0].stages;
  TracePtr prologue = stages.prologue.front().trace.shared();
  std::string text = print_trace(*stages.forward.front().trace);
  auto at = text.find("ltorch.linear");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("ltorch.linear").size(), "mylib.secret_op");
  auto computation = parse_trace(text).trace;
  ASSERT_TRUE(computation);
  try {
    jit::captured_model({"broken", prologue, computation});
    FAIL() << "an op the engine cannot trace was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mylib.secret_op"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jit::captured_model({"none", nullptr, computation}), std::invalid_argument);
  auto factory = jit::captured_model({"mlp_captured", prologue, stages.forward.front().trace.shared()});
  EXPECT_THROW(factory({{"layers", "3"}}), std::invalid_argument);
  RunRequest with_replay;
  with_replay.model = "mlp_captured";
  with_replay.model_factory = factory;
  EXPECT_THROW(run_pipelines(with_replay), std::invalid_argument);  // no eager reference here
}
