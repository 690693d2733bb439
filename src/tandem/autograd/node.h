#pragma once
// The autograd graph: Node (a backward function), Edge (which input slot of which node a
// gradient flows to), SavedVariable (a tensor kept for backward with its version), and
// AutogradMeta (the per-tensor autograd state: grad, grad_fn, hooks, view base).
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/core/small_vector.h"
#include "tandem/core/tensor.h"

namespace tandem::autograd {

class Node;

/// Gradient destination: input slot `input_nr` of `node` (for a tensor: its grad_fn and
/// output number, or a leaf's AccumulateGrad and 0). An undefined edge (null node) means
/// "no gradient needed".
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return static_cast<bool>(node); }
};

/// A node's outgoing edges, one per forward input: inline up to 3 (no allocation for
/// unary, binary and addmm-like ops).
using EdgeList = SmallVec<Edge, 3>;

/// Hook on the gradient flowing into a node's input slot; may return a replacement
/// (an undefined return keeps the gradient).
using GradHook = std::function<Tensor(const Tensor&)>;

/// A backward function. Its inputs are gradients of the forward outputs; its outputs are
/// gradients for the forward inputs, sent along next_edges (one per forward input).
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Computes input gradients from output gradients (one per forward output; undefined
  /// where no gradient arrived). Returns one tensor per next edge.
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  /// Name shown in errors and grad_fn printing ("AddBackward").
  virtual std::string name() const = 0;
  /// Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}
  /// Number of forward outputs (gradient slots this node receives).
  virtual uint32_t num_inputs() const { return num_inputs_; }

  const EdgeList& next_edges() const { return next_edges_; }
  EdgeList& mutable_next_edges() { return next_edges_; }
  /// Order of creation; later nodes run first among ready ones (deterministic).
  uint64_t sequence_nr() const { return sequence_nr_; }
  /// Tensor hooks registered on input slot `slot`, run before apply().
  int64_t add_pre_hook(uint32_t slot, GradHook hook);
  bool remove_pre_hook(int64_t id);
  /// Runs the pre-hooks of `slot` on g (in registration order).
  Tensor run_pre_hooks(uint32_t slot, Tensor g) const;
  bool has_pre_hooks() const { return pre_hooks_ && !pre_hooks_->empty(); }
  struct PreHook {
    int64_t id;
    uint32_t slot;
    GradHook fn;
  };
  using PreHookList = std::vector<PreHook>;
  /// The node's hook list (made on first use). A leaf's AutogradMeta shares it, so hooks
  /// registered on a leaf outlive its AccumulateGrad node (held only weakly by the leaf)
  /// and come back with the next one, as PyTorch keeps a leaf's hooks on the tensor.
  const std::shared_ptr<PreHookList>& pre_hook_list();
  void set_pre_hook_list(std::shared_ptr<PreHookList> list) { pre_hooks_ = std::move(list); }
  /// Anomaly mode: where the forward op was created.
  std::string creation_context;

 protected:
  EdgeList next_edges_;
  uint32_t num_inputs_ = 1;

 private:
  std::shared_ptr<PreHookList> pre_hooks_;
  uint64_t sequence_nr_;
};

namespace detail {
/// Destroys a node (runs its destructor; the memory is freed by shared_ptr) without
/// recursion: a chain of 100,000 nodes would otherwise overflow the stack through nested
/// shared_ptr destructors. The children it owned are released by the outermost call on
/// this thread, one at a time.
void destroy_node(Node* n);

/// Allocator of make_node: std::allocator, except that destroying the node goes through
/// destroy_node. allocate_shared with it puts the node and its reference counts in one
/// allocation.
template <typename T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() = default;
  template <typename U>
  NodeAllocator(const NodeAllocator<U>&) {}  // NOLINT
  T* allocate(size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  template <typename U>
  void destroy(U* p) {
    if constexpr (std::is_base_of_v<Node, U>) destroy_node(p);
    else p->~U();
  }
  template <typename U>
  bool operator==(const NodeAllocator<U>&) const { return true; }
};
}  // namespace detail

/// Creates a node. Every node is created here (one allocation; non-recursive release).
template <typename T, typename... Args>
std::shared_ptr<T> make_node(Args&&... args) {
  return std::allocate_shared<T>(detail::NodeAllocator<T>(), std::forward<Args>(args)...);
}

