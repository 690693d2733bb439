#include "tandem/optim/lr_scheduler.h"

#include "tandem/core/capture_state.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tandem::optim {

namespace {
constexpr double kPi = std::numbers::pi;

// One number of a state dict; ValueError naming the scheduler when missing or not scalar.
double scalar_entry(const std::string& sched, const std::map<std::string, std::vector<double>>& v,
                    const std::string& key) {
  auto it = v.find(key);
  TANDEM_CHECK(it != v.end(), ValueError, sched + ".load_state_dict", "missing entry '", key, "'");
  TANDEM_CHECK(it->second.size() == 1, ValueError, sched + ".load_state_dict", "entry '", key,
               "' must hold one number, got ", it->second.size());
  return it->second[0];
}

const std::vector<double>& list_entry(const std::string& sched, const std::map<std::string, std::vector<double>>& v,
                                      const std::string& key) {
  auto it = v.find(key);
  TANDEM_CHECK(it != v.end(), ValueError, sched + ".load_state_dict", "missing entry '", key, "'");
  return it->second;
}

int64_t int_entry(const std::string& sched, const std::map<std::string, std::vector<double>>& v,
                  const std::string& key) {
  const double d = scalar_entry(sched, v, key);
  TANDEM_CHECK(d == std::floor(d) && std::fabs(d) < 9.0e15, ValueError, sched + ".load_state_dict", "entry '", key,
               "' must be an integer, got ", d);
  return static_cast<int64_t>(d);
}

// Python's floor modulo for a positive divisor.
int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}
}  // namespace

// ---------------------------------------------------------------- base
LRScheduler::LRScheduler(std::string name, Optimizer& optimizer, int64_t last_epoch)
    : name_(std::move(name)), optimizer_(&optimizer), last_epoch_(last_epoch) {
  auto& groups = optimizer.param_groups();
  if (last_epoch == -1) {
    for (auto& g : groups)
      if (!g.options.has("initial_lr")) g.options.set("initial_lr", g.options.lr());
  } else {
    for (size_t i = 0; i < groups.size(); ++i)
      TANDEM_CHECK(groups[i].options.has("initial_lr"), ValueError, name_,
                   "param 'initial_lr' is not specified in param_groups[", i, "] when resuming an optimizer");
  }
  for (auto& g : groups) base_lrs_.push_back(g.options.get("initial_lr"));
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_->param_groups()) lrs.push_back(g.options.lr());
  return lrs;
}

void LRScheduler::apply_lrs(const std::vector<double>& lrs) {
  // A C++ number, not an op: a compiled function could not replay the change (every
  // replay would keep the rate of the capture). Step schedulers outside compiled code.
  capture_state::note_break(
      "a learning-rate scheduler stepped inside a compiled function (it sets C++ numbers a program cannot replay; "
      "call scheduler.step() outside the compiled step)");
  auto& groups = optimizer_->param_groups();
  // Groups added after the scheduler was built are left alone (PyTorch zips too).
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].options.lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply_lrs(get_lr());
}

void LRScheduler::step(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  auto closed = closed_form_lr();
  apply_lrs(closed ? *closed : get_lr());
}

SchedulerStateDict LRScheduler::state_dict() const {
  SchedulerStateDict sd;
  sd.scheduler = name_;
  sd.values["last_epoch"] = {static_cast<double>(last_epoch_)};
  sd.values["step_count"] = {static_cast<double>(step_count_)};
  sd.values["base_lrs"] = base_lrs_;
  sd.values["last_lr"] = last_lr_;
  save_extra(sd.values);
  return sd;
}

