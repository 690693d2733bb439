#include "tandem/nn/compiled.h"

namespace tandem::nn {

namespace {
// Guard entries that come before the per-module training flags and per-tensor identities.
enum : size_t { kHooks = 0, kNumModules, kNumParams, kNumBuffers, kFixed };

void module_paths(const Module& m, const std::string& prefix, std::vector<std::string>& out) {
  out.push_back(prefix);
  for (const auto& [name, child] : m.local_children()) module_paths(*child, prefix.empty() ? name : prefix + "." + name, out);
}
}  // namespace

CompiledModule::CompiledModule(ModulePtr module, jit::CompileOptions opts) : module_(std::move(module)) {
  TANDEM_CHECK(module_ != nullptr, ValueError, "compile", "got a null module");
  fn_ = std::make_unique<jit::CompiledFunction>(
      [this](const std::vector<Tensor>& all) {
        // The parameters and buffers after the caller's inputs are bound so that capture
        // maps the module's tensors to graph inputs; forward reads them from the module.
        std::vector<Tensor> user(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(num_user_));
        return (*module_)(user);  // with hooks, as the eager call
      },
      std::move(opts));
}

void CompiledModule::walk(const Module& m, uint64_t& train_bits, int& nmod) {
  // Pre-order, own tensors first: the order of named_parameters() / named_buffers().
  for (const auto& [n, t] : m.local_parameters())
    if (t.defined()) args_.push_back(t);
  for (const auto& [n, t] : m.local_buffers())
    if (t.defined()) buffers_tmp_.push_back(t);
  if (nmod > 0) extra_.push_back(m.is_training() ? 1 : 0);  // the root's flag is CallState::training
  train_bits = train_bits * 3 + (m.is_training() ? 1 : 0);
  ++nmod;
  for (const auto& [n, c] : m.local_children()) walk(*c, train_bits, nmod);
}

void CompiledModule::gather(const std::vector<Tensor>& inputs) {
  num_user_ = inputs.size();
  args_.assign(inputs.begin(), inputs.end());
  buffers_tmp_.clear();
  extra_.assign(kFixed, 0);
  uint64_t train_bits = 0;
  int nmod = 0;
  walk(*module_, train_bits, nmod);
  const size_t nparams = args_.size() - num_user_, nbufs = buffers_tmp_.size();
  args_.insert(args_.end(), buffers_tmp_.begin(), buffers_tmp_.end());
  extra_[kHooks] = module_->hooks_version();
  extra_[kNumModules] = static_cast<uint64_t>(nmod);
  extra_[kNumParams] = nparams;
  extra_[kNumBuffers] = nbufs;
  for (size_t k = num_user_; k < args_.size(); ++k) extra_.push_back(reinterpret_cast<uintptr_t>(args_[k].impl()));
  std::vector<size_t> key{num_user_, static_cast<size_t>(nmod), nparams, nbufs};
  if (key != shape_key_) {
    shape_key_ = std::move(key);
    rebuild_names();
  }
}

void CompiledModule::rebuild_names() {
  extra_names_.assign(kFixed, "");
  extra_names_[kHooks] = "forward hooks (added or removed; full backward hooks too)";
  extra_names_[kNumModules] = "number of submodules";
  extra_names_[kNumParams] = "number of parameters";
  extra_names_[kNumBuffers] = "number of buffers";
  std::vector<std::string> paths;
  module_paths(*module_, "", paths);
  for (size_t i = 1; i < paths.size(); ++i) extra_names_.push_back("training flag of submodule '" + paths[i] + "'");
  input_names_.clear();
  for (size_t i = 0; i < num_user_; ++i) input_names_.push_back(num_user_ == 1 ? "input" : str_cat("input", i));
  for (const auto& [n, t] : module_->named_parameters()) {
    input_names_.push_back(n);
    extra_names_.push_back("parameter '" + n + "' (replaced by another tensor)");
  }
  for (const auto& [n, t] : module_->named_buffers()) {
    input_names_.push_back(n);
    extra_names_.push_back("buffer '" + n + "' (replaced by another tensor)");
  }
}

std::vector<Tensor> CompiledModule::operator()(const std::vector<Tensor>& inputs) {
  gather(inputs);
  jit::CallState st;
  st.training = module_->is_training();
  st.extra = &extra_;
  st.extra_names = &extra_names_;
  st.input_names = &input_names_;
  const int captures = fn_->captures();
  std::vector<Tensor> out = fn_->call(args_, st);
  args_.clear();  // do not keep the caller's tensors alive between calls
  buffers_tmp_.clear();
  if (fn_->captures() != captures && !fn_->last_lifted().empty())
    fn_->notice_once("lifted", str_cat(module_->name(), " forward read ", fn_->last_lifted().size(),
                                       " tensor(s) that are not registered parameters or buffers (members assigned "
                                       "after registration, or never registered); the compiled program binds them by "
                                       "reference: in-place updates are seen, replacing them is not. Register them "
                                       "(register_parameter/register_buffer) to make them program inputs."));
  return out;
}

Tensor CompiledModule::operator()(const Tensor& input) {
  std::vector<Tensor> out = (*this)(std::vector<Tensor>{input});
  TANDEM_CHECK(out.size() == 1, ValueError, module_->name(), "forward returned ", out.size(),
               " tensors, expected 1 (call with a vector of inputs to get them all)");
  return std::move(out[0]);
}

std::string CompiledModule::memory_summary() const {
  const runtime::Executor* ex = fn_->last_executor();
  return ex ? ex->memory_summary() : std::string("no compiled program yet (the first call captures; calls that "
                                                 "require grad run eagerly)");
}

jit::Explanation CompiledModule::explain(const std::vector<Tensor>& inputs) {
  gather(inputs);
  jit::CallState st;
  st.training = module_->is_training();
  st.extra = &extra_;
  st.extra_names = &extra_names_;
  st.input_names = &input_names_;
  const size_t n = num_user_;
  ModulePtr m = module_;
  jit::Explanation ex = jit::explain(
      [m, n](const std::vector<Tensor>& all) {
        return (*m)(std::vector<Tensor>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n)));
      },
      args_, fn_->options(), st);
  args_.clear();
  buffers_tmp_.clear();
  return ex;
}

std::shared_ptr<CompiledModule> compile(ModulePtr module, jit::CompileOptions opts) {
  return std::make_shared<CompiledModule>(std::move(module), std::move(opts));
}

}  // namespace tandem::nn
