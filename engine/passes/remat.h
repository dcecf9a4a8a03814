// Rematerialization: saves fewer tensors for the backward by recomputing cheap ones there.
// Contract: takes the forward/backward pair autograd makes (the forward returns
// `{...}, ((saved...), (other...))`; the backward `backward_fn(saved_for_backward, cotangents)`
// unpacks `C0, C1, = saved_for_backward` then `a, b, = C0`). A saved tensor computed in the
// forward by a chain of elementwise ops (no random, collective or check) from "frontier" values
// (function inputs or outputs of other ops) can be recomputed in the backward from those frontier
// values instead. Each candidate is dropped from the saved tuple when that lowers the saved bytes
// (numel x element size, the frontier values it needs counted once); its chain is copied into the
// backward before the first statement that reads any recomputed value, reading only saved values.
// Both traces keep their layout; the unpack of C0 lists the new saved values in the forward's
// order; dels (and collection clears) are regenerated. Nothing changes when no choice lowers the
// bytes or when the layout is not recognised (`changed` is false). Provenance "Rematerialization".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tv::passes {

struct RematResult {
  TracePtr forward;
  TracePtr backward;
  int64_t saved_bytes_before = 0;
  int64_t saved_bytes_after = 0;
  std::vector<std::string> recomputed;  // forward names no longer saved, recomputed in the backward
  std::vector<std::string> added;       // forward names newly saved (what the recomputation reads)
  bool changed = false;
};

RematResult rematerialize(const Trace& forward, const Trace& backward);

// The saved-for-backward proxies of an augmented forward (empty when the return has another shape).
std::vector<ProxyPtr> saved_for_backward(const Trace& forward);
// Bytes of the distinct saved tensors.
int64_t saved_bytes(const Trace& forward);

}  // namespace tv::passes
