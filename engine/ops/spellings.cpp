#include "ops/spellings.h"

#include <ATen/ATen.h>

#include <string>

#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ops {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

const Symbol& spelling(std::string_view name) { return SymbolRegistry::global().find_or_opaque(name, PrintForm::call); }

// `name` runs as the op `of` does.
void runs_as(std::string_view name, std::string_view of) { exec::share_exec_rule(spelling(name), op(of)); }

}  // namespace

const Symbol* spelled_op(std::string_view name) {
  std::string target;
  if (starts_with(name, "torch.nn.functional.")) target = "ltorch." + std::string(name.substr(20));
  else if (starts_with(name, "torch.")) target = "ltorch." + std::string(name.substr(6));
  else if (starts_with(name, "torch_") && ends_with(name, "_prim_impl"))
    target = "prims." + std::string(name.substr(6, name.size() - 6 - 10));
  if (target.empty()) return nullptr;
  const Symbol* s = SymbolRegistry::global().find(target);
  return s && !s->traits.empty() ? s : nullptr;
}

void register_spellings() {
  using namespace exec::rules;
  using exec::ExecError;
  using exec::RValue;
  // The torch executor's implementations of the prims, as its final traces call them.
  for (const char* p : {"neg", "exp", "log", "tanh", "erf", "rsqrt", "sqrt", "add", "sub", "mul", "div", "pow", "maximum",
                        "eq", "ne", "lt", "le", "gt", "ge", "where", "convert_element_type", "reshape", "transpose",
                        "broadcast_in_dim", "slice", "cat", "shallow_copy", "sum", "amax", "var_mean", "linear",
                        "matmul", "take", "take_along_axis", "full", "iota", "uniform_philox"})
    runs_as(std::string("torch_") + p + "_prim_impl", std::string("prims.") + p);
  runs_as("torch_prims_reshape_impl", "ltorch.reshape");
  runs_as("shallow_copy", "prims.shallow_copy");
  exec::set_exec_rule(spelling("clear_mutable_collection"), exec::SimpleExecRule([](Args, Kw) { return RValue::none(); }));

  // The torch executor's spellings of the ltorch ops.
  for (const char* n : {"reshape", "permute", "matmul", "true_divide", "sum", "mean", "add", "sub", "mul", "pow", "exp",
                        "neg", "erf", "tanh", "log", "rsqrt", "sqrt", "relu", "sigmoid", "where", "eq", "ne", "lt", "le",
                        "gt", "ge", "maximum", "transpose", "unsqueeze", "cat", "amax", "var_mean", "split",
                        "masked_fill", "take_along_dim", "softmax", "log_softmax", "layer_norm", "embedding", "full",
                        "ones", "zeros", "arange"})
    runs_as(std::string("torch.") + n, std::string("ltorch.") + n);
  runs_as("torch.div", "ltorch.true_divide");
  runs_as("torch.Tensor.expand", "ltorch.expand");
  exec::set_exec_rule(spelling("torch.nn.functional.smooth_l1_loss"), exec::SimpleExecRule([](Args a, Kw k) {
    const RValue* r = argument(a, 4, k, "reduction");
    const std::string reduction = r && r->kind == RValue::Kind::string ? r->s : "mean";
    const RValue* beta = argument(a, 5, k, "beta");
    int64_t mode = reduction == "none" ? at::Reduction::None : reduction == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
    if (reduction != "none" && reduction != "sum" && reduction != "mean")
      throw ExecError("torch.nn.functional.smooth_l1_loss: unknown reduction '" + reduction + "'",
                      "torch.nn.functional.smooth_l1_loss");
    return RValue::of(at::smooth_l1_loss(tensor_at(a, 0, "input"), tensor_at(a, 1, "target"), mode,
                                         beta && !beta->is_none() ? beta->number() : 1.0));
  }));
  for (const char* n : {"linear", "gelu", "silu", "relu", "softmax", "log_softmax", "layer_norm", "cross_entropy",
                        "embedding"})
    runs_as(std::string("torch.nn.functional.") + n, std::string("ltorch.") + n);
  runs_as("torch.nn.functional.scaled_dot_product_attention", "ltorch.scaled_dot_product_attention");
}

}  // namespace tv::ops
