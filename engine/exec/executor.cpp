#include "exec/executor.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "codegen/elementwise.h"
#include "exec/exec_rules.h"
#include "exec/generated_kernels.h"
#include "format/printer.h"
#include "ops/ltorch.h"
#include "passes/residual_epilogues.h"
#include "runtime/aten_util.h"
#include "runtime/rule_util.h"

namespace tv::exec {

struct Executor::RegionPlans {
  struct Entry {
    size_t members = 0;
    std::string first_output;
    codegen::RegionPlan plan;
    // Per kernel step, the name ids of its inputs and outputs, in the ids of `ids_of` (a run
    // of another trace at the same address gets its own).
    const void* ids_of = nullptr;
    std::vector<std::vector<uint32_t>> kernel_inputs, kernel_outputs;
    std::vector<std::shared_ptr<const ResidualRule>> residual_rules;  // per step; null but for residual epilogues
  };
  std::unordered_map<const BoundSymbol*, Entry> by_region;
  size_t launches = 0;
  size_t residual_epilogues = 0;

  Entry& of(const BoundSymbol& region) {
    std::string first = region.outputs.empty() ? "" : region.outputs[0]->name;
    auto it = by_region.find(&region);
    if (it == by_region.end() || it->second.members != region.subsymbols.size() || it->second.first_output != first)
      it = by_region.insert_or_assign(&region, Entry{region.subsymbols.size(), first, codegen::plan_region(region), nullptr, {}, {}, {}}).first;
    return it->second;
  }
};

namespace {

// A step of a fusion region's plan (a generated kernel, a linear with its add) that LibTorch refused:
// which step, LibTorch's error, `detail` (the kernel's source), and how to run without the plan.
ExecError plan_step_failed(const BoundSymbol& region, const std::string& step, const c10::Error& e,
                           const std::string& detail) {
  return ExecError(region.name() + ": " + step + " failed: " + e.what_without_backtrace() + detail +
                       "(run with --no-generated-kernels, or ExecOptions::generated_kernels = false, to run the members "
                       "one by one)",
                   region.name());
}

// An id for each name a trace uses, so that a run finds values by index instead of hashing
// names. A proxy's id is found by its address; holding the proxy keeps that address from being
// reused by another one while the id is known.
class NameIds {
 public:
  uint32_t of(const ProxyPtr& p) {
    auto it = by_proxy_.find(p.get());
    if (it != by_proxy_.end()) return it->second.id;
    uint32_t id = of(p->name);
    by_proxy_.emplace(p.get(), Known{p, id});
    return id;
  }
  uint32_t of(const std::string& name) {
    auto [it, added] = by_name_.try_emplace(name, static_cast<uint32_t>(by_name_.size()));
    return it->second;
  }
  size_t size() const { return by_name_.size(); }
  size_t proxies() const { return by_proxy_.size(); }

