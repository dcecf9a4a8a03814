// TraceBuilder: records bound symbols into a trace while code runs on proxies.
// Contract: `call` runs a symbol's impl (the meta function of a prim, the decomposition of a
// composite) and appends one bound symbol at the current level; the calls a decomposition makes
// become that bound symbol's subsymbols. Names are fresh per builder ("t0", "t1", ...). A failing
// meta function throws OpError; the builder adds the op's name, argument metadata and the source
// location (the current header) to the message. `finish` appends the return and seals the trace.
#pragma once
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/trace.h"

namespace tv {

// A shape, dtype or argument error found while tracing an op.
class OpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Names a builder will not hand out: "t<n>" (what fresh_name writes, most of a trace's names) as a
// table by n, so that reserving every name of a deep trace allocates nothing per name; the others
// as strings. Made once from a trace (collectives::names_of), it can be given to every builder
// that adds statements to that trace.
struct ReservedNames {
  std::vector<bool> numbers;
  std::unordered_set<std::string> others;

  void add(const std::string& name);
  void add(const ReservedNames& names);
  bool contains(const std::string& name) const;
};

class TraceBuilder {
 public:
  explicit TraceBuilder(std::string function_name = "computation");

  // A fresh proxy name with the given prefix ("t" -> "t7"), never used before in this builder.
  std::string fresh_name(const std::string& prefix = "t");
  // Marks a name as taken (inputs named after parameters).
  void reserve_name(const std::string& name);
  void reserve_names(const ReservedNames& names);

  ProxyPtr tensor(std::vector<int64_t> shape, DType dtype, Device device, bool requires_grad = false);
  // An input of the function: a parameter of the signature plus its `# name: "T"` statement.
  ProxyPtr input(ProxyPtr proxy, ParamKind kind = ParamKind::positional);

  Value call(const Symbol& symbol, std::vector<Value> args, Kwargs kwargs = {});
  Value call(std::string_view symbol_name, std::vector<Value> args, Kwargs kwargs = {});
  // Appends a statement built by hand (unpacks, checks, del) at the current level.
  void emit(BoundSymbol b);

  // Source location of the bound symbols recorded from now on (BoundSymbol::source, at every level);
  // printed as a comment above the next top-level one.
  void set_location(std::string location);
  const std::string& location() const { return location_; }

  Trace& trace() { return *trace_; }
  // Appends `return value` and hands the trace over; the builder must not be used afterwards.
  TracePtr finish(Value returned, std::vector<std::string> return_tags = {});

 private:
  std::shared_ptr<Trace> trace_;
  std::vector<std::vector<BoundSymbol>*> levels_;  // where new bound symbols go
  ReservedNames taken_;
  int counter_ = 0;
  std::string location_;
  SourceRef location_ref_;  // location_, shared by the statements recorded under it
  SourceRef pending_header_;  // the header of the next top-level statement: location_ when it changed
};

// True when any tensor proxy inside the values requires grad.
bool any_requires_grad(const std::vector<Value>& values);
// "cpu f32[2, 5]" for tensors, Python text for everything else; used in error messages.
std::string describe_args(const std::vector<Value>& args, const Kwargs& kwargs);

}  // namespace tv
