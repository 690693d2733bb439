#include "tandem/jit/capture.h"

#include <unordered_map>
#include <unordered_set>

#include "tandem/autograd/engine.h"
#include "tandem/core/capture_state.h"
#include "tandem/dispatch/autocast.h"
#include "tandem/kernels/cpu/loops.h"

namespace tandem::jit {

namespace {

class Tracer : public DispatchObserver, public capture_state::GradObserver {
 public:
  Tracer(ir::Graph& g, std::vector<Tensor>& lifted) : g_(g), lifted_(lifted) {}

  // The .grad each tensor had when the function first read or wrote it (finish_grads
  // turns these into guards and rebindings).
  void on_grad_access(const Tensor& owner) override {
    if (!grad_seen_.insert(owner.impl()).second) return;
    const autograd::AutogradMeta* m = autograd::get_meta(owner);
    grad_entries_.emplace_back(owner, m ? m->grad : Tensor());
  }

  // After fn: a guard on each touched .grad as it was on entry (its identity when the
  // program reads it, bound by reference like a lifted tensor; else whether it was
  // defined), and a rebinding for each .grad that ends bound to another tensor.
  void finish_grads(Capture& c, size_t n_inputs) {
    for (const auto& [owner, entry] : grad_entries_) {
      if (broken_) return;
      auto it = value_of_.find(owner.impl());
      // The value the tensor had on entry: an in-place update inside the call (an
      // optimizer's p.addcdiv_) maps the tensor to the update's result, whose storage is
      // still the input's.
      const int entry_value = it != value_of_.end() ? g_.storage_root(it->second) : -1;
      const bool made_here = it != value_of_.end() ? g_.value(entry_value).kind != ir::ValueKind::Input
                                                   : owner.storage()->capture_id() == capture_id_;
      const auto& gin = g_.inputs();
      const bool is_call_input =
          it != value_of_.end() && std::find(gin.begin(), gin.begin() + static_cast<std::ptrdiff_t>(n_inputs),
                                             entry_value) != gin.begin() + static_cast<std::ptrdiff_t>(n_inputs);
      if (made_here || is_call_input) {
        broken_ = true;
        reason = made_here ? "the function used the .grad of a tensor it made itself (a program would not keep it)"
                           : "the function used the .grad of one of its inputs (read the tensor by reference "
                             "instead, e.g. a model's parameter, so the program can bind its .grad)";
        return;
      }
      const autograd::AutogradMeta* m = autograd::get_meta(owner);
      const Tensor final_grad = m ? m->grad : Tensor();
      if (final_grad.defined() && final_grad.requires_grad()) {
        broken_ = true;
        reason = "a .grad the function set has autograd history (a program's results have none)";
        return;
      }
      auto ev = entry.defined() ? value_of_.find(entry.impl()) : value_of_.end();
      const bool read = ev != value_of_.end();
      capture_state::StateGuard guard;
      guard.key = owner.impl();
      guard.what = str_cat("the .grad of a ", dtype_name(owner.dtype()), owner.sizes(), " tensor the function reads",
                           read ? " (the same tensor: the program reads it)" : " (whether it is defined)");
      if (read) {
        guard.expected = reinterpret_cast<uintptr_t>(entry.impl());
        guard.value = [owner = owner] {
          const autograd::AutogradMeta* mm = autograd::get_meta(owner);
          return mm && mm->grad.defined() ? static_cast<uint64_t>(reinterpret_cast<uintptr_t>(mm->grad.impl())) : 0;
        };
      } else {
        guard.expected = entry.defined() ? 1 : 0;
        guard.value = [owner = owner] {
          const autograd::AutogradMeta* mm = autograd::get_meta(owner);
          return static_cast<uint64_t>(mm && mm->grad.defined() ? 1 : 0);
        };
      }
      capture_state::state_guards().push_back(std::move(guard));
      if (final_grad.impl() == entry.impl()) continue;  // same binding (or undefined before and after)
      Capture::GradBinding b;
      b.owner = owner;
      b.output = final_grad.defined() ? value_for(final_grad) : -1;  // a value id until outputs are set
      b.drop_first = !read;
      c.grad_bindings.push_back(std::move(b));
    }
  }