 private:
  struct Known {
    ProxyPtr proxy;
    uint32_t id;
  };
  std::unordered_map<const Proxy*, Known> by_proxy_;
  std::unordered_map<std::string, uint32_t> by_name_;
};

// The arguments of one statement's rule, kept between runs: those without proxies (shapes, dims,
// dtypes, eps) are evaluated once, the others are set for each run and released after it. A
// host-bound step runs thousands of statements, and building their arguments anew took a large
// part of the executor's own time.
struct StatementArguments {
  bool ready = false;
  bool busy = false;  // a rule running this very statement again (a nested run) builds its own
  std::vector<RValue> args;
  RKwargs kwargs;
  // The arguments that hold proxies: their indexes, and whether each is one proxy (its value is
  // then the next read's, found without looking at the statement's argument).
  struct Variable {
    size_t index;
    bool bare;
  };
  std::vector<Variable> variable_args, variable_kwargs;
};

// The ids one statement reads and writes, found once per trace instead of at every run, with
// what a run asks of its symbol. A host-bound step runs thousands of statements: a statement, its
// symbol and each of its lists are separate blocks of memory, each a cache miss away, so a run
// reads these facts here and the statement itself only where a rule or a message needs it.
struct StatementIds {
  std::vector<uint32_t> reads;     // the proxies of its args, then of its kwargs, in the order eval meets them
  std::vector<uint32_t> writes;    // its outputs
  std::vector<StatementIds> subs;  // its subsymbols'
  std::vector<uint32_t> matmul_operands;  // those of its outputs that a later batched matmul reads
  PrintForm form = PrintForm::call;
  bool one_leaf_output = false;      // one output, a tensor, number or string
  bool destructured_output = false;  // `(t0,) = f(...)`: its one output is the item of a one-item sequence
  bool prim = false;                 // Symbol::is_prim
  bool fusion = false;               // a fusion region (Symbol::has(Trait::fusion))
  // The symbol's rule as of `rule_generation` (exec_rules_generation(); 0: not looked up).
  mutable std::shared_ptr<const ExecRule> rule;
  mutable uint64_t rule_generation = 0;
  // A fusion region's plan in `plans` (the executor's; a region's entry stays where it is).
  mutable Executor::RegionPlans::Entry* region_plan = nullptr;
  mutable const Executor::RegionPlans* plans = nullptr;
  mutable StatementArguments arguments;
};

// A kept argument is set and released once per statement and run; a tensor, the usual value, is
// set and released without touching RValue's other members (a released slot has none).
void set_kept(RValue& slot, const RValue& v) {
  if (v.kind == RValue::Kind::tensor && slot.kind == RValue::Kind::none) {
    slot.kind = RValue::Kind::tensor;
    slot.t = v.t;
  } else {
    slot = v;
  }
}
void release_kept(RValue& slot) {
  if (slot.kind == RValue::Kind::tensor) {
    slot.t.reset();
    slot.kind = RValue::Kind::none;
  } else if (slot.kind != RValue::Kind::none) {
    slot = RValue();
  }
}

bool has_proxy(const Value& v) {
  bool found = false;
  for_each_proxy(v, [&](const ProxyPtr&) { found = true; });
  return found;
}

// An output that takes a one-item sequence's item rather than the sequence.
bool is_leaf(const Proxy& p) {
  return p.is_tensor() || p.kind == ProxyKind::number || p.kind == ProxyKind::string;
}

StatementIds statement_ids(const BoundSymbol& b, NameIds& ids) {
  StatementIds out;
  auto read = [&](const ProxyPtr& p) { out.reads.push_back(ids.of(p)); };
  for (const auto& a : b.args) for_each_proxy(a, read);
  for (const auto& [k, v] : b.kwargs) for_each_proxy(v, read);
  for (const auto& o : b.outputs) out.writes.push_back(ids.of(o));
  out.form = b.symbol->form;
  out.one_leaf_output = b.outputs.size() == 1 && is_leaf(*b.outputs[0]);
  out.destructured_output = b.output_target && b.output_target->is_sequence();
  out.prim = b.symbol->is_prim;
  out.fusion = b.symbol->has(Trait::fusion);
  out.subs.reserve(b.subsymbols.size());
  for (const auto& sub : b.subsymbols) out.subs.push_back(statement_ids(sub, ids));
  return out;
}

bool is_matmul(const BoundSymbol& b, bool fused_attention) {
  static const std::unordered_set<std::string> matmuls{"ltorch.matmul", "prims.matmul", "torch.matmul"};
  static const std::unordered_set<std::string> attentions{"ltorch.scaled_dot_product_attention",
                                                          "torch.nn.functional.scaled_dot_product_attention"};
  return matmuls.count(b.name()) > 0 || (!fused_attention && attentions.count(b.name()) > 0);
}

// Marks the outputs that a later top-level matmul reads. A batched matmul copies an operand whose
// batch dims do not flatten (attention's q, k and v, split from one projection and transposed);
// an output made contiguous once when it is written is not copied again by each matmul that reads
// it, nor by the backward's matmuls that read its transpose. The values are the same. Attention's
// fused kernels (`fused_attention`) read such operands as they are.
void mark_matmul_operands(const Trace& trace, std::vector<StatementIds>& statements, bool fused_attention) {
  std::unordered_set<uint32_t> operands;
  for (size_t i = 0; i < statements.size(); ++i)
    if (is_matmul(trace.body[i], fused_attention))
      operands.insert(statements[i].reads.begin(), statements[i].reads.end());
  for (auto& st : statements)
    for (uint32_t id : st.writes)
      if (operands.count(id)) st.matmul_operands.push_back(id);
}

// Where eval takes the ids of the proxies it meets: the statement's reads in order, or (null) the
// proxies' own lookups.
struct Reads {
  const uint32_t* next = nullptr;
};

// Names defined at one level: the trace body (a slot per id), or the subsymbols of one bound
// symbol (a short list).
struct Scope {
  std::vector<std::optional<RValue>>* slots = nullptr;  // the body's level
  std::vector<uint32_t>* filled = nullptr;              // the slots set, for the run's end to empty
  std::vector<std::pair<uint32_t, RValue>> locals;      // a subsymbol level
  Scope* parent = nullptr;

