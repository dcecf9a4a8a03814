// Autograd: the forward/backward split matches Thunder's printouts (linear, mlp), every grad rule
// gives grads of the inputs' shapes and dtypes (broadcasting included), and the numbers equal
// LibTorch autograd run through the executor on the same computation.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>
#include <limits>

#include "canonical/canonical.h"
#include "exec/executor.h"
#include "format/parser.h"
#include "format/printer.h"
#include "ops/aten_fallback.h"
#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "test_util.h"
#include "transforms/autograd.h"
#include "transforms/gradient_links.h"

using namespace tv;
namespace lt = tv::ltorch;

namespace {

TracePtr fixture(const std::string& name) {
  auto r = parse_trace(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name));
  EXPECT_TRUE(r) << name << ": " << (r.error ? r.error->message : "");
  return r.trace;
}

// Thunder's final traces name executor calls (torch.reshape) whose first subsymbol is the ltorch
// op, and add del / clear_mutable_collection: keep what the grad transform itself produces.
TracePtr as_grad_transform_output(const Trace& t) {
  auto out = derive(t, "normalised");
  out->body.clear();
  for (const auto& b : t.body) {
    if (b.symbol->form == PrintForm::del || b.name() == "clear_mutable_collection") continue;
    bool executor_call = b.symbol->form == PrintForm::call && b.name().rfind("ltorch.", 0) != 0 &&
                         b.name().rfind("prims.", 0) != 0 && b.subsymbols.size() == 1;
    out->body.push_back(executor_call ? b.subsymbols[0] : b);
  }
  return out;
}

// The canonical top level only (subsymbols dropped first: their names shift the numbering).
std::string top_level(const Trace& t) {
  auto flat = derive(t, "top level");
  for (auto& b : flat->body) b.subsymbols.clear();
  PrintOptions o;
  o.depth = 0;
  o.headers = false;
  o.provenance = false;
  return print_trace(*canonical(*flat), o);
}

std::vector<std::string> op_names(const Trace& t) {
  std::vector<std::string> out;
  for (const auto& b : t.body)
    if (b.symbol->form == PrintForm::call) out.push_back(b.name());
  return out;
}

std::vector<std::string> names(const std::vector<ProxyPtr>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p->name);
  return out;
}

}  // namespace

TEST(Autograd, EveryLtorchOpHasAGradRule) {
  ltorch::register_ops();
  for (const Symbol* s : SymbolRegistry::global().all())
    if (s->name.rfind("ltorch.", 0) == 0 && !s->opaque) EXPECT_TRUE(find_grad_rule(*s)) << s->name;
}

TEST(Autograd, AnInPlaceAtenFallbackOnAnIntermediateIsRefused) {
  lt::register_ops();
  ops::fallback_symbol("torch.ops.aten.sigmoid_.default");
  TraceBuilder b;
  ProxyPtr x = b.input(make_tensor("x", {2, 3}, DType::f32, Device{}, true));
  EXPECT_NO_THROW(b.call("torch.ops.aten.sigmoid_.default", {Value::of(x)}));  // an input: eager writes there too
  ProxyPtr y = lt::mul(b, Value::of(x), Value::floating(2.0));
  try {
    b.call("torch.ops.aten.sigmoid_.default", {Value::of(y)});
    FAIL() << "an in-place op on an intermediate was accepted";
  } catch (const OpError& e) {
    EXPECT_NE(std::string(e.what()).find("traces are functional"), std::string::npos) << e.what();
  }
}

TEST(Autograd, LinearMatchesThunder) {
  auto computation = fixture("linear__fwd__00.txt");
  ASSERT_TRUE(computation);
  auto fb = split_forward_backward(*computation, {false, true});
  EXPECT_EQ(fb.forward->provenance->pass, "Grad transform pass");
  EXPECT_EQ(op_names(*fb.backward),
            (std::vector<std::string>{"ltorch.reshape", "ltorch.permute", "ltorch.reshape", "ltorch.matmul"}));
  EXPECT_EQ(names(fb.saved_tensors), std::vector<std::string>{"input"});
  EXPECT_EQ(fb.saved_bytes, 2 * 5 * 4);
  std::string fwd = print_trace(*fb.forward);
  EXPECT_NE(fwd.find("return {'output': (t3,), 'flat_args': [input, t_weight], 'flat_output': (t3,)}, ((input,), ())"),
            std::string::npos)
      << fwd;
  Value grads = fb.backward->returned();
  ASSERT_EQ(grads.items.size(), 2u);
  EXPECT_TRUE(grads.items[0].is_none());
  EXPECT_EQ(grads.items[1].proxy->shape, (std::vector<int64_t>{10, 5}));

  auto thunder_bwd = as_grad_transform_output(*fixture("linear__bwd__00.txt"));
  auto thunder_fwd = as_grad_transform_output(*fixture("linear__fwd__06.txt"));
  EXPECT_EQ(top_level(*fb.backward), top_level(*thunder_bwd));
  EXPECT_TRUE(canonically_equal(*fb.backward, *thunder_bwd)) << canonical_text(*fb.backward) << "\n---\n"
                                                             << canonical_text(*thunder_bwd);
  EXPECT_TRUE(canonically_equal(*fb.forward, *thunder_fwd)) << canonical_text(*fb.forward) << "\n---\n"
                                                            << canonical_text(*thunder_fwd);
}

TEST(Autograd, MlpMatchesThunder) {
  auto computation = fixture("mlp__fwd__00.txt");
  ASSERT_TRUE(computation);
  auto fb = split_forward_backward(*computation, {false, true, true, true, true});
  // Thunder saves (t_fc2_weight, t88, t87, t84, t104, x): fc2 weight, gelu's output, its 0.5 + ..
  // sum, fc1's output, the x / sqrt(2), and x; our names for those values in mlp__fwd__00:
  EXPECT_EQ(names(fb.saved_tensors), (std::vector<std::string>{"t_fc2_weight", "t10", "t9", "input", "t6", "x"}));
  auto thunder_bwd = as_grad_transform_output(*fixture("mlp__bwd__00.txt"));
  EXPECT_EQ(op_names(*fb.backward), op_names(*thunder_bwd));
  EXPECT_EQ(top_level(*fb.backward), top_level(*thunder_bwd));
  // gelu is differentiated through its decomposition, as in Thunder's forward.
  auto fwd_ops = op_names(*fb.forward);
  EXPECT_EQ(fwd_ops, (std::vector<std::string>{"ltorch.linear", "ltorch.true_divide", "ltorch.erf", "ltorch.mul",
                                               "ltorch.add", "ltorch.mul", "ltorch.linear"}));
  Value grads = fb.backward->returned();
  ASSERT_EQ(grads.items.size(), 5u);
  EXPECT_TRUE(grads.items[0].is_none());
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(grads.items[i].proxy->shape, computation->params[i].proxy->shape);
}

