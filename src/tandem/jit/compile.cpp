#include "tandem/jit/compile.h"

#include <iostream>
#include <sstream>

#include "tandem/core/grad_mode.h"
#include "tandem/passes/pass_manager.h"

namespace tandem::jit {

bool Signature::operator==(const Signature& o) const {
  if (inputs.size() != o.inputs.size() || grad_enabled != o.grad_enabled || training != o.training ||
      extra != o.extra || alias_groups != o.alias_groups)
    return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &a = inputs[i], &b = o.inputs[i];
    if (a.dtype != b.dtype || a.sizes != b.sizes || a.strides != b.strides || a.requires_grad != b.requires_grad) return false;
  }
  return true;
}

std::string Signature::diff(const Signature& o) const {
  if (inputs.size() != o.inputs.size()) return str_cat("number of inputs ", inputs.size(), " -> ", o.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &a = inputs[i], &b = o.inputs[i];
    if (a.sizes != b.sizes) return str_cat("input ", i, " sizes ", IntArrayRef(a.sizes), " -> ", IntArrayRef(b.sizes));
    if (a.dtype != b.dtype) return str_cat("input ", i, " dtype ", dtype_name(a.dtype), " -> ", dtype_name(b.dtype));
    if (a.strides != b.strides) return str_cat("input ", i, " strides ", IntArrayRef(a.strides), " -> ", IntArrayRef(b.strides));
    if (a.requires_grad != b.requires_grad) return str_cat("input ", i, " requires_grad changed");
  }
  if (alias_groups != o.alias_groups) return "which inputs share storage";
  if (grad_enabled != o.grad_enabled) return "grad mode";
  if (training != o.training) return "training flag";
  if (extra != o.extra) return "module parameters, buffers or hooks";
  return "nothing";
}

CompiledFunction::CompiledFunction(TensorFn fn, CompileOptions opts) : fn_(std::move(fn)), opts_(std::move(opts)) {}

Signature CompiledFunction::signature_of(const std::vector<Tensor>& inputs, bool training, uint64_t extra) const {
  Signature s;
  s.grad_enabled = is_grad_enabled();
  s.training = training;
  s.extra = extra;
  std::vector<const StorageImpl*> storages;
  for (const Tensor& t : inputs) {
    TANDEM_CHECK(t.defined(), ValueError, "compiled function", "got an undefined input tensor");
    s.inputs.push_back({t.dtype(), t.sizes().vec(), t.strides().vec(), t.requires_grad()});
    const StorageImpl* st = t.storage().get();
    auto it = std::find(storages.begin(), storages.end(), st);
    s.alias_groups.push_back(static_cast<int>(it - storages.begin()));
    if (it == storages.end()) storages.push_back(st);
  }
  return s;
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
  return exec;
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) { return call(inputs, false, 0); }

std::vector<Tensor> CompiledFunction::call(const std::vector<Tensor>& inputs, bool training, uint64_t extra) {
  // Until graph autodiff exists, a call that needs gradients runs eagerly (always correct).
  if (is_grad_enabled()) {
    bool needs = false;
    for (const Tensor& t : inputs) needs = needs || (t.defined() && t.requires_grad());
    for (const auto& e : cache_)
      for (const Tensor& t : e.lifted) needs = needs || t.requires_grad();
    if (needs) {
      warn_once("autograd", "compiled function called with inputs that require grad: running eagerly "
                            "(compiled training comes with graph autodiff)");
      ++eager_calls_;
      return fn_(inputs);
    }
  }
  if (given_up_) {
    ++eager_calls_;
    return fn_(inputs);
  }
  Signature sig = signature_of(inputs, training, extra);
  for (auto& e : cache_) {
    if (!(e.sig == sig)) continue;
    last_sig_ = sig;
    if (!e.exec) {
      ++eager_calls_;
      return fn_(inputs);
    }
    // Lifted tensors must still look as they did at capture (bound by reference).
    bool lifted_ok = true;
    const auto& gin = e.exec->graph().inputs();
    for (size_t k = 0; k < e.lifted.size(); ++k) {
      const auto& m = e.exec->graph().value(gin[inputs.size() + k]).meta;
      lifted_ok = lifted_ok && e.lifted[k].sizes().equals(m.sizes) && e.lifted[k].dtype() == m.dtype &&
                  e.lifted[k].strides().equals(m.strides) && !(is_grad_enabled() && e.lifted[k].requires_grad());
    }
    if (!lifted_ok) continue;
    std::vector<Tensor> all = inputs;
    all.insert(all.end(), e.lifted.begin(), e.lifted.end());
    ++compiled_calls_;
    last_ = e.exec.get();
    return e.exec->run(all);
  }
  if (static_cast<int>(cache_.size()) >= opts_.recompile_limit) {
    given_up_ = true;
    std::string what = last_sig_ ? last_sig_->diff(sig) : std::string("the inputs");
    warn_once("limit", str_cat("compiled function hit the recompile limit (", opts_.recompile_limit,
                               "); running eagerly from now on. What kept changing: ", what));
    ++eager_calls_;
    return fn_(inputs);
  }
  ++captures_;
  Capture c = capture(fn_, inputs);
  last_sig_ = sig;
  Entry e;
  e.sig = sig;
  if (!c.ok) {
    if (opts_.strict) throw GraphBreak(c.break_reason);
    warn_once("break:" + c.break_reason, "graph break: " + c.break_reason + "; this signature runs eagerly");
    e.break_reason = c.break_reason;
    cache_.push_back(std::move(e));
    ++eager_calls_;
    return c.outputs;
  }
  e.lifted = c.lifted;
  std::vector<Tensor> outputs = std::move(c.outputs);
  e.exec = build_program(c, opts_);
  cache_.push_back(std::move(e));
  ++eager_calls_;  // the capturing call itself ran eagerly
  return outputs;
}

std::shared_ptr<CompiledFunction> compile(TensorFn fn, CompileOptions opts) {
  return std::make_shared<CompiledFunction>(std::move(fn), std::move(opts));
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

Explanation explain(const TensorFn& fn, const std::vector<Tensor>& inputs, const CompileOptions& opts) {
  Explanation ex;
  Capture c = capture(fn, inputs);
  ex.captured_ops = c.captured_ops;
  ex.break_reason = c.break_reason;
  for (size_t i = 0; i < inputs.size(); ++i)
    ex.guards.push_back(str_cat("input ", i, ": ", dtype_name(inputs[i].dtype()), inputs[i].sizes(), " strides ",
                                inputs[i].strides(), inputs[i].requires_grad() ? " requires_grad" : ""));
  ex.guards.push_back(str_cat("grad mode ", is_grad_enabled() ? "on" : "off"));
  ex.guards.push_back("storage sharing between inputs");
  for (size_t k = 0; k < c.lifted.size(); ++k)
    ex.guards.push_back(str_cat("lifted tensor ", k, " (bound by reference): ", dtype_name(c.lifted[k].dtype()),
                                c.lifted[k].sizes()));
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