  // A value set at this subsymbol level, which the caller may move from.
  RValue* find_local(uint32_t id) {
    for (auto& [k, v] : locals)
      if (k == id) return &v;
    return nullptr;
  }
  const RValue* find(uint32_t id) const {
    for (const Scope* s = this; s; s = s->parent) {
      if (s->slots) {
        if (id < s->slots->size() && (*s->slots)[id]) return &*(*s->slots)[id];
        continue;
      }
      for (const auto& [k, v] : s->locals)
        if (k == id) return &v;
    }
    return nullptr;
  }
  void set(uint32_t id, RValue v) {
    if (slots) {
      if (id >= slots->size()) slots->resize(id + 1);
      auto& slot = (*slots)[id];
      if (!slot && filled) filled->push_back(id);
      slot = std::move(v);
      return;
    }
    for (auto& [k, old] : locals)
      if (k == id) {
        old = std::move(v);
        return;
      }
    locals.emplace_back(id, std::move(v));
  }
  void erase(uint32_t id) {
    for (Scope* s = this; s; s = s->parent) {
      if (s->slots) {
        if (id < s->slots->size() && (*s->slots)[id]) {
          (*s->slots)[id].reset();
          return;
        }
        continue;
      }
      for (auto it = s->locals.begin(); it != s->locals.end(); ++it)
        if (it->first == id) {
          s->locals.erase(it);
          return;
        }
    }
  }
};

std::string statement_text(const BoundSymbol& b) {
  try {
    return print_statement(b);
  } catch (const std::exception&) {
    return b.name() + "(...)";
  }
}

class Run {
 public:
  Run(const ExecOptions& options, Executor::RegionPlans* plans, NameIds& ids)
      : options_(options),
        ids_(ids),
        plans_(options.generated_kernels && generated_kernels_available(options.device) ? plans : nullptr) {}

  // An input with its tensors on the run's device (ExecOptions::move_inputs). A backward's input
  // holds every saved tensor, so the walk changes them in place and copies nothing.
  RValue map_input(RValue v) const {
    if (options_.move_inputs) move_tensors(v, to_device(options_.device));
    return v;
  }
  static void move_tensors(RValue& v, c10::Device d) {
    if (v.kind == RValue::Kind::tensor) {
      if (v.t.defined() && v.t.device() != d) v.t = v.t.to(d);
      return;
    }
    for (auto& i : v.items) move_tensors(i, d);
    for (auto& [k, e] : v.entries) move_tensors(e, d);
  }

  RValue eval(const Value& v, const Scope& scope, const BoundSymbol& b, Reads& reads) const {
    switch (v.kind) {
      case Value::Kind::none: return RValue::none();
      case Value::Kind::boolean: return RValue::boolean(v.b);
      case Value::Kind::integer: return RValue::integer(v.i);
      case Value::Kind::floating: return RValue::floating(v.f);
      case Value::Kind::string: return RValue::string(v.s);
      case Value::Kind::dtype: return RValue::of(v.dtype);
      case Value::Kind::device: return RValue::of(options_.map_devices ? options_.device : v.device);
      case Value::Kind::name:
        if (v.s.str().rfind("dtypes.", 0) == 0)
          if (auto d = dtype_from_torch(v.s.str().substr(7))) return RValue::of(*d);
        return RValue::name(v.s);
      case Value::Kind::proxy: {
        uint32_t id = reads.next ? *reads.next++ : ids_.of(v.proxy);
        if (const RValue* r = scope.find(id)) return *r;
        throw ExecError("'" + v.proxy->name + "' has no value when executing '" + statement_text(b) +
                            "' (never computed, or deleted before this use)",
                        b.name());
      }
      case Value::Kind::tuple:
      case Value::Kind::list: {
        std::vector<RValue> items;
        items.reserve(v.items.size());
        for (const auto& i : v.items) items.push_back(eval(i, scope, b, reads));
        return v.kind == Value::Kind::tuple ? RValue::tuple(std::move(items)) : RValue::list(std::move(items));
      }
      case Value::Kind::dict: {
        std::vector<std::pair<RValue, RValue>> entries;
        for (const auto& [k, e] : v.entries) {
          RValue key = eval(k, scope, b, reads);  // key first, as for_each_proxy meets them
          entries.emplace_back(std::move(key), eval(e, scope, b, reads));
        }
        return RValue::dict(std::move(entries));
      }
    }
    return RValue::none();
  }

  // A statement's arguments and keyword arguments evaluated, in the order of its reads.
  struct Arguments {
    std::vector<RValue> args;
    RKwargs kwargs;
  };
  Arguments arguments(const BoundSymbol& b, const Scope& scope, Reads& reads) const {
    Arguments out;
    out.args.reserve(b.args.size());
    out.kwargs.reserve(b.kwargs.size());
    for (const auto& a : b.args) out.args.push_back(eval(a, scope, b, reads));
    for (const auto& [k, v] : b.kwargs) out.kwargs.emplace_back(k, eval(v, scope, b, reads));
    return out;
  }

  // A value whose proxies (if any) are looked up by their own ids, not the statement's reads.
  RValue eval(const Value& v, const Scope& scope, const BoundSymbol& b) const {
    Reads by_proxy;
    return eval(v, scope, b, by_proxy);
  }