// Each backward statement names the forward statement whose rule made it: the mlp's second linear
// gives the matmuls of its two gradients, which read the saved fc2 weight and gelu's output.
TEST(Autograd, BackwardStatementsNameTheirForwardStatement) {
  auto computation = fixture("mlp__fwd__00.txt");
  ASSERT_TRUE(computation);
  auto fb = split_forward_backward(*computation, {false, true, true, true, true});
  for (const auto& b : fb.backward->body) {
    if (b.symbol->form != PrintForm::call) continue;
    EXPECT_FALSE(b.gradient_of.empty()) << print_statement(b);
    EXPECT_NE(forward_statement(*fb.forward, b.gradient_of), nullptr) << print_statement(b);
  }
  // gelu is differentiated through its pieces: each is a forward statement of its own.
  for (const auto& b : fb.forward->body)
    if (b.symbol->form == PrintForm::call) EXPECT_EQ(b.gradient_of, b.outputs.front()->name) << print_statement(b);
  const BoundSymbol* fc2 = nullptr;
  for (const auto& b : fb.forward->body)
    if (b.name() == "ltorch.linear") fc2 = &b;
  ASSERT_NE(fc2, nullptr);
  const std::string key = fc2->outputs.front()->name;
  EXPECT_EQ(fc2->gradient_of, key);
  EXPECT_EQ(forward_statement(*fb.forward, key), fc2);  // not its decomposition, prims.linear
  auto made = backward_statements(*fb.backward, key);
  std::vector<std::string> ops;
  for (const auto* b : made) ops.push_back(b->name());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "ltorch.matmul"), ops.end());
  EXPECT_EQ(saved_values_read(*fb.backward, made), (std::vector<std::string>{"t_fc2_weight", "t10"}));
  EXPECT_TRUE(has_gradient_links(*fb.forward));
  EXPECT_TRUE(has_gradient_links(*fb.backward));
  // The links of a trace, as a capture stores them, set back on a parsed copy.
  auto links = gradient_links(*fb.backward);
  auto reparsed = parse_trace(print_trace(*fb.backward));
  ASSERT_TRUE(reparsed);
  auto copy = std::const_pointer_cast<Trace>(reparsed.trace);
  EXPECT_FALSE(has_gradient_links(*copy));
  set_gradient_links(*copy, links);
  EXPECT_EQ(gradient_links(*copy), links);
  EXPECT_THROW(set_gradient_links(*copy, {{100000, "t0"}}), std::out_of_range);
}

TEST(Autograd, ValueUsedTwiceAccumulatesWithAdd) {
  lt::register_ops();
  TraceBuilder b;
  auto x = b.input(make_tensor("x", {3}, DType::f32, Device{}, true));
  auto y = lt::mul(b, Value::of(x), Value::of(lt::exp(b, x)));
  auto fb = split_forward_backward(*b.finish(Value::tuple({Value::of(y)})));
  auto ops = op_names(*fb.backward);
  EXPECT_EQ(ops.back(), "ltorch.add");
}

