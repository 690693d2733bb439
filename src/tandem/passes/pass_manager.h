#pragma once
// The pass manager and the graph passes of compiled mode. Each pass edits a Graph in
// place and returns whether it changed anything; the manager runs the enabled passes in
// order, verifies the graph after each one (debug builds, or always when
// set_verify(true)), and can dump the graph after each pass (TANDEM_DUMP_PASSES=1).
#include <functional>
#include <string>
#include <vector>

#include "tandem/ir/graph.h"

namespace tandem::passes {

using PassFn = std::function<bool(ir::Graph&)>;

/// Removes nodes whose results are never used. Never removes nodes that write in place
/// (in-place ops, and ops that mutate inputs per OpDef::mutates_inputs, such as batch norm
/// updating running stats in training) or random ops (their draws advance the generator
/// exactly as eager mode does).
bool dead_code_elimination(ir::Graph& g);
/// Merges nodes that apply the same op with the same attributes to the same values, when
/// no write to those values (in-place op or OpDef::mutates_inputs) happens in between and
/// neither result is written in place later. Never merges random ops or nodes that write.
bool common_subexpression_elimination(ir::Graph& g);
/// Evaluates nodes whose inputs are all constants (and that are not random, views, or
/// writing in place, including OpDef::mutates_inputs) at compile time, replacing them with constants; factory ops (full, arange,
/// eye...) with no inputs fold too unless their result is written in place later.
bool constant_folding(ir::Graph& g);
/// Removes ops that do nothing: views/expands to the same geometry, aliases, casts to the
/// same dtype and multiplying by one, dividing by one or subtracting zero (when no dtype
/// promotion happens and no in-place write sees the difference). x + 0 is kept for
/// floats: -0.0 + 0 is +0.0.
bool noop_removal(ir::Graph& g);
/// Puts commutative ops' operands in a canonical order (by value id) so CSE sees
/// mul(a, b) and mul(b, a) as the same.
bool canonicalize(ir::Graph& g);

/// Fuses conv2d -> relu [-> max_pool2d without padding/dilation/ceil_mode] chains whose
/// intermediate results nothing else reads (float32, 4-D) into one _fused_conv2d node: the
/// same convolution primitive, with ReLU and pooling applied while the result is read from
/// the primitive's own layout (no reorder to NCHW, no ReLU pass, no pooling pass over
/// NCHW). Bitwise the unfused values.
bool fuse_conv_blocks(ir::Graph& g);

/// Fuses mm -> _to_copy(float32) where the product is bfloat16 or float16 and only the
/// cast reads it (autocast programs: a weight gradient cast to its float32 parameter's
/// dtype) into one _fused_mm_to_copy node, which writes the narrow product into the front
/// half of the float32 result and widens it in place: no buffer for the narrow product,
/// which would otherwise sit beside its float32 copy. A right operand that is the narrow
/// copy of a tensor alive there anyway, read last by the product, is made again inside the
/// node (in the result's back half), so the copy need not live until then. Only where the
/// operands that die at the product take fewer bytes than the product (else the peak
/// could rise). Bitwise the unfused values.
bool fuse_mm_casts(ir::Graph& g);

/// Groups chains of elementwise ops (OpDef::pointwise; unary, binary and ternary ops,
/// comparisons, casts, with broadcast and scalar operands) whose intermediate results
/// nothing else reads and that have the chain's result shape into one _fused_pointwise
/// node: the ops' own kernels run block by block while the block is in cache, each input
/// is read once and the result written once. Bitwise the unfused values. Ops that check
/// data (integer division), write in place or draw random numbers are left alone, and so
/// is a producer whose result another node reads too.
bool fuse_pointwise(ir::Graph& g);

/// Lets an op write its result into its first input when that input is an intermediate
/// whose storage dies at this node (no later read through any alias, not kept as a graph
/// output) and has the result's dtype, sizes and strides: the node becomes the op's
/// in-place variant ("relu" -> "relu_"), the same kernel eager mode runs for relu_(), so
/// results are bitwise the same while the memory plan needs one buffer fewer. Run last.
bool inplace_reuse(ir::Graph& g);

/// Named, individually switchable passes run in order.
class PassManager {
 public:
  /// The default pipeline: canonicalize, constant_folding, noop_removal, cse, dce,
  /// fuse_conv_blocks, fuse_pointwise, inplace_reuse.
  PassManager();
  PassManager(const PassManager&) = delete;
  PassManager& operator=(const PassManager&) = delete;

  void add(std::string name, PassFn fn);
  /// Enables or disables a pass by name; ValueError for an unknown name.
  void set_enabled(const std::string& name, bool enabled);
  void set_verify(bool v) { verify_ = v; }
  /// Runs the enabled passes once each, in order. Returns the names of passes that changed the graph.
  std::vector<std::string> run(ir::Graph& g) const;
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string name;
    PassFn fn;
    bool enabled = true;
  };
  std::vector<Entry> passes_;
  bool verify_;
};

}  // namespace tandem::passes