  // The value a `return` statement returns.
  RValue result(const BoundSymbol& ret, const Scope& scope, const StatementIds* known) const {
    Reads reads{known ? known->reads.data() : nullptr};
    return eval(ret.args.at(0), scope, ret, reads);
  }

  // The id of output k of `b`.
  uint32_t written(const BoundSymbol& b, const StatementIds* known, size_t k) const {
    return known ? known->writes[k] : ids_.of(b.outputs[k]);
  }

  void bind_outputs(const BoundSymbol& b, RValue result, Scope& scope, const StatementIds* known) const {
    const size_t outputs = known ? known->writes.size() : b.outputs.size();
    if (outputs == 0) return;
    if (outputs == 1) {
      bool leaf = known ? known->one_leaf_output : is_leaf(*b.outputs[0]);
      bool destructured = known ? known->destructured_output : b.output_target && b.output_target->is_sequence();
      if ((leaf || destructured) && result.is_sequence() && result.items.size() == 1) result = RValue(result.items[0]);
      scope.set(written(b, known, 0), std::move(result));
      return;
    }
    if (result.is_sequence() && result.items.size() == outputs &&
        std::none_of(result.items.begin(), result.items.end(), [](const RValue& v) { return v.is_sequence(); })) {
      for (size_t k = 0; k < outputs; ++k) scope.set(written(b, known, k), std::move(result.items[k]));
      return;
    }
    const auto& outs = b.outputs;
    std::vector<RValue> leaves;
    std::function<void(const RValue&)> flat = [&](const RValue& v) {
      if (v.is_sequence())
        for (const auto& i : v.items) flat(i);
      else
        leaves.push_back(v);
    };
    flat(result);
    if (leaves.size() != outs.size())
      throw ExecError(b.name() + " returned " + std::to_string(leaves.size()) + " values for " +
                          std::to_string(outs.size()) + " outputs in '" + statement_text(b) + "'",
                      b.name());
    for (size_t k = 0; k < outs.size(); ++k) scope.set(written(b, known, k), std::move(leaves[k]));
  }

  // A fusion region by its plan: generated kernels for its pointwise runs, its other members as
  // usual. A kernel whose inputs are not what it was planned for runs its members instead.
  void run_region(const BoundSymbol& region, Scope& inner, const StatementIds* known) const {
    auto member = [&](size_t m) { exec(region.subsymbols[m], inner, known ? &known->subs[m] : nullptr); };
    if (known && known->plans != plans_) {
      known->region_plan = &plans_->of(region);
      known->plans = plans_;
    }
    Executor::RegionPlans::Entry& entry = known ? *known->region_plan : plans_->of(region);
    if (entry.ids_of != &ids_) {
      entry.kernel_inputs.clear();
      entry.kernel_outputs.clear();
      entry.residual_rules.clear();
      for (const auto& step : entry.plan.steps) {
        std::vector<uint32_t> in, out;
        std::shared_ptr<const ResidualRule> rule;
        if (step.is_kernel) {
          for (const auto& name : step.kernel.inputs) in.push_back(ids_.of(name));
          for (const auto& name : step.kernel.outputs) out.push_back(ids_.of(name));
        }
        if (step.residual_epilogue) {  // the residual; the add's output, then the producer's others
          const BoundSymbol& producer = region.subsymbols[step.member];
          const BoundSymbol& add = region.subsymbols[step.member + 1];
          in.push_back(ids_.of(add.args[step.residual_arg].proxy));
          out.push_back(ids_.of(add.outputs[0]));
          for (size_t k = 1; k < producer.outputs.size(); ++k) out.push_back(ids_.of(producer.outputs[k]));
          rule = passes::residual_rule_for(producer);
        }
        entry.kernel_inputs.push_back(std::move(in));
        entry.kernel_outputs.push_back(std::move(out));
        entry.residual_rules.push_back(std::move(rule));
      }
      entry.ids_of = &ids_;
    }
    for (size_t s = 0; s < entry.plan.steps.size(); ++s) {
      const auto& step = entry.plan.steps[s];
      if (step.residual_epilogue) {
        const BoundSymbol& producer = region.subsymbols[step.member];
        bool ran = false;
        try {
          ran = entry.residual_rules[s] &&
                run_residual_epilogue(producer, *entry.residual_rules[s], entry.kernel_inputs[s][0],
                                      entry.kernel_outputs[s], inner, known ? &known->subs[step.member] : nullptr);
        } catch (const c10::Error& e) {
          throw plan_step_failed(region,
                                 "its members " + std::to_string(step.member) + " and " + std::to_string(step.member + 1) +
                                     " (" + producer.name() + " and the add it feeds) as one kernel",
                                 e, " ");
        }
        if (!ran) {
          member(step.member);
          member(step.member + 1);
        }
        continue;
      }
      if (!step.is_kernel) {
        member(step.member);
        continue;
      }
      const auto& k = step.kernel;
      std::vector<at::Tensor> inputs;
      inputs.reserve(k.inputs.size());
      for (uint32_t id : entry.kernel_inputs[s]) {
        const RValue* v = inner.find(id);
        inputs.push_back(v && v->is_tensor() ? v->t : at::Tensor());
      }
      if (!inputs_match(k, inputs)) {
        for (size_t m = k.first_member; m < k.first_member + k.members; ++m) member(m);
        continue;
      }
      std::vector<at::Tensor> outputs;
      try {
        outputs = launch_generated(k, inputs);
      } catch (const c10::Error& e) {
        throw plan_step_failed(region,
                               "the generated kernel " + k.name + " for its members " + std::to_string(k.first_member) +
                                   ".." + std::to_string(k.first_member + k.members - 1),
                               e, "\n" + k.source);
      }
      ++plans_->launches;
      for (size_t o = 0; o < k.outputs.size(); ++o) inner.set(entry.kernel_outputs[s][o], RValue::of(std::move(outputs[o])));
    }
  }

