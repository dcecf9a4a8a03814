// The state distributed transforms read, and when they read it.
// Contract: Thunder read `process_group_for_ddp` from the module when jit() was called; a ddp
// applied after jit (ddp(jit(m))) then found None and the first call failed with
// "ValueError: None had an unexpected type <class 'NoneType'>. ...". The engine applies
// transforms lazily (state read at the first call), so both orders work and give canonically
// equal traces. In capture-at-jit mode it reproduces the old behaviour: check_capture_at_jit
// throws CapturedStateError, a std::runtime_error whose text is Thunder's ValueError followed by
// what was captured when, the rule (state-read-at-call) and the fix, for any transform that
// distributes parameters and comes after jit in the order.
#pragma once
#include <stdexcept>
#include <string>

#include "transforms/order.h"

namespace tv {

class CapturedStateError : public std::runtime_error {
 public:
  CapturedStateError(const std::string& message, std::string rule, std::string fix)
      : std::runtime_error(message), rule_(std::move(rule)), fix_(std::move(fix)) {}
  const std::string& rule() const { return rule_; }  // "state-read-at-call"
  const std::string& fix() const { return fix_; }

 private:
  std::string rule_, fix_;
};

// Throws CapturedStateError when `capture_at_jit` and a distributed transform comes after jit.
void check_capture_at_jit(const ValidatedOrder& order, bool capture_at_jit);

}  // namespace tv
