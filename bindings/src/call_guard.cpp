// CallGuard: whether a jitted module's call may reuse the cache entry of the call the guard was made
// for, without reading the module again (jit.py's steady path). One pass in C++ over what that
// call's key was made of, instead of rebuilding the key in Python on every call.
// Contract:
//  - CallGuard(dicts, attributes, places, args, kwargs) records: the size of each dict (a module's
//    __dict__, _parameters, _buffers, _modules: an attribute, parameter, buffer or submodule gained
//    or lost changes one), each (mapping, name) -> value of the constants the key read and of the
//    globals the entry watches (a value is a copy the caller made; a float compared bit for bit;
//    given as (mapping, name, value, True), only the value's type),
//    each (table, name[, index]) -> object of the parameter and buffer places and the submodules
//    (`table`: a dict, or another mapping: a function's closure)
//    (`index`: an item of the tuple, list or dict there, a module kept in a list), with a tensor's
//    metadata (shape, dtype, device, requires_grad, contiguity), and for a place given as (table,
//    name, tensor, True[, index]) (a captured tensor: a module's plain tensor attribute, an item of
//    a tuple, list or dict one holds, a global) only the metadata of the tensor there, the call's arguments (by position, and by keyword in
//    the dict's order), torch's default dtype, grad and inference modes, whether deterministic
//    algorithms are asked for, the intra-op thread count, cuDNN's switches, and the calling thread's
//    (rank, world size). An argument is a tensor (its metadata is recorded) or a constant the key
//    spells with its type and repr: None, bool, int, float, str; anything else is a TypeError.
//  - matches(args, kwargs) is true only when the call has as many arguments by position and the
//    same keywords in the same order, each tensor argument a tensor with the recorded metadata, each
//    constant one of the same type and value (a float bit for bit), the same tensor object where the
//    recorded call passed one tensor twice and distinct ones elsewhere (a recording reads a tensor
//    passed twice as one input), and all of the above is as recorded (the same tensor object in
//    every place, with the same metadata; the same type and an equal value for every attribute);
//    anything else, and any error while reading, is false, and the caller takes its slow path,
//    which decides as it always did.
//  - The guard owns what it watches and tells Python's collector so (tp_traverse, tp_clear): a
//    module that refers to its jitted module does not leak through it.
#include <torch/csrc/autograd/python_variable.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/SmallVector.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace tv::py_bindings {
namespace {

// What jit.py's _meta keys a tensor on.
struct TensorMeta {
  std::vector<int64_t> sizes;
  at::ScalarType dtype = at::ScalarType::Undefined;
  at::Device device = at::kCPU;
  bool requires_grad = false;
  bool contiguous = true;        // a forward may read it (x.is_contiguous(); x.view refuses a strided one)
  std::vector<int64_t> strides;  // a strided one's (a branch on x.stride(); a reshape a view or a copy)
  bool leaf = false;             // one that requires grad: x.is_leaf, x.grad_fn is None
  PyTypeObject* type = nullptr;  // an nn.Parameter passed in

  static TensorMeta of(PyObject* object, const at::Tensor& t) {
    bool contiguous = t.is_contiguous();
    return {t.sizes().vec(), t.scalar_type(), t.device(), t.requires_grad(), contiguous,
            contiguous ? std::vector<int64_t>{} : t.strides().vec(), t.requires_grad() && !t.grad_fn(), Py_TYPE(object)};
  }
  bool same(PyObject* object, const at::Tensor& t) const {
    return t.scalar_type() == dtype && t.device() == device && t.requires_grad() == requires_grad &&
           t.is_contiguous() == contiguous && t.sizes().equals(sizes) && Py_TYPE(object) == type &&
           (contiguous || t.strides().equals(strides)) && (!requires_grad || !t.grad_fn() == leaf);
  }
};

// The metadata of `object` when it is a tensor.
std::optional<TensorMeta> meta_of(PyObject* object) {
  if (!THPVariable_Check(object)) return std::nullopt;
  return TensorMeta::of(object, THPVariable_Unpack(object));
}

// One argument of the recorded call: a tensor's metadata, or a constant of the key.
struct Argument {
  std::optional<TensorMeta> tensor;
  py::object constant;
  int same_as = -1;  // a tensor: the index among the call's tensors of the same object passed earlier

