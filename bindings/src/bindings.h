// Shared declarations of the binding files (traces.cpp: traces and captures, module.cpp: jit,
// executor bridge, world; execute.cpp: running one trace; call_guard.cpp: the jitted module's
// steady-call check). Plain structs holding engine values, so
// pybind11 needs no custom holders.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "capture/capture.h"
#include "ir/trace.h"
#include "history/stages.h"

namespace tv::dist {
class Communicator;
}

namespace tv::py_bindings {

struct PyTrace {
  TracePtr t;
};

struct PyStage {
  std::string pass;
  StageTrace trace;  // a capture's stored text is parsed when Python first reads `trace`
  double milliseconds = 0;
  bool changed = true;
};

struct PyCapture {
  Capture c;
};

// {"prologue": [Stage, ...], "forward": [...], "backward": [...], "epilogue": [...]}
pybind11::dict stages_dict(const StageHistory& h);
void bind_traces(pybind11::module_& m);
// execute_trace (execute.cpp): a trace on the engine's executor with Python values.
void bind_execute(pybind11::module_& m);
// The calling thread's communicator (module.cpp): its run_world rank's, else this process's after
// join_process_group, else nullptr (a single rank).
dist::Communicator* current_communicator();
// (rank, world size) of the calling thread, as current_communicator() decides it (module.cpp).
std::pair<int, int> current_world();
// CallGuard (call_guard.cpp): the jitted module's check that a call may reuse the previous call's entry.
void bind_call_guard(pybind11::module_& m);

}  // namespace tv::py_bindings
