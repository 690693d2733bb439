// tandem.autograd.Function subclasses written in Python: forward/backward are Python
// static methods; the node in the graph is the C++ custom-function node (CppNode), whose
// backward calls back into Python with the GIL.
#include <any>
#include <memory>
#include <string>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

using autograd::AutogradContext;
using autograd::CppNode;

/// What ctx is in Python: access to the node's context while the node lives, plus
/// arbitrary attributes (py::dynamic_attr) that forward leaves for backward.
struct PyFunctionCtx {
  std::weak_ptr<CppNode> node;
  AutogradContext& ctx() const {
    auto n = node.lock();
    TANDEM_CHECK(n != nullptr, RuntimeError, "autograd.Function", "the context is used after its graph was freed");
    return n->ctx;  // owned by the node, which the graph keeps alive while ctx is usable
  }
};

/// The Python objects a node needs in backward. Stored in the context's saved_data (the
/// node owns it); released with the GIL by whichever thread frees the node.
struct PyRefs {
  py::object cls;
  py::object ctx;
  std::vector<size_t> tensor_positions;  // positions of the tensor arguments among forward's
  size_t num_args = 0;
};
const char* const kRefsKey = "__python_function__";

std::shared_ptr<PyRefs> make_refs() {
  return std::shared_ptr<PyRefs>(new PyRefs(), [](PyRefs* r) {
    if (!Py_IsInitialized()) {  // after shutdown: leak the references, nothing to free
      r->cls.release();
      r->ctx.release();
    } else {
      py::gil_scoped_acquire gil;
      r->cls = py::object();
      r->ctx = py::object();
    }
    delete r;
  });
}

std::vector<Tensor> py_backward(AutogradContext* ctx, std::vector<Tensor> grads) {
  auto refs = std::any_cast<std::shared_ptr<PyRefs>>(ctx->saved_data.at(kRefsKey));
  py::gil_scoped_acquire gil;
  py::tuple g(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) g[i] = tensor_or_none(grads[i]);
  py::object r = refs->cls.attr("backward")(refs->ctx, *g);
  std::vector<py::object> items;
  if (PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) {
    for (py::handle e : py::reinterpret_borrow<py::sequence>(r)) items.push_back(py::reinterpret_borrow<py::object>(e));
  } else {
    items.push_back(r);
  }
  const size_t n_tensors = refs->tensor_positions.size();
  std::vector<Tensor> out;
  auto as_grad = [](const py::object& o) {
    if (o.is_none()) return Tensor();
    if (!py::isinstance<Tensor>(o)) {
      throw TypeError("[autograd.Function] backward must return Tensors or None, got " +
                      py::str(py::type::of(o).attr("__name__")).cast<std::string>());
    }
    return o.cast<Tensor>();
  };
  if (items.size() == refs->num_args) {  // one per forward argument (PyTorch's rule)
    for (size_t p : refs->tensor_positions) out.push_back(as_grad(items[p]));
  } else if (items.size() == n_tensors) {  // one per tensor argument
    for (const auto& o : items) out.push_back(as_grad(o));
  } else {
    throw RuntimeError(str_cat("[autograd.Function] backward returned ", items.size(), " gradients, expected ",
                               refs->num_args, " (one per argument of forward)"));
  }
  return out;
}

py::object function_apply(py::object cls, py::args args) {
  std::vector<Tensor> inputs;
  auto refs = make_refs();
  refs->cls = cls;
  refs->num_args = args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    if (py::isinstance<Tensor>(args[i])) {
      inputs.push_back(args[i].cast<Tensor>());
      refs->tensor_positions.push_back(i);
    }
  }
  auto node = autograd::make_node<CppNode>(py::str(cls.attr("__name__")).cast<std::string>() + "Backward", &py_backward);
  for (const Tensor& t : inputs) node->ctx.needs_input_grad_.push_back(is_grad_enabled() && t.requires_grad());
  refs->ctx = py::cast(PyFunctionCtx{node});
  node->ctx.saved_data[kRefsKey] = refs;
  py::object r;
  {
    NoGradGuard no_grad;
    r = cls.attr("forward")(refs->ctx, *args);
  }
  const bool single = py::isinstance<Tensor>(r);
  std::vector<Tensor> outs;
  if (single) {
    outs.push_back(r.cast<Tensor>());
  } else if (PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) {
    for (py::handle e : py::reinterpret_borrow<py::sequence>(r)) {
      if (!py::isinstance<Tensor>(e)) throw TypeError("[autograd.Function] forward must return Tensors");
      outs.push_back(e.cast<Tensor>());
    }
  } else {
    throw TypeError("[autograd.Function] forward must return a Tensor or a tuple of Tensors, got " +
                    py::str(py::type::of(r).attr("__name__")).cast<std::string>());
  }
  outs = autograd::detail::wrap_outputs(node, inputs, std::move(outs));
  if (single) return py::cast(outs[0]);
  py::tuple t(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) t[i] = py::cast(outs[i]);
  return t;
}

std::vector<Tensor> tensors_of(py::args args) {
  std::vector<Tensor> out;
  for (py::handle a : args) out.push_back(a.cast<Tensor>());
  return out;
}

}  // namespace

void bind_function(py::module_& m) {
  py::class_<PyFunctionCtx>(m, "FunctionCtx", py::dynamic_attr(),
                            "The ctx of a custom autograd.Function: state from forward for backward.")
      .def("save_for_backward", [](PyFunctionCtx& c, py::args tensors) { c.ctx().save_for_backward(tensors_of(tensors)); },
           "Saves tensors for backward (checked against in-place changes, as built-in ops).")
      .def_property_readonly("saved_tensors", [](const PyFunctionCtx& c) {
        auto v = c.ctx().get_saved_variables();
        py::tuple t(v.size());
        for (size_t i = 0; i < v.size(); ++i) t[i] = tensor_or_none(v[i]);
        return t;
      }, "The tensors saved by save_for_backward. RuntimeError when one was modified in place since.")
      .def_property_readonly("needs_input_grad", [](const PyFunctionCtx& c) {
        const auto& v = c.ctx().needs_input_grad_;
        return py::tuple(py::cast(std::vector<bool>(v.begin(), v.end())));
      }, "For each tensor argument of forward: whether it needs a gradient.")
      .def("mark_dirty", [](PyFunctionCtx& c, py::args t) { c.ctx().mark_dirty(tensors_of(t)); },
           "Declares inputs that forward modified in place.")
      .def("mark_non_differentiable", [](PyFunctionCtx& c, py::args t) { c.ctx().mark_non_differentiable(tensors_of(t)); },
           "Declares outputs that have no gradient.")
      .def("set_materialize_grads", [](PyFunctionCtx& c, bool v) { c.ctx().set_materialize_grads(v); }, py::arg("value"),
           "Whether missing output gradients reach backward as zeros (default) or None.");
  m.def("_function_apply", &function_apply, py::arg("cls"),
        "Runs cls.forward(ctx, *args) without recording and connects its outputs to a node "
        "whose backward calls cls.backward(ctx, *grads).");
}

}  // namespace tandem::python
