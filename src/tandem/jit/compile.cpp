#include "tandem/jit/compile.h"

#include <iostream>
#include <sstream>

#include "tandem/autograd/node.h"
#include "tandem/core/grad_mode.h"
#include "tandem/dispatch/autocast.h"
#include "tandem/jit/check.h"
#include "tandem/passes/pass_manager.h"

namespace tandem::jit {

bool Signature::operator==(const Signature& o) const {
  if (inputs.size() != o.inputs.size() || grad_enabled != o.grad_enabled || training != o.training ||
      autocast != o.autocast || distinct_views != o.distinct_views || extra != o.extra ||
      alias_groups != o.alias_groups)
    return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &a = inputs[i], &b = o.inputs[i];
    if (a.dtype != b.dtype || a.requires_grad != b.requires_grad || a.sizes != b.sizes || a.strides != b.strides ||
        a.wrapped_number != b.wrapped_number)
      return false;
  }
  return true;
}

namespace {
std::string input_label(const Signature& s, size_t i) {
  if (i < s.input_names.size() && !s.input_names[i].empty()) return "input '" + s.input_names[i] + "'";
  return str_cat("input ", i);
}
std::string extra_label(const Signature& s, size_t i) {
  if (i < s.extra_names.size() && !s.extra_names[i].empty()) return s.extra_names[i];
  return str_cat("caller state ", i);
}
const char* onoff(bool b) { return b ? "true" : "false"; }
}  // namespace

std::string Signature::diff(const Signature& o) const {
  // `o` is the earlier signature, *this the new one: "what changed from o to this".
  if (inputs.size() != o.inputs.size()) {
    std::string s = str_cat("number of inputs ", o.inputs.size(), " -> ", inputs.size());
    if (extra.size() != o.extra.size() || extra_names != o.extra_names)
      s += " (parameters or buffers were added or removed)";
    return s;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &a = o.inputs[i], &b = inputs[i];
    const std::string who = input_label(*this, i);
    if (a.sizes != b.sizes) return str_cat(who, " sizes ", IntArrayRef(a.sizes), " -> ", IntArrayRef(b.sizes));
    if (a.dtype != b.dtype) return str_cat(who, " dtype ", dtype_name(a.dtype), " -> ", dtype_name(b.dtype));
    if (a.strides != b.strides) return str_cat(who, " strides ", IntArrayRef(a.strides), " -> ", IntArrayRef(b.strides));
    if (a.requires_grad != b.requires_grad)
      return str_cat(who, " requires_grad ", onoff(a.requires_grad), " -> ", onoff(b.requires_grad));
    if (a.wrapped_number != b.wrapped_number)
      return str_cat(who, a.wrapped_number ? " was a C++ number, now a tensor" : " was a tensor, now a C++ number");
  }
  if (alias_groups != o.alias_groups) {
    for (size_t i = 0; i < alias_groups.size(); ++i)
      if (alias_groups[i] != o.alias_groups[i])
        return str_cat("which inputs share storage (", input_label(*this, i), " now ",
                       alias_groups[i] == static_cast<int>(i) || alias_groups[i] > static_cast<int>(i)
                           ? "has its own storage"
                           : "shares storage with " + input_label(*this, static_cast<size_t>(alias_groups[i])),
                       ")");
    return "which inputs share storage";
  }
  if (distinct_views != o.distinct_views) return "inputs that are different views of one storage";
  if (grad_enabled != o.grad_enabled) return str_cat("grad mode ", onoff(o.grad_enabled), " -> ", onoff(grad_enabled));
  if (training != o.training) return str_cat("training flag ", onoff(o.training), " -> ", onoff(training));
  if (autocast != o.autocast)
    return str_cat("autocast ", tandem::autocast::state_name(o.autocast), " -> ",
                   tandem::autocast::state_name(autocast));
  if (extra.size() != o.extra.size()) return "caller state (parameters, buffers or submodules added or removed)";
  for (size_t i = 0; i < extra.size(); ++i)
    if (extra[i] != o.extra[i]) return extra_label(*this, i);
  return "nothing";
}

