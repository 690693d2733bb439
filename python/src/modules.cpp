// tandem._C C++ modules: a handle on a tandem::nn::Module tree (tandem.nn.CppModule wraps
// it as a Python nn.Module), the reference models of `tandem train` (nn::models), and the
// checkpoint functions that take a module (tandem.save_checkpoint passes them a C++ tree
// holding a Python module's tensors).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

py::list named_tensors(const nn::NamedTensors& entries) {
  py::list out;
  for (const auto& [name, t] : entries) out.append(py::make_tuple(name, tensor_or_none(t)));
  return out;
}

}  // namespace

void bind_modules(py::module_& m) {
  using nn::Module;
  py::class_<Module, std::shared_ptr<Module>>(
      m, "_CppModule",
      "A C++ tandem::nn::Module (internal: tandem.nn.CppModule wraps it as a Python nn.Module).")
      .def(py::init([](const std::string& name) { return std::make_shared<Module>(name); }), py::arg("name"),
           "An empty C++ module called `name`, without forward: a container of tensors and children for the "
           "C++ functions that read and write a module's state (tandem.save_checkpoint fills one with a "
           "Python module's tensors).")
      .def("register_parameter", [](Module& self, const std::string& name, const Tensor& t) {
        self.register_parameter(name, t, /*requires_grad=*/false);
      }, py::arg("name"), py::arg("tensor"),
           "Adds `tensor` itself (not a copy; requires_grad unchanged) as a parameter. ValueError for a "
           "name already used or containing '.'.")
      .def("register_buffer", [](Module& self, const std::string& name, const Tensor& t) { self.register_buffer(name, t); },
           py::arg("name"), py::arg("tensor"), "Adds `tensor` itself as a buffer. ValueError as register_parameter.")
      .def("register_module", [](Module& self, const std::string& name, std::shared_ptr<Module> child) {
        self.register_module(name, std::move(child));
      }, py::arg("name"), py::arg("module"), "Adds a child module. ValueError as register_parameter, or for None.")
      .def_property_readonly("name", &Module::name, "The C++ class's name ('Sequential', 'Linear', ...).")
      .def_property_readonly("training", &Module::is_training, "The training flag of this module.")
      .def("train", [](Module& self, bool on) {
        py::gil_scoped_release nogil;
        self.train(on);
      }, py::arg("mode") = true, "Sets the training flag here and in every C++ descendant.")
      .def("local_parameters", [](const Module& self) { return named_tensors(self.local_parameters()); },
           "[(name, Tensor or None)] of this module's own parameters, in registration order; each "
           "Tensor shares the C++ module's tensor (the same autograd leaf).")
      .def("local_buffers", [](const Module& self) { return named_tensors(self.local_buffers()); },
           "[(name, Tensor or None)] of this module's own buffers, in registration order.")
      .def("local_children", [](const Module& self) {
        py::list out;
        for (const auto& [name, c] : self.local_children()) out.append(py::make_tuple(name, c));
        return out;
      }, "[(name, _CppModule)] of the direct children, in registration order.")
      .def("forward", [](Module& self, const std::vector<Tensor>& inputs) {
        py::gil_scoped_release nogil;
        return self(inputs);
      }, py::arg("inputs"),
           "Calls the module on a list of tensors (its C++ forward pre-hooks, forward_list, forward "
           "hooks) without the GIL; returns the list of outputs. The module's own errors: ShapeError "
           "for inputs of the wrong shape, ValueError for the wrong number of inputs.")
      .def("to_string", [](const Module& self) { return self.to_string(); },
           "The module tree printed as PyTorch prints modules.")
      .def("extra_repr", &Module::extra_repr, "The text inside this module's parentheses in its printout.");

  m.def("_save_checkpoint", [](const std::string& path, const Module& model, optim::Optimizer* optimizer,
                                const io::Metadata& metadata) {
    py::gil_scoped_release nogil;
    io::save_checkpoint(path, model, optimizer, metadata);
  }, py::arg("path"), py::arg("model"), py::arg("optimizer") = py::none(), py::arg("metadata") = io::Metadata{},
        "io::save_checkpoint: the model's state_dict as model.<key>, the optimizer's state (optional) and "
        "metadata in one safetensors file, written atomically (the format of `tandem train --checkpoint`).");
  m.def("_load_checkpoint", [](const std::string& path, Module& model, optim::Optimizer* optimizer) {
    py::gil_scoped_release nogil;
    return io::load_checkpoint(path, model, optimizer);
  }, py::arg("path"), py::arg("model"), py::arg("optimizer") = py::none(),
        "io::load_checkpoint: loads a checkpoint into the model (strict) and the optimizer (optional); "
        "returns the caller's metadata.");

  py::module_ models = m.def_submodule(
      "_models", "nn::models, the reference models of `tandem train` (tandem.nn.models wraps them).");
  models.def("fashion_mlp", [] { return std::static_pointer_cast<Module>(nn::models::fashion_mlp()); },
             "784-256-128-10 MLP with ReLU (Flatten first): float32 [N, 1, 28, 28] -> logits [N, 10].");
  models.def("fashion_cnn", [] { return std::static_pointer_cast<Module>(nn::models::fashion_cnn()); },
             "The small CNN of `tandem train --model cnn`: float32 [N, 1, 28, 28] -> logits [N, 10].");
  models.def("mlp", [](const std::vector<int64_t>& sizes) { return std::static_pointer_cast<Module>(nn::models::mlp(sizes)); },
             py::arg("sizes"),
             "Linear(sizes[0], sizes[1]), ReLU, ..., Linear(sizes[-2], sizes[-1]). ValueError for fewer "
             "than 2 sizes or a size < 1.");
}

}  // namespace tandem::python
