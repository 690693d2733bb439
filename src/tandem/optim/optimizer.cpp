#include "tandem/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <unordered_set>

#include "tandem/core/capture_state.h"
#include "tandem/autograd/engine.h"
#include "tandem/ops/creation.h"

namespace tandem::optim {

double Options::get(const std::string& name) const {
  auto it = values_.find(name);
  TANDEM_CHECK(it != values_.end(), ValueError, "optim", "the parameter group has no option '", name, "'");
  return it->second;
}

double Options::get(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

const std::vector<std::string>& scheduler_option_names() {
  static const std::vector<std::string> names = {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"};
  return names;
}

namespace detail {
void check_option(bool ok, const std::string& opt, const char* what, double v) {
  TANDEM_CHECK(ok, ValueError, opt, "Invalid ", what, " value: ", v);
}

void check_flag(const Options& o, const std::string& opt, const char* name) {
  const double v = o.get(name);
  TANDEM_CHECK(v == 0 || v == 1, ValueError, opt, "option '", name, "' is a flag, expected 0 or 1, got ", v);
}

void refresh_lr(ParamGroup& group) {
  // Not an op (inside a captured step an op would bake this call's value into the
  // program): a plain store, which the program's caller repeats before every replay.
  DispatchDepthGuard internal;
  if (!group.lr_tensor.defined()) group.lr_tensor = empty_tensor({}, DType::Float64);
  *group.lr_tensor.data_ptr<double>() = group.options.lr();
}

const Tensor& lr_tensor(ParamGroup& group) {
  if (!group.lr_tensor.defined())
    capture_state::note_retry("the optimizer made a learning-rate tensor (a parameter group added inside the call)");
  refresh_lr(group);
  ++group.lr_tensor_reads;
  return group.lr_tensor;
}

bool fusable(const Tensor& param, std::initializer_list<Tensor> others) {
  if (param.dtype() != DType::Float32 && param.dtype() != DType::Float64) return false;
  if (!param.is_contiguous()) return false;
  for (const Tensor& t : others) {
    if (!t.defined()) continue;
    if (t.dtype() != param.dtype() || !t.is_contiguous() || t.numel() != param.numel()) return false;
  }
  return true;
}
}  // namespace detail

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// Group options complete with defaults; ValueError on unknown names.
Options complete_options(const std::string& opt, const Options& defaults, const Options& given, bool allow_unknown) {
  Options o = defaults;
  const auto& extra = scheduler_option_names();
  for (const auto& [k, v] : given.values()) {
    const bool known = defaults.has(k) || std::find(extra.begin(), extra.end(), k) != extra.end();
    if (!known && !allow_unknown) {
      std::vector<std::string> names;
      for (const auto& [dk, dv] : defaults.values()) names.push_back(dk);
      throw ValueError(str_cat("[", opt, "] unknown option '", k, "', expected one of ", join(names)));
    }
    o.set(k, v);
  }
  return o;
}
}  // namespace

Optimizer::Optimizer(std::string name, Options defaults) : name_(std::move(name)), defaults_(std::move(defaults)) {}

void Optimizer::init_groups(std::vector<ParamGroup> groups) {
  validate(defaults_);
  TANDEM_CHECK(!groups.empty(), ValueError, name_, "optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  TANDEM_CHECK(!group.params.empty(), ValueError, name_, "optimizer got an empty parameter list");
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params) seen.insert(p.impl());
  std::unordered_set<const TensorImpl*> mine;
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    TANDEM_CHECK(p.defined(), ValueError, name_, "parameter ", i, " of the group is an undefined tensor");
    TANDEM_CHECK(p.is_floating_point(), ValueError, name_, "parameter ", i, " has dtype ", dtype_name(p.dtype()),
                 ", expected a floating dtype");
    TANDEM_CHECK(p.is_leaf() || p.retains_grad(), ValueError, name_, "can't optimize a non-leaf Tensor (parameter ", i,
                 ")");
    TANDEM_CHECK(!seen.count(p.impl()), ValueError, name_,
                 "some parameters appear in more than one parameter group (parameter ", i, ")");
    TANDEM_CHECK(mine.insert(p.impl()).second, ValueError, name_,
                 "the parameter group contains parameter ", i, " twice");
  }
  group.options = complete_options(name_, defaults_, group.options, /*allow_unknown=*/false);
  validate(group.options);
  detail::refresh_lr(group);  // made here, outside any capture (see lr_tensor)
  groups_.push_back(std::move(group));
  on_group_added(groups_.back());
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& g : groups_) {
    for (const Tensor& p : g.params) {
      const Tensor& gr = p.grad();
      if (!gr.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        Tensor d = gr.grad_fn() ? gr.detach() : gr;
        if (gr.grad_fn()) p.set_grad(d);
        NoGradGuard ng;
        d.zero_();
      }
    }
  }
}

