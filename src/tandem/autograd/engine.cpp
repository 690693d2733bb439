#include "tandem/autograd/engine.h"

#include <algorithm>
#include <cstdint>

#include "tandem/core/capture_state.h"
#include "tandem/dispatch/autocast.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"

namespace tandem::autograd {

namespace {

struct Capture {
  Node* node;
  uint32_t slot;
  Tensor grad;
};

// Open-addressing map Node* -> task index, for the few to few thousand nodes of one
// backward (one allocation, no per-node heap nodes as std::unordered_map has).
class NodeIndex {
 public:
  static constexpr uint32_t kNone = ~uint32_t{0};
  explicit NodeIndex(size_t expected) { rehash(std::max<size_t>(16, 2 * expected)); }
  uint32_t find(const Node* n) const {
    for (size_t i = hash(n) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].node == n) return slots_[i].index;
      if (!slots_[i].node) return kNone;
    }
  }
  // Inserts n with `index` unless present; returns n's index either way.
  uint32_t insert(const Node* n, uint32_t index) {
    if (2 * (count_ + 1) > slots_.size()) rehash(2 * slots_.size());
    for (size_t i = hash(n) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].node == n) return slots_[i].index;
      if (!slots_[i].node) {
        slots_[i] = {n, index};
        ++count_;
        return index;
      }
    }
  }

 private:
  struct Slot {
    const Node* node = nullptr;
    uint32_t index = 0;
  };
  static size_t hash(const Node* n) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(n) >> 4) * 0x9E3779B97F4A7C15ULL >> 16);
  }
  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    count_ = 0;
    for (const Slot& sl : old)
      if (sl.node) insert(sl.node, sl.index);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

// One node of the graph being run: its pending dependency count and input buffer.
struct Task {
  Node* node = nullptr;
  int deps = 0;
  bool needed = false;  // with captures: a capture is reachable from this node
  bool queued = false;
  SmallVec<Tensor, 2> buffer;  // gradients received so far, one per input slot
};

thread_local bool t_keep_graph = false;
// Callbacks of the backward() running on this thread (queue_callback); null outside one.
thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;