// ---- every rule: shapes and numbers ----
namespace {

enum class Fill { normal, positive, index };

struct Input {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  Fill fill = Fill::normal;
  int64_t bound = 0;  // indices are in [0, bound)
  bool grad = true;    // floating inputs take a gradient unless false (running statistics)
};

struct Case {
  std::string name;
  std::vector<Input> inputs;
  std::function<std::vector<ProxyPtr>(TraceBuilder&, const std::vector<ProxyPtr>&)> body;
};

Input f(std::vector<int64_t> s) { return {std::move(s)}; }
Input pos(std::vector<int64_t> s) { return {std::move(s), DType::f32, Fill::positive}; }
Input idx(std::vector<int64_t> s, int64_t bound) { return {std::move(s), DType::i64, Fill::index, bound}; }
Input mask(std::vector<int64_t> s) { return {std::move(s), DType::b8}; }
Input stat(std::vector<int64_t> s) { return {std::move(s), DType::f32, Fill::positive, 0, false}; }
bool takes_grad(const Input& in) { return is_floating(in.dtype) && in.grad; }
Value V(const ProxyPtr& p) { return Value::of(p); }

using P = const std::vector<ProxyPtr>&;
using B = TraceBuilder&;

Value call(B b, const std::string& name, std::vector<Value> args) { return b.call(name, std::move(args)); }

std::vector<Case> cases() {
  return {
      {"add_broadcast", {f({2, 3, 4}), f({3, 1})}, [](B b, P x) { return std::vector{lt::add(b, V(x[0]), V(x[1]))}; }},
      {"sub_number", {f({2, 3})}, [](B b, P x) { return std::vector{lt::sub(b, Value::floating(2), V(x[0]))}; }},
      {"mul_broadcast", {f({2, 1, 4}), f({3, 1})}, [](B b, P x) { return std::vector{lt::mul(b, V(x[0]), V(x[1]))}; }},
      {"div_broadcast", {f({4}), pos({2, 4})}, [](B b, P x) { return std::vector{lt::true_divide(b, V(x[0]), V(x[1]))}; }},
      {"pow_number", {f({2, 3})}, [](B b, P x) { return std::vector{lt::pow(b, V(x[0]), Value::integer(3))}; }},
      {"pow_tensor", {pos({2, 3}), f({3})}, [](B b, P x) { return std::vector{lt::pow(b, V(x[0]), V(x[1]))}; }},
      {"maximum", {f({2, 3}), f({3})}, [](B b, P x) { return std::vector{lt::maximum(b, V(x[0]), V(x[1]))}; }},
      {"unary_chain", {pos({2, 3})}, [](B b, P x) {
         ProxyPtr t = lt::log(b, lt::sqrt(b, lt::rsqrt(b, x[0])));
         return std::vector{lt::tanh(b, lt::erf(b, lt::neg(b, lt::exp(b, t))))};
       }},
      {"activations", {f({2, 5})}, [](B b, P x) {
         return std::vector{lt::relu(b, x[0]), lt::gelu(b, x[0]), lt::gelu(b, x[0], "tanh"), lt::silu(b, x[0]),
                            lt::sigmoid(b, x[0])};
       }},
      {"where_masked_fill", {mask({2, 1}), f({2, 3}), f({3}), mask({3})}, [](B b, P x) {
         return std::vector{lt::where(b, x[0], V(x[1]), V(x[2])), lt::masked_fill(b, x[1], x[3], Value::floating(0.5))};
       }},
      {"convert", {f({2, 3})}, [](B b, P x) {
         return std::vector{lt::convert_element_type(b, lt::convert_element_type(b, x[0], DType::f64), DType::f32)};
       }},
      {"comparison_not_differentiable", {f({2, 3})}, [](B b, P x) {
         return std::vector{lt::mul(b, V(x[0]), V(lt::convert_element_type(b, lt::gt(b, V(x[0]), Value::floating(0)), DType::f32)))};
       }},
      {"shapes", {f({2, 6})}, [](B b, P x) {
         ProxyPtr r = lt::view(b, lt::reshape(b, x[0], {3, -1}), {3, 2, 2});
         ProxyPtr p = lt::permute(b, lt::transpose(b, r, 0, 2), {2, 0, 1});
         return std::vector{lt::unsqueeze(b, p, 1)};
       }},
      {"expand_broadcast", {f({3, 1}), f({3})}, [](B b, P x) {
         return std::vector{lt::expand(b, x[0], {2, 3, 4}), lt::broadcast_in_dim(b, x[1], {2, 3}, {1})};
       }},
      {"split_cat", {f({6, 2}), f({2, 2}), f({3, 2})}, [](B b, P x) {
         auto pieces = lt::split(b, x[0], 2, 0);
         return std::vector{pieces[1], lt::cat(b, {x[1], pieces[2]}, 0), lt::cat(b, {x[1], x[2]}, 0)};
       }},
      {"reductions", {f({2, 3, 4})}, [](B b, P x) {
         return std::vector{lt::sum(b, x[0], {0, 2}), lt::sum(b, x[0], {-1}, true), lt::sum(b, x[0]),
                            lt::mean(b, x[0], {1}, true), lt::amax(b, x[0], {1, 2})};
       }},
      {"var_mean", {f({2, 3, 4})}, [](B b, P x) {
         auto [v, m] = lt::var_mean(b, x[0], {1, 2}, 1, false);
         auto [v2, m2] = lt::var_mean(b, x[0], {0}, 0, true);
         return std::vector{v, m, v2};
       }},
      {"linear_bias_3d", {f({2, 3, 5}), f({4, 5}), f({4})}, [](B b, P x) { return std::vector{lt::linear(b, x[0], x[1], x[2])}; }},
      {"matmul_batched", {f({2, 1, 3, 4}), f({5, 4, 6})}, [](B b, P x) { return std::vector{lt::matmul(b, x[0], x[1])}; }},
      {"matmul_vectors", {f({4}), f({4, 6}), f({3, 4}), f({4})}, [](B b, P x) {
         return std::vector{lt::matmul(b, x[0], x[1]), lt::matmul(b, x[2], x[3]), lt::matmul(b, x[0], x[3])};
       }},
      {"layer_norm", {f({2, 3, 4}), f({3, 4}), f({3, 4})}, [](B b, P x) {
         return std::vector{lt::layer_norm(b, x[0], {3, 4}, x[1], x[2]), lt::layer_norm(b, x[0], {4}, nullptr, nullptr)};
       }},
      {"softmax", {f({2, 5})}, [](B b, P x) { return std::vector{lt::softmax(b, x[0], 1), lt::log_softmax(b, x[0], 0)}; }},
      {"cross_entropy", {f({4, 5}), idx({4}, 5)}, [](B b, P x) { return std::vector{lt::cross_entropy(b, x[0], x[1])}; }},
      {"embedding", {idx({2, 3}, 10), f({10, 4})}, [](B b, P x) { return std::vector{lt::embedding(b, x[0], x[1])}; }},
      {"take_along_dim", {f({3, 5}), idx({3, 2}, 5), f({4, 3, 2}), idx({2, 3, 2}, 4)}, [](B b, P x) {
         return std::vector{lt::take_along_dim(b, x[0], x[1], 1), lt::take_along_dim(b, x[2], x[3], 0)};
       }},
      {"dropout", {f({4, 8})}, [](B b, P x) { return std::vector{lt::dropout(b, x[0], 0.25, 7)}; }},
      {"gather_scatter_add", {f({3, 5}), idx({3, 4}, 5), f({4, 5}), idx({2, 5}, 4), f({2, 5})}, [](B b, P x) {
         return std::vector{lt::gather(b, x[0], 1, x[1]), lt::scatter_add(b, x[2], 0, x[3], x[4])};
       }},
      {"scatter_src_and_value", {f({4, 5}), idx({2, 5}, 4), f({2, 5})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.scatter", {V(x[0]), Value::integer(0), V(x[1]), V(x[2])}).proxy,
                            call(b, "ltorch.scatter", {V(x[0]), Value::integer(-1), V(x[1]), Value::floating(0.5)}).proxy};
       }},
      {"index_select_add_take", {f({4, 3}), idx({5}, 4), f({3, 6}), idx({2}, 6), f({3, 2}), f({3, 4, 2}), idx({2, 3}, 4)},
       [](B b, P x) {
         return std::vector{lt::index_select(b, x[0], 0, x[1]),
                            b.call("ltorch.index_add", {V(x[2]), Value::integer(1), V(x[3]), V(x[4])},
                                   {{"alpha", Value::floating(2.0)}}).proxy,
                            call(b, "prims.take", {V(x[5]), V(x[6]), Value::integer(1)}).proxy};
       }},
      {"indexing_prims", {f({3, 5}), idx({3, 4}, 5), f({4, 5}), idx({6}, 4), f({6, 5})}, [](B b, P x) {
         ProxyPtr picked = call(b, "prims.gather", {V(x[0]), V(x[1]), Value::integer(1)}).proxy;
         ProxyPtr doubled = lt::mul(b, V(picked), Value::floating(2.0));
         return std::vector{picked, call(b, "prims.scatter_add", {V(x[0]), V(x[1]), V(doubled), Value::integer(1)}).proxy,
                            call(b, "prims.scatter", {V(x[0]), V(x[1]), V(doubled), Value::integer(1)}).proxy,
                            call(b, "prims.index_add", {V(x[2]), V(x[3]), V(x[4]), Value::integer(0)}).proxy};
       }},
      {"index_put", {f({4, 5, 3}), idx({2}, 5), idx({2}, 3), f({4, 2}), idx({3, 1}, 4), f({5, 3})}, [](B b, P x) {
         return std::vector{
             call(b, "ltorch.index_put", {V(x[0]), Value::list({Value::none(), V(x[1]), V(x[2])}), V(x[3]), Value::boolean(true)}).proxy,
             call(b, "ltorch.index_put", {V(x[0]), Value::list({V(x[4])}), V(x[5]), Value::boolean(false)}).proxy};
       }},
      {"interpolate", {f({2, 3, 5, 4}), f({1, 2, 6})}, [](B b, P x) {
         Value factors = Value::list({Value::floating(1.5), Value::floating(1.5)});
         return std::vector{
             call(b, "ltorch.interpolate", {V(x[0]), Value::ints({7, 3}), Value::none(), Value::string("bilinear"),
                                            Value::boolean(true)}).proxy,
             call(b, "ltorch.interpolate", {V(x[0]), Value::ints({7, 6}), factors, Value::string("nearest"), Value::none()}).proxy,
             call(b, "ltorch.interpolate", {V(x[1]), Value::ints({4}), Value::none(), Value::string("linear"),
                                            Value::boolean(false)}).proxy};
       }},
      {"topk_max_min_argmax", {f({3, 6})}, [](B b, P x) {
         Value top = call(b, "ltorch.topk", {V(x[0]), Value::integer(2), Value::integer(1), Value::boolean(true), Value::boolean(true)});
         Value most = call(b, "ltorch.torch_max", {V(x[0]), Value::integer(0), Value::boolean(false)});
         Value least = call(b, "ltorch.torch_min", {V(x[0]), Value::integer(1), Value::boolean(true)});
         ProxyPtr at = call(b, "ltorch.argmax", {V(x[0]), Value::integer(1), Value::boolean(true)}).proxy;
         ProxyPtr whole = call(b, "ltorch.torch_max", {V(x[0]), Value::none(), Value::boolean(false)}).proxy;
         ProxyPtr smallest = call(b, "ltorch.torch_min", {V(x[0]), Value::none(), Value::boolean(false)}).proxy;
         ProxyPtr row_min = call(b, "ltorch.amin", {V(x[0]), Value::ints({1}), Value::boolean(true)}).proxy;
         return std::vector{top.items[0].proxy, most.items[0].proxy,
                            lt::mul(b, V(least.items[0].proxy), V(lt::convert_element_type(b, at, DType::f32))), whole,
                            smallest, row_min};
       }},
      {"dropout_seed_input", {f({4, 8}), idx({}, 1000)}, [](B b, P x) {
         return std::vector{b.call("ltorch.dropout", {V(x[0]), Value::floating(0.25), V(x[1]), Value::boolean(true),
                                                      Value::integer(3)}).proxy};
       }},
      {"detach", {f({2, 3})}, [](B b, P x) {
         return std::vector{lt::mul(b, V(x[0]), V(b.call("ltorch.detach", {V(x[0])}).proxy))};
       }},
      {"slice", {f({5, 6})}, [](B b, P x) {
         return std::vector{b.call("prims.slice", {V(x[0]), Value::ints({1, 0}), Value::ints({4, 6}), Value::none()}).proxy,
                            b.call("prims.slice", {V(x[0]), Value::ints({0, 1}), Value::ints({5, 6}), Value::ints({2, 3})}).proxy,
                            b.call("prims.slice", {V(x[0]), Value::ints({3, 5}), Value::ints({3, 6}), Value::ints({2, 4})}).proxy};
       }},
      {"cross_entropy_ignore_index", {f({6, 5}), idx({6}, 5)}, [](B b, P x) {
         return std::vector{b.call("ltorch.cross_entropy", {V(x[0]), V(x[1])}, {{"ignore_index", Value::integer(2)}}).proxy};
       }},
      {"aten_fallback_cumsum_stack", {f({3, 4}), f({3, 4})}, [](B b, P x) {
         ops::fallback_symbol("torch.ops.aten.cumsum.default");
         ops::fallback_symbol("torch.ops.aten.stack.default");
         ProxyPtr c = b.call("torch.ops.aten.cumsum.default", {V(x[0]), Value::integer(1)}).proxy;
         return std::vector{b.call("torch.ops.aten.stack.default", {Value::list({V(c), V(x[1])}), Value::integer(0)}).proxy};
       }},
      {"aten_fallback_convolution", {f({2, 3, 5, 5}), f({4, 3, 3, 3}), f({4})}, [](B b, P x) {
         ops::fallback_symbol("torch.ops.aten.convolution.default");
         ProxyPtr y = b.call("torch.ops.aten.convolution.default",
                             {V(x[0]), V(x[1]), V(x[2]), Value::ints({1, 1}), Value::ints({0, 0}), Value::ints({1, 1}),
                              Value::boolean(false), Value::ints({0, 0}), Value::integer(1)}).proxy;
         return std::vector{lt::mul(b, V(y), Value::floating(2.0))};
       }},
      {"embedding_padding", {idx({2, 3}, 4), f({4, 4})}, [](B b, P x) {
         return std::vector{b.call("ltorch.embedding", {V(x[0]), V(x[1]), Value::integer(1)}).proxy};
       }},
      {"sdpa", {f({2, 4, 8}), f({2, 4, 8}), f({2, 4, 8})}, [](B b, P x) {
         return std::vector{lt::scaled_dot_product_attention(b, x[0], x[1], x[2], nullptr, true)};
       }},
      {"conv2d", {f({2, 3, 7, 6}), f({4, 3, 3, 3}), f({4})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.conv2d", {V(x[0]), V(x[1]), V(x[2]), Value::integer(2), Value::integer(1)}).proxy};
       }},
      {"conv1d_grouped_unbatched", {f({4, 9}), f({6, 2, 3})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.conv1d", {V(x[0]), V(x[1]), Value::none(), Value::integer(1), Value::integer(1),
                                                      Value::integer(2), Value::integer(2)}).proxy};
       }},
      {"conv_transposed", {f({2, 4, 5, 5}), f({4, 3, 3, 3}), f({3})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.convolution", {V(x[0]), V(x[1]), V(x[2]), Value::ints({2, 2}), Value::ints({1, 1}),
                                                           Value::ints({1, 1}), Value::boolean(true), Value::ints({1, 1}),
                                                           Value::integer(1)}).proxy};
       }},
      {"pooling", {f({2, 3, 7, 6})}, [](B b, P x) {
         return std::vector{
             call(b, "ltorch.max_pool2d", {V(x[0]), Value::integer(3), Value::integer(2), Value::integer(1), Value::integer(1),
                                           Value::boolean(true)}).proxy,
             call(b, "ltorch.avg_pool2d", {V(x[0]), Value::integer(3), Value::integer(2), Value::integer(1), Value::boolean(false),
                                           Value::boolean(false)}).proxy,
             call(b, "ltorch.adaptive_avg_pool2d", {V(x[0]), Value::ints({3, 4})}).proxy};
       }},
      {"batch_norm_training", {f({4, 3, 5}), f({3}), f({3}), stat({3}), stat({3})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.batch_norm", {V(x[0]), V(x[3]), V(x[4]), V(x[1]), V(x[2]), Value::boolean(true),
                                                          Value::floating(0.1), Value::floating(1e-5)}).proxy};
       }},
      {"batch_norm_eval", {f({4, 3, 2, 2}), f({3}), f({3}), stat({3}), stat({3})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.batch_norm", {V(x[0]), V(x[3]), V(x[4]), V(x[1]), V(x[2]), Value::boolean(false),
                                                          Value::floating(0.1), Value::floating(1e-5)}).proxy};
       }},
      {"losses", {f({6, 5}), f({6, 5}), idx({6}, 5), stat({5})}, [](B b, P x) {
         Value logp = call(b, "ltorch.log_softmax", {V(x[0]), Value::integer(1)});
         return std::vector{
             call(b, "ltorch.nll_loss", {logp, V(x[2]), V(x[3]), Value::none(), Value::integer(1), Value::none(),
                                         Value::string("mean")}).proxy,
             call(b, "ltorch.mse_loss", {V(x[0]), V(x[1]), Value::none(), Value::none(), Value::string("mean")}).proxy,
             call(b, "ltorch.nll_loss", {logp, V(x[2]), Value::none(), Value::none(), Value::integer(1), Value::none(),
                                         Value::string("mean")}).proxy,
             call(b, "ltorch.nll_loss", {logp, V(x[2]), Value::none(), Value::none(), Value::integer(-100), Value::none(),
                                         Value::string("sum")}).proxy};
       }},
      {"group_norm", {f({2, 6, 3, 2}), f({6}), f({6})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.group_norm", {V(x[0]), Value::integer(3), V(x[1]), V(x[2]), Value::floating(1e-5)}).proxy,
                            call(b, "ltorch.group_norm", {V(x[0]), Value::integer(2)}).proxy};
       }},
      {"instance_norm_training", {f({2, 3, 5}), f({3}), f({3}), stat({3}), stat({3})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.instance_norm", {V(x[0]), V(x[3]), V(x[4]), V(x[1]), V(x[2]), Value::boolean(true),
                                                             Value::floating(0.1), Value::floating(1e-5)}).proxy,
                            call(b, "ltorch.instance_norm", {V(x[0])}).proxy};
       }},
      {"instance_norm_eval", {f({2, 3, 2, 2}), f({3}), stat({3}), stat({3})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.instance_norm", {V(x[0]), V(x[2]), V(x[3]), V(x[1]), Value::none(),
                                                             Value::boolean(false), Value::floating(0.1), Value::floating(1e-5)}).proxy};
       }},
      {"conv_transpose", {f({2, 4, 5, 5}), f({4, 3, 3, 3}), f({6}), f({4, 7}), f({4, 2, 3})}, [](B b, P x) {
         return std::vector{
             call(b, "ltorch.conv_transpose2d", {V(x[0]), V(x[1]), V(x[2]), Value::integer(2), Value::integer(1), Value::integer(1),
                                                 Value::integer(2)}).proxy,
             call(b, "ltorch.conv_transpose1d", {V(x[3]), V(x[4]), Value::none(), Value::integer(2), Value::integer(0),
                                                 Value::integer(1), Value::integer(1), Value::integer(2)}).proxy};
       }},
      {"lstm_bidirectional", {f({3, 2, 4}), f({2, 2, 3}), f({2, 2, 3}), f({12, 4}), f({12, 3}), f({12}), f({12}), f({12, 4}),
                              f({12, 3}), f({12}), f({12})}, [](B b, P x) {
         Value out = call(b, "ltorch.lstm", {V(x[0]), Value::list({V(x[1]), V(x[2])}),
                                             Value::list({V(x[3]), V(x[4]), V(x[5]), V(x[6]), V(x[7]), V(x[8]), V(x[9]), V(x[10])}),
                                             Value::boolean(true), Value::integer(1), Value::floating(0.0), Value::boolean(true),
                                             Value::boolean(true), Value::boolean(false)});
         return std::vector{out.items.at(0).proxy, out.items.at(1).proxy, out.items.at(2).proxy};
       }},
      {"gru_two_layers_batch_first_no_bias", {f({2, 3, 4}), f({2, 2, 3}), f({9, 4}), f({9, 3}), f({9, 3}), f({9, 3})}, [](B b, P x) {
         Value out = call(b, "ltorch.gru", {V(x[0]), V(x[1]), Value::list({V(x[2]), V(x[3]), V(x[4]), V(x[5])}),
                                            Value::boolean(false), Value::integer(2), Value::floating(0.5), Value::boolean(false),
                                            Value::boolean(false), Value::boolean(true)});
         return std::vector{out.items.at(0).proxy, out.items.at(1).proxy};
       }},
      {"cross_entropy_label_smoothing", {f({6, 5}), idx({6}, 5)}, [](B b, P x) {
         return std::vector{
             call(b, "ltorch.cross_entropy", {V(x[0]), V(x[1]), Value::none(), Value::none(), Value::integer(2), Value::none(),
                                              Value::string("mean"), Value::floating(0.2)}).proxy,
             call(b, "ltorch.cross_entropy", {V(x[0]), V(x[1]), Value::none(), Value::none(), Value::integer(-100),
                                              Value::none(), Value::string("mean"), Value::floating(0.7)}).proxy};
       }},
      {"cross_entropy_weight_reductions_positions", {f({6, 5}), idx({6}, 5), stat({5}), f({2, 5, 3}), idx({2, 3}, 5)},
       [](B b, P x) {
         auto ce = [&](const ProxyPtr& logits, const ProxyPtr& target, Value weight, int64_t ignore, const char* reduction,
                       double smoothing) {
           return call(b, "ltorch.cross_entropy", {V(logits), V(target), std::move(weight), Value::none(), Value::integer(ignore),
                                                   Value::none(), Value::string(reduction), Value::floating(smoothing)}).proxy;
         };
         const ProxyPtr& w = x[2];  // positive class weights, a buffer
         return std::vector{ce(x[0], x[1], V(w), -100, "mean", 0.0), ce(x[0], x[1], V(w), 2, "sum", 0.0),
                            ce(x[0], x[1], V(w), 4, "none", 0.3), ce(x[0], x[1], Value::none(), 1, "none", 0.0),
                            ce(x[3], x[4], Value::none(), -100, "mean", 0.0), ce(x[3], x[4], V(w), 0, "mean", 0.2)};
       }},
      {"cross_entropy_class_probabilities", {f({4, 5}), f({4, 5}), f({2, 5, 3}), stat({2, 5, 3}), stat({5})},
       [](B b, P x) {  // the targets: softmax of an input, so the gradient reaches them too (as in torch)
         auto ce = [&](const ProxyPtr& logits, const ProxyPtr& raw, Value weight, const char* reduction, double smoothing) {
           ProxyPtr target = call(b, "ltorch.softmax", {V(raw), Value::integer(1)}).proxy;
           return call(b, "ltorch.cross_entropy", {V(logits), V(target), std::move(weight), Value::none(), Value::integer(-100),
                                                   Value::none(), Value::string(reduction), Value::floating(smoothing)}).proxy;
         };
         return std::vector{ce(x[0], x[1], Value::none(), "mean", 0.0), ce(x[0], x[1], V(x[4]), "sum", 0.2),
                            ce(x[2], x[3], V(x[4]), "none", 0.0), ce(x[2], x[3], Value::none(), "mean", 0.4)};
       }},
      {"binary_losses", {f({4, 5}), stat({4, 5}), f({4, 5}), stat({5}), stat({5})}, [](B b, P x) {
         ProxyPtr p = lt::sigmoid(b, x[0]), t = lt::sigmoid(b, x[1]);
         return std::vector{
             call(b, "ltorch.smooth_l1_loss", {V(x[0]), V(x[2]), Value::none(), Value::none(), Value::string("mean"),
                                               Value::floating(0.5)}).proxy,
             call(b, "ltorch.smooth_l1_loss", {V(x[0]), V(x[2]), Value::none(), Value::none(), Value::string("none"),
                                               Value::floating(0.0)}).proxy,
             call(b, "ltorch.binary_cross_entropy", {V(p), V(t), V(x[3]), Value::none(), Value::none(), Value::string("sum")}).proxy,
             call(b, "ltorch.binary_cross_entropy_with_logits", {V(x[0]), V(t), V(x[3]), Value::none(), Value::none(),
                                                                 Value::string("none"), V(x[4])}).proxy,
             call(b, "ltorch.binary_cross_entropy_with_logits", {V(x[2]), V(t)}).proxy};
       }},
      {"more_elementwise", {f({3, 4}), f({4}), pos({3, 4})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.abs", {V(x[0])}).proxy, call(b, "ltorch.sin", {V(x[0])}).proxy,
                            call(b, "ltorch.cos", {V(x[0])}).proxy, call(b, "ltorch.reciprocal", {V(x[2])}).proxy,
                            call(b, "ltorch.minimum", {V(x[0]), V(x[1])}).proxy,
                            call(b, "ltorch.clamp", {V(x[0]), Value::floating(-0.3), Value::floating(0.6)}).proxy,
                            call(b, "ltorch.mul", {V(x[0]), call(b, "ltorch.sign", {V(x[0])})}).proxy};
       }},
      {"var_std_cumsum", {f({3, 4})}, [](B b, P x) {
         return std::vector{b.call("ltorch.var", {V(x[0]), Value::ints({1}), Value::boolean(false)},
                                   {{"correction", Value::integer(1)}}).proxy,
                            b.call("ltorch.std", {V(x[0]), Value::ints({0}), Value::boolean(true)},
                                   {{"correction", Value::integer(0)}}).proxy,
                            lt::cumsum(b, x[0], 1)};
       }},
      {"roll_repeat", {f({2, 3, 4})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.roll", {V(x[0]), Value::ints({1, -2}), Value::ints({0, 2})}).proxy,
                            call(b, "ltorch.roll", {V(x[0]), Value::ints({5}), Value::none()}).proxy,
                            call(b, "ltorch.repeat", {V(x[0]), Value::ints({2, 1, 1, 2})}).proxy};
       }},
      {"addmm_baddbmm", {f({4}), f({3, 5}), f({5, 4}), f({2, 3, 4}), f({2, 3, 5}), f({2, 5, 4})}, [](B b, P x) {
         return std::vector{b.call("ltorch.addmm", {V(x[0]), V(x[1]), V(x[2])},
                                   {{"beta", Value::floating(0.5)}, {"alpha", Value::integer(2)}}).proxy,
                            b.call("ltorch.baddbmm", {V(x[3]), V(x[4]), V(x[5])}).proxy};
       }},
      {"einsum", {f({2, 3, 4}), f({2, 4, 5}), f({5})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.einsum", {Value::string("bij,bjk,k->bi"), V(x[0]), V(x[1]), V(x[2])}).proxy,
                            call(b, "ltorch.einsum", {Value::string("bij,bjk->bik"), V(x[0]), V(x[1])}).proxy};
       }},
      {"normalize", {f({3, 4})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.normalize", {V(x[0]), Value::floating(2), Value::integer(1), Value::floating(1e-12)}).proxy,
                            call(b, "ltorch.normalize", {V(x[0]), Value::floating(3), Value::integer(0), Value::floating(1e-12)}).proxy};
       }},
      {"flip_flatten_triangles", {f({2, 3, 4})}, [](B b, P x) {
         return std::vector{call(b, "ltorch.flip", {V(x[0]), Value::ints({0, 2})}).proxy,
                            call(b, "ltorch.flatten", {V(x[0]), Value::integer(0), Value::integer(1)}).proxy,
                            call(b, "ltorch.tril", {V(x[0])}).proxy, call(b, "ltorch.triu", {V(x[0]), Value::integer(1)}).proxy};
       }},
  };
}

