#pragma once
// Custom autograd functions (torch::autograd::Function in the PyTorch C++ frontend):
//
//   struct Cube : tandem::autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, Tensor x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {g[0] * x * x * 3.0};
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// forward runs without recording; backward may use tandem ops, so with create_graph it
// is differentiable again.
#include <any>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/autograd/engine.h"
#include "tandem/autograd/node.h"

namespace tandem::autograd {

/// State shared by a custom function's forward and backward.
class AutogradContext {
 public:
  /// Saves tensors for backward (version-checked like built-in ops).
  void save_for_backward(std::vector<Tensor> tensors);
  /// The saved tensors; RuntimeError if one was modified in place since.
  std::vector<Tensor> get_saved_variables() const;
  /// Declares inputs that forward modified in place (they get this node as history).
  void mark_dirty(const std::vector<Tensor>& tensors);
  /// Declares outputs that have no gradient (e.g. indices).
  void mark_non_differentiable(const std::vector<Tensor>& tensors);
  /// When true (default), undefined output gradients reach backward as zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Whether tensor input `i` (counting tensor arguments only) needs a gradient.
  bool needs_input_grad(size_t i) const { return i < needs_input_grad_.size() && needs_input_grad_[i]; }
  /// Arbitrary non-tensor data for backward.
  std::map<std::string, std::any> saved_data;

  // Used by Function<T>::apply.
  std::vector<bool> needs_input_grad_;
  std::vector<Tensor> to_save_;
  std::vector<SavedVariable> saved_;
  std::vector<const TensorImpl*> dirty_;
  std::vector<const TensorImpl*> non_differentiable_;
  bool materialize_grads_ = true;
  std::string name_;
};

/// The node of one custom-function call.
class CppNode : public Node {
 public:
  using BackwardFn = std::vector<Tensor> (*)(AutogradContext*, std::vector<Tensor>);
  CppNode(std::string name, BackwardFn fn) : name_(std::move(name)), fn_(fn) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return name_; }
  void release_variables() override;
  void set_num_outputs(uint32_t n) { num_inputs_ = n; }

  AutogradContext ctx;
  std::vector<DimVector> output_sizes;
  std::vector<DType> output_dtypes;
  std::vector<DimVector> input_sizes;

 private:
  std::string name_;
  BackwardFn fn_;
  bool released_ = false;
};

namespace detail {
/// Connects a custom function's outputs to `node` (inputs are the tensor arguments).
std::vector<Tensor> wrap_outputs(const std::shared_ptr<CppNode>& node, const std::vector<Tensor>& inputs,
                                 std::vector<Tensor> outputs);
inline void collect(std::vector<Tensor>&) {}
template <typename A, typename... Rest>
void collect(std::vector<Tensor>& out, const A& a, const Rest&... rest) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) out.push_back(a);
  collect(out, rest...);
}
}  // namespace detail

/// CRTP base for custom functions: T provides static forward(AutogradContext*, args...)
/// returning a Tensor or std::vector<Tensor>, and static backward(AutogradContext*,
/// std::vector<Tensor>) returning one gradient per tensor argument (undefined = none).
template <typename T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    std::vector<Tensor> inputs;
    detail::collect(inputs, args...);
    auto node = make_node<CppNode>(typeid(T).name(), &T::backward);
    for (const Tensor& t : inputs) node->ctx.needs_input_grad_.push_back(is_grad_enabled() && t.defined() && t.requires_grad());
    using Ret = decltype(T::forward(&node->ctx, std::forward<Args>(args)...));
    std::vector<Tensor> outs;
    {
      NoGradGuard ng;
      if constexpr (std::is_same_v<Ret, Tensor>) outs.push_back(T::forward(&node->ctx, std::forward<Args>(args)...));
      else outs = T::forward(&node->ctx, std::forward<Args>(args)...);
    }
    outs = detail::wrap_outputs(node, inputs, std::move(outs));
    if constexpr (std::is_same_v<Ret, Tensor>) return outs[0];
    else return outs;
  }
};

}  // namespace tandem::autograd