// Runs the graph reachable from `roots`. With `captures` (autograd::grad), only nodes
// leading to a capture run and leaves are not accumulated.
void run_graph(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads, bool keep_graph,
               bool create_graph, std::vector<Capture>* captures) {
  struct KeepGraph {  // nested backwards (hooks, double backward) restore the outer value
    bool saved = t_keep_graph;
    explicit KeepGraph(bool k) { t_keep_graph = k; }
    ~KeepGraph() { t_keep_graph = saved; }
  } keep_scope(keep_graph);
  // Backward rules run in the dtypes the forward chose: autocast is off while they run
  // (dispatch/autocast.h; PyTorch's custom_bwd), whether or not backward() was called
  // inside an autocast region.
  autocast::SuspendGuard no_autocast;
  // 1. Dependencies: count the edges into each node from reachable nodes (iterative DFS).
  // tasks is in discovery order.
  std::vector<Task> tasks;
  tasks.reserve(64);
  NodeIndex index(32);
  SmallVec<uint32_t, 32> stack;
  auto discover = [&](Node* n) -> uint32_t {
    uint32_t next = static_cast<uint32_t>(tasks.size());
    uint32_t k = index.insert(n, next);
    if (k == next) {
      tasks.emplace_back();
      tasks.back().node = n;
      stack.push_back(k);
    }
    return k;
  };
  for (const Edge& r : roots)
    if (r.valid()) discover(r.node.get());
  while (!stack.empty()) {
    uint32_t k = stack.back();
    stack.pop_back();
    for (const Edge& e : tasks[k].node->next_edges()) {
      if (!e.valid()) continue;
      ++tasks[discover(e.node.get())].deps;
    }
  }
  // 2. With captures, a node is needed when a capture is reachable from it. Process in
  // reverse topological order (Kahn order from the roots, reversed).
  if (captures) {
    std::vector<int> d(tasks.size());
    std::vector<uint32_t> topo, ready;
    for (size_t k = 0; k < tasks.size(); ++k) {
      d[k] = tasks[k].deps;
      if (d[k] == 0) ready.push_back(static_cast<uint32_t>(k));
    }
    while (!ready.empty()) {
      uint32_t k = ready.back();
      ready.pop_back();
      topo.push_back(k);
      for (const Edge& e : tasks[k].node->next_edges())
        if (e.valid()) {
          uint32_t j = index.find(e.node.get());
          if (--d[j] == 0) ready.push_back(j);
        }
    }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Task& t = tasks[*it];
      bool need = false;
      for (const auto& c : *captures) need = need || c.node == t.node;
      for (const Edge& e : t.node->next_edges())
        if (e.valid() && tasks[index.find(e.node.get())].needed) need = true;
      t.needed = need;
    }
  }

  // 3. Seed the input buffers and run ready nodes, latest-created first.
  auto add_to = [&](Task& t, uint32_t slot, Tensor g) {
    auto& buf = t.buffer;
    if (buf.size() < t.node->num_inputs()) buf.resize(t.node->num_inputs());
    if (!buf[slot].defined()) buf[slot] = std::move(g);
    else buf[slot] = buf[slot] + g;  // out of place: a caller may still hold the first
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) add_to(tasks[index.find(roots[i].node.get())], roots[i].input_nr, root_grads[i]);

  // Max-heap of task indices by the node's sequence number.
  std::vector<uint32_t> ready;
  auto later = [&](uint32_t a, uint32_t b) { return tasks[a].node->sequence_nr() < tasks[b].node->sequence_nr(); };
  auto push_ready = [&](uint32_t k) {
    ready.push_back(k);
    std::push_heap(ready.begin(), ready.end(), later);
  };
  for (const Edge& r : roots) {
    if (!r.valid()) continue;
    uint32_t k = index.find(r.node.get());
    if (tasks[k].deps == 0 && !tasks[k].queued) {  // push each root once
      tasks[k].queued = true;
      push_ready(k);
    }
  }
  // Keep the root nodes alive while they run even if the caller's tensors go away.
  SmallVec<std::shared_ptr<Node>, 2> keep;
  for (const Edge& r : roots)
    if (r.valid()) keep.push_back(r.node);

  AutoGradMode mode(create_graph);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    const uint32_t k = ready.back();
    ready.pop_back();
    Node* n = tasks[k].node;
    std::vector<Tensor> grads;
    {
      auto& buf = tasks[k].buffer;
      grads.reserve(n->num_inputs());
      for (auto& g : buf) grads.push_back(std::move(g));
      buf.clear();
    }
    grads.resize(n->num_inputs());
    if (n->has_pre_hooks())
      for (uint32_t s = 0; s < grads.size(); ++s)
        if (grads[s].defined()) grads[s] = n->run_pre_hooks(s, grads[s]);
    if (captures)
      for (auto& c : *captures)
        if (c.node == n && grads[c.slot].defined()) c.grad = grads[c.slot];

    bool run = !captures || tasks[k].needed;
    if (captures && dynamic_cast<AccumulateGrad*>(n)) run = false;
    bool any = false;
    int defined = 0;
    for (const auto& g : grads) defined += g.defined() ? 1 : 0;
    any = defined > 0;
    if (defined > 1 && capture_state::tracing_backward() > 0) ++capture_state::traced_multi_gradient_nodes();
    std::vector<Tensor> outs;
    if (run && any) outs = n->apply(std::move(grads));
    if (!keep_graph && run) n->release_variables();

    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      const uint32_t j = index.find(e.node.get());
      Task& next = tasks[j];
      if (i < outs.size() && outs[i].defined()) add_to(next, e.input_nr, std::move(outs[i]));
      if (--next.deps == 0) push_ready(j);
    }
  }
}

std::vector<Edge> root_edges(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                             std::vector<Tensor>& grads, const char* fn) {
  TANDEM_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError, fn, "got ", outputs.size(),
               " outputs and ", grad_outputs.size(), " grad_outputs, expected the same number");
  std::vector<Edge> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    TANDEM_CHECK(o.defined() && o.requires_grad(), RuntimeError, fn, "element ", i,
                 " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      TANDEM_CHECK(o.numel() == 1, RuntimeError, fn, "grad can be implicitly created only for scalar outputs, got an output of shape ",
                   o.sizes());
      g = ones_like(o);
    } else {
      TANDEM_CHECK(g.sizes().equals(o.sizes()), ShapeError, fn, "mismatch in shape: grad_output[", i, "] has a shape of ",
                   g.sizes(), " and output[", i, "] has a shape of ", o.sizes());
    }
    roots.push_back(gradient_edge(o));
    grads.push_back(g);
  }
  return roots;
}

}  // namespace

bool detail::backward_keeps_graph() { return t_keep_graph; }

