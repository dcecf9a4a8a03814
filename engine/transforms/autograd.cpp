// The forward/backward split, in four steps:
//  1. forward sweep: copy the computation, splicing in the subsymbols of what is differentiated
//     through its decomposition and putting the statement with residues in place of one whose rule
//     has them (grad_rules.h), and record the differentiable statements (the tape);
//  2. reverse sweep over the tape: call each rule with its outputs' cotangents, accumulate the
//     cotangents of its arguments (ltorch.add);
//  3. dead-code elimination of the backward (grads of inputs that need none, e.g. linear's input);
//  4. saved_for_backward = forward values the backward reads; assemble both traces.
// Each differentiated forward statement and each backward statement its rule made carry the forward
// statement's first output (BoundSymbol::gradient_of).
#include "transforms/autograd.h"

#include <chrono>
#include <deque>
#include <unordered_map>
#include <optional>
#include <unordered_set>
#include <stdexcept>
#include <string_view>

#include "format/printer.h"
#include "ir/builder.h"
#include "ops/collectives.h"
#include "ops/grad_rules.h"
#include "ops/ltorch.h"

namespace tv {

namespace {

bool outside_autograd(const BoundSymbol& b) {  // the function's frame: inputs, del, return
  auto f = b.symbol->form;
  return f == PrintForm::unpack_trivial || f == PrintForm::del || f == PrintForm::ret;
}

bool differentiable_value(const ProxyPtr& p) { return p->is_tensor() && is_floating(p->dtype); }

struct ForwardSweep {
  explicit ForwardSweep(TraceBuilder& names) : names(names) {}

  std::unordered_set<std::string> diff;    // names of values that depend on a differentiable input
  std::vector<BoundSymbol> body;           // the augmented forward's statements
  std::vector<const BoundSymbol*> tape;    // differentiable statements, forward order
  std::deque<BoundSymbol> with_residues;   // statements the sweep made (the tape points into them)
  TraceBuilder& names;                     // fresh names for residues: the backward's builder

  // `header` is printed above the statement; `parent_source` is the source of the statement `b` is a
  // piece of, for a subsymbol that has none of its own.
  void visit(const BoundSymbol& b, const SourceRef& header, const SourceRef& parent_source = nullptr) {
    const SourceRef& source = b.source ? b.source : parent_source;
    bool touches = false;
    for (const auto& p : b.inputs()) touches = touches || diff.count(p->name);
    const GradRule* rule = touches ? find_grad_rule(*b.symbol) : nullptr;
    if (rule && rule->with_residues && (!rule->applies || rule->applies(b)))
      if (std::optional<BoundSymbol> replaced = rule->with_residues(names, b)) {
        with_residues.push_back(std::move(*replaced));
        if (!with_residues.back().source) with_residues.back().source = source;
        return record(with_residues.back(), header);
      }
    bool decompose = touches && (!rule || rule->through_decomposition || (rule->applies && !rule->applies(b)));
    if (decompose && b.subsymbols.empty())
      throw std::runtime_error("autograd: no gradient rule for '" + b.name() + "' and no decomposition to differentiate");
    if (decompose) {
      for (size_t i = 0; i < b.subsymbols.size(); ++i) visit(b.subsymbols[i], i == 0 ? header : nullptr, source);
      return;
    }
    if (touches) return record(b, header, source);
    body.push_back(b);
    body.back().header = header;
    body.back().source = source;
  }

  // A differentiable statement: into the forward and onto the tape.
  void record(const BoundSymbol& b, const SourceRef& header, const SourceRef& source = nullptr) {
    body.push_back(b);
    body.back().header = header;
    if (source) body.back().source = source;
    if (b.output()) body.back().gradient_of = b.output()->name;
    tape.push_back(&b);
    for (const auto& o : b.outputs)
      if (differentiable_value(o)) diff.insert(o->name);
  }
};

struct Cotangents {
  std::unordered_map<std::string, ProxyPtr> of;