/// A tensor saved for backward plus the version it had, so that an in-place change
/// before backward raises instead of silently giving a wrong gradient.
class SavedVariable {
 public:
  SavedVariable() = default;
  /// Saves `t`. `is_output`: t is an output of the node saving it; it is stored without
  /// its grad_fn (to avoid a reference cycle) and re-attached on unpack.
  SavedVariable(const Tensor& t, bool is_output, const std::shared_ptr<Node>& owner);
  /// Returns the tensor; RuntimeError naming `op` if it was modified in place since it
  /// was saved, or released by an earlier backward.
  Tensor unpack(const std::string& op) const;
  /// Same, naming `owner` (its name() is built only if an error is raised).
  Tensor unpack(const Node& owner) const;
  void reset();
  bool defined() const { return defined_; }

 private:
  Tensor data_;
  uint64_t saved_version_ = 0;
  bool defined_ = false;
  bool was_released_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
  uint32_t output_nr_ = 0;
  std::weak_ptr<Node> grad_fn_;
};

/// Per-tensor autograd state (lives in TensorImpl's AutogradMetaBase slot).
struct AutogradMeta : AutogradMetaBase {
  Tensor grad;                         ///< accumulated gradient (leaves, retain_grad)
  std::shared_ptr<Node> grad_fn;       ///< producing node (non-leaf)
  uint32_t output_nr = 0;              ///< which output of grad_fn this tensor is
  /// AccumulateGrad node of a leaf, made by the first gradient_edge() and kept while the
  /// leaf lives (the node refers to the leaf weakly, so there is no cycle): an op on a
  /// leaf does not make and free one each time.
  std::shared_ptr<Node> grad_accumulator;
  /// Tensor hooks of a leaf (shared with its AccumulateGrad node).
  std::shared_ptr<Node::PreHookList> leaf_hooks;
  bool retains_grad = false;
  int64_t retain_hook_id = -1;
  /// Post-accumulate-grad hooks of a leaf (run after .grad is updated).
  std::vector<std::pair<int64_t, std::function<void(Tensor&)>>> post_acc_hooks;
  /// Views: the root base tensor and this view's geometry on its storage. An in-place op
  /// on the view rewrites the base's history (CopySlices), after which the view's
  /// grad_fn is regenerated from the base (when attr_version differs from the storage's).
  Tensor view_base;
  bool is_view = false;
  DimVector view_sizes, view_strides;
  int64_t view_offset = 0;
  uint64_t attr_version = 0;  ///< storage version when grad_fn was last set

  AutogradMeta() = default;
  AutogradMeta(const AutogradMeta&) = delete;
  AutogradMeta& operator=(const AutogradMeta&) = delete;
  /// Tells the leaf's AccumulateGrad node (which a graph may still hold) that the leaf is gone.
  ~AutogradMeta() override;
};

/// The tensor's autograd meta, or nullptr.
AutogradMeta* get_meta(const Tensor& t);
/// Creates the meta if absent.
AutogradMeta& ensure_meta(const Tensor& t);
/// The edge a gradient for `t` flows into (after refresh_view_history): grad_fn/output_nr
/// for non-leaves, the (created on demand) AccumulateGrad node for leaves requiring grad,
/// else invalid.
Edge gradient_edge(const Tensor& t);
/// A view whose storage was written in place since its history was set gets a fresh
/// grad_fn: "my region of the base's current history" (an AsStridedBackward into the
/// base). gradient_edge() and Tensor::grad_fn() call it, so a written view used as a
/// backward root, a grad() input or an op input all see the current history.
void refresh_view_history(const Tensor& t);
/// Sets t's history to (node, output_nr) and marks it requiring grad.
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr);

/// Accumulates into a leaf's .grad (the sink of every backward path). The leaf keeps its
/// node alive (AutogradMeta::grad_accumulator); the node refers to the leaf weakly: when
/// the leaf is destroyed while a graph still holds the node, gradients reaching it are
/// dropped (nothing can observe that leaf's .grad any more), after the node's pre-hooks
/// ran, as PyTorch runs a dead leaf's tensor hooks.
class AccumulateGrad : public Node {
 public:
  /// `leaf`: a tensor without grad_fn; it must outlive the call (not the node).
  explicit AccumulateGrad(const Tensor& leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  /// The leaf, or an undefined tensor once it has been destroyed. Thread-safe.
  Tensor variable() const;
  /// Called by the leaf's AutogradMeta destructor: the leaf is gone.
  void forget_variable();

 private:
  mutable std::mutex mu_;  // orders variable()'s lock step against the leaf's destruction
  TensorImpl* leaf_;
};

/// Anomaly mode (torch.autograd.set_detect_anomaly): records where each node was created
/// and turns a NaN produced by a backward into an error naming that op.
bool is_anomaly_enabled();
void set_anomaly_enabled(bool enabled);
/// Pushes a label (e.g. a module name) that anomaly mode records with each node.
class AnomalyScope {
 public:
  explicit AnomalyScope(std::string label);
  ~AnomalyScope();
};
std::string current_anomaly_context();

}  // namespace tandem::autograd