namespace {
// A backward the captured function runs is recorded like any other ops (the engine runs
// the same backward rules through the dispatcher); capture needs its roots to know which
// outputs' graphs it freed.
void note_capture_backward(const std::vector<Tensor>& outputs, bool retain_graph, bool create_graph) {
  std::vector<const void*> roots;
  for (const Tensor& o : outputs)
    if (o.defined()) roots.push_back(o.impl());
  capture_state::note_user_backward(roots, retain_graph, create_graph);
}
}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  if (capture_state::capture_depth() > 0) [[unlikely]]
    note_capture_backward(outputs, retain_graph.value_or(create_graph), create_graph);
  std::vector<Tensor> grads;
  auto roots = root_edges(outputs, grad_outputs, grads, "backward");
  std::vector<std::function<void()>> callbacks;
  struct Scope {  // a nested backward (in a hook) keeps its own list
    std::vector<std::function<void()>>* saved = t_callbacks;
    explicit Scope(std::vector<std::function<void()>>* mine) { t_callbacks = mine; }
    ~Scope() { t_callbacks = saved; }
  };
  {
    Scope scope(&callbacks);
    run_graph(roots, grads, retain_graph.value_or(create_graph), create_graph, nullptr);
  }
  // A callback may queue another (it runs too): index, not iterators.
  Scope scope(&callbacks);
  for (size_t i = 0; i < callbacks.size(); ++i) {
    auto cb = std::move(callbacks[i]);
    cb();
  }
}

void queue_callback(std::function<void()> callback) {
  TANDEM_CHECK(t_callbacks != nullptr, RuntimeError, "queue_callback",
               "called outside a backward(): callbacks can only be queued while backward() runs on this thread");
  t_callbacks->push_back(std::move(callback));
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  if (capture_state::capture_depth() > 0) [[unlikely]]
    note_capture_backward(outputs, retain_graph.value_or(create_graph), create_graph);
  std::vector<Tensor> grads;
  auto roots = root_edges(outputs, grad_outputs, grads, "grad");
  std::vector<Capture> caps;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TANDEM_CHECK(inputs[i].defined() && inputs[i].requires_grad(), RuntimeError, "grad", "input ", i,
                 " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    caps.push_back({e.node.get(), e.input_nr, Tensor()});
  }
  // Keep the inputs' accumulator nodes alive during the run.
  std::vector<std::shared_ptr<Node>> keep;
  for (const auto& t : inputs) keep.push_back(gradient_edge(t).node);
  run_graph(roots, grads, retain_graph.value_or(create_graph), create_graph, &caps);
  std::vector<Tensor> out;
  for (size_t i = 0; i < caps.size(); ++i) {
    TANDEM_CHECK(caps[i].grad.defined() || allow_unused, RuntimeError, "grad", "one of the differentiated tensors (input ", i,
                 ") appears to not have been used in the graph; set allow_unused=true if this is the desired behavior");
    Tensor g = caps[i].grad;
    if (g.defined() && g.dtype() != inputs[i].dtype()) g = g.to(inputs[i].dtype());
    out.push_back(g);
  }
  return out;
}

InferenceMode::InferenceMode(bool enabled) : prev_grad_(is_grad_enabled()), prev_inference_(is_inference_mode()) {
  if (enabled) {
    set_grad_enabled(false);
    set_inference_mode(true);
  }
}
InferenceMode::~InferenceMode() {
  set_grad_enabled(prev_grad_);
  set_inference_mode(prev_inference_);
}
bool InferenceMode::is_enabled() { return is_inference_mode(); }

void RemovableHandle::remove() {
  if (id_ < 0) return;
  if (post_acc_) {
    if (auto* m = get_meta(leaf_)) {
      auto& hs = m->post_acc_hooks;
      for (auto it = hs.begin(); it != hs.end(); ++it)
        if (it->first == id_) { hs.erase(it); break; }
    }
  } else if (auto hs = hooks_.lock()) {
    for (auto it = hs->begin(); it != hs->end(); ++it)
      if (it->id == id_) {
        hs->erase(it);
        break;
      }
  }
  id_ = -1;
  leaf_ = Tensor();
}

RemovableHandle register_hook(const Tensor& t, std::function<Tensor(const Tensor&)> hook) {
  TANDEM_CHECK(t.defined() && t.requires_grad(), RuntimeError, "register_hook",
               "cannot register a hook on a tensor that doesn't require gradient");
  Edge e = gradient_edge(t);
  int64_t id = e.node->add_pre_hook(e.input_nr, std::move(hook));
  if (dynamic_cast<AccumulateGrad*>(e.node.get())) get_meta(t)->leaf_hooks = e.node->pre_hook_list();
  return RemovableHandle(e.node->pre_hook_list(), id);
}

RemovableHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(Tensor&)> hook) {
  AutogradMeta* m = get_meta(leaf);
  TANDEM_CHECK(leaf.defined() && leaf.requires_grad() && !(m && m->grad_fn), RuntimeError,
               "register_post_accumulate_grad_hook", "post accumulate grad hooks can only be registered on leaf tensors that require grad");
  static std::atomic<int64_t> next{1 << 30};
  int64_t id = next.fetch_add(1);
  ensure_meta(leaf).post_acc_hooks.emplace_back(id, std::move(hook));
  return RemovableHandle(leaf, id, true);
}

}  // namespace tandem::autograd