  void bind_input(const Tensor& t, int value) {
    value_of_[t.impl()] = value;
    keep_.push_back(t);
    remember(value, t);
  }
  void remember(int value, const Tensor& t) {
    if (values_.size() <= static_cast<size_t>(value)) values_.resize(static_cast<size_t>(value) + 1);
    values_[static_cast<size_t>(value)] = t;
  }
  std::vector<Tensor> values_;  // value id -> the eager tensor

  int value_for(const Tensor& t) {
    if (!t.defined()) return -1;
    auto it = value_of_.find(t.impl());
    if (it != value_of_.end()) return it->second;
    // Another handle on a value already traced (autograd saves an op's outputs as aliases
    // without history and unpacks them as new tensors): the latest value with the same
    // storage and geometry is it. Lifting it instead would bind the capture's tensor.
    if (int v = same_geometry_value(t); v >= 0) {
      value_of_[t.impl()] = v;
      keep_.push_back(t);
      return v;
    }
    // A C++ number wrapped as a tensor inside fn is fixed at capture (trace semantics).
    if (t.impl()->is_wrapped_number()) {
      // Copy without dispatching (a dispatch here would be recorded) and without noting a
      // user data read.
      DispatchDepthGuard internal;
      Tensor copy = empty_tensor(t.sizes(), t.dtype());
      kernels::copy_kernel(copy, t);
      int c = g_.add_constant(copy, "scalar");
      g_.mutable_value(c).constant.impl()->set_wrapped_number(true);
      bind_input(t, c);
      return c;
    }
    // Made by fn from C++ data during this capture (not by an op): eager makes it afresh
    // on every call, so the program copies a constant taken now into a new buffer each
    // call (clone), rather than binding this one object, which in-place updates would
    // carry from call to call.
    if (t.storage()->capture_id() != 0 && t.storage()->capture_id() == capture_id_) {
      DispatchDepthGuard internal;
      Tensor copy = empty_strided_tensor(t.sizes(), t.strides(), t.dtype());
      kernels::copy_kernel(copy, t);
      int c = g_.add_constant(copy, "data");
      const TensorMeta meta{t.dtype(), t.sizes().vec(), t.strides().vec()};
      int n = g_.add_node(get_op("clone"), {c}, {}, {meta});
      int v = g_.nodes()[static_cast<size_t>(n)].outputs[0];
      baked.push_back(str_cat(dtype_name(t.dtype()), t.sizes(), " made from C++ data inside the function"));
      bind_input(t, v);
      return v;
    }
    // Not an input and not made by a recorded op: lift it (bound by reference).
    int id = g_.add_input(TensorMeta{t.dtype(), t.sizes().vec(), t.strides().vec()}, "lifted" + std::to_string(lifted_.size()));
    lifted_.push_back(t);
    bind_input(t, id);
    return id;
  }

  // The latest traced value whose tensor shares t's storage, offset, sizes, strides and
  // dtype, or -1. Linear in the values, but only reached for tensors not yet seen.
  int same_geometry_value(const Tensor& t) const {
    for (size_t v = values_.size(); v-- > 0;) {
      const Tensor& u = values_[v];
      if (u.defined() && u.storage().get() == t.storage().get() && u.storage_offset() == t.storage_offset() &&
          u.dtype() == t.dtype() && u.sizes().equals(t.sizes()) && u.strides().equals(t.strides()))
        return static_cast<int>(v);
    }
    return -1;
  }

  // Tensors made from C++ data are snapshotted before the op runs: an in-place op would
  // otherwise record their value after its own write.
  void on_enter(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, int depth) override {
    if (broken_) return;
    for (const Tensor& t : inputs)
      if (t.defined() && !t.impl()->is_wrapped_number() && t.storage()->capture_id() == capture_id_ &&
          value_of_.find(t.impl()) == value_of_.end())
        value_for(t);
    (void)op, (void)attrs, (void)depth;
  }