std::vector<std::string> Signature::describe() const {
  std::vector<std::string> g;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    g.push_back(str_cat(input_label(*this, i), ": ", dtype_name(in.dtype), IntArrayRef(in.sizes), " strides ",
                        IntArrayRef(in.strides), in.requires_grad ? " requires_grad" : ""));
  }
  std::string alias;
  for (size_t i = 0; i < alias_groups.size(); ++i)
    if (alias_groups[i] != static_cast<int>(i))
      alias += str_cat(alias.empty() ? "" : ", ", input_label(*this, i), " shares storage with ",
                       input_label(*this, static_cast<size_t>(alias_groups[i])));
  g.push_back("storage sharing between inputs: " + (alias.empty() ? std::string("none") : alias) +
              (distinct_views ? " (different views: runs eagerly)" : ""));
  g.push_back(str_cat("grad mode ", grad_enabled ? "on" : "off"));
  g.push_back(str_cat("training flag ", onoff(training)));
  g.push_back(str_cat("autocast ", tandem::autocast::state_name(autocast)));
  for (size_t i = 0; i < extra.size(); ++i) g.push_back(str_cat(extra_label(*this, i), " = ", extra[i]));
  return g;
}

CompiledFunction::CompiledFunction(TensorFn fn, CompileOptions opts) : fn_(std::move(fn)), opts_(std::move(opts)) {}

void signature_of(const std::vector<Tensor>& inputs, const CallState& state, Signature& s) {
  s.grad_enabled = is_grad_enabled();
  s.autocast = autocast::state_key();
  s.training = state.training;
  if (state.extra) s.extra = *state.extra;
  else s.extra.clear();
  s.inputs.resize(inputs.size());
  s.alias_groups.resize(inputs.size());
  s.input_names.clear();
  s.extra_names.clear();
  s.distinct_views = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    TANDEM_CHECK(t.defined(), ValueError, "compiled function", "got an undefined input tensor (input ", i, ")");
    auto& in = s.inputs[i];
    in.dtype = t.dtype();
    in.sizes.assign(t.sizes().begin(), t.sizes().end());
    in.strides.assign(t.strides().begin(), t.strides().end());
    in.requires_grad = t.requires_grad();
    in.wrapped_number = t.impl()->is_wrapped_number();
    // Group = index of the first input with the same storage.
    const StorageImpl* st = t.storage().get();
    int group = static_cast<int>(i);
    for (size_t j = 0; j < i; ++j)
      if (inputs[j].storage().get() == st) {
        group = s.alias_groups[j];
        s.distinct_views = s.distinct_views || inputs[j].impl() != t.impl();
        break;
      }
    s.alias_groups[i] = group;
  }
}

void CompiledFunction::warn_once(const std::string& key, const std::string& msg) {
  if (std::find(warned_keys_.begin(), warned_keys_.end(), key) != warned_keys_.end()) return;
  warned_keys_.push_back(key);
  warnings_.push_back(msg);
  std::cerr << "tandem: " << msg << "\n";
}

std::unique_ptr<runtime::Executor> build_program(Capture& c, const CompileOptions& opts) {
  passes::PassManager pm;
  for (const auto& name : opts.disabled_passes) pm.set_enabled(name, false);
  pm.run(c.graph);
  ir::verify(c.graph);
  auto exec = std::make_unique<runtime::Executor>(std::move(c.graph));
  exec->set_profiling(opts.profile);
  // A training step allocates each value when made and frees it after its last use, as
  // eager mode does: one arena for the whole step would hold the forward's activations
  // until the updates (its peak would exceed eager's by the arena).
  if (c.user_backward) exec->set_use_arena(false);
  if (opts.memory_budget != 0) exec->fit_memory_budget(opts.memory_budget);
  return exec;
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) { return call(inputs, CallState{}); }

std::vector<Tensor> CompiledFunction::call(const std::vector<Tensor>& inputs, bool training, uint64_t extra) {
  std::vector<uint64_t> e{extra};
  CallState st;
  st.training = training;
  st.extra = &e;
  return call(inputs, st);
}

namespace {
// Whether a lifted tensor shares storage with one of the inputs (the graph would treat
// them as independent).
bool lifted_aliases_input(const std::vector<Tensor>& lifted, const std::vector<Tensor>& inputs) {
  for (const Tensor& l : lifted)
    for (const Tensor& t : inputs)
      if (l.storage().get() == t.storage().get()) return true;
  return false;
}
}  // namespace

std::vector<Tensor> CompiledFunction::run_eager(const std::vector<Tensor>& inputs) {
  ++eager_calls_;
  return fn_(inputs);
}

