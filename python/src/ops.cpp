// The op registry seen from Python: tandem._C.Op calls any registered op by its schema
// (tensor inputs, then attributes by position or name, converted by the kind of each
// attribute's default), and the autograd entry points.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

std::string type_name(py::handle h) { return py::str(py::type::of(h).attr("__name__")).cast<std::string>(); }

// The kind of attribute a Python value was converted to, for the retry below.
enum class Kind { Natural, Scalar, IntList, Double };

// Learnt kinds for attributes whose default is None (the schema does not say what they
// hold): (op id, attribute index) -> the kind the op accepted. Guarded by the GIL.
std::map<std::pair<int, size_t>, Kind>& learnt_kinds() {
  static std::map<std::pair<int, size_t>, Kind> m;
  return m;
}

std::vector<int64_t> to_int_list(py::handle h, const OpDef& op, const AttrSpec& spec) {
  std::vector<int64_t> out;
  if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    out.push_back(py::reinterpret_borrow<py::object>(h).attr("__index__")().cast<int64_t>());
    return out;
  }
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr())) {
    throw TypeError(str_cat("[", op.name, "] argument '", spec.name, "' must be an int or a sequence of ints, got ",
                            type_name(h)));
  }
  for (py::handle e : py::reinterpret_borrow<py::sequence>(h)) {
    if (!PyIndex_Check(e.ptr()) || PyBool_Check(e.ptr())) {
      throw TypeError(str_cat("[", op.name, "] argument '", spec.name, "' must be a sequence of ints, got an element of type ",
                              type_name(e)));
    }
    out.push_back(py::reinterpret_borrow<py::object>(e).attr("__index__")().cast<int64_t>());
  }
  return out;
}

// A Python value as the attribute `spec` of `op`. The default's alternative says the
// kind; a None default takes the value's natural kind, or `hint` once learnt.
AttrValue to_attr(py::handle h, const OpDef& op, const AttrSpec& spec, Kind hint) {
  // None means "the default", as for PyTorch's optional arguments (stride=None).
  if (h.is_none()) return spec.default_value;
  auto wrong = [&](const char* expected) {
    return TypeError(str_cat("[", op.name, "] argument '", spec.name, "' must be ", expected, ", got ", type_name(h)));
  };
  const bool is_bool = PyBool_Check(h.ptr());
  const bool is_int = !is_bool && PyIndex_Check(h.ptr()) && !py::isinstance<Tensor>(h);
  const bool is_float = PyFloat_Check(h.ptr());
  switch (spec.default_value.index()) {
    case 1:  // bool
      if (!is_bool) throw wrong("a bool");
      return h.ptr() == Py_True;
    case 2:  // int64
      if (!is_int) throw wrong("an int");
      return py::reinterpret_borrow<py::object>(h).attr("__index__")().cast<int64_t>();
    case 3:  // double
      if (!is_float && !is_int) throw wrong("a float");
      return py::reinterpret_borrow<py::object>(h).cast<double>();
    case 4:  // Scalar
      if (!is_python_number(h)) throw wrong("a number");
      return to_scalar(h);
    case 5:  // int list
      return to_int_list(h, op, spec);
    case 6:  // string
      if (!PyUnicode_Check(h.ptr())) throw wrong("a str");
      return h.cast<std::string>();
    case 7:  // DType
      if (!py::isinstance<DType>(h)) throw wrong("a tandem.dtype");
      return h.cast<DType>();
    default:
      break;
  }
  // Default None: the value decides, unless a retry taught us the op wants another kind.
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (PyUnicode_Check(h.ptr())) return h.cast<std::string>();
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) return to_int_list(h, op, spec);
  if (is_bool || is_int || is_float || is_python_number(h)) {
    switch (hint) {
      case Kind::Scalar: return to_scalar(h);
      case Kind::IntList: if (is_int) return to_int_list(h, op, spec); break;
      case Kind::Double: if (is_int || is_float) return py::reinterpret_borrow<py::object>(h).cast<double>(); break;
      case Kind::Natural: break;
    }
    if (is_bool) return h.ptr() == Py_True;
    if (is_int) return py::reinterpret_borrow<py::object>(h).attr("__index__")().cast<int64_t>();
    if (is_float) return py::reinterpret_borrow<py::object>(h).cast<double>();
    return to_scalar(h);
  }
  throw wrong("None, a number, a sequence of ints, a str or a tandem.dtype");
}

