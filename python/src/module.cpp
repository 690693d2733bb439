// tandem._C: the module entry point, dtypes, Python number conversion and the mapping of
// tandem::Error subclasses onto Python exceptions.
#include <array>
#include <string>

#include "common.h"

namespace tandem::python {

namespace {
// One Python object per dtype, created at import and kept for the life of the process
// (intentionally leaked: they must outlive every tensor that reports them).
std::array<PyObject*, kNumDTypes> g_dtype_objects{};
}  // namespace

// numpy's scalar types (np.float32(1), np.int64(2), np.bool_(True)), checked through the
// Python API so this file needs no numpy C headers.
bool is_numpy_scalar(py::handle h) {
  static PyObject* number = py::object(py::module_::import("numpy").attr("number")).release().ptr();
  static PyObject* bool_ = py::object(py::module_::import("numpy").attr("bool_")).release().ptr();
  return PyObject_IsInstance(h.ptr(), number) == 1 || PyObject_IsInstance(h.ptr(), bool_) == 1;
}

py::object dtype_object(DType t) {
  return py::reinterpret_borrow<py::object>(g_dtype_objects[static_cast<size_t>(t)]);
}

bool is_python_number(py::handle h) {
  if (PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr())) return true;
  // numpy scalars (np.float32(1), np.int64(2), np.bool_(True)) but not 0-d arrays.
  return is_numpy_scalar(h);
}

Scalar to_scalar(py::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) throw ValueError("[tandem] integer " + py::str(h).cast<std::string>() + " does not fit in int64");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  if (is_numpy_scalar(h)) {
    const std::string kind = h.attr("dtype").attr("kind").cast<std::string>();
    if (kind == "b") return Scalar(h.cast<bool>());
    if (kind == "i" || kind == "u") return Scalar(h.attr("item")().cast<int64_t>());
    if (kind == "f") return Scalar(h.attr("item")().cast<double>());
  }
  throw TypeError("[tandem] expected a number (bool, int or float), got " +
                  py::str(py::type::of(h).attr("__name__")).cast<std::string>());
}

Tensor to_tensor_arg(py::handle h, const char* what) {
  if (const Tensor* t = tensor_ptr(h.ptr())) return *t;
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (is_python_number(h)) return wrap_scalar(to_scalar(h));
  throw TypeError(str_cat("[tandem] argument '", what, "' must be a Tensor or a number, got ",
                          py::str(py::type::of(h).attr("__name__")).cast<std::string>()));
}

std::shared_ptr<py::object> shared_py(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    if (!Py_IsInitialized()) {
      p->release();  // the interpreter is gone: nothing left to decrement
    } else {
      py::gil_scoped_acquire gil;
      p->dec_ref();
      p->release();
    }
    delete p;
  });
}

py::object tensor_or_none(const Tensor& t) {
  if (!t.defined()) return py::none();
  return wrap_tensor(t);
}

