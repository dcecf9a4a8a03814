// Linear-algebra ltorch ops beyond matmul: addmm and baddbmm (beta * input + alpha * a @ b), einsum
// (pairwise contractions, each a permute, reshape and batched matmul), and normalize (a / max(‖a‖_p,
// eps) along a dim). Each is a decomposition into other ltorch ops, differentiated through it; the
// executor runs LibTorch's single kernel where one exists.
// The file holds, in order, each op's meta and decomposition, its gradient rule, its execution rule.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

// A keyword number (beta=, alpha=), 1 when absent.
Value scale_kwarg(Kw kwargs, const char* name) {
  const Value* v = kwarg(kwargs, name);
  if (!v || v->is_none()) return Value::integer(1);
  if (!v->is_number()) throw OpError(std::string(name) + "= must be a number, got " + python_text(*v));
  return *v;
}

bool is_one(const Value& v) { return v.as_double() == 1.0; }

// beta * input + alpha * (a @ b): addmm for matrices, baddbmm for batches of them. beta == 0 ignores
// input (NaNs in it included), as torch does.
SymbolImpl scaled_product_impl(const char* op, size_t rank) {
  return [op, rank](TraceBuilder& b, Args args, Kw kwargs) {
    T input = tensor_arg(args, 0, "input"), m1 = tensor_arg(args, 1, "mat1"), m2 = tensor_arg(args, 2, "mat2");
    if (m1->shape.size() != rank || m2->shape.size() != rank)
      throw OpError(std::string(op) + " multiplies " + std::to_string(rank) + "-d tensors, got " + shape_text(m1->shape) +
                    " and " + shape_text(m2->shape));
    Value beta = scale_kwarg(kwargs, "beta"), alpha = scale_kwarg(kwargs, "alpha");
    T product = matmul(b, m1, m2);
    if (!is_one(alpha)) product = mul(b, V(product), convert_number(alpha, product->dtype));
    if (meta::broadcast_shapes(input->shape, product->shape) != product->shape)
      throw OpError(std::string(op) + ": input of shape " + shape_text(input->shape) + " does not broadcast to the product's " +
                    shape_text(product->shape));
    if (beta.as_double() == 0.0) return Value::of(product);
    Value scaled = is_one(beta) ? V(input) : V(mul(b, V(input), convert_number(beta, input->dtype)));
    return Value::of(add(b, scaled, V(product)));
  };
}

// ---- einsum ----

// An operand's subscripts, one letter per dim; an ellipsis stands for the dims no letter names.
struct Term {
  std::string letters;
  T tensor;
};

// Letters standing for an ellipsis's dims: not ones an equation may use ([a-zA-Z]).
constexpr char kEllipsisLetters[] = "0123456789!#$%&*+:;<=?@^_`|~";

std::string expand_ellipsis(std::string spec, int64_t covered, const char* where) {
  size_t at = spec.find("...");
  if (at == std::string::npos) return spec;
  if (covered < 0 || covered >= static_cast<int64_t>(sizeof(kEllipsisLetters)))
    throw OpError(std::string("einsum: the ellipsis of ") + where + " covers an impossible number of dims");
  // Right-aligned, as broadcasting aligns them: the last `covered` of the ellipsis letters.
  std::string dims(kEllipsisLetters + (sizeof(kEllipsisLetters) - 1 - covered), static_cast<size_t>(covered));
  return spec.substr(0, at) + dims + spec.substr(at + 3);
}

// Sums away the dims of `t` whose letters are not in `keep`.
Term sum_unneeded(TraceBuilder& b, Term t, const std::string& keep) {
  Dims dims;
  std::string kept;
  for (size_t d = 0; d < t.letters.size(); ++d) {
    if (keep.find(t.letters[d]) == std::string::npos)
      dims.push_back(static_cast<int64_t>(d));
    else
      kept += t.letters[d];
  }
  if (dims.empty()) return t;
  return {kept, sum(b, t.tensor, dims)};
}

int64_t size_of(const Term& t, char letter) { return t.tensor->shape[t.letters.find(letter)]; }

// `t` with its dims reordered to `order` (a permutation of its letters).
T permuted(TraceBuilder& b, const Term& t, const std::string& order) {
  Dims perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(t.letters.find(c)));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? t.tensor : permute(b, t.tensor, perm);
}

