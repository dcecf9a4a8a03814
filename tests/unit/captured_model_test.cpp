// A model rebuilt from a capture's acquired traces (jit/captured.h) is the same program: under any
// order its traces are canonically equal to those of the model it was captured from; what cannot be
// rebuilt says which statement and why.
#include <gtest/gtest.h>

#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "canonical/canonical.h"
#include "capture/capture.h"
#include "replay/tensor_file.h"
#include "jit/zoo.h"
#include "replay/eager.h"
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

namespace {

// The mlp's weights and inputs and LibTorch eager's numbers on them, written as Inspector.save
// writes them from Python (a torch.save'd flat dict), then read back.
CapturedTensors stored_mlp(const std::string& path, double gradient_error = 0) {
  jit::Module m = jit::make_model("mlp", {});
  std::vector<at::Tensor> inputs;
  for (const auto& i : m.inputs) inputs.push_back(*i.value);
  auto outputs = eager_reference(m, inputs, {}).outputs;
  auto eager = eager_reference(m, inputs, make_cotangents(outputs, 1234));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& p : m.parameters) dict.insert("parameter:" + p.name, p.value->detach());
  for (size_t k = 0; k < inputs.size(); ++k) dict.insert("input:" + std::to_string(k), inputs[k]);
  for (size_t i = 0; i < eager.outputs.size(); ++i) dict.insert("output:" + std::to_string(i), eager.outputs[i]);
  for (const auto& [name, g] : eager.parameter_grads)
    if (g.defined()) dict.insert("grad:" + name, g + gradient_error);
  dict.insert("cotangent_seed", at::scalar_tensor(1234, at::kLong));
  auto bytes = torch::jit::pickle_save(dict);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return load_tensor_file(path);
}

RunRequest rerun_request(const CapturedTensors& stored) {
  Capture original = run("mlp", {}, {spec({"jit"})});
  const auto& stages = original.pipelines[0].stages;
  RunRequest r;
  r.model = "mlp_captured";
  r.model_factory = jit::captured_model({"mlp_captured", stages.prologue.front().trace.shared(),
                                         stages.forward.front().trace.shared(),
                                         std::make_shared<const std::map<std::string, at::Tensor>>(stored.held)});
  r.reference = stored_reference(stored.reference);
  r.pipelines = {spec({"jit"}), spec({"jit", "ddp"}, 2), spec({"fsdp", "jit"}, 2)};
  return r;
}

}  // namespace

TEST(CapturedModel, StoredWeightsAndEagerNumbersCheckEveryOrder) {
  auto path = std::filesystem::temp_directory_path() / ("tv_stored_" + std::to_string(::getpid()) + ".pt");
  CapturedTensors stored = stored_mlp(path.string());
  ASSERT_TRUE(stored.reference);
  EXPECT_EQ(stored.reference->outputs.size(), 1u);
  EXPECT_EQ(stored.reference->gradients.size(), 4u);
  Capture c = run_pipelines(rerun_request(stored));
  ASSERT_EQ(c.pipelines.size(), 3u);
  for (const auto& p : c.pipelines) {
    ASSERT_TRUE(p.replay) << p.spec.label();
    EXPECT_EQ(p.outcome.kind, Outcome::passed) << p.spec.label() << ": " << p.error
                                               << (p.outcome.reasons.empty() ? "" : p.outcome.reasons[0]);
    EXPECT_EQ(p.replay->ranks[0].gradients.size(), 4u) << p.spec.label();
  }
  // A stored gradient that is off is a failed check, never a pass.
  CapturedTensors wrong = stored_mlp(path.string(), 1e-2);
  Capture bad = run_pipelines(rerun_request(wrong));
  for (const auto& p : bad.pipelines) EXPECT_EQ(p.outcome.kind, Outcome::failed) << p.spec.label();
  std::filesystem::remove(path);
}

TEST(CapturedModel, StoredTensorsOfAnotherShapeSayWhich) {
  auto path = std::filesystem::temp_directory_path() / ("tv_stored_shape_" + std::to_string(::getpid()) + ".pt");
  CapturedTensors stored = stored_mlp(path.string());
  std::filesystem::remove(path);
  stored.held["parameter:fc1.weight"] = at::zeros({3, 3});
  try {
    rerun_request(stored);
    FAIL() << "a stored weight of another shape was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter:fc1.weight"), std::string::npos) << e.what();
  }
  try {
    load_tensor_file(path.string());
    FAIL() << "a missing tensors file was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}