void bind_dtypes_and_errors(py::module_& m) {
  py::class_<DType> dt(m, "dtype", "A tensor element type (tandem.float32, tandem.int64, ...), as torch.dtype.");
  dt.def("__repr__", [](DType t) { return "tandem." + std::string(dtype_name(t)); })
      .def("__str__", [](DType t) { return "tandem." + std::string(dtype_name(t)); })
      .def("__eq__", [](DType a, py::object b) { return py::isinstance<DType>(b) && a == b.cast<DType>(); })
      .def("__hash__", [](DType t) { return static_cast<int64_t>(t); })
      .def("__reduce__", [](DType t) { return py::make_tuple(py::module_::import("tandem").attr("_dtype_from_name"), py::make_tuple(std::string(dtype_name(t)))); })
      .def_property_readonly("is_floating_point", [](DType t) { return is_floating_point(t); },
                             "True for float16, bfloat16, float32 and float64.")
      .def_property_readonly("is_signed", [](DType t) { return is_signed(t); }, "False for bool and uint8.")
      .def_property_readonly("itemsize", [](DType t) { return element_size(t); }, "Bytes per element.")
      .def_property_readonly("name", [](DType t) { return std::string(dtype_name(t)); },
                             "The name without the module: 'float32'.");
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    py::object o = py::cast(t);
    g_dtype_objects[static_cast<size_t>(i)] = o.release().ptr();
    m.attr(std::string(dtype_name(t)).c_str()) = dtype_object(t);
  }
  m.def("dtype_from_name", [](const std::string& n) -> py::object {
    auto t = dtype_from_name(n);
    if (!t) return py::none();
    return dtype_object(*t);
  }, py::arg("name"), "The dtype called `name` ('float32', 'int64', ...), or None.");
  m.def("get_default_dtype", [] { return dtype_object(default_float_dtype()); },
        "The floating dtype Python floats become (float32 unless changed).");
  m.def("set_default_dtype", [](DType t) {
    if (!is_floating_point(t)) throw TypeError("[set_default_dtype] expected a floating dtype, got " + std::string(dtype_name(t)));
    set_default_float_dtype(t);
  }, py::arg("d"), "Sets the dtype Python floats become. TypeError for a non-floating dtype.");

  // Exception classes: tandem.Error is the common base; each subclass also derives from
  // the Python built-in a PyTorch user would catch.
  py::object builtins = py::module_::import("builtins");
  auto make = [&](const char* name, py::object bases) {
    PyObject* cls = PyErr_NewException((std::string("tandem.") + name).c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    py::object o = py::reinterpret_steal<py::object>(cls);
    m.attr(name) = o;
    return o;
  };
  py::object base = make("Error", builtins.attr("Exception"));
  // Leaked on purpose (the translator below may run during interpreter shutdown).
  static PyObject* e_type = make("TypeError", py::make_tuple(base, builtins.attr("TypeError"))).release().ptr();
  static PyObject* e_value = make("ValueError", py::make_tuple(base, builtins.attr("ValueError"))).release().ptr();
  static PyObject* e_shape = make("ShapeError", py::make_tuple(base, builtins.attr("RuntimeError"))).release().ptr();
  static PyObject* e_index = make("IndexError", py::make_tuple(base, builtins.attr("IndexError"))).release().ptr();
  static PyObject* e_notimpl =
      make("NotImplementedError", py::make_tuple(base, builtins.attr("NotImplementedError"))).release().ptr();
  static PyObject* e_runtime = make("RuntimeError", py::make_tuple(base, builtins.attr("RuntimeError"))).release().ptr();
  // torch.OutOfMemoryError is a RuntimeError too (and Python's MemoryError is not raised
  // for a budget the caller chose).
  static PyObject* e_oom = make("OutOfMemoryError", py::make_tuple(py::handle(e_runtime))).release().ptr();
  static PyObject* e_base = base.release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tandem::TypeError& e) {
      PyErr_SetString(e_type, e.what());
    } catch (const tandem::ValueError& e) {
      PyErr_SetString(e_value, e.what());
    } catch (const tandem::ShapeError& e) {
      PyErr_SetString(e_shape, e.what());
    } catch (const tandem::IndexError& e) {
      PyErr_SetString(e_index, e.what());
    } catch (const tandem::NotImplementedError& e) {
      PyErr_SetString(e_notimpl, e.what());
    } catch (const tandem::OutOfMemoryError& e) {
      PyErr_SetString(e_oom, e.what());
    } catch (const tandem::RuntimeError& e) {
      PyErr_SetString(e_runtime, e.what());
    } catch (const tandem::Error& e) {
      PyErr_SetString(e_base, e.what());
    }
  });
}

}  // namespace tandem::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "tandem's C++ core (internal; use the tandem package).";
  tandem::python::bind_dtypes_and_errors(m);
  auto tensor_class = tandem::python::bind_tensor(m);
  tandem::python::bind_ops(m);
  tandem::python::bind_autograd(m, tensor_class);
  tandem::python::bind_optim(m);
  tandem::python::bind_optim_jit(m);
  tandem::python::bind_function(m);
  tandem::python::bind_data(m);
  tandem::python::bind_dlpack(m, tensor_class);
  tandem::python::bind_nn(m, tensor_class);
  tandem::python::bind_io(m);
  tandem::python::bind_modules(m);
  tandem::python::install_operator_slots();
}
