// tandem._C.CompiledFunction: jit::compile over a Python function of tensors (the
// optimizers it used to hold are in optim.cpp).
#include <memory>
#include <string>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

// The Python exception class GraphBreak maps to (set at import).
PyObject* g_graph_break = nullptr;

// A Python function as a jit TensorFn. The compiled function calls it (with the GIL
// released around the call) to capture: take the GIL, call, convert the result.
struct PyTensorFn {
  std::shared_ptr<py::object> fn;      // owned under the GIL (see the deleter below)
  std::shared_ptr<int> returns_single;  // -1 unknown, 1 a Tensor, 0 a tuple/list

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const {
    py::gil_scoped_acquire gil;
    py::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    py::object r;
    try {
      r = (*fn)(*args);
    } catch (py::error_already_set& e) {
      // A data read inside the function (x.item()) breaks the graph: give capture back its
      // own exception so it falls back to eager instead of failing the call.
      if (g_graph_break != nullptr && e.matches(g_graph_break)) {
        std::string msg = py::str(e.value()).cast<std::string>();
        const std::string prefix = "[compile] graph break: ";
        if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
        throw GraphBreak(msg);
      }
      throw;
    }
    std::vector<Tensor> out;
    if (py::isinstance<Tensor>(r)) {
      *returns_single = 1;
      out.push_back(r.cast<Tensor>());
      return out;
    }
    if (!PyTuple_Check(r.ptr()) && !PyList_Check(r.ptr())) {
      throw TypeError("[compile] the function must return a Tensor or a tuple/list of Tensors, got " +
                      py::str(py::type::of(r).attr("__name__")).cast<std::string>());
    }
    *returns_single = 0;
    for (py::handle e : py::reinterpret_borrow<py::sequence>(r)) {
      if (!py::isinstance<Tensor>(e)) throw TypeError("[compile] the function returned a sequence with a non-Tensor");
      out.push_back(e.cast<Tensor>());
    }
    return out;
  }
};

struct PyCompiled {
  std::shared_ptr<jit::CompiledFunction> compiled;
  std::shared_ptr<int> returns_single;

  py::object call(py::args args) {
    std::vector<Tensor> inputs;
    for (py::handle a : args) inputs.push_back(to_tensor_arg(a, "input"));
    std::vector<Tensor> out;
    {
      py::gil_scoped_release nogil;
      out = (*compiled)(inputs);
    }
    if (*returns_single == 1 && out.size() == 1) return py::cast(out[0]);
    py::tuple t(out.size());
    for (size_t i = 0; i < out.size(); ++i) t[i] = py::cast(out[i]);
    return t;
  }
};

}  // namespace

void bind_optim_jit(py::module_& m) {
  py::object graph_break = py::reinterpret_steal<py::object>(
      PyErr_NewException("tandem.GraphBreak", py::make_tuple(m.attr("Error"), py::module_::import("builtins").attr("RuntimeError")).ptr(), nullptr));
  m.attr("GraphBreak") = graph_break;
  g_graph_break = graph_break.release().ptr();  // kept for the life of the process
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const GraphBreak& e) {
      PyErr_SetString(g_graph_break, e.what());
    }
  });

  py::class_<PyCompiled>(m, "CompiledFunction", "A Python function of tensors compiled by tandem.compile.")
      .def("__call__", &PyCompiled::call, "Runs the function on tensors (numbers become 0-d tensors).")
      .def_property_readonly("num_programs", [](const PyCompiled& c) { return c.compiled->num_programs(); },
                             "Programs in the cache (one per input signature).")
      .def_property_readonly("compiled_calls", [](const PyCompiled& c) { return c.compiled->compiled_calls(); },
                             "Calls that ran a compiled program.")
      .def_property_readonly("eager_calls", [](const PyCompiled& c) { return c.compiled->eager_calls(); },
                             "Calls that ran eagerly (graph breaks, fallbacks).")
      .def_property_readonly("captures", [](const PyCompiled& c) { return c.compiled->captures(); },
                             "Times the Python function was run to capture a program.")
      .def_property_readonly("warnings", [](const PyCompiled& c) { return c.compiled->warnings(); },
                             "One-time notices issued so far (graph breaks, recompile limit).")
      .def_property_readonly("retries", [](const PyCompiled& c) { return c.compiled->retries(); },
                             "Captures dropped so that the next call captures again (an optimizer creating its "
                             "state on its first step inside the function); each ran eagerly.")
      .def_property_readonly("recompile_reasons", [](const PyCompiled& c) { return c.compiled->recompile_reasons(); },
                             "Why each capture after the first happened (what changed in the signature).");

  py::class_<jit::Explanation>(m, "Explanation", R"doc(What tandem.explain saw: whether the function compiles,
the graph break's reason, the captured ops, the guards, the optimised graph and the
planned memory. str() gives the report.)doc")
      .def_readonly("compiled", &jit::Explanation::compiled, "True when the capture produced a program.")
      .def_readonly("break_reason", &jit::Explanation::break_reason, "Why capture broke ('' when it did not).")
      .def_readonly("captured_ops", &jit::Explanation::captured_ops, "The ops recorded, in order.")
      .def_readonly("graph_text", &jit::Explanation::graph_text, "The graph after the passes (text form).")
      .def_readonly("guards", &jit::Explanation::guards, "What a cached program is checked against, one line each.")
      .def_readonly("arena_bytes", &jit::Explanation::arena_bytes, "Bytes of the planned arena.")
      .def_readonly("lower_bound_bytes", &jit::Explanation::lower_bound_bytes,
                    "The most bytes live at once (no plan can use less).")
      .def("__str__", &jit::Explanation::to_string)
      .def("__repr__", [](const jit::Explanation& e) {
        return std::string("<tandem.Explanation compiled=") + (e.compiled ? "True" : "False") + ", " +
               std::to_string(e.captured_ops.size()) + " ops>";
      });
  m.def("_explain", [](py::function fn, py::args args) {
    std::vector<Tensor> inputs;
    for (py::handle a : args) inputs.push_back(to_tensor_arg(a, "input"));
    auto single = std::make_shared<int>(-1);
    PyTensorFn f{shared_py(fn), single};
    py::gil_scoped_release nogil;
    return jit::explain(f, inputs);
  }, py::arg("fn"));
  m.def("_compile", [](py::function fn, bool strict, int64_t memory_budget) {
    auto single = std::make_shared<int>(-1);
    // The Python function is released with the GIL held, whichever thread drops the last
    // reference to the compiled function.
    auto holder = shared_py(fn);
    jit::CompileOptions opts;
    opts.strict = strict;
    opts.memory_budget = memory_budget;
    return PyCompiled{jit::compile(PyTensorFn{holder, single}, opts), single};
  }, py::arg("fn"), py::arg("strict") = false, py::arg("memory_budget") = 0);
}

}  // namespace tandem::python
