#pragma once
// Nodes created by recording dispatched ops: OpNode (runs an OpDef's backward rule),
// CopySlices (an in-place op on a view, rewriting the base's history) and
// AsStridedBackward (a view's gradient routed into its base's storage layout).
#include <vector>

#include "tandem/autograd/node.h"
#include "tandem/dispatch/op_def.h"
#include "tandem/ops/shape.h"

namespace tandem::autograd {

/// Backward of one dispatched op: unpacks what it saved and calls OpDef::backward.
/// Everything it records lives inline in the node (one allocation per recorded op for
/// ops of up to 3 inputs and 4-d shapes).
class OpNode : public Node {
 public:
  OpNode(const OpDef& op, ArrayRef<AttrValue> attrs, uint32_t num_outputs);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override;
  void release_variables() override;

  /// Records input i's metadata (undefined tensors too); call once per input, in order.
  void add_input_info(const Tensor& t);
  /// Forward input i's metadata as backward rules see it (BackwardContext::input_metas).
  MetaRef input_meta(size_t i) const;
  size_t num_forward_inputs() const { return input_info.size(); }

  const OpDef* op;
  SmallVec<AttrValue, 2> attrs;
  SmallVec<SavedVariable, 3> saved_inputs;   // one per input; defined where saved
  SmallVec<SavedVariable, 1> saved_outputs;  // one per output; defined where saved
  struct InputInfo {
    uint32_t dims_at = 0;  // sizes at dims[dims_at], strides right after them
    uint32_t ndim = 0;
    DType dtype = DType::Float32;
    bool defined = false;
    int64_t storage_offset = 0;
    int64_t storage_numel = 0;
  };
  SmallVec<InputInfo, 3> input_info;
  SmallVec<int64_t, 16> dims;  // sizes and strides of all inputs
  SmallVec<bool, 3> needs_input_grad;
  bool released = false;
};


/// A view's gradient flowing to its base (used when a view's history is regenerated
/// after an in-place write through the base or a sibling view).
class AsStridedBackward : public Node {
 public:
  AsStridedBackward(Geometry base, Geometry view, int64_t storage_elems, DType dtype);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AsStridedBackward"; }

 private:
  Geometry base_, view_;
  int64_t storage_elems_;
  DType dtype_;
};

/// The base's new history after an in-place op `fn` wrote into its view: the gradient
/// of the view region goes through fn (to the view's old value, which is part of the
/// old base, and to fn's other inputs); the rest of the base passes straight through.
class CopySlices : public Node {
 public:
  CopySlices(const Tensor& base, Geometry view, std::shared_ptr<OpNode> fn);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "CopySlices"; }
  void release_variables() override;

 private:
  Geometry base_, view_;
  int64_t storage_elems_;
  DType dtype_;
  std::shared_ptr<OpNode> fn_;
};

}  // namespace tandem::autograd