  // A region's member with a residual rule and the add it feeds as one kernel (codegen's
  // residual_epilogue step): `residual` the id of the add's other operand, `out` the ids of the
  // add's output and of the producer's other outputs. False, having set nothing, where the rule
  // declines (the CPU, large or strided operands, a residual the add would broadcast): the caller
  // then runs the two members.
  bool run_residual_epilogue(const BoundSymbol& producer, const ResidualRule& rule, uint32_t residual,
                             const std::vector<uint32_t>& out, Scope& inner, const StatementIds* known) const {
    const RValue* r = inner.find(residual);
    if (!r || !r->is_tensor()) return false;
    Reads reads{known ? known->reads.data() : nullptr};
    Arguments a = arguments(producer, inner, reads);
    RValue result = rule(a.args, a.kwargs, r->t);
    if (result.is_none()) return false;
    if (!result.is_sequence()) result = RValue::tuple({std::move(result)});
    if (result.items.size() != out.size())
      throw ExecError("the residual rule of " + producer.name() + " returned " + std::to_string(result.items.size()) +
                          " values for " + std::to_string(out.size()) + " outputs in '" + statement_text(producer) + "'",
                      producer.name());
    for (size_t k = 0; k < out.size(); ++k) inner.set(out[k], std::move(result.items[k]));
    ++plans_->residual_epilogues;
    return true;
  }

