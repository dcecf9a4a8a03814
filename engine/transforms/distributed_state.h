// The state distributed transforms read, and what happens when a reader finds None.
// Contract: Thunder at the seed snapshotted `process_group_for_ddp` when jit() was called; ddp
// applied after jit left the snapshot None, DDP's backward bucketing passed that None to the
// all-reduce as its group and the all-reduce's meta check raised "ValueError: None had an
// unexpected type <class 'NoneType'>. ...". Here that failure comes out of the same mechanism
// (semantics.h says who reads what when; collectives.h checks the group):
//  - PartialTraceError: a pass stopped while building a trace; it carries the trace up to and
//    including the failing bound symbol (at index `failed_at` of its body), closed by the return
//    of the trace the pass started from, so that it is still a program.
//  - StateReadFailure: the pipeline's error once that partial trace is a stage: Thunder's text,
//    then what was read when by whom, the rule (state-read-at-call) and the fix.
#pragma once
#include <stdexcept>
#include <string>

#include "ir/trace.h"
#include "transforms/transform.h"

namespace tv {

class PartialTraceError : public std::runtime_error {
 public:
  PartialTraceError(const std::string& message, TracePtr partial, int failed_at)
      : std::runtime_error(message), partial_(std::move(partial)), failed_at_(failed_at) {}
  const TracePtr& partial() const { return partial_; }
  int failed_at() const { return failed_at_; }

 private:
  TracePtr partial_;
  int failed_at_;
};

class StateReadFailure : public std::runtime_error {
 public:
  StateReadFailure(const std::string& message, std::string rule, std::string fix)
      : std::runtime_error(message), rule_(std::move(rule)), fix_(std::move(fix)) {}
  const std::string& rule() const { return rule_; }  // "state-read-at-call"
  const std::string& fix() const { return fix_; }

 private:
  std::string rule_, fix_;
};

// The failure of `consumer` of `transform` (ddp) that found no process group: `error` (Thunder's
// text), where it was raised (`pass`, the failing line), what each consumer read in this mode, the
// rule and the fix.
StateReadFailure explain_missing_group(const std::string& error, const std::string& transform, StateConsumer consumer,
                                       const std::string& pass, const Trace& partial, int failed_at,
                                       const TransformContext& context);

}  // namespace tv