TracePtr build(const Case& c) {
  lt::register_ops();
  TraceBuilder b;
  std::vector<ProxyPtr> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Input& in = c.inputs[i];
    xs.push_back(b.input(make_tensor("x" + std::to_string(i), in.shape, in.dtype, Device{}, takes_grad(in))));
  }
  std::vector<Value> outs;
  for (const auto& o : c.body(b, xs)) outs.push_back(V(o));
  return b.finish(Value::tuple(outs));
}

// A random input; floating ones are made non-contiguous (every other element of a wider tensor).
at::Tensor make_input(const Input& in) {
  if (in.fill == Fill::index) return at::randint(in.bound, in.shape, at::kLong);
  if (in.dtype == DType::b8) return at::rand(in.shape) > 0.5;
  auto wide = in.shape;
  if (!wide.empty()) wide.back() *= 2;
  at::Tensor t = at::randn(wide, at::kFloat);
  if (!wide.empty()) t = t.slice(-1, 0, wide.back(), 2);
  return in.fill == Fill::positive ? t.abs() + 0.5 : t;
}

}  // namespace

TEST(Autograd, EveryRuleGivesGradsOfTheInputsShapes) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto computation = build(c);
    ForwardBackward fb;
    ASSERT_NO_THROW(fb = split_forward_backward(*computation)) << c.name;
    Value grads = fb.backward->returned();
    ASSERT_EQ(grads.items.size(), c.inputs.size());
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!takes_grad(c.inputs[i])) {
        EXPECT_TRUE(grads.items[i].is_none());
        continue;
      }
      ASSERT_TRUE(grads.items[i].is_proxy()) << "input " << i;
      EXPECT_EQ(grads.items[i].proxy->shape, c.inputs[i].shape);
      EXPECT_EQ(grads.items[i].proxy->dtype, c.inputs[i].dtype);
    }
    // Both traces print and parse back.
    for (const auto& t : {fb.forward, fb.backward}) EXPECT_TRUE(parse_trace(print_trace(*t))) << print_trace(*t);
  }
}