void LRScheduler::load_state_dict(const SchedulerStateDict& sd) {
  const std::string op = name_ + ".load_state_dict";
  TANDEM_CHECK(sd.scheduler == name_, ValueError, op, "got the state of a ",
               sd.scheduler.empty() ? "(unnamed)" : sd.scheduler, " scheduler, expected ", name_);
  const size_t ngroups = optimizer_->param_groups().size();
  const auto& base = list_entry(name_, sd.values, "base_lrs");
  const auto& last = list_entry(name_, sd.values, "last_lr");
  TANDEM_CHECK(base.size() == ngroups && last.size() == ngroups, ValueError, op, "the state has ", base.size(),
               " base_lrs and ", last.size(), " last_lr, expected one per parameter group (", ngroups, ")");
  const int64_t le = int_entry(name_, sd.values, "last_epoch");
  const int64_t sc = int_entry(name_, sd.values, "step_count");
  load_extra(sd.values);  // validates before anything below changes
  last_epoch_ = le;
  step_count_ = sc;
  base_lrs_ = base;
  last_lr_ = last;
}

// ---------------------------------------------------------------- StepLR
StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler("StepLR", optimizer, last_epoch), step_size_(step_size), gamma_(gamma) {
  TANDEM_CHECK(step_size >= 1, ValueError, "StepLR", "step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || py_mod(last_epoch_, step_size_) != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() {
  std::vector<double> lrs;
  const int64_t q = last_epoch_ >= 0 ? last_epoch_ / step_size_ : -((-last_epoch_ + step_size_ - 1) / step_size_);
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(q)));
  return lrs;
}

void StepLR::save_extra(std::map<std::string, std::vector<double>>& v) const {
  v["step_size"] = {static_cast<double>(step_size_)};
  v["gamma"] = {gamma_};
}

void StepLR::load_extra(const std::map<std::string, std::vector<double>>& v) {
  const int64_t ss = int_entry(name_, v, "step_size");
  TANDEM_CHECK(ss >= 1, ValueError, name_ + ".load_state_dict", "step_size must be positive, got ", ss);
  gamma_ = scalar_entry(name_, v, "gamma");
  step_size_ = ss;
}

// ---------------------------------------------------------------- MultiStepLR
MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma, int64_t last_epoch)
    : LRScheduler("MultiStepLR", optimizer, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  // Python's gamma ** count with an int exponent.
  const double f = std::pow(gamma_, static_cast<double>(count));
  for (double& lr : lrs) lr *= f;
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  const auto n = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(n)));
  return lrs;
}

void MultiStepLR::save_extra(std::map<std::string, std::vector<double>>& v) const {
  v["milestones"] = std::vector<double>(milestones_.begin(), milestones_.end());
  v["gamma"] = {gamma_};
}

void MultiStepLR::load_extra(const std::map<std::string, std::vector<double>>& v) {
  const auto& ms = list_entry(name_, v, "milestones");
  std::vector<int64_t> m;
  for (double d : ms) {
    TANDEM_CHECK(d == std::floor(d) && std::fabs(d) < 9.0e15, ValueError, name_ + ".load_state_dict",
                 "milestones must be integers, got ", d);
    m.push_back(static_cast<int64_t>(d));
  }
  std::sort(m.begin(), m.end());
  gamma_ = scalar_entry(name_, v, "gamma");
  milestones_ = std::move(m);
}

// ---------------------------------------------------------------- ExponentialLR
ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler("ExponentialLR", optimizer, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  std::vector<double> lrs;
  for (double b : base_lrs_) lrs.push_back(b * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

void ExponentialLR::save_extra(std::map<std::string, std::vector<double>>& v) const { v["gamma"] = {gamma_}; }
void ExponentialLR::load_extra(const std::map<std::string, std::vector<double>>& v) {
  gamma_ = scalar_entry(name_, v, "gamma");
}

// ---------------------------------------------------------------- CosineAnnealingLR
CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler("CosineAnnealingLR", optimizer, last_epoch), T_max_(T_max), eta_min_(eta_min) {
  TANDEM_CHECK(T_max >= 1, ValueError, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * kPi / T)) / 2;
    return lrs;
  }
  if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    return lrs;
  }
  for (double& lr : lrs)
    lr = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> lrs;
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  for (double b : base_lrs_) lrs.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * e / T)) / 2);
  return lrs;
}