  static Argument of(PyObject* object) {
    if (auto meta = meta_of(object)) return {std::move(meta), {}, -1};
    if (object != Py_None && !PyBool_Check(object) && !PyLong_CheckExact(object) && !PyFloat_CheckExact(object) &&
        !PyUnicode_CheckExact(object))
      throw py::type_error("CallGuard: an argument is a tensor, None, a bool, an int, a float or a str");
    return {std::nullopt, py::reinterpret_borrow<py::object>(object), -1};
  }

  // -1 on an error (the caller clears it: no match).
  int same(PyObject* object) const {
    if (tensor) return THPVariable_Check(object) && tensor->same(object, THPVariable_Unpack(object));
    PyObject* was = constant.ptr();
    if (Py_TYPE(object) != Py_TYPE(was)) return 0;
    if (was == Py_None || PyBool_Check(was)) return object == was;
    // bit for bit: 0.0 and -0.0 are equal numbers with different keys
    if (PyFloat_CheckExact(was)) {
      double a = PyFloat_AS_DOUBLE(object), b = PyFloat_AS_DOUBLE(was);
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    return PyObject_RichCompareBool(object, was, Py_EQ);
  }
};

// The index in `seen` of `tensor` (the same object, passed earlier in the call), or -1; then adds it.
template <class Seen>
int place_among(Seen& seen, PyObject* tensor) {
  auto first = std::find(seen.begin(), seen.end(), tensor);
  int at = first == seen.end() ? -1 : static_cast<int>(first - seen.begin());
  seen.push_back(tensor);
  return at;
}

class CallGuard {
 public:
  CallGuard(const py::list& dicts, const py::list& attributes, const py::list& places, const py::tuple& args,
            const py::dict& kwargs)
      : world_(current_world()),
        default_dtype_(c10::get_default_dtype()),
        grad_mode_(at::GradMode::is_enabled()),
        inference_mode_(c10::InferenceMode::is_enabled()),
        deterministic_(at::globalContext().deterministicAlgorithms()),
        threads_(at::get_num_threads()),
        backends_(backend_settings()) {
    for (const auto& d : dicts) dicts_.push_back({py::reinterpret_borrow<py::dict>(d), PyDict_Size(d.ptr())});
    for (const auto& a : attributes) {
      auto t = a.cast<py::tuple>();
      bool by_type = t.size() > 3 && t[3].cast<bool>();
      attributes_.push_back({py::reinterpret_borrow<py::object>(t[0]), t[1], t[2], by_type});
    }
    for (const auto& p : places) {
      auto t = p.cast<py::tuple>();
      auto meta = meta_of(t[2].ptr());
      bool by_meta = t.size() > 3 && t[3].cast<bool>();
      py::object index = t.size() > 4 ? py::reinterpret_borrow<py::object>(t[4]) : py::none();
      places_.push_back({py::reinterpret_borrow<py::object>(t[0]), t[1], t[2], std::move(meta), by_meta, index});
    }
    std::vector<PyObject*> tensors;
    auto add = [&](PyObject* value) {
      Argument a = Argument::of(value);
      if (a.tensor) a.same_as = place_among(tensors, value);
      return a;
    };
    for (const auto& a : args) args_.push_back(add(a.ptr()));
    for (const auto& [name, value] : kwargs) kwargs_.push_back({py::reinterpret_borrow<py::object>(name), add(value.ptr())});
  }

