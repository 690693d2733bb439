// Tensor's autograd methods (declared in core/tensor.h).
#include "tandem/core/capture_state.h"
#include "tandem/autograd/engine.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"

namespace tandem {

using autograd::AutogradMeta;
using autograd::get_meta;

namespace {
const Tensor& undefined_tensor() {
  static const Tensor* t = new Tensor();
  return *t;
}
}  // namespace

const Tensor& Tensor::grad() const {
  capture_state::observe_grad(*this);
  AutogradMeta* m = get_meta(*this);
  return m ? m->grad : undefined_tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  capture_state::observe_grad(*this);
  TANDEM_CHECK(!g.defined() || g.sizes().equals(sizes()), ShapeError, "set_grad", "assigned grad has shape ",
               g.sizes(), ", expected the tensor's shape ", sizes());
  TANDEM_CHECK(!g.defined() || g.dtype() == dtype(), TypeError, "set_grad", "assigned grad has dtype ",
               dtype_name(g.dtype()), ", expected ", dtype_name(dtype()));
  autograd::ensure_meta(*this).grad = g;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  autograd::refresh_view_history(*this);
  AutogradMeta* m = get_meta(*this);
  return m ? m->grad_fn : nullptr;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{}, retain_graph,
                     create_graph);
}

void Tensor::retain_grad() const {
  TANDEM_CHECK(requires_grad(), RuntimeError, "retain_grad", "can't retain_grad on a tensor that has requires_grad=False");
  AutogradMeta& m = autograd::ensure_meta(*this);
  if (!m.grad_fn || m.retains_grad) return;  // leaves keep .grad anyway
  m.retains_grad = true;
  // The hook holds the TensorImpl weakly through a raw pointer guarded by the node's
  // lifetime: the node only runs while the tensor's history exists.
  TensorImpl* impl = this->impl();
  m.retain_hook_id = m.grad_fn->add_pre_hook(m.output_nr, [impl](const Tensor& g) -> Tensor {
    if (capture_state::tracing_backward() == 0)
      capture_state::note_break("retain_grad(): the .grad of a tensor made inside a compiled function");
    auto* meta = static_cast<AutogradMeta*>(impl->autograd_meta());
    if (!meta) return Tensor();
    if (!meta->grad.defined()) meta->grad = g.detach().clone();
    else meta->grad = meta->grad + g.detach();
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = get_meta(*this);
  return m && m->retains_grad;
}

autograd::RemovableHandle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  return autograd::register_hook(*this, std::move(hook));
}

Tensor& Tensor::detach_() {
  if (AutogradMeta* m = get_meta(*this)) {
    m->grad_fn.reset();
    m->is_view = false;
    m->view_base = Tensor();
  }
  impl()->set_requires_grad_flag(false);
  return *this;
}

}  // namespace tandem
