// The eager reference: LibTorch's own forward and autograd for the built-in models. Shapes and
// names line up with the module, used parameters get non-zero gradients, runs are deterministic,
// the module's tensors are left alone, and central finite differences in f64 agree with the
// autograd gradients (which validates the reference itself).
#include "replay/eager.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/zoo.h"

using namespace tv;
using namespace tv::jit;

namespace {

std::vector<at::Tensor> example_inputs(const Module& m) {
  std::vector<at::Tensor> out;
  for (const auto& in : m.inputs) out.push_back(*in.value);
  return out;
}

// The module with every floating parameter and input converted to f64 (new tensors, same values).
Module to_double(const Module& m) {
  Module d = m;
  for (auto& p : d.parameters) {
    bool rg = p.value->requires_grad();
    at::Tensor t = p.value->detach().to(at::kDouble).clone();
    if (rg) t.set_requires_grad(true);
    p.value = std::make_shared<at::Tensor>(t);
  }
  for (auto& in : d.inputs)
    if (in.value->is_floating_point()) in.value = std::make_shared<at::Tensor>(in.value->detach().to(at::kDouble));
  return d;
}

// sum_i sum(output_i * cotangent_i): the scalar whose gradient the reference computes.
double objective(const EagerResult& r, const std::vector<at::Tensor>& cots) {
  double total = 0;
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (cots[i].defined()) total += (r.outputs[i].to(at::kDouble) * cots[i].to(at::kDouble)).sum().item<double>();
  return total;
}

struct Case {
  std::string model;
  std::map<std::string, std::string> params;
  size_t outputs;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"linear", {}, 1},
      {"linear", {{"bias", "true"}, {"batch", "3"}}, 1},
      {"mlp", {}, 1},
      {"llama_mlp", {}, 1},
      {"gpt", {}, 2},
      {"gpt", {{"layers", "1"}, {"d_model", "32"}, {"heads", "8"}, {"seq", "8"}, {"vocab", "50"}}, 2},
  };
  return c;
}

}  // namespace

TEST(EagerTest, EagerModelsAreTheZoo) {
  std::vector<std::string> zoo;
  for (const auto& info : list_models()) zoo.push_back(info.name);
  EXPECT_EQ(eager_models(), zoo);
}

TEST(EagerTest, EagerShapesNamesAndNonZeroGradients) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.model);
    Module m = make_model(c.model, c.params);
    auto inputs = example_inputs(m);
    // Forward only first, to size the cotangents.
    EagerResult fwd = eager_reference(m, inputs, {});
    ASSERT_EQ(fwd.outputs.size(), c.outputs);
    for (const auto& [name, g] : fwd.parameter_grads) EXPECT_FALSE(g.defined()) << name;
    auto cots = make_cotangents(fwd.outputs, 7);
    ASSERT_EQ(cots.size(), fwd.outputs.size());

    EagerResult r = eager_reference(m, inputs, cots);
    ASSERT_EQ(r.outputs.size(), c.outputs);
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      EXPECT_TRUE(at::equal(r.outputs[i], fwd.outputs[i])) << "output " << i;
      EXPECT_FALSE(r.outputs[i].requires_grad());
      EXPECT_TRUE(at::isfinite(r.outputs[i]).all().item<bool>());
    }
    ASSERT_EQ(r.parameter_grads.size(), m.parameters.size());
    for (size_t i = 0; i < m.parameters.size(); ++i) {
      const auto& [name, g] = r.parameter_grads[i];
      EXPECT_EQ(name, m.parameters[i].name);
      ASSERT_TRUE(g.defined()) << name;
      EXPECT_EQ(g.sizes(), m.parameters[i].value->sizes()) << name;
      EXPECT_EQ(g.scalar_type(), m.parameters[i].value->scalar_type()) << name;
      EXPECT_GT(g.abs().max().item<double>(), 0.0) << name;
      EXPECT_TRUE(at::isfinite(g).all().item<bool>()) << name;
      EXPECT_EQ(r.grad(name), &g);
    }
    // The zoo's example inputs do not require grad.
    ASSERT_EQ(r.input_grads.size(), m.inputs.size());
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      EXPECT_EQ(r.input_grads[i].first, m.inputs[i].name);
      EXPECT_FALSE(r.input_grads[i].second.defined());
    }
    EXPECT_EQ(r.grad("no.such.parameter"), nullptr);
  }
}