TEST(Autograd, GradsEqualLibTorchAutograd) {
  at::manual_seed(0);
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto computation = build(c);
    auto fb = split_forward_backward(*computation);
    std::vector<at::Tensor> inputs;
    for (const auto& in : c.inputs) inputs.push_back(make_input(in));

    // Reference: the computation executed with LibTorch autograd on.
    exec::ExecOptions ref_options;
    ref_options.no_grad = false;
    exec::Executor ref(ref_options);
    std::vector<at::Tensor> leaves;
    for (size_t i = 0; i < inputs.size(); ++i)
      leaves.push_back(takes_grad(c.inputs[i]) ? inputs[i].detach().requires_grad_(true) : inputs[i]);
    auto outs = exec::tensors_of(ref.run(*computation, leaves));
    std::vector<at::Tensor> cts;
    at::Tensor loss;
    for (const auto& o : outs) {
      cts.push_back(at::randn_like(o.detach()));
      at::Tensor term = (o * cts.back()).sum();
      loss = loss.defined() ? loss + term : term;
    }
    loss.backward();

    // Ours: augmented forward, then backward_fn(saved_for_backward, cotangents).
    exec::Executor ex;
    auto fwd = ex.run(*fb.forward, exec::tensor_values(inputs));
    auto ct_values = exec::RValue::tuple(exec::tensor_values(cts));
    auto grads = ex.run(*fb.backward, std::vector<exec::RValue>{fwd[1], ct_values});
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!takes_grad(c.inputs[i])) continue;
      at::Tensor expected = leaves[i].grad();
      if (!expected.defined()) expected = at::zeros_like(inputs[i]);
      ASSERT_TRUE(grads[i].is_tensor()) << "input " << i;
      const at::Tensor& got = grads[i].tensor();
      double scale = expected.abs().max().item<double>() + 1e-12;
      double err = (got - expected).abs().max().item<double>();
      EXPECT_LE(err, 1e-5 * std::max(scale, 1.0)) << "input " << i << ": max abs error " << err << " (max |grad| " << scale << ")";
    }
  }
}