// The attribute index k in "[op] attribute #k has the wrong kind" (AttrReader's message
// when the value's kind is not the one the op reads), or -1.
int64_t wrong_kind_index(const std::string& msg) {
  const std::string key = "attribute #";
  auto p = msg.find(key);
  if (p == std::string::npos || msg.find("has the wrong kind", p) == std::string::npos) return -1;
  return std::strtoll(msg.c_str() + p + key.size(), nullptr, 10);
}

/// A registered op callable from Python: op(*inputs, *attrs, **by_name).
struct PyOp {
  const OpDef* def;

  py::object call(py::args args, py::kwargs kwargs) const {
    const OpDef& op = *def;
    const size_t n_in = op.inputs.size();
    size_t pos = 0;
    const size_t n_args = args.size();
    std::vector<Tensor> inputs;
    // Keyword arguments are read, never removed: the dict may be the caller's own
    // (op(**d) can pass it through); `used` counts them to find unexpected names.
    size_t used = 0;
    const bool no_kwargs = PyDict_GET_SIZE(kwargs.ptr()) == 0;
    auto take = [&](const std::string& name, const char* alias) -> py::object {
      if (pos < n_args) return args[pos++];
      if (no_kwargs) return py::object();
      if (PyObject* v = PyDict_GetItemString(kwargs.ptr(), name.c_str())) {
        ++used;
        return py::reinterpret_borrow<py::object>(v);
      }
      if (alias != nullptr) {
        if (PyObject* v = PyDict_GetItemString(kwargs.ptr(), alias)) {
          ++used;
          return py::reinterpret_borrow<py::object>(v);
        }
      }
      return py::object();  // absent
    };
    for (size_t i = 0; i < n_in; ++i) {
      const InputSpec& in = op.inputs[i];
      py::object v = take(in.name, i == 0 && in.name == "self" ? "input" : nullptr);
      if (op.variadic && i + 1 == n_in) {
        if (!v) throw TypeError(str_cat("[", op.name, "] missing the sequence of tensors '", in.name, "'"));
        if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) {
          throw TypeError(str_cat("[", op.name, "] argument '", in.name, "' must be a list or tuple of tensors, got ",
                                  type_name(v)));
        }
        for (py::handle e : py::reinterpret_borrow<py::sequence>(v)) inputs.push_back(to_tensor_arg(e, in.name.c_str()));
        continue;
      }
      if (!v || v.is_none()) {
        if (!in.optional) throw TypeError(str_cat("[", op.name, "] missing the tensor argument '", in.name, "'"));
        inputs.emplace_back();
        continue;
      }
      inputs.push_back(to_tensor_arg(v, in.name.c_str()));
    }
    std::vector<py::object> given(op.attrs.size());
    for (size_t k = 0; k < op.attrs.size(); ++k) given[k] = take(op.attrs[k].name, nullptr);
    if (pos < n_args) {
      throw TypeError(str_cat("[", op.name, "] takes at most ", n_in + op.attrs.size(), " arguments (", n_args, " given)"));
    }
    if (used != kwargs.size()) {
      for (auto item : kwargs) {
        const std::string key = py::str(item.first).cast<std::string>();
        bool known = !op.inputs.empty() && op.inputs[0].name == "self" && key == "input";
        for (const auto& in : op.inputs) known = known || in.name == key;
        for (const auto& a : op.attrs) known = known || a.name == key;
        if (!known) throw TypeError(str_cat("[", op.name, "] got an unexpected keyword argument '", key, "'"));
      }
      // Every name is known but one was also given by position (or twice via its alias).
      throw TypeError(str_cat("[", op.name, "] got multiple values for an argument"));
    }
    // Attributes whose default is None may hold different kinds; when the op rejects the
    // natural one, try the next candidate and remember what worked for this op.
    std::vector<Kind> kinds(op.attrs.size(), Kind::Natural);
    for (size_t k = 0; k < op.attrs.size(); ++k) {
      if (op.attrs[k].default_value.index() != 0) continue;  // only None defaults learn a kind
      auto it = learnt_kinds().find({op.id, k});
      if (it != learnt_kinds().end()) kinds[k] = it->second;
    }
    for (int attempt = 0;; ++attempt) {
      Attrs attrs;
      for (size_t k = 0; k < op.attrs.size(); ++k) {
        attrs.push_back(given[k] ? to_attr(given[k], op, op.attrs[k], kinds[k]) : op.attrs[k].default_value);
      }
      try {
        OpOutputs out;
        {
          py::gil_scoped_release nogil;
          out = dispatch(op, inputs, attrs);
        }
        for (size_t k = 0; k < op.attrs.size(); ++k) {
          if (kinds[k] != Kind::Natural) learnt_kinds()[{op.id, k}] = kinds[k];
        }
        if (op.num_outputs == 1 && out.size() == 1) return wrap_tensor(std::move(out[0]));
        py::tuple res(out.size());
        for (size_t i = 0; i < out.size(); ++i) res[i] = tensor_or_none(out[i]);
        return res;
      } catch (const tandem::TypeError& e) {
        const int64_t k = wrong_kind_index(e.what());
        if (k < 0 || static_cast<size_t>(k) >= op.attrs.size() || !given[k] || attempt > 3 ||
            op.attrs[k].default_value.index() != 0) {
          throw;
        }
        const Kind next = kinds[k] == Kind::Natural ? Kind::Scalar
                          : kinds[k] == Kind::Scalar ? Kind::IntList
                          : kinds[k] == Kind::IntList ? Kind::Double
                                                      : Kind::Natural;
        if (next == Kind::Natural) throw;
        kinds[k] = next;
      }
    }
  }
};