size_t Optimizer::num_state_tensors() const {
  size_t n = 0;
  for (const auto& [p, st] : state_) n += st.size();
  return n;
}

uint64_t Optimizer::capture_key() const {
  // FNV-1a over what the update ops bake in (options other than lr, which is a tensor
  // input) and the tensors a program binds by reference (parameters, lr tensors, state).
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t x) { h = (h ^ x) * 1099511628211ULL; };
  mix(groups_.size());
  for (const ParamGroup& g : groups_) {
    for (const auto& [k, v] : g.options.values()) {
      if (k == "lr" && !lr_baked_) continue;
      mix(std::hash<std::string>{}(k));
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      mix(bits);
    }
    mix(reinterpret_cast<uintptr_t>(g.lr_tensor.impl()));
    for (const Tensor& p : g.params) {
      mix(reinterpret_cast<uintptr_t>(p.impl()));
      auto it = state_.find(p.impl());
      if (it == state_.end()) continue;
      for (const auto& [k, t] : it->second) mix(reinterpret_cast<uintptr_t>(t.impl()));
    }
  }
  return h;
}

void Optimizer::note_capture() {
  // A compiled training step replays this step's ops; it is valid while the options and
  // the tensors it binds stay the same, and it must copy each group's current learning
  // rate into its tensor before every replay (a scheduler changes the C++ number).
  std::weak_ptr<int> alive = alive_;
  capture_state::note_state_guard(
      this, [this, alive] { return alive.expired() ? 0 : capture_key(); },
      "optimizer '" + name_ + "' (options other than lr, parameters and state tensors)");
  capture_state::note_prerun(this, [this, alive] {
    if (alive.expired()) return;
    for (auto& g : groups_) detail::refresh_lr(g);
  });
}

Tensor Optimizer::step(const LossClosure& closure) {
  const bool capturing = capture_state::current_capture_id() != 0;
  const size_t state_before = capturing ? num_state_tensors() : 0;
  Tensor loss;
  if (closure) {
    EnableGradGuard eg;
    loss = closure();
  }
  NoGradGuard ng;
  for (auto& g : groups_) g.lr_tensor_reads = 0;
  for (auto& g : groups_) step_group(g);
  if (capturing) {
    // Every parameter with a gradient was updated; each fused update read the rate from
    // lr_tensor. Fewer reads than updates: some update baked the rate in as a constant.
    lr_baked_ = false;
    for (const auto& g : groups_) {
      int updated = 0;
      for (const Tensor& p : g.params) updated += p.grad().defined() ? 1 : 0;
      lr_baked_ = lr_baked_ || g.lr_tensor_reads < updated;
    }
    note_capture();  // after the updates: the guard's key knows whether the rate is baked in
  }
  if (capturing && num_state_tensors() != state_before)
    capture_state::note_retry("optimizer '" + name_ +
                              "' created its state in this step (its first): this call runs eagerly, the next is "
                              "captured");
  return loss;
}

const ParamState& Optimizer::state(const Tensor& param) const {
  bool member = false;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params) member = member || p.is_same(param);
  TANDEM_CHECK(member, ValueError, name_, "the tensor is not a parameter of this optimizer");
  static const ParamState empty_state;
  auto it = state_.find(param.impl());
  return it == state_.end() ? empty_state : it->second;
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict sd;
  sd.optimizer = name_;
  int64_t index = 0;
  for (const auto& g : groups_) {
    GroupStateDict gs;
    gs.options = g.options.values();
    for (const Tensor& p : g.params) {
      gs.params.push_back(index);
      auto it = state_.find(p.impl());
      if (it != state_.end()) {
        for (const auto& [name, t] : it->second) {
          NoGradGuard ng;
          sd.state.emplace_back(str_cat("state.", index, ".", name), t.detach().clone());
        }
      }
      ++index;
    }
    sd.param_groups.push_back(std::move(gs));
  }
  return sd;
}

