#include "tandem/jit/capture.h"

#include <unordered_map>

#include "tandem/core/capture_state.h"
#include "tandem/kernels/cpu/loops.h"

namespace tandem::jit {

namespace {

class Tracer : public DispatchObserver {
 public:
  Tracer(ir::Graph& g, std::vector<Tensor>& lifted) : g_(g), lifted_(lifted) {}

  void bind_input(const Tensor& t, int value) { value_of_[t.impl()] = value; keep_.push_back(t); }

  int value_for(const Tensor& t) {
    if (!t.defined()) return -1;
    auto it = value_of_.find(t.impl());
    if (it != value_of_.end()) return it->second;
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
    // Not an input and not made by a recorded op: lift it (bound by reference).
    int id = g_.add_input(TensorMeta{t.dtype(), t.sizes().vec(), t.strides().vec()}, "lifted" + std::to_string(lifted_.size()));
    lifted_.push_back(t);
    bind_input(t, id);
    return id;
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
    std::vector<TensorMeta> metas;
    for (const Tensor& o : outputs) metas.push_back(TensorMeta{o.dtype(), o.sizes().vec(), o.strides().vec()});
    int n = g_.add_node(op, std::move(in), attrs.vec(), std::move(metas));
    const auto& outs = g_.nodes()[static_cast<size_t>(n)].outputs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      value_of_[outputs[k].impl()] = outs[k];
      keep_.push_back(outputs[k]);  // keep impls alive so addresses are never reused mid-capture
    }
    (void)depth;
  }

  bool broken_ = false;
  std::string reason;
  std::vector<std::string> names;

 private:
  ir::Graph& g_;
  std::vector<Tensor>& lifted_;
  std::unordered_map<const TensorImpl*, int> value_of_;
  std::vector<Tensor> keep_;
  friend Capture capture(const TensorFn&, const std::vector<Tensor>&, const std::vector<std::string>&);
};

struct CaptureDepthGuard {
  CaptureDepthGuard() { ++capture_state::capture_depth(); }
  ~CaptureDepthGuard() { --capture_state::capture_depth(); }
};

}  // namespace

Capture capture(const TensorFn& fn, const std::vector<Tensor>& inputs, const std::vector<std::string>& input_names) {
  Capture c;
  Tracer tracer(c.graph, c.lifted);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    TANDEM_CHECK(t.defined(), ValueError, "compile", "input ", i, " is an undefined tensor");
    std::string name = i < input_names.size() ? input_names[i] : "input" + std::to_string(i);
    int id = c.graph.add_input(TensorMeta{t.dtype(), t.sizes().vec(), t.strides().vec()}, name);
    tracer.bind_input(t, id);
  }
  capture_state::break_reason().clear();
  {
    CaptureDepthGuard cg;
    ObserverGuard og(&tracer);
    c.outputs = fn(inputs);  // eager, on real tensors: a data read gets real values
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
  c.graph.set_outputs(std::move(outs));
  c.ok = true;
  return c;
}

}  // namespace tandem::jit