// ---- rules at points where a naive derivative is 0 * inf: eager's values, NaN and inf included ----
namespace {

struct EdgeCase {
  std::string name;
  std::vector<at::Tensor> inputs;
  std::vector<bool> differentiable;
  std::function<std::vector<ProxyPtr>(TraceBuilder&, const std::vector<ProxyPtr>&)> body;
  std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)> eager;  // LibTorch's ops, autograd on
};

at::Tensor values(std::vector<float> v, std::vector<int64_t> shape) { return at::tensor(v).reshape(shape); }

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<EdgeCase> edge_cases() {
  using R = std::vector<at::Tensor>;
  using at::Reduction::Mean;
  at::Tensor p = values({0, 1, 0.3f, 1, 0, 0.7f}, {2, 3}), t = values({1, 0, 0.5f, 1, 0, 1}, {2, 3});
  at::Tensor base = values({0, 0, 2, 0, 3}, {5}), exponent = values({0, 1, 0, -1, 2.5f}, {5});
  at::Tensor logits = values({0.5f, -1, 2, 0.1f, 0.3f, -0.2f, 1, 1, 0, -2, 0.4f, 3}, {4, 3});
  at::Tensor ignored = at::full({4}, -100, at::kLong);
  auto ce = [](B b, const ProxyPtr& z, const ProxyPtr& target, double smoothing) {
    return call(b, "ltorch.cross_entropy", {V(z), V(target), Value::none(), Value::none(), Value::integer(-100),
                                            Value::none(), Value::string("mean"), Value::floating(smoothing)}).proxy;
  };
  return {
      {"binary_cross_entropy_at_0_and_1", {p, t, values({0.5f, 2, 1}, {3})}, {true, true, false},
       [](B b, P x) {
         auto bce = [&](Value weight, const char* reduction) {
           return call(b, "ltorch.binary_cross_entropy", {V(x[0]), V(x[1]), std::move(weight), Value::none(), Value::none(),
                                                          Value::string(reduction)}).proxy;
         };
         return std::vector{bce(V(x[2]), "mean"), bce(Value::none(), "sum"), bce(V(x[2]), "none")};
       },
       [](const R& x) {
         return R{at::binary_cross_entropy(x[0], x[1], x[2], Mean), at::binary_cross_entropy(x[0], x[1], {}, at::Reduction::Sum),
                  at::binary_cross_entropy(x[0], x[1], x[2], at::Reduction::None)};
       }},
      {"std_of_a_constant_row", {values({1, 1, 1, 0, 3, -3}, {2, 3})}, {true},
       [](B b, P x) {
         return std::vector{b.call("ltorch.std", {V(x[0]), Value::ints({1}), Value::boolean(false)},
                                   {{"correction", Value::integer(1)}}).proxy,
                            b.call("ltorch.std", {V(x[0]), Value::ints({}), Value::boolean(true)},
                                   {{"correction", Value::integer(0)}}).proxy};
       },
       [](const R& x) { return R{at::std(x[0], at::IntArrayRef{1}, true, false), at::std(x[0], at::IntArrayRef{0, 1}, false, true)}; }},
      {"pow_at_zero", {base, exponent}, {true, true},
       [](B b, P x) {
         return std::vector{lt::pow(b, V(x[0]), V(x[1])), lt::pow(b, V(x[0]), Value::integer(0)),
                            lt::pow(b, Value::floating(0), V(x[1])), lt::pow(b, Value::floating(2), V(x[1]))};
       },
       [](const R& x) { return R{at::pow(x[0], x[1]), at::pow(x[0], 0), at::pow(0.0, x[1]), at::pow(2.0, x[1])}; }},
      {"cross_entropy_every_target_ignored", {logits, ignored}, {true, false},
       [ce](B b, P x) {
         Value logp = call(b, "ltorch.log_softmax", {V(x[0]), Value::integer(1)});
         return std::vector{ce(b, x[0], x[1], 0.0), ce(b, x[0], x[1], 0.1),
                            call(b, "ltorch.nll_loss", {logp, V(x[1]), Value::none(), Value::none(), Value::integer(-100),
                                                        Value::none(), Value::string("mean")}).proxy};
       },
       [](const R& x) {
         return R{at::cross_entropy_loss(x[0], x[1], {}, Mean, -100, 0.0), at::cross_entropy_loss(x[0], x[1], {}, Mean, -100, 0.1),
                  at::nll_loss_nd(at::log_softmax(x[0], 1), x[1], {}, Mean, -100)};
       }},
      {"max_min_of_every_element_with_nan", {values({1, kNaN, 2, 0, 3, kNaN}, {2, 3})}, {true},
       [](B b, P x) {
         return std::vector{call(b, "ltorch.torch_max", {V(x[0]), Value::none(), Value::boolean(false)}).proxy,
                            call(b, "ltorch.torch_min", {V(x[0]), Value::none(), Value::boolean(false)}).proxy,
                            call(b, "ltorch.amax", {V(x[0]), Value::ints({}), Value::boolean(false)}).proxy};
       },
       [](const R& x) { return R{at::max(x[0]), at::min(x[0]), at::amax(x[0])}; }},
  };
}

}  // namespace