  bool matches(const py::tuple& args, const py::dict& kwargs) const {
    if (args.size() != args_.size() || kwargs.size() != kwargs_.size() || current_world() != world_ ||
        c10::get_default_dtype() != default_dtype_ || at::GradMode::is_enabled() != grad_mode_ ||
        c10::InferenceMode::is_enabled() != inference_mode_ ||
        at::globalContext().deterministicAlgorithms() != deterministic_ || at::get_num_threads() != threads_ ||
        backend_settings() != backends_)
      return false;
    c10::SmallVector<PyObject*, 8> tensors;
    auto same = [&](const Argument& was, PyObject* value) {
      int same = was.same(value);
      if (same == 1 && was.tensor && place_among(tensors, value) != was.same_as) same = 0;
      return same;
    };
    for (size_t i = 0; i < args_.size(); ++i)
      if (int s = same(args_[i], PyTuple_GET_ITEM(args.ptr(), i)); s != 1) return s == 0 ? false : clear_error_false();
    // same size and the same keys in the same order
    Py_ssize_t pos = 0, i = 0;
    PyObject *name, *value;
    while (PyDict_Next(kwargs.ptr(), &pos, &name, &value)) {
      const auto& [was_name, was] = kwargs_[i++];
      if (name != was_name.ptr() && PyObject_RichCompareBool(name, was_name.ptr(), Py_EQ) != 1) return clear_error_false();
      if (int s = same(was, value); s != 1) return s == 0 ? false : clear_error_false();
    }
    for (const auto& [dict, size] : dicts_)
      if (PyDict_Size(dict.ptr()) != size) return false;
    for (const auto& a : attributes_) {
      py::object held;  // a mapping's item is a new reference
      PyObject* now = PyDict_Check(a.table.ptr()) ? PyDict_GetItemWithError(a.table.ptr(), a.name.ptr())  // borrowed
                                                  : (held = py::reinterpret_steal<py::object>(
                                                         PyObject_GetItem(a.table.ptr(), a.name.ptr()))).ptr();
      if (now == nullptr || Py_TYPE(now) != Py_TYPE(a.value.ptr())) return clear_error_false();
      if (a.by_type) continue;
      if (PyFloat_CheckExact(now)) {  // bit for bit: 0.0 and -0.0 are two constants
        double x = PyFloat_AS_DOUBLE(now), y = PyFloat_AS_DOUBLE(a.value.ptr());
        if (std::memcmp(&x, &y, sizeof x) != 0) return false;
        continue;
      }
      int equal = PyObject_RichCompareBool(now, a.value.ptr(), Py_EQ);
      if (equal != 1) return clear_error_false();
    }
    for (const auto& p : places_) {
      py::object held;  // a mapping's item (a closure's variable) is a new reference
      PyObject* now = PyDict_Check(p.table.ptr()) ? PyDict_GetItemWithError(p.table.ptr(), p.name.ptr())  // borrowed
                                                  : (held = py::reinterpret_steal<py::object>(
                                                         PyObject_GetItem(p.table.ptr(), p.name.ptr()))).ptr();
      py::object item;  // an item of a tuple, list or dict there (a new reference)
      if (now != nullptr && !p.index.is_none()) {
        if (PyDict_CheckExact(now))
          item = py::reinterpret_borrow<py::object>(PyDict_GetItemWithError(now, p.index.ptr()));
        else if (PyList_CheckExact(now) || PyTuple_CheckExact(now))
          item = py::reinterpret_steal<py::object>(PyObject_GetItem(now, p.index.ptr()));
        else
          return false;
        now = item.ptr();
      }
      if (p.by_meta) {  // a captured tensor: any tensor of the recorded metadata
        if (now == nullptr || !THPVariable_Check(now) || !p.meta || !p.meta->same(now, THPVariable_Unpack(now)))
          return clear_error_false();
        continue;
      }
      if (now != p.tensor.ptr()) return clear_error_false();
      if (p.meta && !p.meta->same(now, THPVariable_Unpack(now))) return false;
    }
    return true;
  }