void CosineAnnealingLR::save_extra(std::map<std::string, std::vector<double>>& v) const {
  v["T_max"] = {static_cast<double>(T_max_)};
  v["eta_min"] = {eta_min_};
}

void CosineAnnealingLR::load_extra(const std::map<std::string, std::vector<double>>& v) {
  const int64_t t = int_entry(name_, v, "T_max");
  TANDEM_CHECK(t >= 1, ValueError, name_ + ".load_state_dict", "T_max must be positive, got ", t);
  eta_min_ = scalar_entry(name_, v, "eta_min");
  T_max_ = t;
}

// ---------------------------------------------------------------- LinearLR
LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters,
                   int64_t last_epoch)
    : LRScheduler("LinearLR", optimizer, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  TANDEM_CHECK(start_factor > 0 && start_factor <= 1, ValueError, "LinearLR",
               "Starting multiplicative factor expected to be greater than 0 and less or equal to 1, got ", start_factor);
  TANDEM_CHECK(end_factor >= 0 && end_factor <= 1, ValueError, "LinearLR",
               "Ending multiplicative factor expected to be between 0 and 1, got ", end_factor);
  TANDEM_CHECK(total_iters >= 1, ValueError, "LinearLR", "total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double f = 1. + (end_factor_ - start_factor_) /
                            (static_cast<double>(total_iters_) * start_factor_ +
                             static_cast<double>(last_epoch_ - 1) * (end_factor_ - start_factor_));
  for (double& lr : lrs) lr *= f;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  std::vector<double> lrs;
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double b : base_lrs_)
    lrs.push_back(b * (start_factor_ + (end_factor_ - start_factor_) * t / static_cast<double>(total_iters_)));
  return lrs;
}

void LinearLR::save_extra(std::map<std::string, std::vector<double>>& v) const {
  v["start_factor"] = {start_factor_};
  v["end_factor"] = {end_factor_};
  v["total_iters"] = {static_cast<double>(total_iters_)};
}

void LinearLR::load_extra(const std::map<std::string, std::vector<double>>& v) {
  const double s = scalar_entry(name_, v, "start_factor"), e = scalar_entry(name_, v, "end_factor");
  const int64_t t = int_entry(name_, v, "total_iters");
  TANDEM_CHECK(s > 0 && s <= 1 && e >= 0 && e <= 1 && t >= 1, ValueError, name_ + ".load_state_dict",
               "invalid factors or total_iters: ", s, ", ", e, ", ", t);
  start_factor_ = s;
  end_factor_ = e;
  total_iters_ = t;
}