TEST(EagerTest, EagerOutputShapesFollowTheModel) {
  Module lin = make_model("linear");
  auto r = eager_reference(lin, example_inputs(lin), {});
  EXPECT_EQ(r.outputs[0].sizes(), at::IntArrayRef({2, 10}));
  Module llama = make_model("llama_mlp");
  r = eager_reference(llama, example_inputs(llama), {});
  EXPECT_EQ(r.outputs[0].sizes(), at::IntArrayRef({2, 8, 64}));
  Module gpt = make_model("gpt");
  r = eager_reference(gpt, example_inputs(gpt), {});
  EXPECT_EQ(r.outputs[0].sizes(), at::IntArrayRef({2, 16, 128}));
  EXPECT_EQ(r.outputs[1].dim(), 0);
  // A freshly initialised model predicts about uniformly: loss near log(vocab).
  EXPECT_NEAR(r.outputs[1].item<double>(), std::log(128.0), 0.5);
}

TEST(EagerTest, EagerLinearIsAtLinear) {
  Module m = make_model("linear", {{"bias", "true"}});
  auto x = *m.inputs[0].value;
  auto r = eager_reference(m, {x}, {});
  auto expected = at::matmul(x, m.find_parameter("weight")->value->detach().t()) + m.find_parameter("bias")->value->detach();
  EXPECT_TRUE(at::allclose(r.outputs[0], expected, 1e-5, 1e-6));
}

TEST(EagerTest, EagerDeterministicForTheSameSeed) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.model);
    Module m = make_model(c.model, c.params);
    auto inputs = example_inputs(m);
    auto outs = eager_reference(m, inputs, {}).outputs;
    auto cots_a = make_cotangents(outs, 3), cots_b = make_cotangents(outs, 3), cots_c = make_cotangents(outs, 4);
    for (size_t i = 0; i < outs.size(); ++i) {
      ASSERT_TRUE(cots_a[i].defined());
      EXPECT_EQ(cots_a[i].sizes(), outs[i].sizes());
      EXPECT_EQ(cots_a[i].scalar_type(), outs[i].scalar_type());
      EXPECT_TRUE(at::equal(cots_a[i], cots_b[i]));
      if (outs[i].dim() == 0)
        EXPECT_EQ(cots_a[i].item<double>(), 1.0);
      else
        EXPECT_FALSE(at::equal(cots_a[i], cots_c[i]));
    }
    auto a = eager_reference(m, inputs, cots_a);
    auto b = eager_reference(make_model(c.model, c.params), inputs, cots_b);
    for (size_t i = 0; i < a.outputs.size(); ++i) EXPECT_TRUE(at::equal(a.outputs[i], b.outputs[i]));
    for (size_t i = 0; i < a.parameter_grads.size(); ++i)
      EXPECT_TRUE(at::equal(a.parameter_grads[i].second, b.parameter_grads[i].second)) << a.parameter_grads[i].first;
  }
}

TEST(EagerTest, EagerLeavesTheModuleAlone) {
  Module m = make_model("mlp");
  std::vector<at::Tensor> before;
  for (const auto& p : m.parameters) before.push_back(p.value->detach().clone());
  auto inputs = example_inputs(m);
  auto r = eager_reference(m, inputs, make_cotangents(eager_reference(m, inputs, {}).outputs, 0));
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    EXPECT_TRUE(at::equal(*m.parameters[i].value, before[i]));
    EXPECT_FALSE(m.parameters[i].value->grad().defined()) << m.parameters[i].name;
    EXPECT_NE(r.parameter_grads[i].second.data_ptr(), m.parameters[i].value->data_ptr());
  }
}

TEST(EagerTest, EagerInputGradientWhenTheInputRequiresGrad) {
  Module m = to_double(make_model("linear"));
  at::Tensor x = m.inputs[0].value->detach().clone().set_requires_grad(true);
  at::Tensor w = m.find_parameter("weight")->value->detach();
  auto cots = make_cotangents({at::zeros({2, 10}, x.options())}, 5);
  auto r = eager_reference(m, {x}, cots);
  const at::Tensor* gx = r.grad("input");
  ASSERT_NE(gx, nullptr);
  ASSERT_TRUE(gx->defined());
  EXPECT_TRUE(at::allclose(*gx, at::matmul(cots[0], w), 1e-12, 1e-12));  // dL/dx = cot @ W
  EXPECT_FALSE(x.grad().defined());  // the caller's tensor is left alone too
}