TEST(Autograd, GradsAtEdgePointsEqualLibTorchAutograd) {
  lt::register_ops();
  for (const auto& c : edge_cases()) {
    SCOPED_TRACE(c.name);
    TraceBuilder b;
    std::vector<ProxyPtr> xs;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      xs.push_back(b.input(make_tensor("x" + std::to_string(i), c.inputs[i].sizes().vec(),
                                       c.inputs[i].is_floating_point() ? DType::f32 : DType::i64, Device{}, c.differentiable[i])));
    std::vector<Value> outs;
    for (const auto& o : c.body(b, xs)) outs.push_back(V(o));
    auto fb = split_forward_backward(*b.finish(Value::tuple(outs)));

    std::vector<at::Tensor> leaves;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      leaves.push_back(c.differentiable[i] ? c.inputs[i].clone().requires_grad_(true) : c.inputs[i]);
    at::Tensor loss;
    std::vector<at::Tensor> cts;
    for (const auto& o : c.eager(leaves)) {
      cts.push_back(at::ones_like(o.detach()));
      loss = loss.defined() ? loss + o.sum() : o.sum();
    }
    loss.backward();

    exec::Executor ex;
    auto fwd = ex.run(*fb.forward, exec::tensor_values(c.inputs));
    auto grads = ex.run(*fb.backward, std::vector<exec::RValue>{fwd[1], exec::RValue::tuple(exec::tensor_values(cts))});
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!c.differentiable[i]) continue;
      ASSERT_TRUE(grads[i].is_tensor()) << "input " << i;
      const at::Tensor &got = grads[i].tensor(), &expected = leaves[i].grad();
      EXPECT_TRUE(at::allclose(got, expected, 1e-5, 1e-6, /*equal_nan=*/true))
          << "input " << i << ":\n" << got << "\nLibTorch:\n" << expected;
    }
  }
}