  // `known`: the statement's ids when the trace has them (null: each proxy's id is looked up).
  void exec(const BoundSymbol& b, Scope& scope, const StatementIds* known) const {
    Reads reads{known ? known->reads.data() : nullptr};
    switch (known ? known->form : b.symbol->form) {
      case PrintForm::unpack_trivial:
        for (size_t k = 0; k < (known ? known->writes.size() : b.outputs.size()); ++k)
          if (!scope.find(written(b, known, k)))
            throw ExecError("input '" + b.outputs[k]->name + "' was not given", b.name());
        return;
      case PrintForm::unpack_sequence: {
        RValue v = eval(b.args.at(0), scope, b, reads);
        if (!v.is_sequence())
          throw ExecError("cannot unpack " + describe(v) + " into " + std::to_string(b.outputs.size()) + " names in '" +
                              statement_text(b) + "'",
                          b.name());
        if (v.items.size() != b.outputs.size())
          throw ExecError("'" + statement_text(b) + "': expected " + std::to_string(b.outputs.size()) +
                              " values to unpack, got " + std::to_string(v.items.size()),
                          b.name());
        for (size_t k = 0; k < b.outputs.size(); ++k) scope.set(written(b, known, k), v.items[k]);
        return;
      }
      case PrintForm::del:
        if (known)
          for (uint32_t id : known->reads) scope.erase(id);
        else
          for (const auto& a : b.args) for_each_proxy(a, [&](const ProxyPtr& p) { scope.erase(ids_.of(p)); });
        return;
      case PrintForm::ret:
        return;  // handled by the body loop
      default:
        break;
    }
    const ExecRule* rule = rule_of(b, known);
    const bool has_subsymbols = known ? !known->subs.empty() : !b.subsymbols.empty();
    const bool prim = known ? known->prim : b.symbol->is_prim;
    if (has_subsymbols && (!rule || (options_.decompose && !prim))) {
      Scope inner;
      inner.parent = &scope;
      inner.locals.reserve(known ? known->subs.size() : b.subsymbols.size());
      if (plans_ && (known ? known->fusion : b.symbol->has(Trait::fusion)))
        run_region(b, inner, known);
      else
        for (size_t m = 0; m < b.subsymbols.size(); ++m)
          exec(b.subsymbols[m], inner, known ? &known->subs[m] : nullptr);
      const size_t outputs = known ? known->writes.size() : b.outputs.size();
      for (size_t k = 0; k < outputs; ++k) {
        uint32_t id = written(b, known, k);
        // Moved out of the inner level, unless it is an input passed through or a later output too.
        RValue* local = inner.find_local(id);
        bool again = false;
        for (size_t later = k + 1; later < outputs; ++later) again = again || written(b, known, later) == id;
        if (local && !again) {
          scope.set(id, std::move(*local));
          continue;
        }
        const RValue* v = local ? local : inner.find(id);
        if (!v)
          throw ExecError("the subsymbols of " + b.name() + " did not compute its output '" + b.outputs[k]->name + "'",
                          b.name());
        RValue copy = *v;
        scope.set(id, std::move(copy));
      }
      return;
    }
    if (!rule) {
      std::string why = b.symbol->opaque
                            ? "it is unknown to the engine (an opaque symbol) and has no execution rule or subsymbols"
                            : "it has no execution rule and no subsymbols";
      throw ExecError("symbol '" + b.name() + "' is not executable: " + why + " (in '" + statement_text(b) + "')",
                      b.name());
    }
    ExecContext ctx{b, options_};
    RValue result;
    try {
      if (known && !known->arguments.busy) {
        result = call_with_kept_arguments(*rule, ctx, known->arguments, scope, reads);
      } else {
        Arguments a = arguments(b, scope, reads);
        result = (*rule)(ctx, a.args, a.kwargs);
      }
    } catch (const ExecError& e) {
      if (!e.symbol().empty()) throw;
      throw ExecError(e.what(), b.name());
    } catch (const c10::Error& e) {
      throw ExecError(b.name() + " failed in '" + statement_text(b) + "': " + e.what_without_backtrace(), b.name());
    } catch (const std::exception& e) {
      throw ExecError(b.name() + " failed in '" + statement_text(b) + "': " + e.what(), b.name());
    }
    bind_outputs(b, std::move(result), scope, known);
  }

 private:
  // Runs `rule` on the statement's kept arguments (StatementArguments), its proxies' values set
  // from `scope` for this call and released after it, however the rule ends.
  RValue call_with_kept_arguments(const ExecRule& rule, const ExecContext& ctx, StatementArguments& kept,
                                  const Scope& scope, Reads& reads) const {
    const BoundSymbol& b = ctx.bsym;
    if (!kept.ready) {
      kept.args.assign(b.args.size(), RValue());
      for (size_t k = 0; k < b.args.size(); ++k) {
        if (has_proxy(b.args[k])) {
          kept.variable_args.push_back({k, b.args[k].is_proxy()});
        } else {
          kept.args[k] = eval(b.args[k], scope, b);
        }
      }
      for (size_t k = 0; k < b.kwargs.size(); ++k) {
        bool variable = has_proxy(b.kwargs[k].second);
        kept.kwargs.emplace_back(b.kwargs[k].first, variable ? RValue() : eval(b.kwargs[k].second, scope, b));
        if (variable) kept.variable_kwargs.push_back({k, b.kwargs[k].second.is_proxy()});
      }
      kept.ready = true;
    }
    struct Release {  // a statement's tensors must not outlive its `del`
      StatementArguments& kept;
      ~Release() {
        for (const auto& v : kept.variable_args) release_kept(kept.args[v.index]);
        for (const auto& v : kept.variable_kwargs) release_kept(kept.kwargs[v.index].second);
        kept.busy = false;
      }
    } release{kept};
    kept.busy = true;
    // In the order eval meets them: args first, then kwargs (the statement's reads are in it).
    // A bare proxy without a value: eval by the proxy's own id names it in its error.
    for (const auto& [k, bare] : kept.variable_args) {
      if (!bare) kept.args[k] = eval(b.args[k], scope, b, reads);
      else if (const RValue* r = scope.find(*reads.next++)) set_kept(kept.args[k], *r);
      else kept.args[k] = eval(b.args[k], scope, b);
    }
    for (const auto& [k, bare] : kept.variable_kwargs) {
      if (!bare) kept.kwargs[k].second = eval(b.kwargs[k].second, scope, b, reads);
      else if (const RValue* r = scope.find(*reads.next++)) set_kept(kept.kwargs[k].second, *r);
      else kept.kwargs[k].second = eval(b.kwargs[k].second, scope, b);
    }
    return rule(ctx, kept.args, kept.kwargs);
  }

