#include "tandem/autograd/node.h"

#include "tandem/core/capture_state.h"

#include <atomic>

#include "tandem/autograd/function_nodes.h"
#include "tandem/core/grad_mode.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/binary.h"

namespace tandem::autograd {

namespace {
std::atomic<uint64_t> g_sequence{0};
std::atomic<int64_t> g_hook_id{0};
std::atomic<bool> g_anomaly{false};
thread_local std::vector<std::string> t_anomaly_scopes;
}  // namespace

namespace {
// Sequence numbers are taken from the global counter in blocks, so creating a node costs
// no atomic operation; numbers stay unique and follow creation order within a thread.
constexpr uint64_t kSequenceBlock = 1024;
thread_local uint64_t t_sequence_next = 0;
thread_local uint64_t t_sequence_end = 0;
uint64_t next_sequence_nr() {
  if (t_sequence_next == t_sequence_end) {
    t_sequence_next = g_sequence.fetch_add(kSequenceBlock, std::memory_order_relaxed);
    t_sequence_end = t_sequence_next + kSequenceBlock;
  }
  return t_sequence_next++;
}
}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr()) {
  if (is_anomaly_enabled()) creation_context = current_anomaly_context();
}

const std::shared_ptr<Node::PreHookList>& Node::pre_hook_list() {
  if (!pre_hooks_) pre_hooks_ = std::make_shared<PreHookList>();
  return pre_hooks_;
}

int64_t Node::add_pre_hook(uint32_t slot, GradHook hook) {
  int64_t id = g_hook_id.fetch_add(1);
  pre_hook_list()->push_back({id, slot, std::move(hook)});
  return id;
}

bool Node::remove_pre_hook(int64_t id) {
  if (!pre_hooks_) return false;
  for (auto it = pre_hooks_->begin(); it != pre_hooks_->end(); ++it) {
    if (it->id == id) {
      pre_hooks_->erase(it);
      return true;
    }
  }
  return false;
}

Tensor Node::run_pre_hooks(uint32_t slot, Tensor g) const {
  if (!pre_hooks_) return g;
  for (const auto& h : *pre_hooks_) {
    if (h.slot != slot) continue;
    Tensor r = h.fn(g);
    if (r.defined()) g = std::move(r);
  }
  return g;
}

// ---------------------------------------------------------------- destroy_node
namespace {
// Children of destroyed nodes waiting for release: the outermost destroy_node on this
// thread owns the list (inline room for a small graph: no allocation), nested calls add
// to it. A pointer, not a thread_local container: nodes may be released while this
// thread's other thread_locals are destroyed.
using Pending = SmallVec<std::shared_ptr<Node>, 8>;
thread_local Pending* t_pending = nullptr;
}  // namespace

void detail::destroy_node(Node* n) {
  // Detach the children first; their release is deferred to the loop below (or to the
  // outermost call already running on this thread).
  if (t_pending) {
    for (auto& e : n->mutable_next_edges())
      if (e.node) t_pending->push_back(std::move(e.node));
    n->~Node();  // saved tensors may drop more nodes: their children land in *t_pending
    return;
  }
  Pending pending;
  for (auto& e : n->mutable_next_edges())
    if (e.node) pending.push_back(std::move(e.node));
  t_pending = &pending;
  n->~Node();
  while (!pending.empty()) {
    std::shared_ptr<Node> p = std::move(pending.back());
    pending.pop_back();
    p.reset();
  }
  t_pending = nullptr;
}

// ---------------------------------------------------------------- SavedVariable
SavedVariable::SavedVariable(const Tensor& t, bool is_output, const std::shared_ptr<Node>& owner) {
  if (!t.defined()) return;
  defined_ = true;
  saved_version_ = t._version();
  is_output_ = is_output;
  requires_grad_ = t.requires_grad();
  if (is_output) {
    // Store an alias without history: the output's grad_fn is `owner`, and owning it
    // from here would be a cycle. unpack() re-attaches it.
    data_ = make_alias(t, t.sizes(), t.strides(), t.storage_offset());
    if (auto* m = get_meta(t)) output_nr_ = m->output_nr;
    grad_fn_ = owner;
  } else {
    data_ = t;
  }
}

Tensor SavedVariable::unpack(const Node& owner) const {
  // The common cases need no name; build it only for the error message.
  if (!defined_) return {};
  if (!was_released_ && data_._version() == saved_version_) {
    if (!is_output_) return data_;
    return unpack(std::string());
  }
  return unpack(owner.name());
}

Tensor SavedVariable::unpack(const std::string& op) const {
  if (!defined_) return {};
  TANDEM_CHECK(!was_released_, RuntimeError, op,
               "trying to backward through the graph a second time (or to read saved tensors after they were "
               "freed); pass retain_graph=true to the first backward if you need to backward twice");
  TANDEM_CHECK(data_._version() == saved_version_, RuntimeError, op,
               "one of the variables needed for gradient computation has been modified by an inplace operation: "
               "a tensor of shape ", data_.sizes(), " is at version ", data_._version(), "; expected version ",
               saved_version_, " (it was saved for the backward of ", op, ")");
  if (!is_output_) return data_;
  Tensor out = make_alias(data_, data_.sizes(), data_.strides(), data_.storage_offset());
  if (requires_grad_) {
    if (auto fn = grad_fn_.lock()) set_history(out, fn, output_nr_);
  }
  return out;
}