  void on_exit(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, ArrayRef<Tensor> outputs,
               int depth) override {
    if (broken_ || op.composite) return;  // composite ops are recorded through their parts
    names.push_back(op.name);
    if (op.dynamic_shape) {
      broken_ = true;
      reason = "op '" + op.name + "' has a data-dependent output shape";
      return;
    }
    std::vector<int> in;
    for (const Tensor& t : inputs) in.push_back(value_for(t));
    if (op.is_inplace && !inputs.empty()) {
      // The dispatcher computes an in-place op whose result type differs from self's in
      // the wider type and then copies into self: record exactly that.
      SmallVec<MetaRef, 4> in_metas;
      for (const Tensor& t : inputs) in_metas.push_back(MetaRef::of(t));
      const DType wide = infer_meta(*op.functional, in_metas.ref(), attrs)[0].dtype;
      if (wide != inputs[0].dtype()) {
        int f = g_.add_node(*op.functional, in, attrs.vec());
        int tmp = g_.nodes()[static_cast<size_t>(f)].outputs[0];
        const TensorMeta self_meta{inputs[0].dtype(), inputs[0].sizes().vec(), inputs[0].strides().vec()};
        int cp = g_.add_node(get_op("copy_"), {in[0], tmp}, {}, {self_meta});
        value_of_[outputs[0].impl()] = g_.nodes()[static_cast<size_t>(cp)].outputs[0];
        keep_.push_back(outputs[0]);
        remember(g_.nodes()[static_cast<size_t>(cp)].outputs[0], outputs[0]);
        return;
      }
    }
    std::vector<TensorMeta> metas;
    for (const Tensor& o : outputs) metas.push_back(TensorMeta{o.dtype(), o.sizes().vec(), o.strides().vec()});
    int n = g_.add_node(op, std::move(in), attrs.vec(), std::move(metas));
    const auto& outs = g_.nodes()[static_cast<size_t>(n)].outputs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      value_of_[outputs[k].impl()] = outs[k];
      keep_.push_back(outputs[k]);  // keep impls alive so addresses are never reused mid-capture
      remember(outs[k], outputs[k]);
    }
    (void)depth;
  }

  bool broken_ = false;
  std::string reason;
  std::vector<std::string> names;
  std::vector<std::string> baked;
  uint64_t capture_id_ = 0;

