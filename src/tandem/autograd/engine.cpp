#include "tandem/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"

namespace tandem::autograd {

namespace {

struct ReadyOrder {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

struct Capture {
  Node* node;
  uint32_t slot;
  Tensor grad;
};

// Runs the graph reachable from `roots`. With `captures` (autograd::grad), only nodes
// leading to a capture run and leaves are not accumulated.
void run_graph(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads, bool keep_graph,
               bool create_graph, std::vector<Capture>* captures) {
  // 1. Dependencies: count the edges into each node from reachable nodes (iterative DFS).
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> order;  // discovery order
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& r : roots)
    if (r.valid() && seen.insert(r.node.get()).second) stack.push_back(r.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      ++deps[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  // 2. With captures, a node is needed when a capture is reachable from it. Process in
  // reverse topological order (Kahn order from the roots, reversed).
  std::unordered_set<Node*> needed;
  if (captures) {
    std::unordered_map<Node*, int> d = deps;
    std::vector<Node*> topo, ready;
    for (Node* n : order)
      if (!d.count(n)) ready.push_back(n);
    while (!ready.empty()) {
      Node* n = ready.back();
      ready.pop_back();
      topo.push_back(n);
      for (const Edge& e : n->next_edges())
        if (e.valid() && --d[e.node.get()] == 0) ready.push_back(e.node.get());
    }
    std::unordered_set<Node*> targets;
    for (const auto& c : *captures) targets.insert(c.node);
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Node* n = *it;
      bool need = targets.count(n) > 0;
      for (const Edge& e : n->next_edges())
        if (e.valid() && needed.count(e.node.get())) need = true;
      if (need) needed.insert(n);
    }
  }

  // 3. Seed the input buffers and run ready nodes, latest-created first.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to = [&](Node* n, uint32_t slot, Tensor g) {
    auto& buf = buffers[n];
    if (buf.size() < n->num_inputs()) buf.resize(n->num_inputs());
    if (!buf[slot].defined()) buf[slot] = std::move(g);
    else buf[slot] = buf[slot] + g;  // out of place: a caller may still hold the first
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) add_to(roots[i].node.get(), roots[i].input_nr, root_grads[i]);

  std::priority_queue<Node*, std::vector<Node*>, ReadyOrder> ready;
  for (const Edge& r : roots) {
    Node* n = r.node.get();
    if (n && !deps.count(n) && seen.erase(n)) ready.push(n);  // erase: push each root once
  }
  // Keep the root nodes alive while they run even if the caller's tensors go away.
  std::vector<std::shared_ptr<Node>> keep;
  for (const Edge& r : roots)
    if (r.valid()) keep.push_back(r.node);

  AutoGradMode mode(create_graph);
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->num_inputs());
    if (n->has_pre_hooks())
      for (uint32_t s = 0; s < grads.size(); ++s)
        if (grads[s].defined()) grads[s] = n->run_pre_hooks(s, grads[s]);
    if (captures)
      for (auto& c : *captures)
        if (c.node == n && grads[c.slot].defined()) c.grad = grads[c.slot];

    bool run = !captures || needed.count(n);
    if (captures && dynamic_cast<AccumulateGrad*>(n)) run = false;
    bool any = false;
    for (const auto& g : grads) any = any || g.defined();
    std::vector<Tensor> outs;
    if (run && any) outs = n->apply(std::move(grads));
    if (!keep_graph && run) n->release_variables();

    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.node.get();
      if (i < outs.size() && outs[i].defined()) add_to(next, e.input_nr, outs[i]);
      if (--deps[next] == 0) ready.push(next);
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

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  std::vector<Tensor> grads;
  auto roots = root_edges(outputs, grad_outputs, grads, "backward");
  run_graph(roots, grads, retain_graph.value_or(create_graph), create_graph, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
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
  } else if (auto n = node_.lock()) {
    n->remove_pre_hook(id_);
  }
  id_ = -1;
  leaf_ = Tensor();
}

RemovableHandle register_hook(const Tensor& t, std::function<Tensor(const Tensor&)> hook) {
  TANDEM_CHECK(t.defined() && t.requires_grad(), RuntimeError, "register_hook",
               "cannot register a hook on a tensor that doesn't require gradient");
  Edge e = gradient_edge(t);
  int64_t id = e.node->add_pre_hook(e.input_nr, std::move(hook));
  return RemovableHandle(e.node, id);
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