void Optimizer::load_state_dict(const OptimizerStateDict& sd) {
  const std::string op = name_ + ".load_state_dict";
  TANDEM_CHECK(sd.optimizer == name_, ValueError, op, "got the state of a ", sd.optimizer.empty() ? "(unnamed)" : sd.optimizer,
               " optimizer, expected ", name_);
  TANDEM_CHECK(sd.param_groups.size() == groups_.size(), ValueError, op,
               "loaded state dict has a different number of parameter groups: got ", sd.param_groups.size(),
               ", expected ", groups_.size());
  std::vector<const Tensor*> params;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    TANDEM_CHECK(sd.param_groups[gi].params.size() == groups_[gi].params.size(), ValueError, op,
                 "loaded state dict contains a parameter group that doesn't match the size of optimizer's group (group ",
                 gi, ": got ", sd.param_groups[gi].params.size(), " parameters, expected ", groups_[gi].params.size(), ")");
    for (const Tensor& p : groups_[gi].params) params.push_back(&p);
  }
  // PyTorch maps the saved ids to the parameters in order; ours must be those indices.
  std::unordered_map<int64_t, size_t> id_to_param;
  {
    size_t k = 0;
    for (size_t gi = 0; gi < sd.param_groups.size(); ++gi)
      for (int64_t id : sd.param_groups[gi].params) {
        TANDEM_CHECK(id_to_param.emplace(id, k).second, ValueError, op, "parameter id ", id,
                     " appears twice in param_groups");
        ++k;
      }
  }
  std::vector<Options> new_options;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Options o = complete_options(op, defaults_, Options(sd.param_groups[gi].options), /*allow_unknown=*/true);
    validate(o);
    new_options.push_back(std::move(o));
  }
  const std::vector<std::string> names = state_names();
  std::vector<ParamState> new_state(params.size());
  for (const auto& [key, value] : sd.state) {
    // "state.<id>.<name>"
    const std::string prefix = "state.";
    TANDEM_CHECK(key.rfind(prefix, 0) == 0, ValueError, op, "malformed state key '", key,
                 "', expected 'state.<param_index>.<name>'");
    const size_t dot = key.find('.', prefix.size());
    TANDEM_CHECK(dot != std::string::npos && dot > prefix.size(), ValueError, op, "malformed state key '", key,
                 "', expected 'state.<param_index>.<name>'");
    const std::string id_str = key.substr(prefix.size(), dot - prefix.size());
    const std::string sname = key.substr(dot + 1);
    TANDEM_CHECK(std::all_of(id_str.begin(), id_str.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                     id_str.size() < 18,
                 ValueError, op, "malformed state key '", key, "', expected 'state.<param_index>.<name>'");
    const int64_t id = std::stoll(id_str);
    auto it = id_to_param.find(id);
    TANDEM_CHECK(it != id_to_param.end(), ValueError, op, "state key '", key, "' names parameter ", id,
                 ", which is not in param_groups");
    TANDEM_CHECK(std::find(names.begin(), names.end(), sname) != names.end(), ValueError, op, "state key '", key,
                 "': unknown state '", sname, "' for ", name_, ", expected one of ", join(names));
    TANDEM_CHECK(value.defined(), ValueError, op, "state key '", key, "' holds an undefined tensor");
    const Tensor& p = *params[it->second];
    NoGradGuard ng;
    Tensor t;
    if (sname == "step") {
      TANDEM_CHECK(value.numel() == 1, ShapeError, op, "state key '", key, "': step must have one element, got ",
                   value.numel());
      t = value.detach().reshape({}).to(DType::Float32, /*copy=*/true);
    } else {
      TANDEM_CHECK(value.sizes().equals(p.sizes()), ShapeError, op, "state key '", key, "' has shape ",
                   value.sizes(), ", expected the parameter's shape ", p.sizes());
      TANDEM_CHECK(value.is_floating_point(), TypeError, op, "state key '", key, "' has dtype ",
                   dtype_name(value.dtype()), ", expected a floating dtype");
      t = value.detach().to(p.dtype(), /*copy=*/true).contiguous();
    }
    TANDEM_CHECK(new_state[it->second].emplace(sname, t).second, ValueError, op, "duplicate state key '", key, "'");
  }
  // Commit.
  for (size_t gi = 0; gi < groups_.size(); ++gi) groups_[gi].options = std::move(new_options[gi]);
  for (size_t k = 0; k < params.size(); ++k) {
    if (new_state[k].empty())
      state_.erase(params[k]->impl());
    else
      state_[params[k]->impl()] = std::move(new_state[k]);
  }
}

}  // namespace tandem::optim