std::vector<Tensor> CompiledFunction::call(const std::vector<Tensor>& inputs, const CallState& state) {
  // Called while another function is being captured (a compiled module inside a compiled
  // training step): run the function itself, so the outer capture records its ops (a
  // program run here would be invisible to it, and a nested capture would clobber its notes).
  if (capture_state::capture_depth() > 0) [[unlikely]]
    return fn_(inputs);
  if (given_up_) return run_eager(inputs);
  Signature& sig = sig_;
  signature_of(inputs, state, sig);
  std::string state_changed;  // a cached program whose module state no longer holds
  for (size_t idx = 0; idx < cache_.size(); ++idx) {
    Entry& e = cache_[idx];
    if (!(e.sig == sig)) continue;
    const capture_state::StateGuard* stale = nullptr;
    for (const auto& g : e.state_guards)
      if (g.value() != g.expected) {
        stale = &g;
        break;
      }
    if (stale) {
      if (state_changed.empty()) state_changed = "state of " + stale->what + " changed";
      continue;
    }
    runtime::Executor* prog = e.exec ? e.exec.get() : e.train ? e.train->forward.get() : nullptr;
    if (!prog) {
      last_entry_ = static_cast<int>(idx);
      return run_eager(inputs);
    }
    // Lifted tensors must still look as they did at capture (bound by reference),
    // including whether they require grad (which decides what the programs compute).
    bool lifted_ok = true;
    const auto& gin = prog->graph().inputs();
    for (size_t k = 0; k < e.lifted.size(); ++k) {
      const auto& m = prog->graph().value(gin[inputs.size() + k]).meta;
      lifted_ok = lifted_ok && e.lifted[k].sizes().equals(m.sizes) && e.lifted[k].dtype() == m.dtype &&
                  e.lifted[k].strides().equals(m.strides) &&
                  (is_grad_enabled() ? e.lifted[k].requires_grad() == e.lifted_requires_grad[k] : true);
    }
    if (!lifted_ok || lifted_aliases_input(e.lifted, inputs)) continue;
    last_entry_ = static_cast<int>(idx);
    ++compiled_calls_;
    last_ = prog;
    if (check_every_compiled_call() && e.user_backward) {
      // A training step: eagerly, state put back, then the program, which takes the step.
      std::vector<Tensor> outs;
      CheckReport rep = check_step_entry(e, inputs, outs);
      TANDEM_CHECK(rep.equal, RuntimeError, "compile",
                   "TANDEM_CHECK_COMPILED: the compiled training step gives another result than eager mode for this "
                   "call: ", rep.first_difference);
      return outs;
    }
    if (check_every_compiled_call()) {
      // TANDEM_CHECK_COMPILED: this call eagerly and through the cached program, on copies.
      CheckReport rep = check_last(inputs);
      TANDEM_CHECK(rep.equal, RuntimeError, "compile",
                   "TANDEM_CHECK_COMPILED: the cached program gives another result than eager mode for this call: ",
                   rep.first_difference,
                   " (a value baked in at capture, such as a C++ number the function captured by reference, changed? "
                   "see explain() for the constants; compile_with_scalars makes numbers inputs)");
    }
    std::vector<Tensor> all = inputs;
    all.insert(all.end(), e.lifted.begin(), e.lifted.end());
    if (e.train) {
      last_train_ = e.train.get();
      return run_training_program(e.train, all);
    }
    return replay(e, std::move(all));
  }
  // A miss: name the inputs and state for messages, then compare with the previous call.
  if (state.input_names) sig.input_names = *state.input_names;
  if (state.extra_names) sig.extra_names = *state.extra_names;
  const Signature* prev = last_entry_ >= 0 ? &cache_[static_cast<size_t>(last_entry_)].sig
                                           : (last_sig_ ? &*last_sig_ : nullptr);
  std::string what = !state_changed.empty() ? state_changed : prev ? sig.diff(*prev) : std::string("the inputs");
  if (static_cast<int>(cache_.size()) >= opts_.recompile_limit) {
    given_up_ = true;
    warn_once("limit", str_cat("compiled function hit the recompile limit (", opts_.recompile_limit,
                               "); running eagerly from now on. What kept changing: ", what));
    return run_eager(inputs);
  }
  if (prev) recompile_reasons_.push_back(what);
  // Restored if the capture is a retry (then this call recompiled nothing).
  const std::optional<Signature> prev_sig = last_sig_;
  const int prev_entry = last_entry_;
  Entry e;
  e.sig = sig;
  last_sig_ = sig;
  // last_entry_ moves to the new entry only once it is in the cache: a capture that raises
  // (bad input: eager's error) must not leave it pointing past the end.
  last_entry_ = -1;
  auto keep = [&](Entry&& entry) {
    cache_.push_back(std::move(entry));
    last_entry_ = static_cast<int>(cache_.size()) - 1;
  };
  if (sig.distinct_views) {
    e.break_reason = "two inputs are different views of one storage";
    warn_once("views", e.break_reason + ": such calls run eagerly (pass the same tensor, or copies)");
    keep(std::move(e));
    return run_eager(inputs);
  }
  ++captures_;
  Capture c = capture(fn_, inputs, sig.input_names, /*with_backward=*/is_grad_enabled());
  if (c.ok && !c.retry_reason.empty()) {
    // Nothing is kept: the next call captures again (and names no recompile reason).
    ++retries_;
    ++eager_calls_;
    if (prev) recompile_reasons_.pop_back();
    last_sig_ = prev_sig;
    last_entry_ = prev_entry;
    if (retries_ > opts_.recompile_limit) {
      given_up_ = true;
      warn_once("retries", str_cat("compiled function could not keep a program after ", retries_,
                                   " captures; running eagerly from now on. The last reason: ", c.retry_reason));
    }
    return c.outputs;
  }
  if (c.ok && !c.has_backward && !c.user_backward)
    for (const Tensor& o : c.outputs)
      if (o.defined() && o.requires_grad()) {
        // Outputs with history but nothing the program could differentiate for (a leaf the
        // function made itself): only eager mode gives them their history.
        c.ok = false;
        c.break_reason = "an output requires grad through a tensor that is neither an input nor read by the function";
      }
  if (c.ok && lifted_aliases_input(c.lifted, inputs)) {
    c.ok = false;
    c.break_reason = "a tensor the function reads (not an input) shares storage with an input";
  }
  if (!c.ok) {
    if (opts_.strict) throw GraphBreak(c.break_reason);
    warn_once("break:" + c.break_reason, "graph break: " + c.break_reason + "; this signature runs eagerly");
    e.break_reason = c.break_reason;
    e.state_guards = c.state_guards;
    keep(std::move(e));
    ++eager_calls_;
    return c.outputs;
  }
  e.lifted = c.lifted;
  e.captured_ops = c.captured_ops;
  e.user_backward = c.user_backward;
  e.num_user_outputs = c.num_user_outputs;
  e.grad_bindings = c.grad_bindings;
  e.freed_outputs = c.freed_outputs;
  e.prerun = std::move(c.prerun);
  for (const Tensor& t : c.lifted) e.lifted_requires_grad.push_back(t.requires_grad());
  e.state_guards = c.state_guards;
  std::vector<Tensor> outputs = std::move(c.outputs);
  if (c.has_backward) {
    TANDEM_CHECK(opts_.memory_budget == 0, NotImplementedError, "compile",
                 "memory_budget applies to programs that run whole; this call needs gradients and would split into "
                 "forward and backward programs: compile the whole training step (a function that calls backward() "
                 "and the optimizer's step()) to train under a budget");
    e.train = build_training_program(c, opts_);
  } else {
    e.exec = build_program(c, opts_);
  }
  keep(std::move(e));
  ++eager_calls_;  // the capturing call itself ran eagerly
  return outputs;
}