// ---------------------------------------------------------------- OneCycleLR
namespace {
// PyTorch's _format_param: one value for all groups or one per group.
std::vector<double> per_group(const std::vector<double>& v, size_t ngroups, const char* what) {
  if (v.size() == 1) return std::vector<double>(ngroups, v[0]);
  TANDEM_CHECK(v.size() == ngroups, ValueError, "OneCycleLR", "expected ", ngroups, " values for ", what, ", got ",
               v.size());
  return v;
}

// Validates and prepares the optimizer's groups before the base constructor reads them.
Optimizer& one_cycle_prepare(Optimizer& optimizer, const OneCycleOptions& o, int64_t last_epoch) {
  const size_t n = optimizer.param_groups().size();
  if (o.total_steps) {
    TANDEM_CHECK(*o.total_steps > 0, ValueError, "OneCycleLR", "Expected positive integer total_steps, but got ",
                 *o.total_steps);
  } else {
    TANDEM_CHECK(o.epochs && o.steps_per_epoch, ValueError, "OneCycleLR",
                 "You must define either total_steps OR (epochs AND steps_per_epoch)");
    TANDEM_CHECK(*o.epochs > 0, ValueError, "OneCycleLR", "Expected positive integer epochs, but got ", *o.epochs);
    TANDEM_CHECK(*o.steps_per_epoch > 0, ValueError, "OneCycleLR",
                 "Expected positive integer steps_per_epoch, but got ", *o.steps_per_epoch);
  }
  TANDEM_CHECK(o.pct_start >= 0 && o.pct_start <= 1, ValueError, "OneCycleLR",
               "Expected float between 0 and 1 pct_start, but got ", o.pct_start);
  TANDEM_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear", ValueError, "OneCycleLR",
               "anneal_strategy must by one of 'cos' or 'linear', instead got ", o.anneal_strategy);
  const std::vector<double> max_lrs = per_group(o.max_lrs, n, "max_lr");
  std::vector<double> max_m, base_m;
  bool use_beta1 = false;
  if (o.cycle_momentum) {
    const Options& d = optimizer.defaults();
    TANDEM_CHECK(d.has("momentum") || d.has("beta1"), ValueError, "OneCycleLR",
                 "optimizer must support momentum with `cycle_momentum` option enabled (", optimizer.name(),
                 " has no momentum or beta1)");
    use_beta1 = d.has("beta1");
    max_m = per_group(o.max_momentums, n, "max_momentum");
    base_m = per_group(o.base_momentums, n, "base_momentum");
  }
  if (last_epoch == -1) {
    auto& groups = optimizer.param_groups();
    for (size_t i = 0; i < n; ++i) {
      Options& g = groups[i].options;
      g.set("initial_lr", max_lrs[i] / o.div_factor);
      g.set("max_lr", max_lrs[i]);
      g.set("min_lr", g.get("initial_lr") / o.final_div_factor);
      if (o.cycle_momentum) {
        g.set(use_beta1 ? "beta1" : "momentum", max_m[i]);
        g.set("max_momentum", max_m[i]);
        g.set("base_momentum", base_m[i]);
      }
    }
  }
  return optimizer;
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleOptions& o, int64_t last_epoch)
    : LRScheduler("OneCycleLR", one_cycle_prepare(optimizer, o, last_epoch), last_epoch) {
  total_steps_ = o.total_steps ? *o.total_steps : *o.epochs * *o.steps_per_epoch;
  pct_start_ = o.pct_start;
  linear_ = o.anneal_strategy == "linear";
  cycle_momentum_ = o.cycle_momentum;
  use_beta1_ = o.cycle_momentum && optimizer.defaults().has("beta1");
  three_phase_ = o.three_phase;
  build_phases();
  initial_step();
}

