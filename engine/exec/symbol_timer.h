// Symbol timer: how long each top-level bound symbol of one executor run took.
// Contract: `begin(i)` and `end(i)` bracket bound symbol i; `finish()` returns one SymbolTime per
// bracketed symbol, in bracket order, with its start relative to the first begin() and its duration.
// The host timer reads the steady clock (on CUDA that is launch time, not kernel time). The device
// timer records a pair of CUDA events on the current stream around each symbol and reads them all in
// finish(), after one synchronisation of the last event: timing never serialises host and device in
// the middle of a run. `make_symbol_timer(device)` gives the device timer for a CUDA device when
// this build has CUDA (TV_HAVE_CUDA), the host timer otherwise.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "ir/dtype.h"

namespace tv::exec {

struct SymbolTime {
  size_t index = 0;           // bound symbol index in the trace body
  double start_seconds = 0;   // since the first begin() of the run
  double seconds = 0;         // duration
  bool device_timer = false;  // measured with CUDA events
};

class SymbolTimer {
 public:
  virtual ~SymbolTimer() = default;
  virtual void begin(size_t index) = 0;
  virtual void end(size_t index) = 0;
  virtual std::vector<SymbolTime> finish() = 0;  // also resets the timer for the next run
  virtual void reset() = 0;                      // drops what a run that stopped half-way recorded
};

std::unique_ptr<SymbolTimer> make_symbol_timer(const Device& device);

}  // namespace tv::exec