  int traverse(visitproc visit, void* arg) const {
    for (const auto& d : dicts_) Py_VISIT(d.dict.ptr());
    for (const auto& a : attributes_) {
      Py_VISIT(a.table.ptr());
      Py_VISIT(a.value.ptr());
    }
    for (const auto& p : places_) {
      Py_VISIT(p.table.ptr());
      Py_VISIT(p.tensor.ptr());
      Py_VISIT(p.index.ptr());
    }
    for (const auto& a : args_) Py_VISIT(a.constant.ptr());
    for (const auto& [name, a] : kwargs_) {
      Py_VISIT(name.ptr());
      Py_VISIT(a.constant.ptr());
    }
    return 0;
  }

  // Drops every reference; a cleared guard matches nothing.
  void clear() {
    dicts_.clear();
    attributes_.clear();
    places_.clear();
    args_.clear();
    kwargs_.clear();
    world_ = {-1, -1};
  }

 private:
  static bool clear_error_false() {
    PyErr_Clear();
    return false;
  }

  struct WatchedDict {
    py::dict dict;
    Py_ssize_t size;
  };
  struct Attribute {
    py::object table;  // a dict, or another mapping (a class's mappingproxy)
    py::object name, value;
    bool by_type;      // only the value's type (a tensor kept where None may be put back)
  };
  struct Place {
    py::object table;  // a dict, or another mapping (a closure's variables)
    py::object name, tensor;           // the tensor, or None
    std::optional<TensorMeta> meta;    // the tensor's metadata when it is one
    bool by_meta;                      // any tensor of that metadata (a captured tensor), not this one
    py::object index;                  // the item (a position, a key) of the tuple, list or dict at the
                                       // place (a captured tensor, a module kept in a list), or None
  };
  std::vector<WatchedDict> dicts_;
  std::vector<Attribute> attributes_;
  std::vector<Place> places_;
  std::vector<Argument> args_;
  std::vector<std::pair<py::object, Argument>> kwargs_;
  std::pair<int, int> world_;
  caffe2::TypeMeta default_dtype_;  // factories without a dtype (torch.zeros(4)) made the trace's
  // torch.backends' switches: cuDNN's, mkldnn's and the TF32 ones
  static int backend_settings() {
    const auto& c = at::globalContext();
    return c.userEnabledCuDNN() | c.benchmarkCuDNN() << 1 | c.deterministicCuDNN() << 2 | c.userEnabledMkldnn() << 3 |
           c.allowTF32CuBLAS() << 4 | c.allowTF32CuDNN() << 5;
  }
  bool grad_mode_, inference_mode_, deterministic_;  // a forward may branch on them
  int threads_, backends_;                            // (so may it on these)
};

}  // namespace

void bind_call_guard(py::module_& m) {
  py::class_<CallGuard>(m, "CallGuard", py::custom_type_setup([](PyHeapTypeObject* heap_type) {
    auto* type = &heap_type->ht_type;
    type->tp_flags |= Py_TPFLAGS_HAVE_GC;
    type->tp_traverse = [](PyObject* self, visitproc visit, void* arg) {
#if PY_VERSION_HEX >= 0x03090000
      Py_VISIT(Py_TYPE(self));
#endif
      auto v_h = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder();
      return v_h.holder_constructed() ? v_h.value_ptr<CallGuard>()->traverse(visit, arg) : 0;
    };
    type->tp_clear = [](PyObject* self) {
      auto v_h = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder();
      if (v_h.holder_constructed()) v_h.value_ptr<CallGuard>()->clear();
      return 0;
    };
  }), "Whether a call may reuse the cache entry of the call it was made for (jit.py's steady path).")
      .def(py::init<const py::list&, const py::list&, const py::list&, const py::tuple&, const py::dict&>(),
           py::arg("dicts"), py::arg("attributes"), py::arg("places"), py::arg("args"), py::arg("kwargs"))
      .def("matches", &CallGuard::matches, py::arg("args"), py::arg("kwargs"),
           "whether these arguments, the module and the calling thread's rank are as recorded");
}

}  // namespace tv::py_bindings
