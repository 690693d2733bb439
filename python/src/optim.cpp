// tandem._C optimizers and learning-rate schedulers: the C++ optim::SGD / Adam / AdamW /
// Adagrad / RMSprop over Python-held parameters (so a Python training loop updates
// exactly as the C++ one), their parameter groups as dict-like views (PyTorch code reads
// and writes group["lr"]), state dicts in PyTorch's layout, gradient clipping, and the
// C++ schedulers.
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <set>
#include <string>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

std::string type_name(py::handle h) { return py::str(py::type::of(h).attr("__name__")).cast<std::string>(); }

const std::set<std::string>& flag_names() {
  static const std::set<std::string> names{"nesterov", "amsgrad", "maximize", "centered", "fused"};
  return names;
}

std::vector<Tensor> param_list(py::handle params, const char* what) {
  if (py::isinstance<Tensor>(params)) return {params.cast<Tensor>()};
  std::vector<Tensor> out;
  for (py::handle p : params) {
    if (!py::isinstance<Tensor>(p)) {
      throw TypeError(str_cat("[optim] ", what, " must be Tensors, got ", type_name(p)));
    }
    out.push_back(p.cast<Tensor>());
  }
  return out;
}

// A group's options from the keys of a PyTorch-style dict ("betas" -> beta1 / beta2, bools
// -> 0 / 1). "params" is skipped. TypeError for a value that is not a number.
optim::Options options_from(const py::dict& d) {
  optim::Options o;
  for (auto [k, v] : d) {
    const std::string key = py::str(k).cast<std::string>();
    if (key == "params") continue;
    if (key == "betas") {
      auto b = v.cast<std::pair<double, double>>();
      o.set("beta1", b.first).set("beta2", b.second);
      continue;
    }
    if (v.is_none()) continue;  // PyTorch's foreach=None, fused=None: the default
    if (!is_python_number(v)) throw TypeError(str_cat("[optim] option '", key, "' must be a number, got ", type_name(v)));
    o.set(key, to_scalar(v).to_double());
  }
  return o;
}

// The constructor's groups: one group of every tensor, or one per dict.
std::vector<optim::ParamGroup> groups_from(py::handle params) {
  py::list items;
  if (py::isinstance<Tensor>(params)) {
    items.append(params);
  } else {
    for (py::handle p : params) items.append(p);
  }
  std::vector<optim::ParamGroup> groups;
  if (items.size() > 0 && py::isinstance<py::dict>(items[0])) {
    for (py::handle g : items) {
      if (!py::isinstance<py::dict>(g)) throw TypeError("[optim] parameter groups must all be dicts");
      py::dict d = py::reinterpret_borrow<py::dict>(g);
      if (!d.contains("params")) throw ValueError("[optim] a parameter group needs a 'params' entry");
      groups.emplace_back(param_list(d["params"], "params"), options_from(d));
    }
  } else {
    groups.emplace_back(param_list(items, "parameters"), optim::Options());
  }
  return groups;
}

py::object option_value(const std::string& key, double v) {
  if (flag_names().count(key) != 0) return py::bool_(v != 0);
  return py::float_(v);
}

// optimizer.param_groups[i]: a live view of group i (reads and writes the C++ options).
struct GroupView {
  py::object owner;  // the Python optimizer (keeps it alive)
  optim::Optimizer* opt;
  size_t index;