  // The rule of a statement's symbol: kept with the statement while no rule is set, else looked up
  // in the table once per run (a run does not see rules registered while it executes).
  const ExecRule* rule_of(const BoundSymbol& b, const StatementIds* known) const {
    if (known && known->rule_generation == rules_generation_) return known->rule.get();
    auto it = rules_.find(b.symbol);
    if (it == rules_.end()) it = rules_.emplace(b.symbol, find_exec_rule(*b.symbol)).first;
    if (known) {
      known->rule = it->second;
      known->rule_generation = rules_generation_;
    }
    return it->second.get();
  }

  const ExecOptions& options_;
  NameIds& ids_;
  Executor::RegionPlans* plans_;  // null: regions run member by member
  mutable std::unordered_map<const Symbol*, std::shared_ptr<const ExecRule>> rules_;
  const uint64_t rules_generation_ = exec_rules_generation();
};

int line_of(const Trace& trace, const BoundSymbol& b) {
  std::string text = print_trace(trace);
  std::string stmt = statement_text(b);
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.rfind("  " + stmt, 0) == 0) return n;
  return 0;
}

}  // namespace

// Per trace run by this executor: its name ids and the body's slots, kept between runs (the slots
// empty) so that a run allocates neither.
struct Executor::NameTables {
  struct Entry {
    NameIds ids;
    std::vector<std::optional<RValue>> slots;
    std::vector<uint32_t> filled;  // Scope::filled
    // The ids of each statement of the body, for a trace owned by a shared pointer: it does not
    // change while it lives (ir/trace.h), and `owner` tells whether it still does.
    std::weak_ptr<const Trace> owner;
    std::vector<StatementIds> statements;
    std::vector<uint32_t> params;  // each parameter's id, in the signature's order (with statements)
  };
  std::unordered_map<const Trace*, Entry> by_trace;
  bool fused_attention = false;  // ltorch::fused_attention_on(the executor's device)

  // Bounded: traces long gone (or rebuilt at the same address) hold their proxies until cleared.
  Entry& of(const Trace& trace) {
    if (by_trace.size() >= 64 && !by_trace.count(&trace)) by_trace.clear();
    Entry& e = by_trace[&trace];
    if (e.ids.proxies() > (1u << 20)) e = Entry{};
    std::weak_ptr<const Trace> owner = trace.weak_from_this();
    if (owner.expired()) {
      e.statements.clear();
      e.params.clear();
    } else if (e.owner.lock().get() != &trace || e.statements.size() != trace.body.size()) {
      e.owner = owner;
      e.statements.clear();
      e.statements.reserve(trace.body.size());
      for (const auto& b : trace.body) e.statements.push_back(statement_ids(b, e.ids));
      mark_matmul_operands(trace, e.statements, fused_attention);
      e.params.clear();
      for (const auto& p : trace.params) e.params.push_back(e.ids.of(p.proxy));
    }
    return e;
  }
};

Device ExecOptions::default_device() {
#ifdef TV_HAVE_CUDA
  if (at::hasCUDA()) return Device{Device::Kind::cuda, 0};
#endif
  return Device{};
}

std::string NonFiniteReport::describe() const {
  return statement + " (line " + std::to_string(line) + ", " + symbol + "): " + std::to_string(nan_count) + " NaN, " +
         std::to_string(inf_count) + " Inf in " + proxy;
}

Executor::Executor(ExecOptions options)
    : options_(std::move(options)), plans_(std::make_shared<RegionPlans>()), names_(std::make_shared<NameTables>()) {
  names_->fused_attention = ltorch::fused_attention_on(options_.device);
}

size_t Executor::generated_kernel_launches() const { return plans_->launches; }

size_t Executor::residual_epilogues() const { return plans_->residual_epilogues; }

std::vector<RValue> tensor_values(const std::vector<at::Tensor>& tensors) {
  std::vector<RValue> out;
  for (const auto& t : tensors) out.push_back(RValue::of(t));
  return out;
}

RValue Executor::run(const Trace& trace, const std::vector<at::Tensor>& inputs) {
  return run(trace, tensor_values(inputs), {});
}

namespace {

}  // namespace

