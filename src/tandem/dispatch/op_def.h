#pragma once
// OpDef: everything tandem knows about one operator, in one place (DESIGN.md
// principle 1): schema, dtype-promotion rule, meta inference, CPU kernel, view (stride)
// rule, backward rule, and flags the passes need. Ops register themselves with
// TANDEM_REGISTER_OP in their family's file under ops/; nothing else lists op names.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/core/tensor.h"
#include "tandem/dispatch/attr.h"

namespace tandem {

/// Input/output metadata without data: what meta inference reads. Non-owning.
struct MetaRef {
  DType dtype = DType::Float32;
  IntArrayRef sizes;
  IntArrayRef strides;
  Device device;
  bool defined = true;
  bool is_wrapped_number = false;  ///< a C++ scalar wrapped as a 0-d tensor (ranks below tensors)
  int64_t storage_offset = 0;      ///< elements; used by view backward rules
  int64_t storage_numel = 0;       ///< elements the storage holds
  /// storage_offset/storage_numel describe a real storage (MetaRef::of a tensor), not
  /// metadata alone (graph values): view rules check bounds only when this is set.
  bool storage_known = false;
  int64_t numel() const { return multiply_integers(sizes); }
  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  static MetaRef of(const Tensor& t);
};

/// Owning output metadata produced by meta inference. Empty strides = contiguous.
struct TensorMeta {
  DType dtype = DType::Float32;
  DimVector sizes;
  DimVector strides;
};

/// Bytes a value's (sizes, strides) geometry spans from its first element (0 if empty):
/// what a buffer holding it needs.
int64_t span_bytes(const TensorMeta& m);

/// How the dispatcher computes the dtype the kernel runs in (PyTorch result_type).
enum class Promotion : uint8_t {
  None,          ///< the op's meta decides dtypes; inputs are passed unchanged
  Default,       ///< promotable inputs are cast to their result_type; output has that dtype
  IntToFloat,    ///< like Default, but bool/integer results become the default float dtype
  Comparison,    ///< inputs cast to result_type; output is bool
};

/// How the dispatcher casts an op's floating inputs while autocast is on (AutocastGuard,
/// dispatch/autocast.h): PyTorch's autocast cast policies. Only float16/bfloat16/float32
/// tensor inputs are cast (float64 tensors, integer/bool tensors, wrapped C++ numbers and
/// inputs the op writes in place never are); each cast is a real `_to_copy` op, so autograd
/// differentiates through it and capture records it. In-place variants never autocast.
enum class Autocast : uint8_t {
  None,            ///< inputs pass unchanged (the op runs in whatever dtype its inputs have)
  LowerPrecision,  ///< PyTorch's lower_precision_fp: inputs cast to the autocast dtype (matmul, conv)
  Float32,         ///< PyTorch's fp32: reduced-precision inputs cast to float32 (softmax, losses, norms)
  Promote,         ///< inputs cast to the widest floating dtype among them (cat, stack, where)
};

/// How an input may share memory with a tensor the op writes (an in-place variant's self,
/// OpDef::mutates_inputs). Whatever this says, the dispatcher rejects written tensors that
/// overlap themselves (expand, unfold with step < size) for every op.
enum class InputOverlap : uint8_t {
  /// The input may be the written tensor itself (the same elements at the same positions:
  /// elementwise kernels read each element before writing it), but must not overlap it
  /// partly (PyTorch's assert_no_partial_overlap, "some elements of the input tensor and
  /// the written-to tensor refer to a single memory location").
  Same,
  /// No shared memory at all: the kernel reads the input in another order than it writes
  /// (the indices of scatter/index_put/index_add; PyTorch's assert_no_overlap). Their
  /// sources keep Same: those kernels copy a source in self's storage before writing, so
  /// the very same elements give the clone() result (PyTorch refuses them).
  None,
  /// Any overlap: the kernel reads the whole input before it writes (masked_fill's 0-d value).
  Any,
};

/// Declaration of one tensor input.
struct InputSpec {
  std::string name;
  bool promote = true;         ///< takes part in type promotion (false for index/mask inputs)
  bool optional = false;       ///< may be an undefined Tensor
  bool differentiable = true;  ///< gradients flow to it (false for indices, masks)
  InputOverlap overlap = InputOverlap::Same;  ///< memory it may share with a written tensor
};

/// Declaration of one attribute with its default (None = std::monostate).
struct AttrSpec {
  std::string name;
  AttrValue default_value;
};

/// Everything a meta function sees. It fills `outputs` or raises an Error.
struct MetaContext {
  const char* op;
  ArrayRef<MetaRef> inputs;
  AttrReader attrs;
  DType common_dtype;  ///< result of the op's Promotion rule over promotable inputs
  SmallVec<TensorMeta, 2> outputs;
};

/// Everything a kernel sees: validated inputs (already cast to the compute dtype when the
/// op promotes), preallocated outputs (or empty for dynamic-shape ops, which push theirs).
struct KernelContext {
  const char* op;
  ArrayRef<Tensor> inputs;
  AttrReader attrs;
  SmallVec<Tensor, 2>& outputs;
};

/// What a view op's stride rule returns: the alias geometry on the input's storage.
struct ViewGeometry {
  DimVector sizes;
  DimVector strides;
  int64_t storage_offset = 0;     ///< relative to the input's offset unless absolute_offset
  bool absolute_offset = false;   ///< as_strided: storage_offset is absolute
};

/// Arguments of a backward rule. Rules are written with tandem ops so they run on real
/// tensors (eager) and on traced tensors (graph autodiff). Saved tensors the op did not
/// ask for (see OpDef::save_inputs/save_outputs) are undefined.
struct BackwardContext {
  const char* op;
  ArrayRef<Tensor> inputs;        ///< forward inputs (only those the op saves)
  ArrayRef<Tensor> outputs;       ///< forward outputs (only those the op saves)
  ArrayRef<Tensor> grad_outputs;  ///< one per output; undefined when that output got no gradient
  AttrReader attrs;
  std::vector<bool> needs_input_grad;
  std::vector<MetaRef> input_metas;  ///< metas of all forward inputs (shapes for reductions back)
};

using MetaFn = void (*)(MetaContext&);
using KernelFn = void (*)(KernelContext&);
using ViewFn = ViewGeometry (*)(const MetaRef& input, const AttrReader& attrs);
/// Returns one gradient per tensor input (undefined = no gradient).
using BackwardFn = std::vector<Tensor> (*)(BackwardContext&);
/// A composite op's body, written with other ops; no kernel and no backward needed.
using CompositeFn = std::vector<Tensor> (*)(ArrayRef<Tensor> inputs, const AttrReader& attrs);
/// See OpDef::batch_chunk.
using BatchChunkFn = int64_t (*)(ArrayRef<MetaRef> inputs, const AttrReader& attrs);

/// The definition of one operator.
struct OpDef {
  std::string name;                ///< PyTorch name: "add", "conv2d", "max_pool2d"
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attrs;
  Promotion promotion = Promotion::None;
  /// Cast policy under autocast (see Autocast); the op lists of docs/ARCHITECTURE.md
  /// ("Mixed precision") are the ops that set it.
  Autocast autocast = Autocast::None;
  MetaFn meta = nullptr;           ///< required unless composite
  KernelFn cpu_kernel = nullptr;   ///< required unless view or composite
  ViewFn view = nullptr;           ///< set for view ops: output aliases input 0
  CompositeFn composite = nullptr; ///< set for ops written in terms of other ops
  BackwardFn backward = nullptr;   ///< autograd rule (slot filled per op)
  uint32_t save_inputs = 0;        ///< bit i: backward needs forward input i
  uint32_t save_outputs = 0;       ///< bit i: backward needs forward output i
  int num_outputs = 1;
  bool variadic = false;           ///< the last InputSpec takes any number of tensors (cat, stack)
  bool dynamic_shape = false;      ///< output sizes depend on data (nonzero, unique): meta still
                                   ///< validates and gives -1 for data-dependent sizes; the kernel pushes outputs
  bool random = false;             ///< draws from the generator (never CSE'd, never folded)
  /// The kernel can raise on input *values* (integer division by zero, an index out of
  /// range, a target outside [0, C)): dead-code elimination keeps such a node even when
  /// its result is unused, so a compiled call raises where eager raises.
  bool raises_on_data = false;
  /// Elementwise: output element i depends only on the input elements at i (after
  /// broadcasting) and the attributes, so the kernel run on any piece of the elements
  /// (contiguous blocks, in any order) writes the bytes it writes on the whole tensor. The
  /// fuse_pointwise pass groups chains of such ops into one _fused_pointwise node that
  /// runs these kernels block by block while the block is in cache.
  bool pointwise = false;
  /// Cheap to run again: the memory-budget planner (runtime/memory_budget.h) may recompute
  /// a value this op made instead of keeping it alive. Pointwise ops are cheap without the
  /// flag; it marks other streaming ops (a fused elementwise node). Never set on random ops.
  bool cheap_to_recompute = false;
  /// Bit i: dim 0 of input i is a batch of examples the op treats one by one (with
  /// batch_separable or batch_chunk); the other inputs are read whole by every example.
  uint32_t batch_inputs = 0;
  /// Batch-separable: dim 0 of every output is that batch and output example n depends only
  /// on example n of the batch inputs, so the kernel run on a slice of the examples writes
  /// the bytes it writes for them on the whole batch. The memory-budget planner
  /// (runtime/memory_budget.h) may run such a node per chunk of examples.
  bool batch_separable = false;
  /// For an op whose outputs are sums over the batch of its batch inputs (a convolution's
  /// weight and bias gradients): the number of examples per chunk in which the kernel
  /// itself sums this call (one pass per chunk, the chunks' partial sums added to the first
  /// chunk's in chunk order, one add per element), or 0 when the call runs whole or cannot
  /// be split so. Per-chunk calls on slices of the batch inputs plus `add` nodes then give
  /// the call's bytes; the memory-budget planner splits such a node, with the
  /// batch-separable node making its input, so that input is never whole in memory.
  BatchChunkFn batch_chunk = nullptr;
  /// With batch_chunk, bit i: output i is per example (dim 0 the batch, example n from
  /// example n of the batch inputs: a convolution's input gradient), not a sum; a split
  /// writes each chunk's piece into its slice of the whole output.
  uint32_t batch_outputs = 0;
  /// Bit i: the kernel writes input i in place (besides an in-place variant's self), e.g.
  /// native_batch_norm's running_mean/running_var in training. Such inputs must not take
  /// part in promotion (InputSpec::promote = false) so the kernel writes the caller's
  /// tensor. The dispatcher and the executor bump their version counters; graph passes
  /// never drop, merge or fold a node that writes, nor move reads across it.
  uint32_t mutates_inputs = 0;
  /// Index of a bool attribute that switches the writes on (native_batch_norm: `training`);
  /// -1: the op always writes the inputs in mutates_inputs. See mutated_inputs().
  int mutates_if_attr = -1;
  bool inplace_variant = false;    ///< also register "<name>_" writing into input 0
  bool cacheable_meta = true;      ///< meta depends only on metas+attrs (memoisable)
  bool supports_reduced_float = true;
  std::vector<bool> output_differentiable;  ///< empty = all differentiable (indices are not)

  // Filled by the registry.
  int id = -1;
  bool is_inplace = false;         ///< this is the "<name>_" variant; output 0 is input 0
  const OpDef* functional = nullptr;  ///< for in-place variants: the op it derives from
  const OpDef* inplace = nullptr;     ///< for functional ops with a variant: "<name>_"
};

/// The inputs `op` writes in place when called with `attrs` (bit i = input i), not
/// counting an in-place variant's self: op.mutates_inputs, or 0 when the op's
/// mutates_if_attr attribute is false (a missing trailing attribute takes its default).
inline uint32_t mutated_inputs(const OpDef& op, ArrayRef<AttrValue> attrs) {
  if (op.mutates_inputs == 0 || op.mutates_if_attr < 0) return op.mutates_inputs;
  const size_t k = static_cast<size_t>(op.mutates_if_attr);
  const AttrValue& a = k < attrs.size() ? attrs[k] : op.attrs.at(k).default_value;
  const bool* on = std::get_if<bool>(&a);
  return on && *on ? op.mutates_inputs : 0;
}

}  // namespace tandem