  optim::ParamGroup& group() const {
    if (index >= opt->param_groups().size()) throw IndexError("[param_groups] the group no longer exists");
    return opt->param_groups()[index];
  }
  py::object get(const std::string& key) const {
    const optim::ParamGroup& g = group();
    if (key == "params") {
      py::list l;
      for (const Tensor& p : g.params) l.append(py::cast(p));
      return l;
    }
    if (key == "betas" && g.options.has("beta1")) {
      return py::make_tuple(g.options.get("beta1"), g.options.get("beta2"));
    }
    if (!g.options.has(key)) throw py::key_error(key);
    return option_value(key, g.options.get(key));
  }
  void set(const std::string& key, py::handle v) {
    optim::ParamGroup& g = group();
    if (key == "params") throw ValueError("[param_groups] 'params' cannot be replaced; use add_param_group");
    if (key == "betas") {
      auto b = v.cast<std::pair<double, double>>();
      g.options.set("beta1", b.first).set("beta2", b.second);
      return;
    }
    if (!is_python_number(v)) throw TypeError(str_cat("[param_groups] '", key, "' must be a number, got ", type_name(v)));
    g.options.set(key, to_scalar(v).to_double());
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> k{"params"};
    const auto& vals = group().options.values();
    const bool betas = vals.count("beta1") != 0 && vals.count("beta2") != 0;
    for (const auto& [name, v] : vals) {
      if (betas && (name == "beta1" || name == "beta2")) continue;
      k.push_back(name);
    }
    if (betas) k.push_back("betas");
    return k;
  }
};

// PyTorch's state dict layout: {"state": {index: {name: tensor}}, "param_groups": [{...,
// "params": [indices]}]}, plus "optimizer": the kind (checked on load when present).
py::dict state_dict_to_py(const optim::OptimizerStateDict& sd) {
  py::dict state;
  for (const auto& [key, t] : sd.state) {
    // key: "state.<index>.<name>"
    const size_t a = key.find('.'), b = key.find('.', a + 1);
    const int64_t idx = std::stoll(key.substr(a + 1, b - a - 1));
    py::int_ pidx(idx);
    if (!state.contains(pidx)) state[pidx] = py::dict();
    py::dict entry = state[pidx];
    entry[py::str(key.substr(b + 1))] = py::cast(t);
  }
  py::list groups;
  for (const auto& g : sd.param_groups) {
    py::dict d;
    const bool betas = g.options.count("beta1") != 0 && g.options.count("beta2") != 0;
    for (const auto& [k, v] : g.options) {
      if (betas && (k == "beta1" || k == "beta2")) continue;
      d[py::str(k)] = option_value(k, v);
    }
    if (betas) d["betas"] = py::make_tuple(g.options.at("beta1"), g.options.at("beta2"));
    d["params"] = py::cast(g.params);
    groups.append(d);
  }
  py::dict out;
  out["state"] = state;
  out["param_groups"] = groups;
  out["optimizer"] = sd.optimizer;
  return out;
}

optim::OptimizerStateDict state_dict_from_py(const optim::Optimizer& opt, const py::dict& d) {
  optim::OptimizerStateDict sd;
  sd.optimizer = d.contains("optimizer") ? d["optimizer"].cast<std::string>() : opt.name();
  if (!d.contains("state") || !d.contains("param_groups")) {
    throw ValueError("[load_state_dict] expected a dict with 'state' and 'param_groups'");
  }
  for (auto [idx, entries] : py::reinterpret_borrow<py::dict>(d["state"])) {
    const int64_t i = idx.cast<int64_t>();
    for (auto [name, t] : py::reinterpret_borrow<py::dict>(entries)) {
      if (!py::isinstance<Tensor>(t)) {
        throw TypeError(str_cat("[load_state_dict] state ", i, ".", py::str(name).cast<std::string>(),
                                " must be a Tensor, got ", type_name(t)));
      }
      sd.state.emplace_back(str_cat("state.", i, ".", py::str(name).cast<std::string>()), t.cast<Tensor>());
    }
  }
  for (py::handle g : d["param_groups"]) {
    py::dict gd = py::reinterpret_borrow<py::dict>(g);
    optim::GroupStateDict gs;
    gs.params = gd["params"].cast<std::vector<int64_t>>();
    gs.options = options_from(gd).values();
    sd.param_groups.push_back(std::move(gs));
  }
  return sd;
}