 private:
  ir::Graph& g_;
  std::vector<Tensor>& lifted_;
  std::unordered_map<const TensorImpl*, int> value_of_;
  std::vector<Tensor> keep_;
  std::unordered_set<const TensorImpl*> grad_seen_;
  std::vector<std::pair<Tensor, Tensor>> grad_entries_;  // (owner, its .grad on entry)
  friend Capture capture(const TensorFn&, const std::vector<Tensor>&, const std::vector<std::string>&, bool);
  friend void trace_backward(Capture& c, Tracer& tracer, const std::vector<Tensor>& inputs);
};

// Records the backward of c.outputs into the same graph: the engine runs each node's
// backward rule (tandem ops) through the dispatcher, where the tracer sees it, on the
// tensors the forward saved, which the tracer already knows as forward values.
void trace_backward(Capture& c, Tracer& tracer, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> diff_outputs;
  c.output_differentiable.clear();
  for (const Tensor& o : c.outputs) {
    const bool d = o.defined() && o.requires_grad();
    c.output_differentiable.push_back(d);
    if (d) diff_outputs.push_back(o);
  }
  // Targets: call inputs and lifted tensors (parameters read by reference) requiring grad.
  std::vector<Tensor> targets;
  const size_t n_in = inputs.size();
  for (size_t i = 0; i < n_in + tracer.lifted_.size(); ++i) {
    const Tensor& t = i < n_in ? inputs[i] : tracer.lifted_[i - n_in];
    if (t.requires_grad()) {
      c.grad_targets.push_back(static_cast<int>(i));
      targets.push_back(t);
    }
  }
  c.forward_nodes = c.graph.nodes().size();
  c.forward_inputs = c.graph.inputs().size();
  if (diff_outputs.empty() || targets.empty()) return;
  // Outputs that are views whose base the function wrote after making them: eager mode
  // rebuilds their history (a new node into the base's) when the caller first uses them,
  // and the node's place in the engine's order then decides in which order the gradients
  // reaching that base are summed. Tracing would rebuild it now, so it is marked stale
  // again afterwards. When another output shares that storage, part of that sum happens
  // in the caller's graph, in an order a program cannot know: such a call runs eagerly.
  std::vector<Tensor> rebuilt_later;
  for (const Tensor& o : diff_outputs) {
    const autograd::AutogradMeta* m = autograd::get_meta(o);
    if (m && m->is_view && m->attr_version != o._version()) rebuilt_later.push_back(o);
  }
  for (const Tensor& v : rebuilt_later)
    for (const Tensor& o : diff_outputs)
      if (!o.is_same(v) && o.storage().get() == v.storage().get()) {
        tracer.broken_ = true;
        tracer.reason = "an output is a view of a tensor the function wrote after making the view, and another output "
                        "shares its storage (eager mode sums their gradients in an order the caller's graph decides)";
        return;
      }
  struct MarkStale {
    std::vector<Tensor>& views;
    ~MarkStale() {
      for (const Tensor& v : views) autograd::get_meta(v)->attr_version = ~uint64_t{0};
    }
  } mark_stale{rebuilt_later};
  // Output gradients: graph inputs of the backward, made without dispatching (a factory op
  // here would be recorded as a node).
  std::vector<Tensor> seeds;
  for (const Tensor& o : diff_outputs) {
    DispatchDepthGuard internal;
    Tensor g = empty_tensor(o.sizes(), o.dtype());
    kernels::fill_kernel(g, Scalar(1.0));
    const int id = c.graph.add_input(TensorMeta{g.dtype(), g.sizes().vec(), g.strides().vec()},
                                     "grad_output" + std::to_string(seeds.size()));
    tracer.bind_input(g, id);
    c.grad_output_inputs.push_back(id);
    seeds.push_back(g);
  }
  std::vector<Tensor> grads;
  struct TracingBackward {
    TracingBackward() { ++capture_state::tracing_backward(); }
    ~TracingBackward() { --capture_state::tracing_backward(); }
  } tracing;
  capture_state::traced_multi_gradient_nodes() = 0;
  try {
    grads = autograd::grad(diff_outputs, targets, seeds, /*retain_graph=*/true, /*create_graph=*/false,
                           /*allow_unused=*/true);
  } catch (const Error& e) {
    tracer.broken_ = true;
    tracer.reason = std::string("the backward of the captured call raised (eager mode raises it at backward): ") + e.what();
    return;
  }
  for (const Tensor& g : grads) c.grad_values.push_back(g.defined() ? tracer.value_for(g) : -1);
  c.backward_joins_gradients = capture_state::traced_multi_gradient_nodes() > 0;
  c.has_backward = true;
}

struct CaptureDepthGuard {
  CaptureDepthGuard() { ++capture_state::capture_depth(); }
  ~CaptureDepthGuard() { --capture_state::capture_depth(); }
};

}  // namespace