py::object attr_to_py(const AttrValue& v) {
  return std::visit([](const auto& x) -> py::object {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, std::monostate>) return py::none();
    else if constexpr (std::is_same_v<T, Scalar>) {
      if (x.is_bool()) return py::bool_(x.to_bool());
      if (x.is_integral()) return py::int_(x.to_int());
      return py::float_(x.to_double());
    } else if constexpr (std::is_same_v<T, DType>) return dtype_object(x);
    else return py::cast(x);
  }, v);
}

const char* attr_kind_name(const AttrValue& v) {
  switch (v.index()) {
    case 1: return "bool";
    case 2: return "int";
    case 3: return "float";
    case 4: return "number";
    case 5: return "list[int]";
    case 6: return "str";
    case 7: return "dtype";
    default: return "any";
  }
}

}  // namespace

void bind_ops(py::module_& m) {
  py::class_<PyOp>(m, "Op", "A registered op (tandem's op registry), callable with the op's schema.")
      .def("__call__", &PyOp::call,
           "op(*inputs, *attributes, **by_name): tensor inputs (numbers are wrapped), then attributes; "
           "returns a Tensor or a tuple. TypeError for missing, unknown or ill-typed arguments.")
      .def_property_readonly("name", [](const PyOp& o) { return o.def->name; }, "The registry name.")
      .def_property_readonly("inputs", [](const PyOp& o) {
        py::list l;
        for (const auto& in : o.def->inputs) l.append(py::make_tuple(in.name, in.optional));
        return l;
      }, "[(name, optional)] of the tensor inputs.")
      .def_property_readonly("attrs", [](const PyOp& o) {
        py::list l;
        for (const auto& a : o.def->attrs) l.append(py::make_tuple(a.name, attr_to_py(a.default_value), attr_kind_name(a.default_value)));
        return l;
      }, "[(name, default, kind)] of the attributes.")
      .def_property_readonly("variadic", [](const PyOp& o) { return o.def->variadic; },
                             "The last input takes a sequence of tensors (cat, stack).")
      .def_property_readonly("num_outputs", [](const PyOp& o) { return o.def->num_outputs; }, "Tensors it returns.")
      .def_property_readonly("is_inplace", [](const PyOp& o) { return o.def->is_inplace; },
                             "True for a '<name>_' variant writing into its first input.")
      .def_property_readonly("random", [](const PyOp& o) { return o.def->random; },
                             "True when it draws from the default generator.")
      .def("__repr__", [](const PyOp& o) { return "<tandem op " + o.def->name + ">"; });
  m.def("get_op", [](const std::string& name) { return PyOp{&get_op(name)}; }, py::arg("name"),
        "The registered op `name` (ValueError when there is none).");
  m.def("all_ops", [] {
    std::vector<PyOp> out;
    for (const OpDef* d : all_ops()) out.push_back(PyOp{d});
    return out;
  }, "Every registered op, in registration order.");
}