template <typename Opt, typename Opts>
std::unique_ptr<Opt> make_optimizer(py::handle params, Opts defaults) {
  return std::make_unique<Opt>(groups_from(params), defaults);
}

using optim::LRScheduler;
using SchedulerPtr = std::shared_ptr<LRScheduler>;

py::dict scheduler_state_to_py(const optim::SchedulerStateDict& sd) {
  py::dict d;
  d["scheduler"] = sd.scheduler;
  py::dict values;
  for (const auto& [k, v] : sd.values) values[py::str(k)] = py::cast(v);
  d["values"] = values;
  py::list children;
  for (const auto& c : sd.children) children.append(scheduler_state_to_py(c));
  d["children"] = children;
  return d;
}

optim::SchedulerStateDict scheduler_state_from_py(const py::dict& d) {
  optim::SchedulerStateDict sd;
  sd.scheduler = d["scheduler"].cast<std::string>();
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(d["values"])) {
    sd.values[py::str(k).cast<std::string>()] = v.cast<std::vector<double>>();
  }
  if (d.contains("children")) {
    for (py::handle c : d["children"]) sd.children.push_back(scheduler_state_from_py(py::reinterpret_borrow<py::dict>(c)));
  }
  return sd;
}

}  // namespace

void bind_optim(py::module_& m) {
  using optim::Optimizer;
  py::class_<GroupView>(m, "_ParamGroup", "A live view of one parameter group (a dict-like: group['lr'] = 0.1).")
      .def("__getitem__", &GroupView::get)
      .def("__setitem__", &GroupView::set)
      .def("__contains__", [](const GroupView& g, const std::string& k) {
        auto keys = g.keys();
        return std::find(keys.begin(), keys.end(), k) != keys.end();
      })
      .def("get", [](const GroupView& g, const std::string& k, py::object dflt) -> py::object {
        try {
          return g.get(k);
        } catch (py::key_error&) {
          return dflt;
        }
      }, py::arg("key"), py::arg("default") = py::none())
      .def("setdefault", [](GroupView& g, const std::string& k, py::object dflt) -> py::object {
        try {
          return g.get(k);
        } catch (py::key_error&) {
          g.set(k, dflt);
          return g.get(k);
        }
      }, py::arg("key"), py::arg("default") = py::none())
      .def("keys", &GroupView::keys)
      .def("__iter__", [](const GroupView& g) { return py::iter(py::cast(g.keys())); })
      .def("__len__", [](const GroupView& g) { return g.keys().size(); })
      .def("items", [](const GroupView& g) {
        py::list l;
        for (const auto& k : g.keys()) l.append(py::make_tuple(k, g.get(k)));
        return l;
      })
      .def("__repr__", [](const GroupView& g) {
        py::dict d;
        for (const auto& k : g.keys()) d[py::str(k)] = g.get(k);
        return py::repr(d).cast<std::string>();
      });

  py::class_<Optimizer>(m, "Optimizer", R"doc(Base of the C++ optimizers (torch.optim.Optimizer).

param_groups: live dict-like views of the groups (group['lr'] = 0.01 changes the rate);
state_dict() / load_state_dict() in PyTorch's layout ({'state': {index: {name: tensor}},
'param_groups': [...]}, plus 'optimizer': the kind); state[p]: the state of parameter p.)doc")
      .def("step", [](Optimizer& o, py::object closure) -> py::object {
        py::object loss = py::none();
        if (!closure.is_none()) {
          const bool prev = is_grad_enabled();
          set_grad_enabled(true);
          try {
            loss = closure();
          } catch (...) {
            set_grad_enabled(prev);
            throw;
          }
          set_grad_enabled(prev);
        }
        py::gil_scoped_release nogil;
        o.step();
        return loss;
      }, py::arg("closure") = py::none(),
           "One update of every parameter that has a .grad (under no_grad). With a closure, first calls it with "
           "grad mode on and returns its result (the loss); else returns None.")
      .def("zero_grad", &Optimizer::zero_grad, py::arg("set_to_none") = true,
           "Clears the parameters' .grad (None by default, else zeros in place).")
      .def_property_readonly("name", &Optimizer::name, "'SGD', 'Adam', ...")
      .def_property_readonly("param_groups", [](py::object self) {
        auto& o = self.cast<Optimizer&>();
        py::list l;
        for (size_t i = 0; i < o.param_groups().size(); ++i) l.append(GroupView{self, &o, i});
        return l;
      }, "The parameter groups, as live dict-like views ('params', 'lr', the other hyper-parameters).")
      .def_property_readonly("defaults", [](const Optimizer& o) {
        py::dict d;
        for (const auto& [k, v] : o.defaults().values()) d[py::str(k)] = option_value(k, v);
        return d;
      }, "The constructor's hyper-parameters (a new dict).")
      .def("add_param_group", [](Optimizer& o, py::dict group) {
        if (!group.contains("params")) throw ValueError("[add_param_group] the group needs a 'params' entry");
        o.add_param_group(optim::ParamGroup(param_list(group["params"], "params"), options_from(group)));
      }, py::arg("param_group"),
           "Adds a group (a dict with 'params' and hyper-parameters; missing ones come from the defaults). "
           "ValueError for a parameter already in a group, a non-leaf or integer parameter, or a bad value.")
      .def("_state_of", [](const Optimizer& o, const Tensor& p) {
        py::dict d;
        for (const auto& [k, v] : o.state(p)) d[py::str(k)] = py::cast(v);
        return d;
      }, py::arg("param"), "The state tensors of parameter p (a new dict; the tensors are the live state).")
      .def("state_dict", [](const Optimizer& o) { return state_dict_to_py(o.state_dict()); },
           "A snapshot of the state and the groups' hyper-parameters (PyTorch's layout; tensors are copies).")
      .def("load_state_dict", [](Optimizer& o, py::dict d) { o.load_state_dict(state_dict_from_py(o, d)); },
           py::arg("state_dict"),
           "Loads a state_dict() of the same kind of optimizer with the same group sizes. ValueError for another "
           "kind, other group sizes or bad entries; ShapeError for a state tensor of the wrong shape. On error "
           "the optimizer is unchanged.")
      .def("__repr__", [](const Optimizer& o) { return o.name() + " (" + std::to_string(o.param_groups().size()) + " groups)"; });

  py::class_<optim::SGD, Optimizer>(m, "SGD", R"doc(Stochastic gradient descent (torch.optim.SGD), the C++ optimizer.

With g = grad + weight_decay * p: momentum buffer b = g first, then momentum * b +
(1 - dampening) * g; p -= lr * (g + momentum * b if nesterov else b). params: tensors or
dicts of groups. ValueError for negative lr/momentum/weight_decay, nesterov without
momentum, non-leaf or integer params.)doc")
      .def(py::init([](py::object params, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov, bool maximize) {
        return make_optimizer<optim::SGD>(params, optim::SGDOptions(lr).momentum(momentum).dampening(dampening)
                                                      .weight_decay(weight_decay).nesterov(nesterov).maximize(maximize));
      }), py::arg("params"), py::arg("lr"), py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
           py::arg("weight_decay") = 0.0, py::arg("nesterov") = false, py::kw_only(), py::arg("maximize") = false);
  py::class_<optim::Adam, Optimizer>(m, "Adam", R"doc(Adam (torch.optim.Adam), the C++ optimizer: bias-corrected first and second
moments; amsgrad keeps the running max of the second. State: step, exp_avg, exp_avg_sq
(max_exp_avg_sq). ValueError for lr < 0, eps < 0, betas outside [0, 1), weight_decay < 0.)doc")
      .def(py::init([](py::object params, double lr, std::pair<double, double> betas, double eps,
                       double weight_decay, bool amsgrad, bool maximize) {
        return make_optimizer<optim::Adam>(params, optim::AdamOptions(lr).betas(betas.first, betas.second).eps(eps)
                                                       .weight_decay(weight_decay).amsgrad(amsgrad).maximize(maximize));
      }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("amsgrad") = false, py::kw_only(),
           py::arg("maximize") = false);
  py::class_<optim::AdamW, optim::Adam>(m, "AdamW", R"doc(AdamW (torch.optim.AdamW), the C++ optimizer: Adam with decoupled weight
decay (p *= 1 - lr * weight_decay before the update; weight_decay defaults to 1e-2).
Errors as Adam.)doc")
      .def(py::init([](py::object params, double lr, std::pair<double, double> betas, double eps,
                       double weight_decay, bool amsgrad, bool maximize) {
        return make_optimizer<optim::AdamW>(params, optim::AdamWOptions(lr).betas(betas.first, betas.second).eps(eps)
                                                        .weight_decay(weight_decay).amsgrad(amsgrad).maximize(maximize));
      }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2, py::arg("amsgrad") = false, py::kw_only(),
           py::arg("maximize") = false);
  py::class_<optim::Adagrad, Optimizer>(m, "Adagrad", R"doc(Adagrad (torch.optim.Adagrad), the C++ optimizer: sum += g^2;
p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps). State: step, sum (created at
construction). ValueError for a negative lr, lr_decay, weight_decay,
initial_accumulator_value or eps.)doc")
      .def(py::init([](py::object params, double lr, double lr_decay, double weight_decay, double init_acc, double eps,
                       bool maximize) {
        return make_optimizer<optim::Adagrad>(params, optim::AdagradOptions(lr).lr_decay(lr_decay)
                                                          .weight_decay(weight_decay).initial_accumulator_value(init_acc)
                                                          .eps(eps).maximize(maximize));
      }), py::arg("params"), py::arg("lr") = 1e-2, py::arg("lr_decay") = 0.0, py::arg("weight_decay") = 0.0,
           py::arg("initial_accumulator_value") = 0.0, py::arg("eps") = 1e-10, py::kw_only(),
           py::arg("maximize") = false);
  py::class_<optim::RMSprop, Optimizer>(m, "RMSprop", R"doc(RMSprop (torch.optim.RMSprop), the C++ optimizer: s = alpha s +
(1 - alpha) g^2; centered subtracts the squared running mean of g; momentum buffers the
step. State: step, square_avg (momentum_buffer, grad_avg). ValueError for a negative lr,
eps, momentum, weight_decay or alpha.)doc")
      .def(py::init([](py::object params, double lr, double alpha, double eps, double weight_decay, double momentum,
                       bool centered, bool maximize) {
        return make_optimizer<optim::RMSprop>(params, optim::RMSpropOptions(lr).alpha(alpha).eps(eps)
                                                          .weight_decay(weight_decay).momentum(momentum)
                                                          .centered(centered).maximize(maximize));
      }), py::arg("params"), py::arg("lr") = 1e-2, py::arg("alpha") = 0.99, py::arg("eps") = 1e-8,
           py::arg("weight_decay") = 0.0, py::arg("momentum") = 0.0, py::arg("centered") = false, py::kw_only(),
           py::arg("maximize") = false);

  m.def("clip_grad_norm_", [](py::object params, double max_norm, double norm_type, bool error_if_nonfinite) {
    auto ps = param_list(params, "parameters");
    py::gil_scoped_release nogil;
    return optim::clip_grad_norm_(ps, max_norm, norm_type, error_if_nonfinite);
  }, py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0, py::arg("error_if_nonfinite") = false,
        R"doc(Scales the gradients of `parameters` (a tensor or an iterable; those without .grad are skipped) in
place so that their total norm_type-norm is at most max_norm (factor min(max_norm / (total +
1e-6), 1)); returns the total norm before clipping as a float (torch.nn.utils.clip_grad_norm_
returns a tensor). RuntimeError when error_if_nonfinite and the norm is NaN or infinite.)doc");
  m.def("clip_grad_value_", [](py::object params, double clip_value) {
    auto ps = param_list(params, "parameters");
    py::gil_scoped_release nogil;
    optim::clip_grad_value_(ps, clip_value);
  }, py::arg("parameters"), py::arg("clip_value"),
        "Clamps every gradient of `parameters` into [-clip_value, clip_value] in place.");

  // ---------------------------------------------------------------- schedulers
  py::class_<LRScheduler, SchedulerPtr>(m, "LRScheduler", R"doc(Base of the C++ learning-rate schedulers
(torch.optim.lr_scheduler._LRScheduler, PyTorch 1.13 semantics: constructing one records
each group's initial_lr and takes the initial step; call step() after each
optimizer.step()).)doc")
      .def("step", [](LRScheduler& s, std::optional<int64_t> epoch) {
        if (epoch) {
          s.step(*epoch);
        } else {
          s.step();
        }
      }, py::arg("epoch") = py::none(),
           "Advances one epoch and sets every group's lr (step(epoch): jumps to that epoch by the closed form, "
           "PyTorch's deprecated form).")
      .def("get_last_lr", &LRScheduler::get_last_lr, "The lrs set by the last step, one per group.")
      .def_property_readonly("last_epoch", &LRScheduler::last_epoch, "Epochs stepped (0 after construction).")
      .def_property_readonly("base_lrs", &LRScheduler::base_lrs, "Each group's initial_lr.")
      .def_property_readonly("name", &LRScheduler::name)
      .def("state_dict", [](const LRScheduler& s) { return scheduler_state_to_py(s.state_dict()); },
           "The scheduler's state: its kind, counters and hyper-parameters (a dict of lists of floats).")
      .def("load_state_dict", [](LRScheduler& s, py::dict d) { s.load_state_dict(scheduler_state_from_py(d)); },
           py::arg("state_dict"), "Restores a state_dict() of the same kind of scheduler. ValueError otherwise.");
  // Each scheduler keeps its optimizer alive (keep_alive<1, 2>: the C++ one holds a reference).
  py::class_<optim::StepLR, LRScheduler, std::shared_ptr<optim::StepLR>>(
      m, "StepLR", "lr *= gamma every step_size epochs (torch.optim.lr_scheduler.StepLR). ValueError: step_size < 1.")
      .def(py::init<Optimizer&, int64_t, double, int64_t>(), py::arg("optimizer"), py::arg("step_size"),
           py::arg("gamma") = 0.1, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::MultiStepLR, LRScheduler, std::shared_ptr<optim::MultiStepLR>>(
      m, "MultiStepLR",
      "lr *= gamma at each milestone epoch (a milestone listed k times: gamma^k) (torch.optim.lr_scheduler.MultiStepLR).")
      .def(py::init<Optimizer&, std::vector<int64_t>, double, int64_t>(), py::arg("optimizer"), py::arg("milestones"),
           py::arg("gamma") = 0.1, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::ExponentialLR, LRScheduler, std::shared_ptr<optim::ExponentialLR>>(
      m, "ExponentialLR", "lr *= gamma every epoch (torch.optim.lr_scheduler.ExponentialLR).")
      .def(py::init<Optimizer&, double, int64_t>(), py::arg("optimizer"), py::arg("gamma"), py::arg("last_epoch") = -1,
           py::keep_alive<1, 2>());
  py::class_<optim::CosineAnnealingLR, LRScheduler, std::shared_ptr<optim::CosineAnnealingLR>>(
      m, "CosineAnnealingLR",
      "Cosine annealing from the base lr to eta_min over T_max epochs, then back up, periodically "
      "(torch.optim.lr_scheduler.CosineAnnealingLR). ValueError: T_max < 1.")
      .def(py::init<Optimizer&, int64_t, double, int64_t>(), py::arg("optimizer"), py::arg("T_max"),
           py::arg("eta_min") = 0.0, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::LinearLR, LRScheduler, std::shared_ptr<optim::LinearLR>>(
      m, "LinearLR",
      "lr factor going linearly from start_factor to end_factor over total_iters epochs "
      "(torch.optim.lr_scheduler.LinearLR). ValueError: start_factor outside (0, 1], end_factor outside [0, 1], "
      "total_iters < 1.")
      .def(py::init<Optimizer&, double, double, int64_t, int64_t>(), py::arg("optimizer"),
           py::arg("start_factor") = 1.0 / 3, py::arg("end_factor") = 1.0, py::arg("total_iters") = 5,
           py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::OneCycleLR, LRScheduler, std::shared_ptr<optim::OneCycleLR>>(
      m, "OneCycleLR",
      "The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR); max_lr a number or one per group. ValueError for "
      "missing or non-positive step counts, pct_start outside [0, 1], an unknown anneal_strategy, "
      "cycle_momentum on an optimizer without momentum/betas, stepping past total_steps.")
      .def(py::init([](Optimizer& opt, py::object max_lr, std::optional<int64_t> total_steps,
                       std::optional<int64_t> epochs, std::optional<int64_t> steps_per_epoch, double pct_start,
                       const std::string& anneal, bool cycle_momentum, py::object base_m, py::object max_m,
                       double div_factor, double final_div_factor, bool three_phase, int64_t last_epoch) {
        auto list = [](py::object v) {
          if (is_python_number(v)) return std::vector<double>{v.cast<double>()};
          return v.cast<std::vector<double>>();
        };
        optim::OneCycleOptions o;
        o.max_lrs = list(max_lr);
        o.total_steps = total_steps;
        o.epochs = epochs;
        o.steps_per_epoch = steps_per_epoch;
        o.pct_start = pct_start;
        o.anneal_strategy = anneal;
        o.cycle_momentum = cycle_momentum;
        o.base_momentums = list(base_m);
        o.max_momentums = list(max_m);
        o.div_factor = div_factor;
        o.final_div_factor = final_div_factor;
        o.three_phase = three_phase;
        return std::make_shared<optim::OneCycleLR>(opt, o, last_epoch);
      }), py::arg("optimizer"), py::arg("max_lr"), py::arg("total_steps") = py::none(), py::arg("epochs") = py::none(),
           py::arg("steps_per_epoch") = py::none(), py::arg("pct_start") = 0.3, py::arg("anneal_strategy") = "cos",
           py::arg("cycle_momentum") = true, py::arg("base_momentum") = 0.85, py::arg("max_momentum") = 0.95,
           py::arg("div_factor") = 25.0, py::arg("final_div_factor") = 1e4, py::arg("three_phase") = false,
           py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::SequentialLR, LRScheduler, std::shared_ptr<optim::SequentialLR>>(
      m, "SequentialLR",
      "Runs schedulers one after another, switching at the milestones (torch.optim.lr_scheduler.SequentialLR). "
      "The schedulers must be tandem's C++ ones (TypeError for a Python scheduler such as LambdaLR). ValueError: "
      "no schedulers, one of another optimizer, len(milestones) != len(schedulers) - 1.")
      .def(py::init([](Optimizer& opt, py::list schedulers, std::vector<int64_t> milestones, int64_t last_epoch) {
        std::vector<SchedulerPtr> s;
        for (py::handle h : schedulers) {
          if (!py::isinstance<LRScheduler>(h)) {
            throw TypeError("[SequentialLR] schedulers must be tandem's built-in (C++) schedulers, got " + type_name(h));
          }
          s.push_back(h.cast<SchedulerPtr>());
        }
        return std::make_shared<optim::SequentialLR>(opt, std::move(s), std::move(milestones), last_epoch);
      }), py::arg("optimizer"), py::arg("schedulers"), py::arg("milestones"), py::arg("last_epoch") = -1,
           py::keep_alive<1, 2>());
}

}  // namespace tandem::python