  void accumulate(TraceBuilder& bwd, const std::string& name, const ProxyPtr& g) {
    auto [it, fresh] = of.emplace(name, g);
    if (!fresh) it->second = ltorch::add(bwd, Value::of(it->second), Value::of(g));
  }
  Value get(const std::string& name) const {
    auto it = of.find(name);
    return it == of.end() ? Value::none() : Value::of(it->second);
  }
};

void check_grad(const BoundSymbol& b, const ProxyPtr& arg, const ProxyPtr& g) {
  if (g->shape != arg->shape || g->dtype != arg->dtype)
    throw std::runtime_error("autograd: the rule of '" + b.name() + "' gave a grad " + type_text(*g) + " for " +
                             arg->name + ": " + type_text(*arg));
}

// Gives each differentiable argument of `b` its share of `grads` (a list for a list argument).
void distribute(TraceBuilder& bwd, Cotangents& cts, const std::unordered_set<std::string>& diff, const BoundSymbol& b,
                const std::vector<Value>& grads) {
  auto give = [&](const Value& arg, const Value& g) {
    if (!arg.is_proxy() || !g.is_proxy() || !diff.count(arg.proxy->name)) return;
    check_grad(b, arg.proxy, g.proxy);
    cts.accumulate(bwd, arg.proxy->name, g.proxy);
  };
  for (size_t i = 0; i < b.args.size() && i < grads.size(); ++i) {
    if (b.args[i].is_sequence() && grads[i].is_sequence())
      for (size_t j = 0; j < b.args[i].items.size() && j < grads[i].items.size(); ++j)
        give(b.args[i].items[j], grads[i].items[j]);
    else
      give(b.args[i], grads[i]);
  }
}

// Keeps the statements whose outputs the return (transitively) reads.
// Decided back to front, then the kept statements moved front to back. Names are views of the
// proxies' own, which `body` and `returned` keep alive.
std::vector<BoundSymbol> eliminate_dead_code(std::vector<BoundSymbol> body, const Value& returned) {
  std::unordered_set<std::string_view> live;
  for_each_proxy(returned, [&](const ProxyPtr& p) { live.insert(p->name); });
  std::vector<bool> keep(body.size(), false);
  size_t kept_count = 0;
  for (size_t i = body.size(); i-- > 0;) {
    bool used = false;
    for (const auto& o : body[i].outputs) used = used || live.count(o->name);
    if (!used) continue;
    for (const auto& p : body[i].inputs()) live.insert(p->name);
    keep[i] = true;
    ++kept_count;
  }
  std::vector<BoundSymbol> kept;
  kept.reserve(kept_count);
  for (size_t i = 0; i < body.size(); ++i)
    if (keep[i]) kept.push_back(std::move(body[i]));
  return kept;
}

BoundSymbol unpack(const ProxyPtr& from, std::vector<ProxyPtr> into) {
  BoundSymbol b;
  b.symbol = &structural::unpack_sequence();
  b.args = {Value::of(from)};
  b.outputs = std::move(into);
  return b;
}

BoundSymbol input_statement(const ProxyPtr& p) {
  BoundSymbol b;
  b.symbol = &structural::unpack_trivial();
  b.outputs = {p};
  return b;
}

std::vector<Value> values(const std::vector<ProxyPtr>& ps) {
  std::vector<Value> out;
  for (const auto& p : ps) out.push_back(Value::of(p));
  return out;
}

// The user-visible output: the 'output' entry of a structured return, else the return itself.
Value output_of(const Value& returned) {
  if (returned.kind == Value::Kind::dict)
    for (const auto& [k, v] : returned.entries)
      if (k.kind == Value::Kind::string && k.s == "output") return v;
  return returned;
}

}  // namespace

ForwardBackward split_forward_backward(const Trace& computation, std::vector<bool> requires_grad) {
  auto start = std::chrono::steady_clock::now();
  ltorch::register_ops();
  ForwardBackward result;

  // The backward's builder knows every forward name before the sweep, which names the residues with it.
  TraceBuilder bwd("backward_fn");
  bwd.reserve_names(collectives::names_of(computation));
  for (const char* n : {"saved_for_backward", "cotangents", "C0", "C1"}) bwd.reserve_name(n);
  // Room for what each sweep writes (the backward is about twice the forward): a body that grows by
  // doubling moves every statement it holds, and on a deep trace each move writes memory afresh.
  bwd.trace().body.reserve(3 * computation.body.size());

  // 1. Forward sweep.
  ForwardSweep fwd(bwd);
  fwd.body.reserve(computation.body.size() + computation.body.size() / 2);
  const auto& params = computation.params;
  for (size_t i = 0; i < params.size(); ++i) {
    const ProxyPtr& p = params[i].proxy;
    bool wanted = i < requires_grad.size() ? requires_grad[i] : p->requires_grad;
    result.requires_grad.push_back(wanted && differentiable_value(p));
    if (result.requires_grad.back()) fwd.diff.insert(p->name);
  }
  for (const auto& b : computation.body) {
    if (b.symbol->form == PrintForm::unpack_trivial) fwd.body.push_back(b);
    if (!outside_autograd(b)) fwd.visit(b, b.header);
  }
  Value output = output_of(computation.returned());
  std::vector<ProxyPtr> flat_output;
  for_each_proxy(output, [&](const ProxyPtr& p) {
    if (p->is_tensor()) flat_output.push_back(p);
  });

  // 2. Reverse sweep.
  Cotangents cts;
  std::vector<ProxyPtr> cotangent_inputs;
  for (const auto& o : flat_output) {
    auto ct = make_tensor(bwd.fresh_name(), o->shape, o->dtype, o->device);
    cotangent_inputs.push_back(ct);
    if (fwd.diff.count(o->name)) cts.accumulate(bwd, o->name, ct);
  }
  for (auto it = fwd.tape.rbegin(); it != fwd.tape.rend(); ++it) {
    const BoundSymbol& b = **it;
    std::vector<Value> out_cts;
    bool any = false;
    for (const auto& o : b.outputs) {
      out_cts.push_back(cts.get(o->name));
      any = any || out_cts.back().is_proxy();
    }
    if (!any) continue;
    const size_t first_new = bwd.trace().body.size();
    distribute(bwd, cts, fwd.diff, b, find_grad_rule(*b.symbol)->fn(bwd, b, out_cts));
    // What the rule wrote, and the accumulations of the cotangents it gave, are this statement's gradient.
    auto& written = bwd.trace().body;
    const Text of = b.output()->name;  // one text, shared by every statement it marks
    for (size_t i = first_new; i < written.size(); ++i) written[i].gradient_of = of;
  }
  std::vector<Value> grads;
  for (size_t i = 0; i < params.size(); ++i)
    grads.push_back(result.requires_grad[i] ? cts.get(params[i].proxy->name) : Value::none());
  Value grads_value = Value::tuple(grads);

  // 3. Dead code elimination.
  std::vector<BoundSymbol> grad_body = eliminate_dead_code(std::move(bwd.trace().body), grads_value);

  // 4. Saved for backward: forward values read by the backward, in order of first use.
  std::unordered_set<std::string> defined, seen;
  for (const auto& c : cotangent_inputs) defined.insert(c->name);
  auto read = [&](const ProxyPtr& p) {
    if (defined.count(p->name) || !seen.insert(p->name).second) return;
    (p->is_tensor() ? result.saved_tensors : result.saved_other).push_back(p);
    if (p->is_tensor()) result.saved_bytes += p->numel() * element_size(p->dtype);
  };
  for (const auto& b : grad_body) {
    for (const auto& p : b.inputs()) read(p);
    for (const auto& o : b.outputs) defined.insert(o->name);
  }
  for_each_proxy(grads_value, read);

  // The augmented forward.
  auto elapsed = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  };
  auto forward = derive_without_body(computation, kGradPassName);
  forward->body = std::move(fwd.body);
  std::vector<Value> flat_args;
  for (const auto& p : params) flat_args.push_back(Value::of(p.proxy));
  Value structured = Value::dict({{Value::string("output"), output},
                                  {Value::string("flat_args"), Value::list(flat_args)},
                                  {Value::string("flat_output"), Value::tuple(values(flat_output))}});
  Value saved = Value::tuple({Value::tuple(values(result.saved_tensors)), Value::tuple(values(result.saved_other))});
  BoundSymbol ret;
  ret.symbol = &structural::ret();
  ret.args = {Value::tuple({structured, saved})};
  ret.tags = {kBareTupleTag};
  forward->body.push_back(std::move(ret));