TEST(EagerTest, EagerFrozenParameterHasNoGradient) {
  Module m = make_model("mlp");
  m.parameters[0].value = std::make_shared<at::Tensor>(m.parameters[0].value->detach().clone());  // fc1.weight frozen
  auto inputs = example_inputs(m);
  auto r = eager_reference(m, inputs, make_cotangents(eager_reference(m, inputs, {}).outputs, 1));
  EXPECT_FALSE(r.parameter_grads[0].second.defined());
  EXPECT_TRUE(r.parameter_grads[1].second.defined());
}

TEST(EagerTest, EagerErrors) {
  Module m = make_model("linear");
  m.name = "resnet";
  try {
    eager_reference(m, example_inputs(m), {});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("resnet"), std::string::npos) << msg;
    for (const char* n : {"linear", "mlp", "llama_mlp", "gpt"}) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  Module lin = make_model("linear");
  EXPECT_THROW(eager_reference(lin, {}, {}), std::invalid_argument);  // wrong number of inputs
  auto inputs = example_inputs(lin);
  EXPECT_THROW(eager_reference(lin, inputs, {at::ones({2, 10}), at::ones({2, 10})}), std::invalid_argument);
  EXPECT_THROW(eager_reference(lin, inputs, {at::ones({3, 10})}), std::invalid_argument);  // cotangent shape
}

// Central differences in f64 on a few coordinates of every parameter (and of the input for
// linear) against the autograd gradient of sum(out * cot).
void check_finite_differences(const std::string& model, const std::map<std::string, std::string>& params,
                              bool input_grad) {
  Module m = to_double(make_model(model, params));
  auto inputs = example_inputs(m);
  if (input_grad) inputs[0] = inputs[0].detach().clone().set_requires_grad(true);
  auto cots = make_cotangents(eager_reference(m, inputs, {}).outputs, 11);
  EagerResult r = eager_reference(m, inputs, cots);

  const double eps = 1e-6;
  auto probe = [&](at::Tensor& target, const at::Tensor& grad, const std::string& name) {
    ASSERT_TRUE(grad.defined()) << name;
    at::Tensor flat = target.detach().view({-1});  // same storage, outside autograd
    at::Tensor gflat = grad.reshape({-1});
    int64_t n = flat.numel();
    for (int64_t j : {int64_t{0}, n / 3, n / 2, n - 1}) {
      double orig = flat[j].item<double>();
      flat[j].fill_(orig + eps);
      double up = objective(eager_reference(m, inputs, {}), cots);
      flat[j].fill_(orig - eps);
      double down = objective(eager_reference(m, inputs, {}), cots);
      flat[j].fill_(orig);
      double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(fd, gflat[j].item<double>(), 1e-6) << model << " " << name << "[" << j << "]";
    }
  };
  for (size_t i = 0; i < m.parameters.size(); ++i) probe(*m.parameters[i].value, r.parameter_grads[i].second, m.parameters[i].name);
  if (input_grad) probe(inputs[0], r.input_grads[0].second, m.inputs[0].name);
}

TEST(EagerTest, EagerFiniteDifferencesLinear) {
  check_finite_differences("linear", {}, true);
  check_finite_differences("linear", {{"bias", "true"}}, true);
}

TEST(EagerTest, EagerFiniteDifferencesMlp) { check_finite_differences("mlp", {}, true); }

TEST(EagerTest, EagerFiniteDifferencesLlamaMlpAndGpt) {
  check_finite_differences("llama_mlp", {{"seq", "3"}, {"d_model", "8"}, {"hidden", "12"}}, false);
  check_finite_differences("gpt", {{"layers", "2"}, {"d_model", "8"}, {"heads", "2"}, {"seq", "4"}, {"vocab", "11"}},
                           false);
}

TEST(EagerTest, EagerGptHeadsFromAttributeOrTrace) {
  std::map<std::string, std::string> p = {{"layers", "1"}, {"d_model", "16"}, {"heads", "4"}, {"seq", "4"}, {"vocab", "9"}};
  Module m = make_model("gpt", p);
  auto inputs = example_inputs(m);
  auto from_trace = eager_reference(m, inputs, {}).outputs;
  Module stated = m;
  stated.set_attribute("heads", int64_t{4});
  auto from_attr = eager_reference(stated, inputs, {}).outputs;
  EXPECT_TRUE(at::equal(from_trace[0], from_attr[0]));
  // Another head count is another function: the attribute is what the reference reads.
  stated.set_attribute("heads", int64_t{2});
  EXPECT_FALSE(at::allclose(eager_reference(stated, inputs, {}).outputs[0], from_trace[0]));
  stated.set_attribute("heads", int64_t{3});  // does not divide d_model
  EXPECT_THROW(eager_reference(stated, inputs, {}), std::invalid_argument);
}