void bind_autograd(py::module_& m, py::class_<Tensor>& cls) {
  m.def("is_grad_enabled", &is_grad_enabled, "True while operations are recorded for autograd.");
  m.def("set_grad_enabled", &set_grad_enabled, py::arg("mode"), "Turns autograd recording on or off (this thread).");
  m.def("is_inference_mode", &is_inference_mode);
  m.def("set_inference_mode", &set_inference_mode, py::arg("mode"));
  // Autocast (tandem/dispatch/autocast.h): the guard lives in an object that tandem.autocast
  // enters and exits (LIFO, on one thread, as a `with` block does).
  struct PyAutocast {
    DType dtype;
    bool enabled, cache_enabled;
    std::unique_ptr<AutocastGuard> guard;
  };
  py::class_<PyAutocast>(m, "_AutocastGuard", "An AutocastGuard that tandem.autocast enters and exits.")
      .def(py::init([](DType dtype, bool enabled, bool cache_enabled) {
             return new PyAutocast{dtype, enabled, cache_enabled, nullptr};
           }),
           py::arg("dtype"), py::arg("enabled"), py::arg("cache_enabled"),
           "Holds the settings; nothing changes until enter().")
      .def("enter", [](PyAutocast& a) {
        if (a.guard) throw RuntimeError("[autocast] this autocast object is already active");
        a.guard = std::make_unique<AutocastGuard>(a.dtype, a.enabled, a.cache_enabled);
      }, "Switches autocast as configured (ValueError for a dtype other than bfloat16/float16).")
      .def("exit", [](PyAutocast& a) { a.guard.reset(); }, "Restores the autocast state enter() found.");
  m.def("is_autocast_enabled", &is_autocast_enabled, "True while autocast is on (this thread).");
  m.def("get_autocast_dtype", &autocast_dtype, "The lower-precision dtype autocast casts to.");
  cls.def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& x, bool r) { x.requires_grad_(r); },
                    "Whether autograd records ops on this tensor (settable on leaves; floating dtypes only).")
      .def("requires_grad_", [](py::handle self, bool r) {
        self.cast<Tensor&>().requires_grad_(r);
        return py::reinterpret_borrow<py::object>(self);
      }, py::arg("requires_grad") = true, "Sets requires_grad in place and returns self.")
      .def_property("grad", [](const Tensor& x) { return tensor_or_none(x.grad()); },
                    [](const Tensor& x, py::object g) { x.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); },
                    "The accumulated gradient (None until a backward reaches this leaf).")
      .def_property_readonly("is_leaf", &Tensor::is_leaf, "True when no recorded op produced this tensor.")
      .def_property_readonly("grad_fn", [](const Tensor& x) -> py::object {
        auto n = x.grad_fn();
        if (!n) return py::none();
        return py::str(n->name());
      }, "The name of the backward node that produced this tensor, or None (a leaf).")
      .def("backward", [](const Tensor& x, py::object gradient, std::optional<bool> retain_graph, bool create_graph) {
        Tensor g = gradient.is_none() ? Tensor() : to_tensor_arg(gradient, "gradient");
        py::gil_scoped_release nogil;
        x.backward(g, retain_graph, create_graph);
      }, py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
           R"doc(Accumulates d(self)/d(leaf) into every leaf's .grad.

`gradient` (same shape as self) is required unless self has one element. RuntimeError
when self does not require grad or its graph was freed by an earlier backward.)doc")
      .def("retain_grad", &Tensor::retain_grad, "Keeps .grad on this non-leaf after backward.")
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def("detach", &Tensor::detach, "The same data without history (shares memory, requires_grad False).")
      .def("detach_", [](py::handle self) {
        self.cast<Tensor&>().detach_();
        return py::reinterpret_borrow<py::object>(self);
      }, "Detaches in place and returns self.");
  py::class_<autograd::RemovableHandle>(m, "RemovableHandle", "Removes the hook it was returned for.")
      .def("remove", &autograd::RemovableHandle::remove, "Unregisters the hook (idempotent).");
  cls.def("register_hook", [](const Tensor& x, py::function fn) {
    // The hook runs inside backward, which runs without the GIL; the callable is dropped
    // with the graph, on whichever thread frees it.
    auto holder = shared_py(std::move(fn));
    return autograd::register_hook(x, [holder](const Tensor& grad) -> Tensor {
      py::gil_scoped_acquire gil;
      py::object r = (*holder)(grad);
      if (r.is_none()) return Tensor();
      if (!py::isinstance<Tensor>(r)) {
        throw TypeError("[register_hook] a hook must return None or a Tensor, got " +
                        py::str(py::type::of(r).attr("__name__")).cast<std::string>());
      }
      return r.cast<Tensor>();
    });
  }, py::arg("hook"), R"doc(Calls hook(grad) when this tensor's gradient is computed in a backward; a
Tensor it returns replaces the gradient (None keeps it). Returns a handle whose remove()
unregisters it. RuntimeError when the tensor does not require grad. An exception the
hook raises propagates out of backward().)doc");
  m.def("_autograd_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                             py::object grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                             bool allow_unused) {
    std::vector<Tensor> gos;
    if (!grad_outputs.is_none()) {
      for (py::handle g : py::reinterpret_borrow<py::sequence>(grad_outputs)) {
        gos.push_back(g.is_none() ? Tensor() : to_tensor_arg(g, "grad_outputs"));
      }
    }
    std::vector<Tensor> res;
    {
      py::gil_scoped_release nogil;
      res = autograd::grad(outputs, inputs, gos, retain_graph, create_graph, allow_unused);
    }
    py::tuple out(res.size());
    for (size_t i = 0; i < res.size(); ++i) out[i] = tensor_or_none(res[i]);
    return out;
  });
  m.def("_autograd_backward", [](const std::vector<Tensor>& outputs, py::object grad_outputs,
                                 std::optional<bool> retain_graph, bool create_graph) {
    std::vector<Tensor> gos;
    if (!grad_outputs.is_none()) {
      for (py::handle g : py::reinterpret_borrow<py::sequence>(grad_outputs)) {
        gos.push_back(g.is_none() ? Tensor() : to_tensor_arg(g, "grad_tensors"));
      }
    }
    py::gil_scoped_release nogil;
    autograd::backward(outputs, gos, retain_graph, create_graph);
  });
}

}  // namespace tandem::python