std::vector<Tensor> CompiledFunction::replay(Entry& e, std::vector<Tensor>&& all) {
  for (const auto& a : e.prerun) a.run();
  // A .grad the program replaces without reading it goes now, as eager's zero_grad lets it
  // go at the start of a step (a caller holding it keeps it).
  for (const auto& b : e.grad_bindings)
    if (b.drop_first)
      if (autograd::AutogradMeta* m = autograd::get_meta(b.owner)) m->grad = Tensor();
  std::vector<Tensor> outs = e.exec->run(std::move(all));
  // (A binding to "undefined" has no output: test the bindings, not the output count.)
  if (e.grad_bindings.empty() && e.freed_outputs.empty()) return outs;
  // A training step: bind each .grad it rebinds (as its eager run did), and give results
  // whose graph its backward freed a node that raises eager's error.
  for (const auto& b : e.grad_bindings) {
    autograd::AutogradMeta& m = autograd::ensure_meta(b.owner);
    m.grad = b.output >= 0 ? outs[static_cast<size_t>(b.output)] : Tensor();
  }
  outs.resize(e.num_user_outputs);
  for (size_t k = 0; k < e.freed_outputs.size() && k < outs.size(); ++k)
    if (!e.freed_outputs[k].empty()) outs[k] = with_freed_history(outs[k], e.freed_outputs[k]);
  return outs;
}

CheckReport CompiledFunction::check_step_entry(Entry& e, const std::vector<Tensor>& inputs, std::vector<Tensor>& outs) {
  std::vector<Tensor> owners;
  for (const auto& b : e.grad_bindings) owners.push_back(b.owner);
  return check_step(
      fn_, inputs,
      [&] {
        std::vector<Tensor> all = inputs;
        all.insert(all.end(), e.lifted.begin(), e.lifted.end());
        return replay(e, std::move(all));
      },
      e.lifted, owners, outs);
}