Capture capture(const TensorFn& fn, const std::vector<Tensor>& inputs, const std::vector<std::string>& input_names,
                bool with_backward) {
  Capture c;
  Tracer tracer(c.graph, c.lifted);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    TANDEM_CHECK(t.defined(), ValueError, "compile", "input ", i, " is an undefined tensor");
    std::string name = i < input_names.size() ? input_names[i] : "input" + std::to_string(i);
    int id = c.graph.add_input(TensorMeta{t.dtype(), t.sizes().vec(), t.strides().vec()}, name);
    c.graph.mutable_value(id).wrapped_number = t.impl()->is_wrapped_number();
    tracer.bind_input(t, id);
  }
  capture_state::break_reason().clear();
  {
    CaptureDepthGuard cg;
    tracer.capture_id_ = capture_state::begin_capture();
    struct EndCapture {
      uint64_t id;
      ~EndCapture() { capture_state::end_capture(id); }
    } end{tracer.capture_id_};
    ObserverGuard og(&tracer);
    // Weights are cast inside the program (once: the cache works within the capture), not
    // taken from casts made before it (dispatch/autocast.h).
    autocast::CacheScope autocast_cache;
    struct GradObserverGuard {
      capture_state::GradObserver* prev;
      explicit GradObserverGuard(capture_state::GradObserver* o) : prev(capture_state::grad_observer()) {
        capture_state::grad_observer() = o;
      }
      ~GradObserverGuard() { capture_state::grad_observer() = prev; }
    } gog(&tracer);
    c.outputs = fn(inputs);  // eager, on real tensors: a data read gets real values
    c.user_backward = capture_state::user_backward().calls > 0;
    // A function that ran its own backward returns results whose graph it used (or freed):
    // no joint graph; its gradients went to .grad (recorded as ops and rebindings).
    if (with_backward && !c.user_backward && is_grad_enabled() && !tracer.broken_ &&
        capture_state::break_reason().empty())
      trace_backward(c, tracer, inputs);
    if (!tracer.broken_ && capture_state::break_reason().empty()) tracer.finish_grads(c, inputs.size());
    if (c.user_backward && !tracer.broken_) {
      // Results that require grad: the roots of that backward (their graph is freed: a
      // later backward raises, as eager's would) or leaves the program returns by reference.
      const auto& freed = capture_state::user_backward().freed_roots;
      c.freed_outputs.assign(c.outputs.size(), std::string());
      for (size_t k = 0; k < c.outputs.size() && !tracer.broken_; ++k) {
        const Tensor& o = c.outputs[k];
        if (!o.defined() || !o.requires_grad()) continue;
        const auto fn_node = o.grad_fn();
        if (fn_node && std::find(freed.begin(), freed.end(), static_cast<const void*>(o.impl())) != freed.end()) {
          c.freed_outputs[k] = fn_node->name();
        } else if (fn_node) {
          tracer.broken_ = true;
          tracer.reason = "the function ran backward() and returns a result with autograd history other than that "
                          "backward's root (return it detached)";
        }
      }
    }
    c.state_guards = std::move(capture_state::state_guards());
    capture_state::state_guards().clear();
    c.prerun = std::move(capture_state::prerun_actions());
    capture_state::prerun_actions().clear();
    c.retry_reason = capture_state::retry_reason();
  }
  if (!capture_state::break_reason().empty() && !tracer.broken_) {
    tracer.broken_ = true;
    tracer.reason = capture_state::break_reason();
  }
  capture_state::break_reason().clear();
  c.captured_ops = tracer.names;
  if (tracer.broken_) {
    c.break_reason = tracer.reason;
    c.ok = false;
    return c;
  }
  std::vector<int> outs;
  for (const Tensor& o : c.outputs) {
    TANDEM_CHECK(o.defined(), ValueError, "compile", "the function returned an undefined tensor");
    outs.push_back(tracer.value_for(o));
  }
  c.num_user_outputs = outs.size();
  for (auto& b : c.grad_bindings)
    if (b.output >= 0) {
      outs.push_back(b.output);
      b.output = static_cast<int>(outs.size()) - 1;
    }
  c.graph.set_outputs(std::move(outs));
  c.baked_constants = std::move(tracer.baked);
  c.value_tensors = std::move(tracer.values_);
  c.value_tensors.resize(c.graph.values().size());
  for (const ir::Value& v : c.graph.values())
    if (v.kind == ir::ValueKind::Constant && v.constant.defined() && v.constant.impl()->is_wrapped_number())
      c.baked_constants.push_back(str_cat("C++ number ", v.constant.item().to_double(), " (", dtype_name(v.meta.dtype),
                                          "): a value the function computed or captured, fixed at capture"));
  c.ok = true;
  return c;
}

}  // namespace tandem::jit
