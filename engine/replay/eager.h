// The eager reference: a built-in model computed by LibTorch itself, differentiated by LibTorch
// autograd. It is the number every pipeline is checked against, and nobody here wrote its maths.
// Contract: `eager_reference(module, inputs, cotangents)` recomputes module.name's forward ("linear",
// "mlp", "llama_mlp", "gpt", as engine/jit/zoo.cpp defines them: same parameter names and layouts,
// same outputs in the same order) with LibTorch's high-level ops (at::linear, at::gelu, at::silu,
// at::layer_norm, at::embedding, at::softmax, at::cross_entropy_loss, ...) on detached copies of
// the module's parameters (leaves; the module's tensors are never read by autograd nor written),
// on the device the parameters live on, then runs LibTorch autograd once on
// sum_i sum(output_i * cotangent_i) over the floating outputs. It returns the outputs, one gradient
// per parameter in module.parameters order (undefined when the parameter does not require grad or
// does not reach an output) and one per input (defined only for floating inputs passed with
// requires_grad). `cotangents` holds one tensor per output (an undefined one, or any for a
// non-floating output, contributes nothing); an empty vector means forward only, no gradients.
// An unknown model throws std::invalid_argument listing the supported ones (models captured from
// Python get their reference in Python). gpt's head count is not a parameter shape: it is read from
// an integer attribute "heads" / "n_head" when the module has one, else from the q operand of the
// first scaled_dot_product_attention of the module's acquired computation trace.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/module.h"
#include "replay/reference.h"

namespace tv {

struct EagerResult {
  std::vector<at::Tensor> outputs;  // detached, in the forward's return order
  // (qualified name, gradient), in module.parameters order; gradient undefined when there is none.
  std::vector<std::pair<std::string, at::Tensor>> parameter_grads;
  // (argument name, gradient), one per module input, in argument order; undefined when none.
  std::vector<std::pair<std::string, at::Tensor>> input_grads;

  // The gradient of a parameter (qualified name) or, failing that, of an input; nullptr when the
  // name is neither (an undefined tensor when it is one but has no gradient).
  const at::Tensor* grad(std::string_view name) const;
};

// The models eager_reference knows: {"linear", "mlp", "llama_mlp", "gpt"}.
std::vector<std::string> eager_models();

EagerResult eager_reference(const jit::Module& module, const std::vector<at::Tensor>& inputs,
                            const std::vector<at::Tensor>& output_cotangents);

// One cotangent per output: a deterministic standard normal of the output's shape, dtype and
// device (drawn in f64 from a private CPU generator seeded with `seed`, outputs in order), ones for
// a 0-d output (a loss), an undefined tensor for a non-floating output.
std::vector<at::Tensor> make_cotangents(const std::vector<at::Tensor>& outputs, uint64_t seed);

// The eager numbers of a model that lives elsewhere (Python), computed there with torch on the
// weights and inputs stored beside a capture: its outputs, and its parameters' gradients
// (qualified names) for the cotangents make_cotangents draws from `cotangent_seed`.
struct StoredReference {
  std::vector<at::Tensor> outputs;
  std::map<std::string, at::Tensor> gradients;
  uint64_t cotangent_seed = 1234;
};

// A reference that returns the stored numbers, on the module's device: the outputs for any call, the
// gradients only for the stored cotangents (other cotangents throw std::invalid_argument saying so;
// with no stored gradients, asking for gradients throws too).
Reference stored_reference(std::shared_ptr<const StoredReference> stored);

}  // namespace tv