CheckReport CompiledFunction::check_last(const std::vector<Tensor>& inputs) {
  CheckReport none;
  if (last_entry_ < 0) {
    none.break_reason = "no call has been compiled yet";
    return none;
  }
  Entry& e = cache_[static_cast<size_t>(last_entry_)];
  if (e.user_backward && e.exec) {
    std::vector<Tensor> outs;
    return check_step_entry(e, inputs, outs);
  }
  runtime::Executor* prog = e.exec ? e.exec.get() : e.train ? e.train->forward.get() : nullptr;
  if (!prog) {
    none.break_reason = e.break_reason;
    return none;
  }
  std::vector<Tensor> in = inputs;
  in.resize(std::min(in.size(), prog->graph().inputs().size() - e.lifted.size()));
  return check_program(fn_, in, *prog, e.lifted, e.train ? &e.train->forward_origin : nullptr, e.captured_ops);
}

const std::vector<Tensor>& CompiledFunction::last_lifted() const {
  static const std::vector<Tensor> none;
  return last_entry_ >= 0 ? cache_[static_cast<size_t>(last_entry_)].lifted : none;
}

std::shared_ptr<CompiledFunction> compile(TensorFn fn, CompileOptions opts) {
  return std::make_shared<CompiledFunction>(std::move(fn), std::move(opts));
}

ScalarCompiledFunction::ScalarCompiledFunction(ScalarTensorFn fn, CompileOptions opts)
    : num_tensors_(std::make_shared<size_t>(0)) {
  auto n = num_tensors_;
  fn_ = std::make_unique<CompiledFunction>(
      [fn = std::move(fn), n](const std::vector<Tensor>& all) {
        const auto split = all.begin() + static_cast<std::ptrdiff_t>(std::min(*n, all.size()));
        return fn(std::vector<Tensor>(all.begin(), split), std::vector<Tensor>(split, all.end()));
      },
      std::move(opts));
}

std::vector<Tensor> ScalarCompiledFunction::operator()(const std::vector<Tensor>& tensors,
                                                       const std::vector<Scalar>& scalars) {
  std::vector<Tensor> all = tensors;
  for (const Scalar& s : scalars) all.push_back(wrap_scalar(s));
  *num_tensors_ = tensors.size();
  return (*fn_)(all);
}

std::shared_ptr<ScalarCompiledFunction> compile_with_scalars(ScalarTensorFn fn, CompileOptions opts) {
  return std::make_shared<ScalarCompiledFunction>(std::move(fn), std::move(opts));
}

std::string Explanation::to_string() const {
  std::ostringstream os;
  os << "compiled: " << (compiled ? "yes" : "no") << "\n";
  if (!break_reason.empty()) os << "graph break: " << break_reason << "\n";
  os << "captured ops (" << captured_ops.size() << "):";
  for (const auto& o : captured_ops) os << " " << o;
  os << "\nguards:\n";
  for (const auto& g : guards) os << "  " << g << "\n";
  if (compiled) {
    os << "planned memory: arena " << arena_bytes << " bytes, lower bound " << lower_bound_bytes << " bytes\n";
    os << graph_text;
  }
  return os.str();
}

Explanation explain(const TensorFn& fn, const std::vector<Tensor>& inputs, const CompileOptions& opts,
                    const CallState& state) {
  Explanation ex;
  Signature sig;
  signature_of(inputs, state, sig);
  if (state.input_names) sig.input_names = *state.input_names;
  if (state.extra_names) sig.extra_names = *state.extra_names;
  Capture c = capture(fn, inputs, sig.input_names);
  ex.captured_ops = c.captured_ops;
  ex.break_reason = c.break_reason;
  ex.guards = sig.describe();
  for (size_t k = 0; k < c.lifted.size(); ++k)
    ex.guards.push_back(str_cat("lifted tensor ", k, " (read by fn but not passed in; bound by reference, so ",
                                "in-place updates are seen but replacing it is not): ", dtype_name(c.lifted[k].dtype()),
                                c.lifted[k].sizes()));
  for (const auto& g : c.state_guards) ex.guards.push_back("state of " + g.what);
  for (const auto& b : c.baked_constants) ex.guards.push_back("constant: " + b);
  if (c.ok) {
    auto exec = build_program(c, opts);
    ex.compiled = true;
    ex.graph_text = exec->graph().to_text();
    ex.arena_bytes = exec->plan().arena_bytes;
    ex.lower_bound_bytes = exec->plan().lower_bound;
  }
  return ex;
}

}  // namespace tandem::jit
