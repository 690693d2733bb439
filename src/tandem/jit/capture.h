#pragma once
// Capture: runs a function eagerly while an observer on the dispatcher records every op
// into a Graph (one dispatcher, two interpreters). Tensors the function did not create
// and was not given (closure captures) are "lifted": they become extra graph inputs bound
// by reference at every call, so in-place updates to them are seen.
#include <functional>
#include <string>
#include <vector>

#include "tandem/ir/graph.h"

namespace tandem::jit {

using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// What a capture produced.
struct Capture {
  ir::Graph graph;                ///< inputs: the call's inputs, then lifted tensors
  std::vector<Tensor> outputs;    ///< the eager results of the capturing call
  std::vector<Tensor> lifted;     ///< tensors bound by reference (after the call inputs)
  bool ok = false;                ///< false: a graph break happened
  std::string break_reason;       ///< why capture stopped
  std::vector<std::string> captured_ops;  ///< op names in order (also when it broke)
};

/// Runs fn(inputs) once, eagerly, recording it. A data-dependent read (item(),
/// data_ptr(), printing) or a dynamic-shape op ends capture with ok == false; the call
/// still completes eagerly and its outputs are returned. Errors raised by fn itself
/// propagate.
Capture capture(const TensorFn& fn, const std::vector<Tensor>& inputs, const std::vector<std::string>& input_names = {});

}  // namespace tandem::jit