void OneCycleLR::build_phases() {
  const double total = static_cast<double>(total_steps_);
  if (three_phase_) {
    phases_ = {{pct_start_ * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * pct_start_ * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases_ = {{pct_start_ * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (linear_) return (end - start) * pct + start;
  const double cos_out = std::cos(kPi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  TANDEM_CHECK(step_num <= total_steps_, ValueError, "OneCycleLR", "Tried to step ", step_num + 1,
               " times. The specified number of total steps is ", total_steps_);
  std::vector<double> lrs;
  for (auto& g : optimizer_->param_groups()) {
    Options& o = g.options;
    double start_step = 0, lr = 0, momentum = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (static_cast<double>(step_num) <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (static_cast<double>(step_num) - start_step) / (ph.end_step - start_step);
        lr = anneal(o.get(ph.start_lr), o.get(ph.end_lr), pct);
        if (cycle_momentum_) momentum = anneal(o.get(ph.start_momentum), o.get(ph.end_momentum), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_) o.set(use_beta1_ ? "beta1" : "momentum", momentum);
  }
  return lrs;
}

void OneCycleLR::save_extra(std::map<std::string, std::vector<double>>& v) const {
  v["total_steps"] = {static_cast<double>(total_steps_)};
  v["pct_start"] = {pct_start_};
  v["anneal_linear"] = {linear_ ? 1.0 : 0.0};
  v["cycle_momentum"] = {cycle_momentum_ ? 1.0 : 0.0};
  v["use_beta1"] = {use_beta1_ ? 1.0 : 0.0};
  v["three_phase"] = {three_phase_ ? 1.0 : 0.0};
}

void OneCycleLR::load_extra(const std::map<std::string, std::vector<double>>& v) {
  // Read everything first: an error leaves the scheduler unchanged.
  const int64_t total = int_entry(name_, v, "total_steps");
  const double pct = scalar_entry(name_, v, "pct_start");
  const bool linear = scalar_entry(name_, v, "anneal_linear") != 0;
  const bool cycle = scalar_entry(name_, v, "cycle_momentum") != 0;
  const bool beta1 = scalar_entry(name_, v, "use_beta1") != 0;
  const bool three = scalar_entry(name_, v, "three_phase") != 0;
  TANDEM_CHECK(total > 0 && pct >= 0 && pct <= 1, ValueError, name_ + ".load_state_dict",
               "invalid total_steps or pct_start: ", total, ", ", pct);
  total_steps_ = total;
  pct_start_ = pct;
  linear_ = linear;
  cycle_momentum_ = cycle;
  use_beta1_ = beta1;
  three_phase_ = three;
  build_phases();
}

// ---------------------------------------------------------------- SequentialLR
SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler("SequentialLR", optimizer, -1), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  TANDEM_CHECK(!schedulers_.empty(), ValueError, "SequentialLR", "expected at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    TANDEM_CHECK(schedulers_[i] != nullptr, ValueError, "SequentialLR", "scheduler ", i, " is null");
    TANDEM_CHECK(&schedulers_[i]->optimizer() == &optimizer, ValueError, "SequentialLR",
                 "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got schedulers at "
                 "index ",
                 i, " to be different than the optimizer passed in.");
  }
  TANDEM_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError, "SequentialLR",
               "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
               "milestone points, but got number of schedulers ",
               schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = last_epoch + 1;
  for (auto& g : optimizer.param_groups()) g.options.lr(g.options.get("initial_lr"));
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const auto idx = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                                       milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s.step(0);
  else
    s.step();
  last_lr_ = s.get_last_lr();
}

void SequentialLR::step(int64_t epoch) {
  throw NotImplementedError(str_cat("[SequentialLR] step(epoch) is not supported, got epoch ", epoch));
}

SchedulerStateDict SequentialLR::state_dict() const {
  SchedulerStateDict sd;
  sd.scheduler = name_;
  sd.values["last_epoch"] = {static_cast<double>(last_epoch_)};
  sd.values["milestones"] = std::vector<double>(milestones_.begin(), milestones_.end());
  sd.values["last_lr"] = last_lr_;
  for (const auto& s : schedulers_) sd.children.push_back(s->state_dict());
  return sd;
}

void SequentialLR::load_state_dict(const SchedulerStateDict& sd) {
  const std::string op = name_ + ".load_state_dict";
  TANDEM_CHECK(sd.scheduler == name_, ValueError, op, "got the state of a ",
               sd.scheduler.empty() ? "(unnamed)" : sd.scheduler, " scheduler, expected ", name_);
  TANDEM_CHECK(sd.children.size() == schedulers_.size(), ValueError, op, "the state has ", sd.children.size(),
               " schedulers, expected ", schedulers_.size());
  const int64_t le = int_entry(name_, sd.values, "last_epoch");
  const auto& ms = list_entry(name_, sd.values, "milestones");
  TANDEM_CHECK(ms.size() == milestones_.size(), ValueError, op, "the state has ", ms.size(),
               " milestones, expected ", milestones_.size());
  const auto& last = list_entry(name_, sd.values, "last_lr");
  for (double m : ms)
    TANDEM_CHECK(m == std::floor(m) && std::fabs(m) < 9.0e15, ValueError, op, "milestones must be integers, got ", m);
  // Check every child before changing anything: load into each in turn, restoring on error.
  std::vector<SchedulerStateDict> before;
  for (const auto& s : schedulers_) before.push_back(s->state_dict());
  try {
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(sd.children[i]);
  } catch (...) {
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(before[i]);
    throw;
  }
  last_epoch_ = le;
  for (size_t i = 0; i < ms.size(); ++i) milestones_[i] = static_cast<int64_t>(ms[i]);
  last_lr_ = last;
}

}  // namespace tandem::optim
