// CallGuard: whether a jitted module's call may reuse the cache entry of the call the guard was made
// for, without reading the module again (jit.py's steady path). One pass in C++ over what that
// call's key was made of, instead of rebuilding the key in Python on every call.
// Contract:
//  - CallGuard(dicts, attributes, places, inputs) records: the size of each dict (a module's
//    __dict__, _parameters, _buffers, _modules: an attribute, parameter, buffer or submodule gained
//    or lost changes one), each (dict, name) -> value of the scalar attributes the key read, each
//    (table, name) -> tensor (or None) of the parameter and buffer places with the tensor's metadata
//    (shape, dtype, device, requires_grad), the inputs' metadata and the calling thread's
//    (rank, world size).
//  - matches(args) is true only when `args` are tensors with the recorded inputs' metadata and all
//    of the above is as recorded (the same tensor object in every place, with the same metadata; the
//    same type and an equal value for every attribute); anything else, and any error while reading,
//    is false, and the caller takes its slow path, which decides as it always did.
//  - The guard owns what it watches and tells Python's collector so (tp_traverse, tp_clear): a
//    module that refers to its jitted module does not leak through it.
#include <torch/csrc/autograd/python_variable.h>

#include <pybind11/pybind11.h>

#include <optional>
#include <utility>
#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace tv::py_bindings {
namespace {

struct TensorMeta {
  std::vector<int64_t> sizes;
  at::ScalarType dtype = at::ScalarType::Undefined;
  at::Device device = at::kCPU;
  bool requires_grad = false;

  static TensorMeta of(const at::Tensor& t) {
    return {t.sizes().vec(), t.scalar_type(), t.device(), t.requires_grad()};
  }
  bool same(const at::Tensor& t) const {
    return t.scalar_type() == dtype && t.device() == device && t.requires_grad() == requires_grad && t.sizes().equals(sizes);
  }
};

// The metadata of `object` when it is a tensor.
std::optional<TensorMeta> meta_of(PyObject* object) {
  if (!THPVariable_Check(object)) return std::nullopt;
  return TensorMeta::of(THPVariable_Unpack(object));
}

bool same_tensor_meta(PyObject* object, const TensorMeta& meta) {
  return THPVariable_Check(object) && meta.same(THPVariable_Unpack(object));
}

class CallGuard {
 public:
  CallGuard(const py::list& dicts, const py::list& attributes, const py::list& places, const py::tuple& inputs)
      : world_(current_world()) {
    for (const auto& d : dicts) dicts_.push_back({py::reinterpret_borrow<py::dict>(d), PyDict_Size(d.ptr())});
    for (const auto& a : attributes) {
      auto t = a.cast<py::tuple>();
      attributes_.push_back({t[0].cast<py::dict>(), t[1], t[2]});
    }
    for (const auto& p : places) {
      auto t = p.cast<py::tuple>();
      places_.push_back({t[0].cast<py::dict>(), t[1], t[2], meta_of(t[2].ptr())});
    }
    for (const auto& i : inputs) {
      auto meta = meta_of(i.ptr());
      if (!meta) throw py::type_error("CallGuard: the inputs are tensors");
      inputs_.push_back(std::move(*meta));
    }
  }

  bool matches(const py::tuple& args) const {
    if (args.size() != inputs_.size() || current_world() != world_) return false;
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!same_tensor_meta(PyTuple_GET_ITEM(args.ptr(), i), inputs_[i])) return false;
    for (const auto& [dict, size] : dicts_)
      if (PyDict_Size(dict.ptr()) != size) return false;
    for (const auto& a : attributes_) {
      PyObject* now = PyDict_GetItemWithError(a.dict.ptr(), a.name.ptr());  // borrowed
      if (now == nullptr || Py_TYPE(now) != Py_TYPE(a.value.ptr())) return clear_error_false();
      int equal = PyObject_RichCompareBool(now, a.value.ptr(), Py_EQ);
      if (equal != 1) return clear_error_false();
    }
    for (const auto& p : places_) {
      PyObject* now = PyDict_GetItemWithError(p.table.ptr(), p.name.ptr());  // borrowed
      if (now != p.tensor.ptr()) return clear_error_false();
      if (p.meta && !p.meta->same(THPVariable_Unpack(now))) return false;
    }
    return true;
  }

  int traverse(visitproc visit, void* arg) const {
    for (const auto& d : dicts_) Py_VISIT(d.dict.ptr());
    for (const auto& a : attributes_) {
      Py_VISIT(a.dict.ptr());
      Py_VISIT(a.value.ptr());
    }
    for (const auto& p : places_) {
      Py_VISIT(p.table.ptr());
      Py_VISIT(p.tensor.ptr());
    }
    return 0;
  }

  // Drops every reference; a cleared guard matches nothing.
  void clear() {
    dicts_.clear();
    attributes_.clear();
    places_.clear();
    inputs_.clear();
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
    py::dict dict;
    py::object name, value;
  };
  struct Place {
    py::dict table;
    py::object name, tensor;           // the tensor, or None
    std::optional<TensorMeta> meta;    // the tensor's metadata when it is one
  };
  std::vector<WatchedDict> dicts_;
  std::vector<Attribute> attributes_;
  std::vector<Place> places_;
  std::vector<TensorMeta> inputs_;
  std::pair<int, int> world_;
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
      .def(py::init<const py::list&, const py::list&, const py::list&, const py::tuple&>(),
           py::arg("dicts"), py::arg("attributes"), py::arg("places"), py::arg("inputs"))
      .def("matches", &CallGuard::matches, py::arg("args"),
           "whether these positional tensor arguments, the module and the calling thread's rank are as recorded");
}

}  // namespace tv::py_bindings
