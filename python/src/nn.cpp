// tandem._C pieces of tandem.nn that are C++ functions rather than registered ops: the
// composites of nn::functional (bilinear, normalize, embedding_renorm_, interpolate),
// nn::init, and Tensor.data (Module.to converts parameters through it, keeping identity).
#include <optional>
#include <string>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

// The in-place initialisers return the Python object they were given (a Parameter stays
// that object), as torch.nn.init does.
template <typename F>
py::object fill(py::handle t, F&& f) {
  Tensor x = t.cast<Tensor>();
  {
    py::gil_scoped_release nogil;
    f(x);
  }
  return py::reinterpret_borrow<py::object>(t);
}

}  // namespace

void bind_nn(py::module_& m, py::class_<Tensor>& cls) {
  cls.def_property("data", [](const Tensor& x) { return x.detach(); },
                   [](const Tensor& x, const Tensor& d) { x.set_data(d); },
                   R"doc(The tensor's values without autograd history (a detached alias). Assigning a
tensor makes this tensor (the same Python object, the same autograd identity) hold the
other's storage, dtype and shape (torch's `param.data = new`), as Module.to does.)doc");

  namespace F = nn::functional;
  m.def("_bilinear", [](const Tensor& x1, const Tensor& x2, const Tensor& w, std::optional<Tensor> b) {
    return F::bilinear(x1, x2, w, b.value_or(Tensor()));
  }, py::arg("input1"), py::arg("input2"), py::arg("weight"), py::arg("bias") = py::none());
  m.def("_normalize", &F::normalize, py::arg("input"), py::arg("p") = 2.0, py::arg("dim") = 1,
        py::arg("eps") = 1e-12);
  m.def("_embedding_renorm_", [](py::handle w, const Tensor& idx, double max_norm, double norm_type) {
    return fill(w, [&](Tensor& x) { F::embedding_renorm_(x, idx, max_norm, norm_type); });
  }, py::arg("weight"), py::arg("indices"), py::arg("max_norm"), py::arg("norm_type") = 2.0);
  m.def("_interpolate", [](const Tensor& x, std::optional<std::vector<int64_t>> size,
                           std::optional<std::vector<double>> scale, const std::string& mode,
                           std::optional<bool> align_corners) {
    return F::interpolate(x, std::move(size), std::move(scale), mode, align_corners);
  }, py::arg("input"), py::arg("size") = py::none(), py::arg("scale_factor") = py::none(),
        py::arg("mode") = "nearest", py::arg("align_corners") = py::none());

  namespace I = nn::init;
  py::module_ init = m.def_submodule("_init", "nn::init (tandem.nn.init wraps it).");
  init.def("calculate_gain", &I::calculate_gain, py::arg("nonlinearity"), py::arg("param") = 0.01);
  init.def("calculate_fan_in_and_fan_out", &I::calculate_fan_in_and_fan_out, py::arg("tensor"));
  init.def("uniform_", [](py::handle t, double a, double b) { return fill(t, [&](Tensor& x) { I::uniform_(x, a, b); }); },
           py::arg("tensor"), py::arg("a") = 0.0, py::arg("b") = 1.0);
  init.def("normal_", [](py::handle t, double mean, double std) {
    return fill(t, [&](Tensor& x) { I::normal_(x, mean, std); });
  }, py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0);
  init.def("constant_", [](py::handle t, py::handle v) {
    const Scalar s = to_scalar(v);
    return fill(t, [&](Tensor& x) { I::constant_(x, s); });
  }, py::arg("tensor"), py::arg("val"));
  init.def("zeros_", [](py::handle t) { return fill(t, [](Tensor& x) { I::zeros_(x); }); }, py::arg("tensor"));
  init.def("ones_", [](py::handle t) { return fill(t, [](Tensor& x) { I::ones_(x); }); }, py::arg("tensor"));
  init.def("xavier_uniform_", [](py::handle t, double g) { return fill(t, [&](Tensor& x) { I::xavier_uniform_(x, g); }); },
           py::arg("tensor"), py::arg("gain") = 1.0);
  init.def("xavier_normal_", [](py::handle t, double g) { return fill(t, [&](Tensor& x) { I::xavier_normal_(x, g); }); },
           py::arg("tensor"), py::arg("gain") = 1.0);
  init.def("kaiming_uniform_", [](py::handle t, double a, const std::string& mode, const std::string& nl) {
    return fill(t, [&](Tensor& x) { I::kaiming_uniform_(x, a, mode, nl); });
  }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
  init.def("kaiming_normal_", [](py::handle t, double a, const std::string& mode, const std::string& nl) {
    return fill(t, [&](Tensor& x) { I::kaiming_normal_(x, a, mode, nl); });
  }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
  init.def("orthogonal_", [](py::handle t, double g) { return fill(t, [&](Tensor& x) { I::orthogonal_(x, g); }); },
           py::arg("tensor"), py::arg("gain") = 1.0);
  init.def("trunc_normal_", [](py::handle t, double mean, double std, double a, double b) {
    return fill(t, [&](Tensor& x) { I::trunc_normal_(x, mean, std, a, b); });
  }, py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("a") = -2.0, py::arg("b") = 2.0);
}

}  // namespace tandem::python