void SavedVariable::reset() {
  if (!defined_) return;
  data_ = Tensor();
  was_released_ = true;
}

// ---------------------------------------------------------------- meta helpers
AutogradMeta* get_meta(const Tensor& t) {
  if (!t.defined()) return nullptr;
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}

AutogradMeta& ensure_meta(const Tensor& t) {
  if (auto* m = get_meta(t)) return *m;
  auto m = std::make_unique<AutogradMeta>();
  AutogradMeta* raw = m.get();
  t.impl()->set_autograd_meta(std::move(m));
  return *raw;
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = ensure_meta(t);
  m.grad_fn = node;
  m.output_nr = output_nr;
  m.attr_version = t._version();
  t.impl()->set_requires_grad_flag(true);
}

void refresh_view_history(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  if (!m || !m->is_view || m->attr_version == t._version()) return;
  const Tensor& base = m->view_base;
  if (!base.requires_grad()) return;
  auto node = make_node<AsStridedBackward>(Geometry{base.sizes().vec(), base.strides().vec(), base.storage_offset()},
                                          Geometry{m->view_sizes, m->view_strides, m->view_offset},
                                          static_cast<int64_t>(base.storage()->nbytes()) / base.element_size(),
                                          t.dtype());
  node->mutable_next_edges().push_back(gradient_edge(base));
  m->grad_fn = node;
  m->output_nr = 0;
  m->attr_version = t._version();
  t.impl()->set_requires_grad_flag(true);
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  refresh_view_history(t);
  if (!t.requires_grad()) return {};
  AutogradMeta& m = ensure_meta(t);
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.grad_accumulator) {
    m.grad_accumulator = make_node<AccumulateGrad>(t);
    if (m.leaf_hooks) m.grad_accumulator->set_pre_hook_list(m.leaf_hooks);
  }
  return {m.grad_accumulator, 0};
}

AutogradMeta::~AutogradMeta() {
  if (grad_accumulator) static_cast<AccumulateGrad&>(*grad_accumulator).forget_variable();
}

// ---------------------------------------------------------------- AccumulateGrad
AccumulateGrad::AccumulateGrad(const Tensor& leaf) : leaf_(leaf.impl()) {}

Tensor AccumulateGrad::variable() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!leaf_) return {};
  // The count can be zero here while the leaf's destructor waits for mu_.
  return Tensor(IntrusivePtr<TensorImpl>::try_retain(leaf_));
}

void AccumulateGrad::forget_variable() {
  std::lock_guard<std::mutex> lock(mu_);
  leaf_ = nullptr;
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  Tensor leaf = variable();
  if (!leaf.defined()) return {};  // the leaf is gone: nobody can read this gradient
  capture_state::observe_grad(leaf);
  AutogradMeta& m = ensure_meta(leaf);
  if (g.dtype() != leaf.dtype()) g = g.to(leaf.dtype());
  if (!m.grad.defined()) {
    if (is_grad_enabled()) {
      m.grad = g;  // create_graph: keep the history
    } else {
      // Own the buffer: another holder (a user's tensor, another slot) must not see
      // later in-place accumulation. Taken over only when it already has the layout a
      // clone would give (row-major strides, also on size-1 dims): .grad's strides must not
      // depend on who else holds the gradient (a compiled step's capture holds them all).
      const bool own = g.use_count() == 1 && g.strides().equals(contiguous_strides(g.sizes()));
      m.grad = own ? g.detach() : g.detach().clone();
    }
  } else if (is_grad_enabled()) {
    m.grad = m.grad + g;
  } else {
    static const OpDef& add_inplace = *get_op("add").inplace;
    Tensor gd = m.grad;  // accumulate in place: users holding .grad see the sum
    dispatch(add_inplace, {gd, g});
  }
  if (!m.post_acc_hooks.empty()) {
    // User code with effects a program would not replay (it only records ops).
    capture_state::note_break("a post-accumulate-grad hook ran inside a compiled function");
    for (auto& [id, hook] : m.post_acc_hooks) hook(leaf);
  }
  return {};
}

// ---------------------------------------------------------------- anomaly mode
bool is_anomaly_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void set_anomaly_enabled(bool enabled) { g_anomaly.store(enabled); }
AnomalyScope::AnomalyScope(std::string label) { t_anomaly_scopes.push_back(std::move(label)); }
AnomalyScope::~AnomalyScope() { t_anomaly_scopes.pop_back(); }
std::string current_anomaly_context() {
  std::string s;
  for (const auto& l : t_anomaly_scopes) s += (s.empty() ? "" : "/") + l;
  return s;
}

}  // namespace tandem::autograd
