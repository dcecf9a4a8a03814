// Bound symbols and traces.
// Contract: a Trace is a value. Passes take a `const Trace&` and return a new TracePtr with a new
// provenance; nothing mutates a trace once it is shared, so a list of TracePtr is a complete
// stage history. The body holds every statement in order, including the function's inputs
// (`unpack_trivial`), `del` and the final `return`.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/cow_vector.h"
#include "ir/source_location.h"
#include "ir/symbol.h"
#include "ir/value.h"

namespace tv {

// A proxy a statement reads, held by reference to the argument that holds it: valid while the
// statement is neither changed nor destroyed. Passes read every argument of every statement, and
// a copied ProxyPtr would raise and drop a reference count (a write to the proxy's line) for each.
class ProxyRead {
 public:
  explicit ProxyRead(const ProxyPtr& p) : p_(&p) {}
  const Proxy* operator->() const { return p_->get(); }
  const Proxy& operator*() const { return **p_; }
  operator const ProxyPtr&() const { return *p_; }  // NOLINT: a ProxyPtr wherever one is taken

 private:
  const ProxyPtr* p_;
};

// A copy of a bound symbol shares its lists (arguments, outputs, decomposition, tags) with the
// original until one side changes one of them (ir/cow_vector.h): a stage copies the previous stage's
// statements and changes a few, so the unchanged ones cost a stage their fixed size and no more.
struct BoundSymbol {
  const Symbol* symbol = nullptr;
  CowVector<Value> args;
  CowVector<std::pair<std::string, Value>> kwargs;
  CowVector<ProxyPtr> outputs;            // the proxies this statement defines, in order
  // How the outputs were written when that is not `t0` or `(t0, t1)`: `[q, k, v]`, `(t0,)`,
  // `(_, _)`. Its proxies are placeholders, the k-th standing for outputs[k] (so renaming the
  // outputs needs no change here); `_` is a name. Ignored when its proxy count differs from outputs.
  // Rarely set, never changed once made: shared, so that a statement costs a pointer for it.
  Shared<Value> output_target;
  CowVector<BoundSymbol> subsymbols;      // its decomposition, one level down (shared by copies until changed)
  // The source location printed as a comment above it; null for none. Shared (the builder gives it
  // the text of `source`), so that copying a statement copies no text.
  SourceRef header;
  // The source line it came from (ir/source_location.h), at every level; null for none (a subsymbol
  // then has its parent's). Unlike the header, every statement of a source line carries it.
  SourceRef source;
  CowVector<std::string> tags;
  // Forward <-> backward: the first output's name of the forward statement autograd differentiated,
  // on that statement itself and on each backward statement its gradient rule made; "" elsewhere.
  // Passes carry it with the statement. Not printed: Thunder's format has no place for it, so
  // captures store it beside the text (transforms/gradient_links.h).
  Text gradient_of;

  const std::string& name() const { return symbol->name; }
  ProxyPtr output() const { return outputs.empty() ? nullptr : outputs.front(); }
  // Every proxy read by the arguments and keyword arguments (not by subsymbols), left to right,
  // repeats kept.
  std::vector<ProxyRead> inputs() const;
};

static_assert(sizeof(BoundSymbol) == 80, "a statement is ten pointers: its lists, texts and shared parts");

// True for statements that are the structure of the function: inputs, unpacks, del, return.
bool is_structural(const BoundSymbol& b);

enum class ParamKind { positional, varargs, varkw };  // x, *args, **kwargs

struct Param {
  ProxyPtr proxy;
  ParamKind kind = ParamKind::positional;
};

struct Provenance {
  std::string pass;
  std::optional<long long> milliseconds;  // Thunder omits it for some passes
};

// Shared traces know their owner (weak_from_this), so that the executor can keep tables of a trace
// while it lives; a copy is a new trace.
struct Trace : std::enable_shared_from_this<Trace> {
  std::string function_name = "computation";
  std::vector<std::string> imports;     // "import torch", printed in order
  std::vector<std::string> decorators;  // "@torch.no_grad()"
  std::vector<Param> params;
  std::vector<BoundSymbol> body;
  std::optional<Provenance> provenance;
  std::vector<std::string> tags;

  // The value of the trailing `return` statement, None when there is none.
  Value returned() const;
  // The index in `body` of the trailing `return` statement; nullopt when there is none.
  std::optional<size_t> return_index() const;
  // Number of bound symbols, subsymbols not counted.
  size_t size() const { return body.size(); }
};

using TracePtr = std::shared_ptr<const Trace>;

// A copy of `t` with a new provenance, ready for a pass to edit before it is shared.
std::shared_ptr<Trace> derive(const Trace& t, std::string pass_name);
// The same with an empty body (room reserved for t's): for a pass that writes every statement anew,
// which would otherwise copy each statement twice.
std::shared_ptr<Trace> derive_without_body(const Trace& t, std::string pass_name);

// Depth-first walk of a body, subsymbols after their parent; `depth` is 0 at the top.
void walk(const std::vector<BoundSymbol>& body,
          const std::function<void(const BoundSymbol&, int depth)>& fn, int depth = 0);

}  // namespace tv