// x and y contracted over their shared letters not in `keep`: batch letters (shared, kept) lead,
// then x's own kept letters, then y's; one batched matmul [B, M, K] @ [B, K, N].
Term contract(TraceBuilder& b, Term x, Term y, const std::string& keep) {
  std::string both_keep = keep + y.letters, x_keep = keep + x.letters;
  x = sum_unneeded(b, x, both_keep);
  y = sum_unneeded(b, y, x_keep);
  std::string batch, contracted, x_only, y_only;
  for (char c : x.letters) {
    bool shared = y.letters.find(c) != std::string::npos, kept = keep.find(c) != std::string::npos;
    (shared ? (kept ? batch : contracted) : x_only) += c;
  }
  for (char c : y.letters)
    if (x.letters.find(c) == std::string::npos) y_only += c;
  // Shared dims of size 1 on one side broadcast to the other's size.
  for (char c : batch + contracted) {
    int64_t sx = size_of(x, c), sy = size_of(y, c);
    if (sx == sy) continue;
    if (sx != 1 && sy != 1)
      throw OpError("einsum: subscript '" + std::string(1, c) + "' has size " + std::to_string(sx) + " in one operand and " +
                    std::to_string(sy) + " in another");
    Term& small = sx == 1 ? x : y;
    Dims shape = small.tensor->shape;
    shape[small.letters.find(c)] = std::max(sx, sy);
    small.tensor = expand(b, small.tensor, shape);
  }
  auto product = [&](const Term& t, const std::string& letters) {
    int64_t n = 1;
    for (char c : letters) n *= size_of(t, c);
    return n;
  };
  int64_t nb = product(x, batch), nm = product(x, x_only), nk = product(x, contracted), nn = product(y, y_only);
  T lhs = reshape(b, permuted(b, x, batch + x_only + contracted), {nb, nm, nk});
  T rhs = reshape(b, permuted(b, y, batch + contracted + y_only), {nb, nk, nn});
  Dims shape;
  for (char c : batch) shape.push_back(size_of(x, c));
  for (char c : x_only) shape.push_back(size_of(x, c));
  for (char c : y_only) shape.push_back(size_of(y, c));
  return {batch + x_only + y_only, reshape(b, matmul(b, lhs, rhs), shape)};
}

// einsum(equation, *operands): operands folded left to right, each contraction keeping the letters
// of the output and of the operands still to come; then the output's order. A letter repeated within
// one operand (a diagonal) is not taken.
Value einsum_impl(TraceBuilder& b, Args args, Kw) {
  if (args.empty() || args[0].kind != Value::Kind::string) throw OpError("einsum takes the equation string first");
  std::string equation;
  for (char c : args[0].s)
    if (c != ' ') equation += c;
  std::vector<Term> terms;
  for (size_t i = 1; i < args.size(); ++i) terms.push_back({"", tensor_arg(args, i, "operand")});
  size_t arrow = equation.find("->");
  std::string inputs = equation.substr(0, arrow);
  std::vector<std::string> specs;
  for (size_t start = 0;;) {
    size_t comma = inputs.find(',', start);
    specs.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (specs.size() != terms.size())
    throw OpError("einsum: the equation '" + args[0].s + "' names " + std::to_string(specs.size()) + " operands, got " +
                  std::to_string(terms.size()));
  int64_t ellipsis_dims = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& spec = specs[i];
    int64_t named = static_cast<int64_t>(spec.size()) - (spec.find("...") != std::string::npos ? 3 : 0);
    int64_t rank = static_cast<int64_t>(terms[i].tensor->shape.size());
    std::string where = "operand " + std::to_string(i);
    terms[i].letters = expand_ellipsis(spec, rank - named, where.c_str());
    if (terms[i].letters.size() != static_cast<size_t>(rank))
      throw OpError("einsum: operand " + std::to_string(i) + " has " + std::to_string(rank) + " dims, its subscripts '" +
                    spec + "' name " + std::to_string(named));
    for (char c : terms[i].letters) {
      if (!std::isalpha(static_cast<unsigned char>(c)) && std::string(kEllipsisLetters).find(c) == std::string::npos)
        throw OpError("einsum: '" + std::string(1, c) + "' in '" + args[0].s + "' is not a subscript letter");
      if (std::count(terms[i].letters.begin(), terms[i].letters.end(), c) > 1)
        throw OpError("einsum: subscript '" + std::string(1, c) + "' repeats within operand " + std::to_string(i) +
                      " (a diagonal), which this decomposition does not take");
    }
    if (spec.find("...") != std::string::npos) ellipsis_dims = std::max(ellipsis_dims, rank - named);
  }
  std::string output;
  if (arrow != std::string::npos) {
    output = expand_ellipsis(equation.substr(arrow + 2), ellipsis_dims, "the output");
  } else {  // implicit: the ellipsis, then the letters used once, alphabetically
    std::map<char, int> uses;
    for (const auto& t : terms)
      for (char c : t.letters) uses[c] += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    output = expand_ellipsis("...", ellipsis_dims, "the output");
    for (auto [c, n] : uses)
      if (n == 1) output += c;
  }
  Term acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::string keep = output;
    for (size_t j = i + 1; j < terms.size(); ++j) keep += terms[j].letters;
    acc = contract(b, acc, terms[i], keep);
  }
  acc = sum_unneeded(b, acc, output);
  for (char c : output)
    if (acc.letters.find(c) == std::string::npos)
      throw OpError("einsum: output subscript '" + std::string(1, c) + "' names no operand's dim");
  return Value::of(permuted(b, acc, output));
}