namespace {

const BoundSymbol* find_call(const Trace& t, std::string_view name) {
  for (const auto& b : t.body)
    if (b.name() == name) return &b;
  return nullptr;
}

bool saved(const ForwardBackward& fb, const ProxyPtr& p) {
  for (const auto& s : fb.saved_tensors)
    if (s->name == p->name) return true;
  return false;
}

}  // namespace

// Layer norm's mean and rstd are saved values: the augmented forward computes them with its output
// (native_layer_norm) and the backward reads them, in f32; in bf16 the backward recomputes them.
TEST(Autograd, LayerNormStatisticsAreSavedValues) {
  lt::register_ops();
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(short_name(dtype)));
    TraceBuilder b;
    auto x = b.input(make_tensor("x", {2, 3, 4}, dtype, Device{}, true));
    auto w = b.input(make_tensor("w", {4}, dtype, Device{}, true));
    auto bias = b.input(make_tensor("bias", {4}, dtype, Device{}, true));
    auto computation = b.finish(V(lt::layer_norm(b, x, {4}, w, bias)));
    auto fb = split_forward_backward(*computation);
    const BoundSymbol* native = find_call(*fb.forward, "ltorch.native_layer_norm");
    const BoundSymbol* backward = find_call(*fb.backward, "ltorch.layer_norm_backward");
    ASSERT_NE(backward, nullptr) << print_trace(*fb.backward);
    if (dtype != DType::f32) {
      EXPECT_EQ(native, nullptr) << print_trace(*fb.forward);
      EXPECT_NE(find_call(*fb.forward, "ltorch.layer_norm"), nullptr);
      EXPECT_EQ(backward->args.size(), 6u);
      continue;
    }
    ASSERT_NE(native, nullptr) << print_trace(*fb.forward);
    ASSERT_EQ(native->outputs.size(), 3u);
    EXPECT_EQ(native->outputs[0]->name, computation->returned().proxy->name);
    for (size_t k : {1, 2}) {
      EXPECT_EQ(native->outputs[k]->shape, (std::vector<int64_t>{2, 3, 1}));
      EXPECT_TRUE(saved(fb, native->outputs[k])) << native->outputs[k]->name;
      ASSERT_EQ(backward->args.size(), 8u);
      EXPECT_EQ(backward->args[5 + k].proxy->name, native->outputs[k]->name);
    }
    EXPECT_TRUE(parse_trace(print_trace(*fb.forward)));
  }
}

// A training batch norm keeps the batch's mean and rstd as saved values for LibTorch's backward
// kernel, as eager does; in eval there is nothing to keep.
TEST(Autograd, BatchNormStatisticsAreSavedValues) {
  lt::register_ops();
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    TraceBuilder b;
    auto x = b.input(make_tensor("x", {4, 3, 5}, DType::f32, Device{}, true));
    auto w = b.input(make_tensor("w", {3}, DType::f32, Device{}, true));
    auto bias = b.input(make_tensor("bias", {3}, DType::f32, Device{}, true));
    auto mean = b.input(make_tensor("running_mean", {3}, DType::f32, Device{}));
    auto var = b.input(make_tensor("running_var", {3}, DType::f32, Device{}));
    Value out = b.call("ltorch.batch_norm", {V(x), V(mean), V(var), V(w), V(bias), Value::boolean(training),
                                             Value::floating(0.1), Value::floating(1e-5)});
    auto fb = split_forward_backward(*b.finish(out));
    const BoundSymbol* native = find_call(*fb.forward, "ltorch.native_batch_norm");
    const BoundSymbol* backward = find_call(*fb.backward, "ltorch.batch_norm_backward");
    ASSERT_NE(backward, nullptr) << print_trace(*fb.backward);
    if (!training) {
      EXPECT_EQ(native, nullptr) << print_trace(*fb.forward);
      EXPECT_EQ(backward->args.size(), 7u);
      continue;
    }
    ASSERT_NE(native, nullptr) << print_trace(*fb.forward);
    ASSERT_EQ(native->outputs.size(), 3u);
    ASSERT_EQ(backward->args.size(), 9u);
    for (size_t k : {1, 2}) {
      EXPECT_EQ(native->outputs[k]->shape, (std::vector<int64_t>{3}));
      EXPECT_TRUE(saved(fb, native->outputs[k])) << native->outputs[k]->name;
      EXPECT_EQ(backward->args[6 + k].proxy->name, native->outputs[k]->name);
    }
    EXPECT_TRUE(parse_trace(print_trace(*fb.forward)));
  }
}

// Where attention runs a fused kernel (CUDA with LibTorch 2.1 or later, the CPU with 2.3 or later),
// the forward saves the kernel's log-sum-exp (f32, one per query row) for its backward; elsewhere
// nothing is added.
TEST(Autograd, FusedAttentionLogSumExpIsASavedValue) {
  lt::register_ops();
  for (Device device : {Device{}, Device{Device::Kind::cuda, 0}}) {
    SCOPED_TRACE(device.str());
    TraceBuilder b;
    std::vector<ProxyPtr> qkv;
    for (const char* n : {"q", "k", "v"}) qkv.push_back(b.input(make_tensor(n, {2, 4, 16, 8}, DType::f32, device, true)));
    auto computation = b.finish(V(lt::scaled_dot_product_attention(b, qkv[0], qkv[1], qkv[2], nullptr, true)));
    auto fb = split_forward_backward(*computation);
    const BoundSymbol* forward = find_call(*fb.forward, "ltorch.scaled_dot_product_attention_forward");
    const BoundSymbol* backward = find_call(*fb.backward, "ltorch.scaled_dot_product_attention_backward");
    ASSERT_NE(backward, nullptr);
    if (!lt::fused_attention_on(device)) {
      EXPECT_EQ(forward, nullptr) << print_trace(*fb.forward);
      EXPECT_EQ(backward->args.size(), 7u);
      continue;
    }
    ASSERT_NE(forward, nullptr) << print_trace(*fb.forward);
    ASSERT_EQ(forward->outputs.size(), 2u);
    const ProxyPtr& lse = forward->outputs[1];
    EXPECT_EQ(lse->shape, (std::vector<int64_t>{2, 4, 16}));
    EXPECT_EQ(lse->dtype, DType::f32);
    EXPECT_TRUE(saved(fb, lse));
    ASSERT_EQ(backward->args.size(), 8u);
    EXPECT_EQ(backward->args[7].proxy->name, lse->name);
  }
}