RValue Executor::run(const Trace& trace, std::vector<RValue> inputs, const RKwargs& kwargs) {
  first_non_finite_.reset();
  if (!options_.on_timing)
    timer_.reset();
  else if (!timer_)
    timer_ = make_symbol_timer(options_.device);
  else
    timer_->reset();  // a previous run may have stopped half-way
  // Below the Autograd and ADInplaceOrView keys every op skips two dispatch layers that would only
  // record nothing. Not c10::InferenceMode: its outputs would be inference tensors, which callers
  // could not update in place or use in autograd afterwards.
  std::optional<c10::NoGradGuard> no_grad;
  std::optional<at::AutoDispatchBelowADInplaceOrView> below_autograd;
  if (options_.no_grad) {
    no_grad.emplace();
    below_autograd.emplace();
  }
  NameTables::Entry& names = names_->of(trace);
  NameIds& ids = names.ids;
  Run run(options_, plans_.get(), ids);
  // The body's values live in the slots until the run ends (a run inside a rule gets its own).
  std::vector<std::optional<RValue>> slots = std::move(names.slots);
  slots.resize(std::max(slots.size(), ids.size()));
  std::vector<uint32_t> filled = std::move(names.filled);
  struct Release {  // empties the slots, however the run ends, and hands them back for the next run
    std::vector<std::optional<RValue>>& slots;
    std::vector<uint32_t>& filled;
    NameTables::Entry& names;
    ~Release() {
      for (uint32_t id : filled) slots[id].reset();
      filled.clear();
      names.slots = std::move(slots);
      names.filled = std::move(filled);
    }
  } release{slots, filled, names};
  Scope scope;
  scope.slots = &slots;
  scope.filled = &filled;

  // Bind the signature.
  auto positional = [&trace] {  // the positional parameters' names, for the errors below
    std::vector<std::string> out;
    for (const auto& p : trace.params)
      if (p.kind == ParamKind::positional) out.push_back(p.proxy->name);
    return out;
  };
  auto id_of_param = [&](size_t i) {
    return names.params.size() == trace.params.size() ? names.params[i] : ids.of(trace.params[i].proxy);
  };
  size_t next = 0;
  bool has_varargs = false;
  for (size_t i = 0; i < trace.params.size(); ++i) {
    const auto& p = trace.params[i];
    switch (p.kind) {
      case ParamKind::positional:
        if (next >= inputs.size()) {
          std::string list;
          auto all = positional();
          for (const auto& n : all) list += (list.empty() ? "" : ", ") + n;
          throw ExecError(trace.function_name + "(" + list + ") expects " + std::to_string(all.size()) +
                          " inputs, got " + std::to_string(inputs.size()));
        }
        scope.set(id_of_param(i), run.map_input(std::move(inputs[next++])));
        break;
      case ParamKind::varargs: {
        has_varargs = true;
        std::vector<RValue> rest;
        while (next < inputs.size()) rest.push_back(run.map_input(std::move(inputs[next++])));
        scope.set(id_of_param(i), RValue::tuple(std::move(rest)));
        break;
      }
      case ParamKind::varkw: {
        std::vector<std::pair<RValue, RValue>> entries;
        for (const auto& [k, v] : kwargs) entries.emplace_back(RValue::string(k), run.map_input(v));
        scope.set(id_of_param(i), RValue::dict(std::move(entries)));
        break;
      }
    }
  }
  if (!has_varargs && next < inputs.size())
    throw ExecError(trace.function_name + " expects " + std::to_string(positional().size()) + " inputs, got " +
                    std::to_string(inputs.size()));

  RValue result;
  for (size_t index = 0; index < trace.body.size(); ++index) {
    const BoundSymbol& b = trace.body[index];
    const StatementIds* known = names.statements.empty() ? nullptr : &names.statements[index];
    const PrintForm form = known ? known->form : b.symbol->form;
    if (form == PrintForm::ret) {
      result = b.args.empty() ? RValue::none() : run.result(b, scope, known);
      break;
    }
    if (timer_) timer_->begin(index);
    run.exec(b, scope, known);
    if (known)
      for (uint32_t id : known->matmul_operands) {
        if (id >= slots.size() || !slots[id] || !slots[id]->is_tensor() || !slots[id]->t.defined()) continue;
        if (rules::batched_matmul_copies(slots[id]->t)) slots[id] = RValue::of(slots[id]->t.contiguous());
      }
    if (timer_) timer_->end(index);
    if (form == PrintForm::del) continue;
    if (!options_.on_output && !(options_.detect_non_finite && !first_non_finite_)) continue;
    for (const auto& p : b.outputs) {
      const RValue* v = scope.find(ids.of(p));
      if (!v || !v->is_tensor() || !v->t.defined()) continue;
      if (options_.on_output) options_.on_output(b, p, v->t);
      if (options_.detect_non_finite && !first_non_finite_ && at::isFloatingType(v->t.scalar_type()) &&
          !at::isfinite(v->t).all().item<bool>()) {
        NonFiniteReport r;
        r.symbol = b.name();
        r.proxy = p->name;
        r.statement = statement_text(b);
        r.index = index;
        r.line = line_of(trace, b);
        r.nan_count = at::isnan(v->t).sum().item<int64_t>();
        r.inf_count = at::isinf(v->t).sum().item<int64_t>();
        first_non_finite_ = std::move(r);
      }
    }
  }
  if (timer_)
    for (const auto& t : timer_->finish()) options_.on_timing(trace.body[t.index], t);
  return result;
}

}  // namespace tv::exec