  // The backward.
  auto backward = std::make_shared<Trace>();
  backward->function_name = "backward_fn";
  backward->imports = computation.imports;
  backward->decorators = computation.decorators;
  auto sfb = make_proxy("saved_for_backward", ProxyKind::collection);
  auto cot = make_proxy("cotangents", ProxyKind::collection);
  auto c0 = make_proxy("C0", ProxyKind::collection), c1 = make_proxy("C1", ProxyKind::collection);
  backward->params = {{sfb, ParamKind::positional}, {cot, ParamKind::positional}};
  backward->body = {input_statement(sfb), input_statement(cot), unpack(sfb, {c0, c1})};
  if (!cotangent_inputs.empty()) backward->body.push_back(unpack(cot, cotangent_inputs));
  if (!result.saved_tensors.empty()) backward->body.push_back(unpack(c0, result.saved_tensors));
  if (!result.saved_other.empty()) backward->body.push_back(unpack(c1, result.saved_other));
  for (auto& b : grad_body) backward->body.push_back(std::move(b));
  BoundSymbol bret;
  bret.symbol = &structural::ret();
  bret.args = {grads_value};
  backward->body.push_back(std::move(bret));

  long long ms = elapsed();
  forward->provenance = Provenance{kGradPassName, ms};
  backward->provenance = Provenance{kGradPassName, ms};
  result.forward = std::move(forward);
  result.backward = std::move(backward);
  return result;
}

}  // namespace tv