// ---- normalize ----

// normalize(a, p, dim, eps) = a / max(‖a‖_p, eps) over dim. The clamp is applied to ‖a‖_p^p (to
// eps^p) before the root, so that a zero slice gets a zero gradient, not 0 * inf.
Value normalize_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  require_floating(a, "normalize");
  double p = number_arg(args, 1, "p");
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), std::max<int64_t>(static_cast<int64_t>(a->shape.size()), 1));
  double eps = number_arg(args, 3, "eps");
  if (!(p > 0)) throw OpError("normalize takes a positive p, got " + std::to_string(p));
  auto clamp_below = [&](const T& t, double lo) {
    return call1(b, "ltorch.clamp", {V(t), Value::floating(lo), Value::none()});
  };
  T norm;
  if (std::isinf(p)) {
    norm = clamp_below(amax(b, call1(b, "ltorch.abs", {V(a)}), {dim}, true), eps);
  } else if (p == 1) {
    norm = clamp_below(sum(b, call1(b, "ltorch.abs", {V(a)}), {dim}, true), eps);
  } else if (p == 2) {
    norm = sqrt(b, clamp_below(sum(b, mul(b, V(a), V(a)), {dim}, true), eps * eps));
  } else {
    T powered = pow(b, V(call1(b, "ltorch.abs", {V(a)})), Value::floating(p));
    norm = pow(b, V(clamp_below(sum(b, powered, {dim}, true), std::pow(eps, p))), Value::floating(1.0 / p));
  }
  return Value::of(true_divide(b, V(a), V(norm)));
}

}  // namespace

}  // namespace tv::ltorch

// ---- Gradient rules: all through the decompositions ----

namespace tv {

namespace {

void register_linalg_gradients() {
  for (const char* n : {"ltorch.addmm", "ltorch.baddbmm", "ltorch.einsum", "ltorch.normalize"})
    register_grad_through_decomposition(ops::op(n));
}

}  // namespace

}  // namespace tv

// ---- Execution rules: LibTorch's single kernels ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;

at::Scalar scale_at(Kw k, const char* name) {
  const RValue* v = rkwarg(k, name);
  return v && !v->is_none() ? scalar_of(*v) : at::Scalar(1);
}

void register_linalg_execution() {
  exec_rule("ltorch.addmm", [](Args a, Kw k) {
    return RValue::of(at::addmm(tensor_at(a, 0, "input"), tensor_at(a, 1, "mat1"), tensor_at(a, 2, "mat2"),
                                scale_at(k, "beta"), scale_at(k, "alpha")));
  });
  exec_rule("ltorch.baddbmm", [](Args a, Kw k) {
    return RValue::of(at::baddbmm(tensor_at(a, 0, "input"), tensor_at(a, 1, "mat1"), tensor_at(a, 2, "mat2"),
                                  scale_at(k, "beta"), scale_at(k, "alpha")));
  });
  exec_rule("ltorch.einsum", [](Args a, Kw) {
    std::vector<at::Tensor> operands;
    for (size_t i = 1; i < a.size(); ++i) operands.push_back(tensor_at(a, i, "operand"));
    return RValue::of(at::einsum(rarg(a, 0, "equation").s, operands));
  });
  exec_rule("ltorch.normalize", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    double p = number_at(a, 1, "p"), eps = number_at(a, 3, "eps");
    int64_t dim = int_at(a, 2, "dim");
    at::Tensor norm = at::linalg_vector_norm(t, p, at::IntArrayRef(dim), true, c10::nullopt).clamp_min(eps);
    return RValue::of(t / norm);
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_linalg() {
  using namespace tv::ltorch;
  define("ltorch.addmm", false, {"matmul"}, scaled_product_impl("addmm", 2));
  define("ltorch.baddbmm", false, {"matmul"}, scaled_product_impl("baddbmm", 3));
  define("ltorch.einsum", false, {"matmul"}, einsum_impl);
  define("ltorch.normalize", false, {}, normalize_impl);
  register_linalg_gradients();
  exec::register_linalg_execution();
}

}  // namespace tv::ops
