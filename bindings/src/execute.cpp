// execute_trace: runs one trace (an imported Thunder printout, or any engine trace) on the engine's
// executor with Python values, the way Thunder calls its prologue, computation and backward.
// Contract: `execute_trace(trace, inputs, kwargs={}, module=None)` binds `inputs` (a list of Python
// values) to the trace's parameters (the rest to its *args) and `kwargs` to its **kwargs, and
// returns the value of its `return`, with tensors, numbers, strings, None, tuples, lists and dicts
// converted both ways (tensors are shared, not copied). `module` is what a prologue unpacks
// (`globals()['__function_obj']`): parameters and buffers are read with get_parameter / get_buffer
// of that nn.Module, attributes with getattr along the dotted name (bool, int, float and str
// attributes; others are absent). Collectives run over the calling thread's communicator
// (run_world's rank, or the process's after join_process_group); without one, as one rank alone.
// The run is on CPU under no-grad, as
// Thunder runs its traces; an op the executor does not know raises ExecError naming it.
#include <torch/extension.h>

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "exec/executor.h"

namespace py = pybind11;

namespace tv::py_bindings {
namespace {

exec::RValue to_rvalue(const py::handle& v) {
  using exec::RValue;
  if (v.is_none()) return RValue::none();
  if (py::isinstance<py::bool_>(v)) return RValue::boolean(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return RValue::integer(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return RValue::floating(v.cast<double>());
  if (py::isinstance<py::str>(v)) return RValue::string(v.cast<std::string>());
  if (THPVariable_Check(v.ptr())) return RValue::of(v.cast<at::Tensor>());
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    std::vector<RValue> items;
    for (const auto& item : v) items.push_back(to_rvalue(item));
    return py::isinstance<py::tuple>(v) ? RValue::tuple(std::move(items)) : RValue::list(std::move(items));
  }
  if (py::isinstance<py::dict>(v)) {
    std::vector<std::pair<RValue, RValue>> entries;
    for (const auto& [k, x] : v.cast<py::dict>()) entries.emplace_back(to_rvalue(k), to_rvalue(x));
    return RValue::dict(std::move(entries));
  }
  return RValue::name(py::str(v).cast<std::string>());
}

py::object to_python(const exec::RValue& v) {
  using K = exec::RValue::Kind;
  switch (v.kind) {
    case K::none: return py::none();
    case K::boolean: return py::bool_(v.b);
    case K::integer: return py::int_(v.i);
    case K::floating: return py::float_(v.f);
    case K::string:
    case K::name: return py::str(v.s);
    case K::dtype: return py::str(std::string(torch_name(v.dtype)));
    case K::device: return py::str(v.device.str());
    case K::tensor: return py::cast(v.t);
    case K::tuple:
    case K::list: {
      py::list items;
      for (const auto& item : v.items) items.append(to_python(item));
      if (v.kind == K::list) return std::move(items);
      return py::tuple(items);
    }
    case K::dict: {
      py::dict d;
      for (const auto& [k, x] : v.entries) d[to_python(k)] = to_python(x);
      return std::move(d);
    }
    case K::module: return py::str("<module " + v.s + ">");
  }
  return py::none();
}

// A live nn.Module seen by a prologue.
class PythonModuleView : public exec::ModuleView {
 public:
  explicit PythonModuleView(py::object module) : module_(std::move(module)) {}

  std::optional<at::Tensor> parameter(const std::string& name) const override {
    for (const char* getter : {"get_parameter", "get_buffer"}) {
      try {
        py::object t = module_.attr(getter)(name);
        if (THPVariable_Check(t.ptr())) return t.cast<at::Tensor>();
      } catch (const py::error_already_set&) {
      }
    }
    return std::nullopt;
  }

  std::optional<Attr> attribute(const std::string& name) const override {
    py::object v = module_;
    size_t start = 0;
    while (start <= name.size()) {
      size_t dot = name.find('.', start);
      std::string part = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!py::hasattr(v, part.c_str())) return std::nullopt;
      v = v.attr(part.c_str());
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (py::isinstance<py::bool_>(v)) return Attr{v.cast<bool>()};
    if (py::isinstance<py::int_>(v)) return Attr{v.cast<int64_t>()};
    if (py::isinstance<py::float_>(v)) return Attr{v.cast<double>()};
    if (py::isinstance<py::str>(v)) return Attr{v.cast<std::string>()};
    return std::nullopt;
  }

 private:
  py::object module_;
};

py::object execute_trace(const PyTrace& trace, const py::list& inputs, const py::dict& kwargs, const py::object& module) {
  std::vector<exec::RValue> values;
  for (const auto& x : inputs) values.push_back(to_rvalue(x));
  exec::RKwargs named;
  for (const auto& [k, x] : kwargs) named.emplace_back(py::str(k).cast<std::string>(), to_rvalue(x));
  std::optional<PythonModuleView> view;
  exec::ExecOptions options;
  if (!module.is_none()) {
    view.emplace(module);
    options.module = &*view;
  }
  // A trace's collectives (Thunder's DDP all-reduces) run over the caller's group: without one
  // they compute what one rank alone would, which is not what a world of several computes.
  if (auto* comm = current_communicator()) options.user = comm;
  exec::Executor executor(options);
  return to_python(executor.run(*trace.t, values, named));
}

}  // namespace

void bind_execute(py::module_& m) {
  m.def("execute_trace", &execute_trace, py::arg("trace"), py::arg("inputs"), py::arg("kwargs") = py::dict(),
        py::arg("module") = py::none(),
        "Runs a trace on the engine's executor (CPU, no-grad): inputs bound to its parameters, the value of its "
        "return back; `module` is the nn.Module a prologue unpacks. ExecError names an op it does not know.");
}

}  // namespace tv::py_bindings
